#!/usr/bin/env bash
# Runs the MPI test binary across two emulated hosts: two network namespaces
# joined by a veth pair, Open MPI over TCP between them (its daemons started
# in the other namespace by an rsh agent that is `ip netns exec`), and proves
# the bytes went over the link: the veth's tx_bytes must grow by at least the
# payload the tests move. Exits 77 (CTest: skipped) with a message where
# namespaces cannot be created (not root, no CAP_SYS_ADMIN, no `ip`).
#
# Usage: two_hosts.sh <mpirun> <plait_mpi_tests> [catch2 arguments...]
set -euo pipefail

mpirun="$1"
binary="$2"
shift 2

skip() {
  echo "SKIPPED: $*"
  exit 77
}

command -v ip >/dev/null 2>&1 || skip "no ip(8) to create network namespaces"
"$mpirun" --version 2>&1 | grep -q -E "Open MPI|OpenRTE" || skip "the emulated hosts need Open MPI's rsh launcher"

tag="plait$$"
a="${tag}a"
b="${tag}b"
work="$(mktemp -d)"
cleanup() {
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$a" 2>/dev/null || skip "cannot create network namespaces here (needs root or CAP_SYS_ADMIN)"
ip netns add "$b" || skip "cannot create a second network namespace"
ip link add "${tag}x" type veth peer name "${tag}y" || skip "cannot create a veth pair"
ip link set "${tag}x" netns "$a"
ip link set "${tag}y" netns "$b"
ip -n "$a" addr add 10.77.0.1/24 dev "${tag}x"
ip -n "$b" addr add 10.77.0.2/24 dev "${tag}y"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "${tag}x" up
ip -n "$b" link set "${tag}y" up

# The rsh agent: `agent <host> <command...>` runs the command on that host.
cat >"$work/agent" <<AGENT
#!/bin/sh
host="\$1"; shift
case "\$host" in
  10.77.0.1) ns="$a" ;;
  10.77.0.2) ns="$b" ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
# Its own hostname too (UTS namespace): Open MPI tells nodes apart by name.
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$ns; \$*"
AGENT
chmod +x "$work/agent"
printf '10.77.0.1 slots=2\n10.77.0.2 slots=2\n' >"$work/hosts"

tx() { ip netns exec "$a" cat "/sys/class/net/${tag}x/statistics/tx_bytes"; }
rx() { ip netns exec "$a" cat "/sys/class/net/${tag}x/statistics/rx_bytes"; }
tx_before=$(tx)
rx_before=$(rx)

# TCP only (no shared-memory path between the "hosts"), on the veth subnet only.
ip netns exec "$a" unshare --uts /bin/sh -c 'hostname "$0"; exec "$@"' "$a" "$mpirun" --allow-run-as-root --oversubscribe -np 4 --hostfile "$work/hosts" --map-by node \
  --mca plm_rsh_agent "$work/agent" --mca btl tcp,self \
  --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
  -x PLAIT_TIMEOUT -x PATH \
  "$binary" --use-colour no "$@"

tx_after=$(tx)
rx_after=$(rx)
sent=$((tx_after - tx_before))
received=$((rx_after - rx_before))
echo "veth ${tag}x (host 10.77.0.1): tx grew by $sent bytes, rx by $received bytes"
# The differential tests alone move several MiB between the hosts in each
# direction; 1 MiB each way rules out a run that stayed inside one namespace.
if [ "$sent" -lt 1048576 ] || [ "$received" -lt 1048576 ]; then
  echo "FAILED: too little traffic crossed the link" >&2
  exit 1
fi
echo "two emulated hosts: passed"

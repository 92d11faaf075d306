#!/usr/bin/env bash
# The emulated two-node bench of split/all-gather: two network namespaces
# ("hosts") joined by a veth pair whose rate is limited with tc (the slow
# inter-node link), Open MPI over TCP between them, plait's shm transport
# inside each. Stage A runs on host 1, stage B on host 2. For t = 2 and 4 it
# reports naive vs split/all-gather time and link bytes, and proves the
# traffic crossed the link: the veth's tx_bytes grow by at least the payload.
# Skips with a message (exit 77) where namespaces cannot be created.
#
# Usage: two_nodes_boundary.sh <mpirun> <boundary-bench> [MiB] [rate]
set -euo pipefail

mpirun="$1"
binary="$2"
mib="${3:-16}"
rate="${4:-800mbit}"
repetitions=3

skip() {
  echo "SKIPPED: $*"
  exit 77
}
command -v ip >/dev/null 2>&1 || skip "no ip(8) to create network namespaces"
command -v tc >/dev/null 2>&1 || skip "no tc(8) to limit the link's rate"
"$mpirun" --version 2>&1 | grep -q -E "Open MPI|OpenRTE" || skip "the emulated hosts need Open MPI's rsh launcher"

tag="pb$$"
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
ip -n "$a" addr add 10.77.1.1/24 dev "${tag}x"
ip -n "$b" addr add 10.77.1.2/24 dev "${tag}y"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "${tag}x" up
ip -n "$b" link set "${tag}y" up
# The slow link: a token bucket in each direction.
ip netns exec "$a" tc qdisc add dev "${tag}x" root tbf rate "$rate" burst 256kb latency 200ms
ip netns exec "$b" tc qdisc add dev "${tag}y" root tbf rate "$rate" burst 256kb latency 200ms

cat >"$work/agent" <<AGENT
#!/bin/sh
host="\$1"; shift
case "\$host" in
  10.77.1.1) ns="$a" ;;
  10.77.1.2) ns="$b" ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$ns; \$*"
AGENT
chmod +x "$work/agent"

tx() { ip netns exec "$a" cat "/sys/class/net/${tag}x/statistics/tx_bytes"; }

echo "two emulated hosts, link ${rate} each way, activation ${mib} MiB, median of ${repetitions}"
for t in 2 4; do
  printf '10.77.1.1 slots=%d\n10.77.1.2 slots=%d\n' "$t" "$t" >"$work/hosts"
  before=$(tx)
  line=$(ip netns exec "$a" unshare --uts /bin/sh -c 'hostname "$0"; exec "$@"' "$a" "$mpirun" --allow-run-as-root \
    --oversubscribe -np $((2 * t)) --hostfile "$work/hosts" --map-by slot \
    --mca plm_rsh_agent "$work/agent" --mca btl tcp,self \
    --mca btl_tcp_if_include 10.77.1.0/24 --mca oob_tcp_if_include 10.77.1.0/24 \
    -x PLAIT_TIMEOUT -x PATH "$binary" "$mib" "$repetitions" | grep '^boundary')
  sent=$(( $(tx) - before ))
  echo "$line veth_tx_bytes=$sent"
  naive=$(sed -n 's/.*naive_bytes=\([0-9]*\).*/\1/p' <<<"$line")
  split=$(sed -n 's/.*split_bytes=\([0-9]*\).*/\1/p' <<<"$line")
  payload=$(( (naive + split) * (repetitions + 1) ))
  if [ "$sent" -lt "$payload" ]; then
    echo "FAILED: the link carried $sent bytes, less than the $payload bytes of payload" >&2
    exit 1
  fi
  grep -q 'correct=yes' <<<"$line" || { echo "FAILED: wrong result" >&2; exit 1; }
done
echo "traffic crossed the link: passed"

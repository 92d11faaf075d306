# Two emulated hosts for tests and benches that must cross a real link: two
# network namespaces joined by a veth pair, each with its own hostname (Open MPI
# tells nodes apart by name), and an rsh agent for Open MPI that starts a
# command "on" a host with `ip netns exec`. Sourced, not run:
#
#   source scripts/lib/two_hosts.sh
#   two_hosts_up <tag> <subnet, e.g. 10.77.0>   # sets a, b, link_a, link_b, host_a, host_b, work, agent
#   two_hosts_mpirun <mpirun args...>           # mpirun started on host a, TCP on the veth only
#   two_hosts_tx / two_hosts_rx                 # host a's veth byte counters
#
# Everything is removed on exit. Exits 77 (CTest: skipped) with a message where
# namespaces cannot be created (not root, no CAP_SYS_ADMIN, no ip(8)).

two_hosts_skip() {
  echo "SKIPPED: $*"
  exit 77
}

two_hosts_cleanup() {
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
  rm -rf "$work"
}

two_hosts_up() {
  local tag="$1" subnet="$2"
  command -v ip >/dev/null 2>&1 || two_hosts_skip "no ip(8) to create network namespaces"
  a="${tag}a"
  b="${tag}b"
  link_a="${tag}x"
  link_b="${tag}y"
  host_a="${subnet}.1"
  host_b="${subnet}.2"
  two_hosts_subnet="${subnet}.0/24"
  work="$(mktemp -d)"
  trap two_hosts_cleanup EXIT
  ip netns add "$a" 2>/dev/null || two_hosts_skip "cannot create network namespaces here (needs root or CAP_SYS_ADMIN)"
  ip netns add "$b" || two_hosts_skip "cannot create a second network namespace"
  ip link add "$link_a" type veth peer name "$link_b" || two_hosts_skip "cannot create a veth pair"
  ip link set "$link_a" netns "$a"
  ip link set "$link_b" netns "$b"
  ip -n "$a" addr add "$host_a/24" dev "$link_a"
  ip -n "$b" addr add "$host_b/24" dev "$link_b"
  local ns
  for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
  ip -n "$a" link set "$link_a" up
  ip -n "$b" link set "$link_b" up

  # The rsh agent: `agent <host> <command...>` runs the command on that host,
  # under that host's own hostname (UTS namespace).
  agent="$work/agent"
  cat >"$agent" <<AGENT
#!/bin/sh
host="\$1"; shift
case "\$host" in
  $host_a) ns="$a" ;;
  $host_b) ns="$b" ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$ns; \$*"
AGENT
  chmod +x "$agent"
}

# mpirun on host a, launching on both hosts through the agent, on the veth
# subnet only. Byte transfer layers: two_hosts_btl, default tcp,self (TCP
# even between ranks of one host); vader,tcp,self lets a host's ranks use
# their shared memory, as on a real node.
two_hosts_mpirun() {
  local mpirun="$1"
  shift
  ip netns exec "$a" unshare --uts /bin/sh -c 'hostname "$0"; exec "$@"' "$a" "$mpirun" --allow-run-as-root \
    --oversubscribe --mca plm_rsh_agent "$agent" --mca btl "${two_hosts_btl:-tcp,self}" \
    --mca btl_tcp_if_include "$two_hosts_subnet" --mca oob_tcp_if_include "$two_hosts_subnet" "$@"
}

two_hosts_tx() { ip netns exec "$a" cat "/sys/class/net/$link_a/statistics/tx_bytes"; }
two_hosts_rx() { ip netns exec "$a" cat "/sys/class/net/$link_a/statistics/rx_bytes"; }

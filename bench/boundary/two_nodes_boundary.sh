#!/usr/bin/env bash
# The emulated two-node bench of split/all-gather: two emulated hosts
# (scripts/lib/two_hosts.sh) whose veth link is rate-limited with tc (the slow
# inter-node link), Open MPI over TCP between them, plait's shm transport
# inside each. Stage A runs on host a, stage B on host b. For t = 2 and 4 it
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

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../../scripts/lib/two_hosts.sh
source "$root/scripts/lib/two_hosts.sh"

command -v tc >/dev/null 2>&1 || two_hosts_skip "no tc(8) to limit the link's rate"
"$mpirun" --version 2>&1 | grep -q -E "Open MPI|OpenRTE" || two_hosts_skip "the emulated hosts need Open MPI's rsh launcher"
two_hosts_up "pb$$" 10.77.1
# The slow link: a token bucket in each direction.
ip netns exec "$a" tc qdisc add dev "$link_a" root tbf rate "$rate" burst 256kb latency 200ms
ip netns exec "$b" tc qdisc add dev "$link_b" root tbf rate "$rate" burst 256kb latency 200ms

echo "two emulated hosts, link ${rate} each way, activation ${mib} MiB, median of ${repetitions}"
for t in 2 4; do
  printf '%s slots=%d\n%s slots=%d\n' "$host_a" "$t" "$host_b" "$t" >"$work/hosts"
  before=$(two_hosts_tx)
  line=$(two_hosts_mpirun "$mpirun" -np $((2 * t)) --hostfile "$work/hosts" --map-by slot -x PLAIT_TIMEOUT -x PATH \
    "$binary" "$mib" "$repetitions" | grep '^boundary')
  sent=$(($(two_hosts_tx) - before))
  echo "$line veth_tx_bytes=$sent"
  naive=$(sed -n 's/.*naive_bytes=\([0-9]*\).*/\1/p' <<<"$line")
  split=$(sed -n 's/.*split_bytes=\([0-9]*\).*/\1/p' <<<"$line")
  payload=$(((naive + split) * (repetitions + 1)))
  if [ "$sent" -lt "$payload" ]; then
    echo "FAILED: the link carried $sent bytes, less than the $payload bytes of payload" >&2
    exit 1
  fi
  grep -q 'correct=yes' <<<"$line" || {
    echo "FAILED: wrong result" >&2
    exit 1
  }
done
echo "traffic crossed the link: passed"

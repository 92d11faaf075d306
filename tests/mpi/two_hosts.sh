#!/usr/bin/env bash
# Runs the MPI test binary across two emulated hosts (scripts/lib/two_hosts.sh:
# two network namespaces joined by a veth pair, Open MPI over TCP between them)
# and proves the bytes went over the link: the veth's tx_bytes and rx_bytes must
# each grow by at least 1 MiB. Exits 77 (CTest: skipped) with a message where
# namespaces cannot be created.
#
# Usage: two_hosts.sh <mpirun> <plait_mpi_tests> [catch2 arguments...]
set -euo pipefail

mpirun="$1"
binary="$2"
shift 2

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../../scripts/lib/two_hosts.sh
source "$root/scripts/lib/two_hosts.sh"

"$mpirun" --version 2>&1 | grep -q -E "Open MPI|OpenRTE" || two_hosts_skip "the emulated hosts need Open MPI's rsh launcher"
two_hosts_up "plait$$" 10.77.0
printf '%s slots=2\n%s slots=2\n' "$host_a" "$host_b" >"$work/hosts"

tx_before=$(two_hosts_tx)
rx_before=$(two_hosts_rx)
two_hosts_mpirun "$mpirun" -np 4 --hostfile "$work/hosts" --map-by node -x PLAIT_TIMEOUT -x PATH \
  "$binary" --use-colour no "$@"
sent=$(($(two_hosts_tx) - tx_before))
received=$(($(two_hosts_rx) - rx_before))
echo "veth $link_a (host $host_a): tx grew by $sent bytes, rx by $received bytes"
# The differential tests alone move several MiB between the hosts in each
# direction; 1 MiB each way rules out a run that stayed inside one namespace.
if [ "$sent" -lt 1048576 ] || [ "$received" -lt 1048576 ]; then
  echo "FAILED: too little traffic crossed the link" >&2
  exit 1
fi
echo "two emulated hosts: passed"

#!/bin/sh
# Runs test_pmpi_datatypes under MPI's launcher with plait forced on and the
# report requested, then checks the report's count of calls moved as
# strided views against the program's: a communicator on one node moves
# exactly the calls it expects as views (a datatype with gaps that is a
# box, on either side), so a box that silently fell back to packing fails;
# one across emulated nodes (PLAIT_PMPI_RANKS_PER_NODE=k, np <= 2k: the
# world spans two, each half of it lies on one) moves none, since the
# two-level collectives take contiguous data and those calls pack.
# The program reads PLAIT_PMPI_VIEWS_FROM as the library does: calls that
# receive less pack, and it expects them to.
# usage: run_pmpi_datatypes_test.sh MPIEXEC NP TEST_EXECUTABLE [mpiexec flags...]
set -u
. "$(dirname "$0")/run_with_report.sh"
run_with_report run_pmpi_datatypes_test "$@"
counts=$(printf '%s\n' "$out" |
  sed -n 's/^test_pmpi_datatypes: 0 failed check(s), views summed over ranks: \([0-9]*\) on the world, \([0-9]*\) on the halves$/\1 \2/p')
views=$(printf '%s\n' "$out" | sed -n 's/^datatypes with gaps: \([0-9]*\) served calls moved as strided views, unpacked$/\1/p')
if [ -z "$counts" ] || [ -z "$views" ]; then
  echo "run_pmpi_datatypes_test: the output lacks the program's counts or the report's"
  exit 1
fi
set -- $counts
want=$(($1 + $2))
[ -n "${PLAIT_PMPI_RANKS_PER_NODE:-}" ] && want=$2
if [ "$views" != "$want" ]; then
  echo "run_pmpi_datatypes_test: the report shows $views calls moved as views; expected $want"
  exit 1
fi
echo "run_pmpi_datatypes_test: results as MPI's own, $views calls moved as views"

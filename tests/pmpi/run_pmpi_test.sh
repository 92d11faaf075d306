#!/bin/sh
# Runs a differential test under MPI's launcher (Open MPI's or MPICH's) with plait forced on and the report
# requested, then checks the report (printed by rank 0 at MPI_Finalize):
# every intercepted function must show served calls, so a library that
# silently passed everything to MPI (equal results, nothing tested) fails.
# usage: run_pmpi_test.sh MPIEXEC NP TEST_EXECUTABLE [mpiexec flags...]
set -u
. "$(dirname "$0")/run_with_report.sh"
run_with_report run_pmpi_test "$@"
for f in MPI_Allgather MPI_Allgatherv MPI_Alltoall MPI_Alltoallv MPI_Reduce_scatter_block MPI_Reduce_scatter \
         MPI_Allreduce; do
  served=$(printf '%s\n' "$out" | awk -v f="$f" '$1 == f { print $2 }')
  if [ -z "$served" ] || [ "$served" -eq 0 ]; then
    echo "run_pmpi_test: the report shows no served $f calls (got '${served}')"
    exit 1
  fi
done
# The MPI_Allreduce that must pass (the C test's user op on 40-byte elements,
# the Fortran test's MPI_LOGICAL) must have been passed, and said why.
if ! printf '%s\n' "$out" | grep -q '^MPI_Allreduce .* datatype: '; then
  echo "run_pmpi_test: the report does not show the MPI_Allreduce that must pass passed to MPI"
  exit 1
fi
# Where the test says how many MPI_Allreduce calls it made to pass (summed
# over ranks), the report must show exactly those passed: any other
# reduction the test makes is served.
must_pass=$(printf '%s\n' "$out" | sed -n 's/^test_pmpi: \([0-9]*\) MPI_Allreduce calls must pass$/\1/p')
if [ -n "$must_pass" ]; then
  passed=$(printf '%s\n' "$out" | awk '$1 == "MPI_Allreduce" { print $5 }')
  if [ "$passed" != "$must_pass" ]; then
    echo "run_pmpi_test: the report shows ${passed} MPI_Allreduce calls passed to MPI; the test made ${must_pass} to pass"
    exit 1
  fi
fi
# Every predefined op on a type the tests reduce is served: a reduction
# passed for its op is a type the library does not map.
if printf '%s\n' "$out" | grep -Eq '^MPI_(Allreduce|Reduce_scatter_block|Reduce_scatter) .* op: '; then
  echo "run_pmpi_test: the report shows reductions passed to MPI for their op:"
  printf '%s\n' "$out" | grep -E '^MPI_(Allreduce|Reduce_scatter_block|Reduce_scatter) .* op: '
  exit 1
fi
# Optional checks of the run's output (extended regular expressions, from
# the test's environment): a line it must show, and lines it must not.
if [ -n "${PLAIT_PMPI_TEST_EXPECT:-}" ] && ! printf '%s\n' "$out" | grep -Eq "$PLAIT_PMPI_TEST_EXPECT"; then
  echo "run_pmpi_test: no line of the output matches '$PLAIT_PMPI_TEST_EXPECT'"
  exit 1
fi
if [ -n "${PLAIT_PMPI_TEST_REJECT:-}" ] && printf '%s\n' "$out" | grep -Eq "$PLAIT_PMPI_TEST_REJECT"; then
  echo "run_pmpi_test: the output has lines matching '$PLAIT_PMPI_TEST_REJECT':"
  printf '%s\n' "$out" | grep -E "$PLAIT_PMPI_TEST_REJECT" | head -5
  exit 1
fi
echo "run_pmpi_test: every intercepted function served, results as the reference"

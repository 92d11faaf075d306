#!/bin/sh
# Runs test_pmpi_threads under mpirun with plait forced on and the report
# requested, then checks the report (printed by rank 0 at MPI_Finalize): MPI
# provided MPI_THREAD_MULTIPLE, and every call the threads made was served
# and counted once, none passed (before the library served under
# MPI_THREAD_MULTIPLE, every call passed). A run where MPI provides less says so and passes.
# usage: run_pmpi_threads_test.sh MPIEXEC NP TEST_EXECUTABLE [mpiexec flags...]
set -u
. "$(dirname "$0")/run_with_report.sh"
run_with_report run_pmpi_threads_test "$@"
if printf '%s\n' "$out" | grep -q '^test_pmpi_threads: skipped'; then
  echo "run_pmpi_threads_test: skipped (MPI does not provide MPI_THREAD_MULTIPLE)"
  exit 0
fi
if ! printf '%s\n' "$out" | grep -q '^plait_pmpi report ([0-9]* ranks, MPI_THREAD_MULTIPLE;'; then
  echo "run_pmpi_threads_test: the report does not say MPI_THREAD_MULTIPLE"
  exit 1
fi
# Every call counted once: threads count at once, and a lost update would
# show here. Per thread, 2 phases of `rounds` rounds and 2 on a duplicate;
# a round makes one MPI_Allgather, one MPI_Alltoallv, two MPI_Allreduce.
calls=$(printf '%s\n' "$out" | sed -n 's/^test_pmpi_threads: \([0-9]*\) ranks, .* \([0-9]*\) threads .* \([0-9]*\) rounds .*/\1 \2 \3/p')
set -- $calls
if [ $# -ne 3 ]; then
  echo "run_pmpi_threads_test: no summary line from the test"
  exit 1
fi
per_call=$(($1 * $2 * (2 * $3 + 2)))
for f in MPI_Allgather:1 MPI_Alltoallv:1 MPI_Allreduce:2; do
  name=${f%:*}
  want=$((per_call * ${f#*:}))
  served=$(printf '%s\n' "$out" | awk -v f="$name" '$1 == f { print $2 }')
  passed=$(printf '%s\n' "$out" | awk -v f="$name" '$1 == f { print $5 }')
  if [ "${served:-}" != "$want" ] || [ "${passed:-}" != 0 ]; then
    echo "run_pmpi_threads_test: $name shows ${served:-no} served and ${passed:-no} passed calls; expected $want served, 0 passed"
    exit 1
  fi
done
echo "run_pmpi_threads_test: every call served under MPI_THREAD_MULTIPLE, results equal to PMPI's"

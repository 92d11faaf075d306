#!/bin/sh
# Runs the differential test with PLAIT_PMPI=auto and a tuning table, then
# checks in the report that each function was served or passed ("auto,
# table") exactly as the table's rows say (tests/pmpi/tuning_table_test.txt;
# the np 2 expectations are written there). With "malformed", the table has
# a bad line: rank 0 must say so and auto must serve nothing.
# usage: run_pmpi_table_test.sh rows|malformed TABLE MPIEXEC NP TEST_EXECUTABLE [mpiexec flags...]
set -u
mode=$1 table=$2 mpiexec=$3 np=$4 exe=$5
shift 5
if [ "$mode" = malformed ]; then
  bad=$(mktemp)
  trap 'rm -f "$bad"' EXIT
  { cat "$table"; echo "MPI_Allreduce 2 1 64"; } >"$bad"
  table=$bad
fi
if [ "$mode" = malformed ]; then
  # The test's error case and its derived-type sums need plait: those
  # functions are forced on, the gathers' and all-to-alls' others left to auto.
  settings="PLAIT_PMPI=on PLAIT_PMPI_ALLGATHERV=auto PLAIT_PMPI_ALLTOALL=auto PLAIT_PMPI_ALLTOALLV=auto"
else
  settings="PLAIT_PMPI=auto"
fi
# shellcheck disable=SC2086 # the settings are words
out=$(env $settings PLAIT_PMPI_TABLE="$table" PLAIT_PMPI_REPORT=1 "$mpiexec" -n "$np" "$@" "$exe" 2>&1)
status=$?
printf '%s\n' "$out"
fail() {
  echo "run_pmpi_table_test: $*"
  exit 1
}
[ "$status" -eq 0 ] || fail "the test failed (exit $status)"
served() { printf '%s\n' "$out" | awk -v f="$1" '$1 == f { print $2 }'; }
by_table() { printf '%s\n' "$out" | grep "^$1 " | grep -q 'auto, table: '; }
expect_served() { [ "$(served "$1")" -gt 0 ] || fail "$1: expected served calls, got '$(served "$1")'"; }
expect_none_served() { [ "$(served "$1")" -eq 0 ] || fail "$1: expected no served calls, got '$(served "$1")'"; }
expect_table_pass() { by_table "$1" || fail "$1: expected calls passed by the table"; }
expect_no_table_pass() { ! by_table "$1" || fail "$1: expected no call passed by the table"; }

if [ "$mode" = malformed ]; then
  printf '%s\n' "$out" | grep -q 'tuning table .* is malformed (line [0-9]*: expected six fields' ||
    fail "rank 0 did not report the malformed line"
  expect_served MPI_Allgather
  for f in MPI_Allgatherv MPI_Alltoall MPI_Alltoallv; do
    expect_none_served "$f"
    expect_table_pass "$f"
  done
else
  expect_served MPI_Allgather
  expect_no_table_pass MPI_Allgather
  expect_served MPI_Allgatherv
  expect_none_served MPI_Alltoall
  expect_table_pass MPI_Alltoall
  expect_none_served MPI_Alltoallv
  expect_served MPI_Reduce_scatter_block
  expect_table_pass MPI_Reduce_scatter_block
  expect_served MPI_Reduce_scatter
  expect_served MPI_Allreduce
fi
echo "run_pmpi_table_test ($mode): every function served or passed as the table says"

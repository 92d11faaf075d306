# Sourced by the run_pmpi_*_test.sh scripts: the launch they share.
# run_with_report SCRIPT MPIEXEC NP TEST_EXECUTABLE [mpiexec flags...] runs
# the test under MPI's launcher with plait forced on and the report requested
# (printed by rank 0 at MPI_Finalize), prints what it wrote, and leaves that
# in $out (and np in $np) for the caller's checks; a failed run ends the
# script, naming SCRIPT.
run_with_report() {
  script=$1 mpiexec=$2 np=$3 exe=$4
  shift 4
  out=$(PLAIT_PMPI=on PLAIT_PMPI_REPORT=1 "$mpiexec" -n "$np" "$@" "$exe" 2>&1)
  status=$?
  printf '%s\n' "$out"
  if [ "$status" -ne 0 ]; then
    echo "$script: the test failed (exit $status)"
    exit 1
  fi
}

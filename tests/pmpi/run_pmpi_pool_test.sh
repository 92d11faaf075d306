#!/bin/sh
# Runs test_pmpi_pool under MPI's launcher with plait forced on and the
# report requested, then checks the report: every MPI_Allreduce served (one
# on MPI_COMM_WORLD, then per communicator one on it and one on an older one
# alive, 1 + 300 + 237 per rank), and of the 301 communicator states per rank 101
# built (MPI_COMM_WORLD's and the first 100 duplicates') and 200 reused from
# the pool (without the pool: 301 built, none reused). Under PLAIT_PMPI_POOL=0
# nothing is pooled: 301 built, none reused. With a pool of n, freeing the
# last 100 leaves n states pooled, their segments mapped: the /dev/shm
# objects mapped once all are freed are those at 100 alive less 100 plus n.
# usage: run_pmpi_pool_test.sh MPIEXEC NP TEST_EXECUTABLE [mpiexec flags...]
set -u
. "$(dirname "$0")/run_with_report.sh"
run_with_report run_pmpi_pool_test "$@"
# The older communicator is the one 37 slots ahead: of the first 100, the first 63 find none yet.
want_served=$((np * (1 + 300 + 300 - 63)))
served=$(printf '%s\n' "$out" | awk '$1 == "MPI_Allreduce" { print $2 }')
passed=$(printf '%s\n' "$out" | awk '$1 == "MPI_Allreduce" { print $5 }')
if [ "${served:-}" != "$want_served" ] || [ "${passed:-}" != 0 ]; then
  echo "run_pmpi_pool_test: MPI_Allreduce shows ${served:-no} served and ${passed:-no} passed calls; expected $want_served served, 0 passed"
  exit 1
fi
kept=${PLAIT_PMPI_POOL:-16}
built=101 reused=200
if [ "$kept" -eq 0 ]; then built=301 reused=0; fi
states=$(printf '%s\n' "$out" | sed -n 's/^communicator states: \([0-9]*\) built, \([0-9]*\) reused from the pool$/\1 \2/p')
if [ "$states" != "$((np * built)) $((np * reused))" ]; then
  echo "run_pmpi_pool_test: the report shows communicator states '${states:-none}' (built, reused); expected $((np * built)) built, $((np * reused)) reused (PLAIT_PMPI_POOL=$kept)"
  exit 1
fi
# Rank 0's mapped /dev/shm objects at 100 alive and once all are freed.
maps=$(printf '%s\n' "$out" | sed -n 's/.*mapped \/dev\/shm objects \([0-9]*\), [0-9]*, \([0-9]*\) (at 100 alive.*/\1 \2/p')
at_100=${maps% *} freed=${maps#* }
pooled=$kept
[ "$pooled" -gt 100 ] && pooled=100
if [ -z "$maps" ] || [ "$freed" -lt $((at_100 - 100 + pooled - 2)) ] || [ "$freed" -gt $((at_100 - 100 + pooled + 2)) ]; then
  echo "run_pmpi_pool_test: rank 0 maps '${maps:-nothing}' /dev/shm objects (at 100 alive, all freed); with $pooled states pooled the second should be the first less $((100 - pooled)), give or take 2"
  exit 1
fi
echo "run_pmpi_pool_test: 300 communicators served on $built states per rank, results right, descriptors and segments bounded, $pooled kept"

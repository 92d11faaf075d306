/* Times each intercepted function through MPI_* (served by libplait_pmpi
 * when PLAIT_PMPI=on) against the same call through PMPI_* (the MPI library
 * itself), interleaved in one run: for each size, `rounds` pairs of batches
 * of `calls` calls, each batch timed as the slowest rank's, and the median
 * of each side printed with their ratio (above 1: plait faster). Not a test:
 * built on request (target pmpi_timing), see docs/pmpi.md.
 *   PLAIT_PMPI=on mpirun -np 2 build/default/tests/pmpi/pmpi_timing [max_bytes] [rounds] [calls] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { allgather, alltoall, allreduce, reduce_scatter_block, functions };
static const char* names[functions] = {"MPI_Allgather", "MPI_Alltoall", "MPI_Allreduce", "MPI_Reduce_scatter_block"};

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* One batch of `calls` calls of function f on n bytes per rank's block, through plait's entry (mine) or PMPI. */
static double batch(int f, int mine, size_t n, int calls, char* send, char* recv, int P) {
  int count = (int)(n / sizeof(float));
  PMPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int c = 0; c < calls; ++c) {
    switch (f) {
      case allgather:
        if (mine)
          MPI_Allgather(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        else
          PMPI_Allgather(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        break;
      case alltoall:
        if (mine)
          MPI_Alltoall(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        else
          PMPI_Alltoall(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        break;
      case allreduce: /* n bytes per block: P blocks of floats in all */
        if (mine)
          MPI_Allreduce(send, recv, count * P, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else
          PMPI_Allreduce(send, recv, count * P, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case reduce_scatter_block:
        if (mine)
          MPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else
          PMPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    }
  }
  double mine_time = (MPI_Wtime() - start) / calls, slowest = 0;
  PMPI_Allreduce(&mine_time, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  size_t max_bytes = argc > 1 ? (size_t)atol(argv[1]) : (size_t)1 << 22;
  int rounds = argc > 2 ? atoi(argv[2]) : 7;
  int calls = argc > 3 ? atoi(argv[3]) : 10;
  char* send = malloc(max_bytes * P);
  char* recv = malloc(max_bytes * P);
  memset(send, 1, max_bytes * P);
  memset(recv, 0, max_bytes * P);
  double* plait_t = malloc(sizeof(double) * rounds);
  double* native_t = malloc(sizeof(double) * rounds);
  if (rank == 0) printf("%-26s %10s %12s %12s %8s\n", "function", "bytes", "plait us", "native us", "ratio");
  for (int f = 0; f < functions; ++f) {
    for (size_t n = 64; n <= max_bytes; n *= 16) {
      batch(f, 1, n, 2, send, recv, P); /* warm-up: plait's state, MPI's connections */
      batch(f, 0, n, 2, send, recv, P);
      for (int r = 0; r < rounds; ++r) {
        plait_t[r] = batch(f, 1, n, calls, send, recv, P);
        native_t[r] = batch(f, 0, n, calls, send, recv, P);
      }
      qsort(plait_t, (size_t)rounds, sizeof(double), compare);
      qsort(native_t, (size_t)rounds, sizeof(double), compare);
      double a = plait_t[rounds / 2] * 1e6, b = native_t[rounds / 2] * 1e6;
      if (rank == 0) printf("%-26s %10zu %12.1f %12.1f %8.2f\n", names[f], n, a, b, b / a);
    }
  }
  free(send);
  free(recv);
  free(plait_t);
  free(native_t);
  MPI_Finalize();
  return 0;
}

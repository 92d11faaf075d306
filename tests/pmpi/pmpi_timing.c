/* Times each intercepted function through MPI_* (served by libplait_pmpi
 * when PLAIT_PMPI=on) against the same call through PMPI_* (the MPI library
 * itself), interleaved in one run: for each size, `rounds` pairs of batches
 * of `calls` calls, each batch timed as the slowest rank's, and the median
 * of each side printed with their ratio (above 1: plait faster). With a
 * fourth argument it is the tuning run: rank 0 appends to that file the
 * tuning table's rows (docs/pmpi.md) for this communicator's shape, plait
 * where it measured at least `margin` times faster at both ends of a size
 * range. Built on request (target pmpi_timing); scripts/tune-pmpi runs it.
 * PMPI_TIMING_ONLY (a comma-separated list of function names) and
 * PMPI_TIMING_MIN_BYTES restrict a run to some rows (benches of one function).
 * PMPI_TIMING_STRIDED=1: MPI_Allgather and MPI_Alltoall receive each block
 * as a vector type, runs of 64 bytes 128 bytes apart (a column block of a
 * matrix two blocks wide), which the library moves as a strided view.
 *   PLAIT_PMPI=on mpirun -np 2 pmpi_timing [max_bytes] [rounds] [calls] [table_file] [margin] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { allgather, allgatherv, alltoall, alltoallv, reduce_scatter_block, reduce_scatter, allreduce, functions };
static const char* names[functions] = {"MPI_Allgather", "MPI_Allgatherv",           "MPI_Alltoall",
                                       "MPI_Alltoallv", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter",
                                       "MPI_Allreduce"};
enum { max_sizes = 32 };

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* The bytes the library's tuning table keys a call on (what every rank
 * agrees on): one block for the even gathers and all-to-alls and for
 * MPI_Reduce_scatter_block, the whole buffer for the v gathers, the
 * reduce-scatter and the all-reduce, nothing for MPI_Alltoallv. */
static size_t agreed_bytes(int f, size_t n, int P) {
  switch (f) {
    case allgather:
    case alltoall:
    case reduce_scatter_block: return n;
    case alltoallv: return 0;
    default: return n * (size_t)P;
  }
}

/* PMPI_TIMING_STRIDED's receive type for the current size, or MPI_DATATYPE_NULL. */
static MPI_Datatype strided_type = MPI_DATATYPE_NULL;

/* One call of f on n bytes per rank's block (floats for reductions), through plait's entry (mine) or PMPI. */
static void call(int f, int mine, size_t n, char* send, char* recv, int P, int* counts, int* displs) {
  int count = (int)(n / sizeof(float));
  int bytes = (int)n;
  if (strided_type != MPI_DATATYPE_NULL && (f == allgather || f == alltoall)) {
    (f == allgather ? (mine ? MPI_Allgather : PMPI_Allgather) : (mine ? MPI_Alltoall : PMPI_Alltoall))(
        send, bytes, MPI_BYTE, recv, 1, strided_type, MPI_COMM_WORLD);
    return;
  }
  for (int i = 0; i < P; ++i) {
    counts[i] = f == reduce_scatter ? count : bytes;
    displs[i] = i * bytes;
  }
  switch (f) {
    case allgather:
      (mine ? MPI_Allgather : PMPI_Allgather)(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
      break;
    case allgatherv:
      (mine ? MPI_Allgatherv : PMPI_Allgatherv)(send, bytes, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
      break;
    case alltoall:
      (mine ? MPI_Alltoall : PMPI_Alltoall)(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
      break;
    case alltoallv:
      (mine ? MPI_Alltoallv : PMPI_Alltoallv)(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE,
                                              MPI_COMM_WORLD);
      break;
    case reduce_scatter_block:
      (mine ? MPI_Reduce_scatter_block : PMPI_Reduce_scatter_block)(send, recv, count, MPI_FLOAT, MPI_SUM,
                                                                    MPI_COMM_WORLD);
      break;
    case reduce_scatter:
      (mine ? MPI_Reduce_scatter : PMPI_Reduce_scatter)(send, recv, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case allreduce: /* n bytes per block: P blocks of floats in all */
      (mine ? MPI_Allreduce : PMPI_Allreduce)(send, recv, count * P, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
  }
}

/* One batch of `calls` calls, timed as the slowest rank's, per call. */
static double batch(int f, int mine, size_t n, int calls, char* send, char* recv, int P, int* counts, int* displs) {
  PMPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int c = 0; c < calls; ++c) call(f, mine, n, send, recv, P, counts, displs);
  double mine_time = (MPI_Wtime() - start) / calls, slowest = 0;
  PMPI_Allreduce(&mine_time, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Nodes as the library counts them: PLAIT_PMPI_RANKS_PER_NODE's emulated ones, else MPI's shared-memory nodes. */
static int node_count(int rank, int P) {
  const char* k = getenv("PLAIT_PMPI_RANKS_PER_NODE");
  if (k != NULL && atoi(k) > 0) return (P + atoi(k) - 1) / atoi(k);
  MPI_Comm node;
  PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0, leaders = 0;
  PMPI_Comm_rank(node, &local);
  int leader = local == 0;
  PMPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Comm_free(&node);
  return leaders;
}

/* The table's rows for f: [agreed(i), agreed(i + 1)) uses plait where sizes
 * i and i + 1 both measured at least `margin` faster; the first range
 * starts at 0, the last has no end; neighbours merge. MPI_Alltoallv has no
 * agreed size: one row from 0, plait only if every size measured faster. */
static void write_rows(FILE* out, int f, const size_t* sizes, const double* ratio, int count, int P, int nodes,
                       double margin) {
  if (f == alltoallv) {
    int all = count > 0;
    for (int i = 0; i < count; ++i) all = all && ratio[i] >= margin;
    if (all) fprintf(out, "%-26s %5d %5d %12d %12s  plait\n", names[f], P, nodes, 0, "-");
    return;
  }
  int open = -1; /* the first size of the range being written, or -1 */
  for (int i = 0; i < count; ++i) {
    int fast = ratio[i] >= margin && (i + 1 == count ? i > 0 && ratio[i - 1] >= margin : ratio[i + 1] >= margin);
    if (fast && open < 0) open = i;
    if ((!fast || i + 1 == count) && open >= 0) {
      size_t from = open == 0 ? 0 : agreed_bytes(f, sizes[open], P);
      int last = fast ? i : i - 1; /* the range ends at the size after `last` */
      if (fast && i + 1 == count) {
        fprintf(out, "%-26s %5d %5d %12zu %12s  plait\n", names[f], P, nodes, from, "-");
      } else {
        fprintf(out, "%-26s %5d %5d %12zu %12zu  plait\n", names[f], P, nodes, from,
                agreed_bytes(f, sizes[last + 1], P));
      }
      open = -1;
    }
  }
}

/* Whether `name` is one of the comma-separated names in `list`. */
static int listed(const char* list, const char* name) {
  size_t length = strlen(name);
  for (const char* p = list; *p != '\0';) {
    const char* end = strchr(p, ',');
    size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    if (n == length && strncmp(p, name, n) == 0) return 1;
    p += n + (end != NULL);
  }
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  size_t max_bytes = argc > 1 ? (size_t)atol(argv[1]) : (size_t)1 << 22;
  int rounds = argc > 2 ? atoi(argv[2]) : 7;
  int calls = argc > 3 ? atoi(argv[3]) : 10;
  const char* table = argc > 4 ? argv[4] : NULL;
  double margin = argc > 5 ? atof(argv[5]) : 1.05;
  int nodes = node_count(rank, P);
  char* send = malloc(max_bytes * P);
  const char* strided_text = getenv("PMPI_TIMING_STRIDED");
  int strided = strided_text != NULL && atoi(strided_text) != 0;
  char* recv = malloc(max_bytes * P * (strided ? 2 : 1));
  int* counts = malloc(sizeof(int) * P);
  int* displs = malloc(sizeof(int) * P);
  memset(send, 1, max_bytes * P);
  memset(recv, 0, max_bytes * P * (strided ? 2 : 1));
  double* plait_t = malloc(sizeof(double) * rounds);
  double* native_t = malloc(sizeof(double) * rounds);
  FILE* out = NULL;
  if (rank == 0 && table != NULL) {
    out = fopen(table, "a");
    if (out == NULL) {
      fprintf(stderr, "pmpi_timing: cannot write %s\n", table);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fprintf(out, "# %d ranks on %d nodes: %d rounds of %d calls, plait where at least %.2fx native\n", P, nodes, rounds,
            calls, margin);
  }
  if (rank == 0)
    printf("%-26s %5s %5s %10s %12s %12s %8s\n", "function", "ranks", "nodes", "bytes", "plait us", "native us",
           "ratio");
  const char* only = getenv("PMPI_TIMING_ONLY");
  const char* min_text = getenv("PMPI_TIMING_MIN_BYTES");
  size_t min_bytes = min_text != NULL ? (size_t)atol(min_text) : 0;
  for (int f = 0; f < functions; ++f) {
    if (only != NULL && !listed(only, names[f])) continue;
    size_t sizes[max_sizes];
    double ratio[max_sizes];
    int count = 0;
    for (size_t n = 64; n <= max_bytes && count < max_sizes; n *= 4) {
      if (n < min_bytes) continue;
      if (strided) {
        if (strided_type != MPI_DATATYPE_NULL) MPI_Type_free(&strided_type);
        MPI_Datatype runs;
        MPI_Type_vector((int)(n / 64), 64, 128, MPI_BYTE, &runs);
        /* Blocks 2n apart: block j's runs are the first 64 of every 128 of its 2n bytes. */
        MPI_Type_create_resized(runs, 0, (MPI_Aint)(2 * n), &strided_type);
        MPI_Type_free(&runs);
        MPI_Type_commit(&strided_type);
      }
      batch(f, 1, n, 2, send, recv, P, counts, displs); /* warm-up: plait's state, MPI's connections */
      batch(f, 0, n, 2, send, recv, P, counts, displs);
      for (int r = 0; r < rounds; ++r) {
        plait_t[r] = batch(f, 1, n, calls, send, recv, P, counts, displs);
        native_t[r] = batch(f, 0, n, calls, send, recv, P, counts, displs);
      }
      qsort(plait_t, (size_t)rounds, sizeof(double), compare);
      qsort(native_t, (size_t)rounds, sizeof(double), compare);
      double a = plait_t[rounds / 2] * 1e6, b = native_t[rounds / 2] * 1e6;
      sizes[count] = n;
      ratio[count++] = b / a;
      if (rank == 0) printf("%-26s %5d %5d %10zu %12.1f %12.1f %8.2f\n", names[f], P, nodes, n, a, b, b / a);
    }
    if (out != NULL) write_rows(out, f, sizes, ratio, count, P, nodes, margin);
  }
  if (out != NULL) fclose(out);
  free(send);
  free(recv);
  free(counts);
  free(displs);
  free(plait_t);
  free(native_t);
  MPI_Finalize();
  return 0;
}

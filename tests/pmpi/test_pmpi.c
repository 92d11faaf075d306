/* Differential test of libplait_pmpi: every intercepted function is called
 * through MPI_* (served by plait when PLAIT_PMPI=on) and the receive
 * buffers, gaps included, must equal byte for byte those of the same call
 * through PMPI_* (the MPI library itself), or for the predefined-op
 * reductions a serial reference computed with PMPI_Reduce_local (integers,
 * and doubles holding small integers, so every order of summation is exact).
 * run_pmpi_test.sh runs it under MPI's launcher with PLAIT_PMPI=on and
 * PLAIT_PMPI_REPORT=1 and checks the report shows every function served, and
 * the one unmapped call passed. Exit status: the number of failed checks on
 * any rank (0: all equal). */
#include <complex.h>
#include <float.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, P, failures;
/* MPI_Allreduce calls made on purpose to pass to PMPI (run_pmpi_test.sh
 * checks the report passed exactly these). */
static int must_pass_allreduces;

static void expect_same(const char* what, const void* got, const void* want, size_t bytes, MPI_Comm comm) {
  int bad = memcmp(got, want, bytes) != 0;
  int any = 0;
  PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
  if (bad) fprintf(stderr, "rank %d: %s differs from the reference\n", rank, what);
  if (any) ++failures;
}

/* Integer content that differs by rank, position and call. */
static int value(int r, int i, int salt) { return (r * 131 + i * 7 + salt * 13) % 97 - 40; }

static void fill_int(int* b, size_t n, int salt) {
  for (size_t i = 0; i < n; ++i) b[i] = value(rank, (int)i, salt);
}

static void test_allgather(MPI_Comm comm) {
  int p, r;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  enum { n = 3 };
  int send[n];
  fill_int(send, n, 1);
  int* got = malloc(sizeof(int) * n * p);
  int* want = malloc(sizeof(int) * n * p);
  MPI_Allgather(send, n, MPI_INT, got, n, MPI_INT, comm);
  PMPI_Allgather(send, n, MPI_INT, want, n, MPI_INT, comm);
  expect_same("MPI_Allgather(MPI_INT)", got, want, sizeof(int) * n * p, comm);

  /* In place: this rank's block already sits in the receive buffer. */
  for (int i = 0; i < n * p; ++i) got[i] = want[i] = (i / n == r) ? send[i % n] : -1;
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, n, MPI_INT, comm);
  PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, want, n, MPI_INT, comm);
  expect_same("MPI_Allgather(MPI_IN_PLACE)", got, want, sizeof(int) * n * p, comm);

  /* Doubles sent as MPI_DOUBLE, received as a strided vector of the same
   * signature (3 doubles every other slot): the receive side is packed. */
  double dsend[n];
  for (int i = 0; i < n; ++i) dsend[i] = send[i] * 0.5;
  MPI_Datatype strided;
  MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &strided);
  MPI_Type_commit(&strided);
  MPI_Aint lb, extent;
  MPI_Type_get_extent(strided, &lb, &extent);
  size_t bytes = (size_t)extent * (size_t)p;
  double* dgot = malloc(bytes);
  double* dwant = malloc(bytes);
  for (size_t i = 0; i < bytes / sizeof(double); ++i) dgot[i] = dwant[i] = -2.0;
  MPI_Allgather(dsend, n, MPI_DOUBLE, dgot, 1, strided, comm);
  PMPI_Allgather(dsend, n, MPI_DOUBLE, dwant, 1, strided, comm);
  expect_same("MPI_Allgather(vector receive type)", dgot, dwant, bytes, comm);
  MPI_Type_free(&strided);
  free(dgot);
  free(dwant);
  free(got);
  free(want);
}

static void test_allgatherv(MPI_Comm comm) {
  int p, r;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  int* counts = malloc(sizeof(int) * p);
  int* displs = malloc(sizeof(int) * p);
  int total = 0;
  for (int i = 0; i < p; ++i) {
    counts[i] = (i * 2 + 1) % 4; /* 1, 3, 1, 3, ...: a zero would come at i = 3/2, so include one */
    if (i == 2) counts[i] = 0;
    displs[i] = total + i * 2 + (r % 2); /* gaps, and a different layout on odd ranks */
    total = displs[i] + counts[i];
  }
  int span = total + 2;
  int* send = malloc(sizeof(int) * (counts[r] + 1));
  fill_int(send, (size_t)counts[r], 2);
  int* got = malloc(sizeof(int) * span);
  int* want = malloc(sizeof(int) * span);
  for (int i = 0; i < span; ++i) got[i] = want[i] = -7;
  MPI_Allgatherv(send, counts[r], MPI_INT, got, counts, displs, MPI_INT, comm);
  PMPI_Allgatherv(send, counts[r], MPI_INT, want, counts, displs, MPI_INT, comm);
  expect_same("MPI_Allgatherv(gapped displacements)", got, want, sizeof(int) * span, comm);

  for (int i = 0; i < span; ++i) got[i] = want[i] = -7;
  for (int i = 0; i < counts[r]; ++i) got[displs[r] + i] = want[displs[r] + i] = send[i];
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, counts, displs, MPI_INT, comm);
  PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, want, counts, displs, MPI_INT, comm);
  expect_same("MPI_Allgatherv(MPI_IN_PLACE, gapped)", got, want, sizeof(int) * span, comm);

  /* Contiguous displacements: received straight into the buffer. */
  total = 0;
  for (int i = 0; i < p; ++i) {
    displs[i] = total;
    total += counts[i];
  }
  short* ssend = malloc(sizeof(short) * (counts[r] + 1));
  for (int i = 0; i < counts[r]; ++i) ssend[i] = (short)send[i];
  short* sgot = calloc((size_t)total + 1, sizeof(short));
  short* swant = calloc((size_t)total + 1, sizeof(short));
  MPI_Allgatherv(ssend, counts[r], MPI_SHORT, sgot, counts, displs, MPI_SHORT, comm);
  PMPI_Allgatherv(ssend, counts[r], MPI_SHORT, swant, counts, displs, MPI_SHORT, comm);
  expect_same("MPI_Allgatherv(MPI_SHORT)", sgot, swant, sizeof(short) * total, comm);
  free(ssend);
  free(sgot);
  free(swant);
  free(send);
  free(got);
  free(want);
  free(counts);
  free(displs);
}

static void test_alltoall(MPI_Comm comm) {
  int p;
  MPI_Comm_size(comm, &p);
  enum { n = 2 };
  int* send = malloc(sizeof(int) * n * p);
  int* got = malloc(sizeof(int) * n * p);
  int* want = malloc(sizeof(int) * n * p);
  fill_int(send, (size_t)(n * p), 3);
  MPI_Alltoall(send, n, MPI_INT, got, n, MPI_INT, comm);
  PMPI_Alltoall(send, n, MPI_INT, want, n, MPI_INT, comm);
  expect_same("MPI_Alltoall(MPI_INT)", got, want, sizeof(int) * n * p, comm);

  memcpy(got, send, sizeof(int) * n * p);
  memcpy(want, send, sizeof(int) * n * p);
  MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, n, MPI_INT, comm);
  PMPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, want, n, MPI_INT, comm);
  expect_same("MPI_Alltoall(MPI_IN_PLACE)", got, want, sizeof(int) * n * p, comm);

  char* csend = malloc((size_t)5 * p);
  char* cgot = malloc((size_t)5 * p);
  char* cwant = malloc((size_t)5 * p);
  for (int i = 0; i < 5 * p; ++i) csend[i] = (char)value(rank, i, 4);
  MPI_Alltoall(csend, 5, MPI_CHAR, cgot, 5, MPI_CHAR, comm);
  PMPI_Alltoall(csend, 5, MPI_CHAR, cwant, 5, MPI_CHAR, comm);
  expect_same("MPI_Alltoall(MPI_CHAR)", cgot, cwant, (size_t)5 * p, comm);
  free(csend);
  free(cgot);
  free(cwant);
  free(send);
  free(got);
  free(want);
}

static void test_alltoallv(MPI_Comm comm) {
  int p, r;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  int *scounts = malloc(sizeof(int) * p), *sdispls = malloc(sizeof(int) * p);
  int *rcounts = malloc(sizeof(int) * p), *rdispls = malloc(sizeof(int) * p);
  int stotal = 0, rtotal = 0;
  for (int j = 0; j < p; ++j) {
    scounts[j] = (r + 2 * j) % 3; /* rank r sends j this many ... */
    rcounts[j] = (j + 2 * r) % 3; /* ... and receives from j what j sends it */
    sdispls[j] = stotal + 1;      /* gaps on both sides */
    stotal = sdispls[j] + scounts[j];
    rdispls[j] = rtotal + (j % 2);
    rtotal = rdispls[j] + rcounts[j];
  }
  int* send = malloc(sizeof(int) * (stotal + 1));
  fill_int(send, (size_t)stotal + 1, 5);
  int* got = malloc(sizeof(int) * (rtotal + 1));
  int* want = malloc(sizeof(int) * (rtotal + 1));
  for (int i = 0; i <= rtotal; ++i) got[i] = want[i] = -9;
  MPI_Alltoallv(send, scounts, sdispls, MPI_INT, got, rcounts, rdispls, MPI_INT, comm);
  PMPI_Alltoallv(send, scounts, sdispls, MPI_INT, want, rcounts, rdispls, MPI_INT, comm);
  expect_same("MPI_Alltoallv(gapped displacements)", got, want, sizeof(int) * (rtotal + 1), comm);

  /* In place: counts must be symmetric (what r sends j equals what j sends r). */
  for (int j = 0; j < p; ++j) rcounts[j] = (r + j) % 3;
  rtotal = 0;
  for (int j = 0; j < p; ++j) {
    rdispls[j] = rtotal + 1;
    rtotal = rdispls[j] + rcounts[j];
  }
  int* igot = malloc(sizeof(int) * (rtotal + 1));
  int* iwant = malloc(sizeof(int) * (rtotal + 1));
  fill_int(igot, (size_t)rtotal + 1, 6);
  memcpy(iwant, igot, sizeof(int) * (rtotal + 1));
  MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, igot, rcounts, rdispls, MPI_INT, comm);
  PMPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, iwant, rcounts, rdispls, MPI_INT, comm);
  expect_same("MPI_Alltoallv(MPI_IN_PLACE)", igot, iwant, sizeof(int) * (rtotal + 1), comm);
  free(igot);
  free(iwant);
  free(send);
  free(got);
  free(want);
  free(scounts);
  free(sdispls);
  free(rcounts);
  free(rdispls);
}

/* One reduction through MPI_Allreduce, MPI_Reduce_scatter_block and
 * MPI_Reduce_scatter, out of place and in place, against PMPI. `make` fills
 * element i of this rank's contribution. */
static void fill_typed(int r, void* buffer, int count, MPI_Datatype type, int salt) {
  for (int i = 0; i < count; ++i) {
    int v = value(r, i, salt);
    if (type == MPI_INT)
      ((int*)buffer)[i] = v;
    else if (type == MPI_UNSIGNED)
      ((unsigned*)buffer)[i] = (unsigned)v * 2654435761u;
    else if (type == MPI_LONG)
      ((long*)buffer)[i] = (long)v * 100000007L;
    else if (type == MPI_UNSIGNED_LONG)
      ((unsigned long*)buffer)[i] = (unsigned long)v * 0x9e3779b97f4a7c15ul;
    else if (type == MPI_LONG_LONG)
      ((long long*)buffer)[i] = (long long)v << 33;
    else if (type == MPI_SHORT)
      ((short*)buffer)[i] = (short)v;
    else if (type == MPI_UNSIGNED_CHAR)
      ((unsigned char*)buffer)[i] = (unsigned char)(v * 37);
    else if (type == MPI_SIGNED_CHAR)
      ((signed char*)buffer)[i] = (signed char)v;
    else if (type == MPI_FLOAT)
      ((float*)buffer)[i] = (float)v;
    else if (type == MPI_DOUBLE)
      ((double*)buffer)[i] = (double)v * 0.25;
    else if (type == MPI_LONG_DOUBLE)
      ((long double*)buffer)[i] = (long double)v * 0.5L;
    else if (type == MPI_C_FLOAT_COMPLEX)
      ((float _Complex*)buffer)[i] = (float)v + (float)(v % 5) * I;
    else if (type == MPI_C_DOUBLE_COMPLEX) /* Gaussian integers: products over 8 ranks stay exact */
      ((double _Complex*)buffer)[i] = (double)(v % 9) + (double)(v % 4) * I;
    else if (type == MPI_C_LONG_DOUBLE_COMPLEX) /* halves: sums exact, products of 8 exact in 64 bits */
      ((long double _Complex*)buffer)[i] = (long double)(v % 7) * 0.5L - (long double)(v % 3) * 0.5L * I;
    else if (type == MPI_C_BOOL)
      ((bool*)buffer)[i] = (v % 3) != 0;
    else if (type == MPI_BYTE)
      ((unsigned char*)buffer)[i] = (unsigned char)(v * 11);
    else
      abort();
  }
}

/* out[i] = in[i] op out[i], in C: MPI's own element-wise ops are no oracle
 * (MPICH 4.0.2's MPI_Reduce_local takes MPI_MAX and MPI_MIN on unsigned types
 * as signed, Open MPI 4.1.4's on MPI_UNSIGNED_LONG too). Integer sums and
 * products wrap, as plait's and MPI's do. */
#define COMBINE(T, ARITHMETIC)                 \
  for (int i = 0; i < count; ++i) {            \
    T x = ((const T*)in)[i], y = ((T*)out)[i]; \
    T z;                                       \
    if (op == MPI_MIN)                         \
      z = x < y ? x : y;                       \
    else if (op == MPI_MAX)                    \
      z = x > y ? x : y;                       \
    else if (op == MPI_LAND)                   \
      z = (T)(x && y);                         \
    else if (op == MPI_LOR)                    \
      z = (T)(x || y);                         \
    else if (op == MPI_LXOR)                   \
      z = (T)(!x != !y);                       \
    else                                       \
      z = ARITHMETIC(T, x, y);                 \
    ((T*)out)[i] = z;                          \
  }
#define INTEGER_ARITHMETIC(T, x, y)                                      \
  (op == MPI_SUM    ? (T)((unsigned long long)x + (unsigned long long)y) \
   : op == MPI_PROD ? (T)((unsigned long long)x * (unsigned long long)y) \
   : op == MPI_BAND ? (T)(x & y)                                         \
   : op == MPI_BOR  ? (T)(x | y)                                         \
   : op == MPI_BXOR ? (T)(x ^ y)                                         \
                    : (T)(abort(), 0))
#define FLOATING_ARITHMETIC(T, x, y) (op == MPI_SUM ? x + y : op == MPI_PROD ? x * y : (T)(abort(), 0))
/* Complex numbers have no order: sums and products only. */
#define COMBINE_COMPLEX(T)                                                           \
  for (int i = 0; i < count; ++i) {                                                  \
    T x = ((const T*)in)[i], y = ((T*)out)[i];                                       \
    ((T*)out)[i] = op == MPI_SUM ? x + y : op == MPI_PROD ? x * y : (T)(abort(), 0); \
  }
static void combine(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op) {
  if (type == MPI_INT)
    COMBINE(int, INTEGER_ARITHMETIC)
  else if (type == MPI_UNSIGNED)
    COMBINE(unsigned, INTEGER_ARITHMETIC)
  else if (type == MPI_LONG)
    COMBINE(long, INTEGER_ARITHMETIC)
  else if (type == MPI_UNSIGNED_LONG)
    COMBINE(unsigned long, INTEGER_ARITHMETIC)
  else if (type == MPI_LONG_LONG)
    COMBINE(long long, INTEGER_ARITHMETIC)
  else if (type == MPI_SHORT)
    COMBINE(short, INTEGER_ARITHMETIC)
  else if (type == MPI_UNSIGNED_CHAR || type == MPI_BYTE)
    COMBINE(unsigned char, INTEGER_ARITHMETIC)
  else if (type == MPI_SIGNED_CHAR)
    COMBINE(signed char, INTEGER_ARITHMETIC)
  else if (type == MPI_C_BOOL) /* 0 or 1 in a byte */
    COMBINE(unsigned char, INTEGER_ARITHMETIC)
  else if (type == MPI_FLOAT)
    COMBINE(float, FLOATING_ARITHMETIC)
  else if (type == MPI_DOUBLE)
    COMBINE(double, FLOATING_ARITHMETIC)
  else if (type == MPI_LONG_DOUBLE)
    COMBINE(long double, FLOATING_ARITHMETIC)
  else if (type == MPI_C_FLOAT_COMPLEX)
    COMBINE_COMPLEX(float _Complex)
  else if (type == MPI_C_DOUBLE_COMPLEX)
    COMBINE_COMPLEX(double _Complex)
  else if (type == MPI_C_LONG_DOUBLE_COMPLEX)
    COMBINE_COMPLEX(long double _Complex)
  else
    abort();
}

/* The reference for a reduction on a communicator of p ranks, computed
 * here: comm rank q's contribution (fill_typed) combined in rank order, the
 * lower rank's on the left. */
static void serial_reduce(void* out, int count, MPI_Datatype type, MPI_Op op, int p, int salt) {
  int size;
  MPI_Type_size(type, &size);
  void* in = malloc((size_t)count * (size_t)size);
  fill_typed(p - 1, out, count, type, salt);
  for (int q = p - 2; q >= 0; --q) {
    fill_typed(q, in, count, type, salt);
    combine(in, out, count, type, op);
  }
  free(in);
}

/* expect_same for buffers of `type`: x87's 80-bit long double leaves 6 bytes
 * of each 16 unspecified, in the reference as in the result, so they are
 * cleared in both first; a complex product's zeros lose their sign. */
static void expect_same_typed(const char* what, void* got, void* want, size_t bytes, MPI_Datatype type, MPI_Comm comm) {
#if LDBL_MANT_DIG == 64
  if ((type == MPI_LONG_DOUBLE || type == MPI_C_LONG_DOUBLE_COMPLEX) && sizeof(long double) == 16) {
    for (size_t at = 10; at < bytes; at += 16) {
      size_t n = bytes - at < 6 ? bytes - at : 6;
      memset((char*)got + at, 0, n);
      memset((char*)want + at, 0, n);
    }
  }
#endif
  /* A zero in a complex product gets its sign from the order of the factors. */
  if (type == MPI_C_DOUBLE_COMPLEX) {
    for (size_t at = 0; at + sizeof(double) <= bytes; at += sizeof(double)) {
      double* x = (double*)((char*)got + at);
      double* y = (double*)((char*)want + at);
      if (*x == 0) *x = 0;
      if (*y == 0) *y = 0;
    }
  }
  if (type == MPI_C_LONG_DOUBLE_COMPLEX) {
    for (size_t at = 0; at + sizeof(long double) <= bytes; at += sizeof(long double)) {
      long double* x = (long double*)((char*)got + at);
      long double* y = (long double*)((char*)want + at);
      if (*x == 0) *x = 0;
      if (*y == 0) *y = 0;
    }
  }
  expect_same(what, got, want, bytes, comm);
}

static void test_reduction(MPI_Comm comm, MPI_Datatype type, MPI_Op op, const char* label) {
  int p, r, size;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  MPI_Type_size(type, &size);
  const int n = 5; /* elements per rank's part */
  int* counts = malloc(sizeof(int) * p);
  int total = 0, offset = 0;
  for (int i = 0; i < p; ++i) total += counts[i] = (i + 1) % 3 + 1;
  for (int i = 0; i < r; ++i) offset += counts[i];
  size_t big = (size_t)(n * p > total ? n * p : total) + 7;
  char *send = malloc(big * size), *got = malloc(big * size), *want = malloc(big * size), *all = malloc(big * size);
  char what[160];
  fill_typed(r, send, (int)big, type, 7);
  serial_reduce(all, (int)big, type, op, p, 7);

  /* MPI_Allreduce over 7 elements (not a multiple of P), out of place and in
   * place; nothing past them may be written. */
  memset(got, 0x5a, big * size);
  memset(want, 0x5a, big * size);
  memcpy(want, all, 7 * (size_t)size);
  MPI_Allreduce(send, got, 7, type, op, comm);
  snprintf(what, sizeof what, "MPI_Allreduce(%s)", label);
  expect_same_typed(what, got, want, big * size, type, comm);
  memcpy(got, send, big * size);
  memcpy(want, send, big * size);
  memcpy(want, all, 7 * (size_t)size);
  MPI_Allreduce(MPI_IN_PLACE, got, 7, type, op, comm);
  snprintf(what, sizeof what, "MPI_Allreduce(MPI_IN_PLACE, %s)", label);
  expect_same_typed(what, got, want, big * size, type, comm);

  memset(got, 0x5a, big * size);
  memset(want, 0x5a, big * size);
  memcpy(want, all + (size_t)(r * n) * size, (size_t)n * size);
  MPI_Reduce_scatter_block(send, got, n, type, op, comm);
  snprintf(what, sizeof what, "MPI_Reduce_scatter_block(%s)", label);
  expect_same_typed(what, got, want, big * size, type, comm);
  memcpy(got, send, big * size);
  memcpy(want, send, big * size);
  memcpy(want, all + (size_t)(r * n) * size, (size_t)n * size);
  MPI_Reduce_scatter_block(MPI_IN_PLACE, got, n, type, op, comm);
  snprintf(what, sizeof what, "MPI_Reduce_scatter_block(MPI_IN_PLACE, %s)", label);
  /* The whole buffer: Open MPI leaves the blocks past the result as they were, and programs
   * check it (mpi4py's test_cco_buf). */
  expect_same_typed(what, got, want, big * size, type, comm);

  memset(got, 0x5a, big * size);
  memset(want, 0x5a, big * size);
  memcpy(want, all + (size_t)offset * size, (size_t)counts[r] * size);
  MPI_Reduce_scatter(send, got, counts, type, op, comm);
  snprintf(what, sizeof what, "MPI_Reduce_scatter(%s)", label);
  expect_same_typed(what, got, want, big * size, type, comm);
  memcpy(got, send, big * size);
  memcpy(want, send, big * size);
  memcpy(want, all + (size_t)offset * size, (size_t)counts[r] * size);
  MPI_Reduce_scatter(MPI_IN_PLACE, got, counts, type, op, comm);
  snprintf(what, sizeof what, "MPI_Reduce_scatter(MPI_IN_PLACE, %s)", label);
  expect_same_typed(what, got, want, big * size, type, comm); /* as above: the rest is left as it was */
  free(send);
  free(got);
  free(want);
  free(all);
  free(counts);
}

/* A commutative user op (served through PMPI_Reduce_local, element by element). */
static void user_max_abs(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  int* a = in;
  int* b = inout;
  /* Of equal magnitudes the larger value, or -5 op 5 would depend on the order. */
  for (int i = 0; i < *len; ++i) b[i] = abs(a[i]) > abs(b[i]) || (abs(a[i]) == abs(b[i]) && a[i] > b[i]) ? a[i] : b[i];
}

/* A non-commutative one: affine maps x -> m x + c composed in rank order
 * (invec, the lower ranks', applied first), on unsigned pairs so that it
 * wraps; any other order gives other numbers. */
static void user_compose(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  unsigned* a = in;
  unsigned* b = inout;
  for (int i = 0; i < *len; ++i) {
    unsigned m = a[2 * i] * b[2 * i], c = a[2 * i + 1] * b[2 * i] + b[2 * i + 1];
    b[2 * i] = m;
    b[2 * i + 1] = c;
  }
}

static void test_user_ops(MPI_Comm comm) {
  int p, r;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  int send[16], got[16], want[16];
  fill_int(send, 16, 9);
  MPI_Op op;
  MPI_Op_create(user_max_abs, 1, &op);
  MPI_Allreduce(send, got, 13, MPI_INT, op, comm);
  PMPI_Allreduce(send, want, 13, MPI_INT, op, comm);
  expect_same("MPI_Allreduce(user op)", got, want, sizeof(int) * 13, comm);
  MPI_Reduce_scatter_block(send, got, 2, MPI_INT, op, comm);
  PMPI_Reduce_scatter_block(send, want, 2, MPI_INT, op, comm);
  expect_same("MPI_Reduce_scatter_block(user op)", got, want, sizeof(int) * 2, comm);
  MPI_Op_free(&op);

  MPI_Datatype affine;
  MPI_Type_contiguous(2, MPI_UNSIGNED, &affine);
  MPI_Type_commit(&affine);
  MPI_Op_create(user_compose, 0, &op);
  unsigned maps[16], mgot[16], mwant[16];
  for (int i = 0; i < 16; ++i) maps[i] = (unsigned)(value(r, i, 10) * 2 + 1);
  MPI_Allreduce(maps, mgot, 7, affine, op, comm);
  PMPI_Allreduce(maps, mwant, 7, affine, op, comm);
  expect_same("MPI_Allreduce(non-commutative user op)", mgot, mwant, sizeof(unsigned) * 14, comm);
  int* counts = malloc(sizeof(int) * p);
  for (int i = 0; i < p; ++i) counts[i] = i % 2 + (p == 1);
  if (p > 8) counts[0] = 0;
  MPI_Reduce_scatter(maps, mgot, counts, affine, op, comm);
  PMPI_Reduce_scatter(maps, mwant, counts, affine, op, comm);
  expect_same("MPI_Reduce_scatter(non-commutative user op)", mgot, mwant, sizeof(unsigned) * 2 * counts[r], comm);
  free(counts);
  MPI_Op_free(&op);
  MPI_Type_free(&affine);
}

/* MPI_MINLOC / MPI_MAXLOC on pair types (ties keep the lower index). */
static void test_pairs(MPI_Comm comm) {
  int r;
  MPI_Comm_rank(comm, &r);
  struct {
    int value, index;
  } isend[6], igot[6], iwant[6];
  struct {
    double value;
    int index;
  } dsend[6], dgot[6], dwant[6];
  memset(igot, 0, sizeof igot);
  memset(iwant, 0, sizeof iwant);
  memset(dgot, 0, sizeof dgot);
  memset(dwant, 0, sizeof dwant);
  for (int i = 0; i < 6; ++i) {
    isend[i].value = value(r, i, 11) % 5; /* few values: ties */
    isend[i].index = r;
    dsend[i].value = value(r, i, 12) * 0.5;
    dsend[i].index = r * 10 + i;
  }
  MPI_Allreduce(isend, igot, 6, MPI_2INT, MPI_MINLOC, comm);
  PMPI_Allreduce(isend, iwant, 6, MPI_2INT, MPI_MINLOC, comm);
  expect_same("MPI_Allreduce(MPI_2INT, MPI_MINLOC)", igot, iwant, sizeof igot, comm);
  for (int i = 0; i < 6; ++i) { /* compare the data, not struct padding */
    dgot[i].index = dwant[i].index = -1;
    dgot[i].value = dwant[i].value = 0;
  }
  MPI_Allreduce(dsend, dgot, 6, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
  PMPI_Allreduce(dsend, dwant, 6, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
  int same = 1;
  for (int i = 0; i < 6; ++i) same = same && dgot[i].value == dwant[i].value && dgot[i].index == dwant[i].index;
  expect_same("MPI_Allreduce(MPI_DOUBLE_INT, MPI_MAXLOC)", &same, &(int){1}, sizeof same, comm);
}

/* The reduce-scatters at sizes where across nodes they go node by node
 * (src/pmpi/node_aware.hpp): uneven counts with zeros among them, and a
 * block of an odd size, out of place and in place, against the serial
 * reference (the doubles hold small integers, so every order sums exactly). */
static void test_reduce_scatter_sizes(MPI_Comm comm, MPI_Datatype type) {
  int p, r, size;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  MPI_Type_size(type, &size);
  int* counts = malloc(sizeof(int) * p);
  int total = 0, offset = 0;
  for (int i = 0; i < p; ++i) total += counts[i] = i % 3 == 1 ? 0 : 300 + 17 * i;
  for (int i = 0; i < r; ++i) offset += counts[i];
  const int block = 257;
  size_t big = (size_t)(block * p > total ? block * p : total);
  char *send = malloc(big * size), *got = malloc(big * size), *want = malloc(big * size), *all = malloc(big * size);
  char what[160];
  const char* label = type == MPI_INT ? "MPI_INT" : "MPI_DOUBLE";
  fill_typed(r, send, (int)big, type, 3);
  serial_reduce(all, (int)big, type, MPI_SUM, p, 3);
  for (int in_place = 0; in_place < 2; ++in_place) {
    memcpy(got, send, big * size);
    memcpy(want, send, big * size); /* past the result, recvbuf is left as it was */
    memcpy(want, all + (size_t)offset * size, (size_t)counts[r] * size);
    MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : send, got, counts, type, MPI_SUM, comm);
    snprintf(what, sizeof what, "MPI_Reduce_scatter(%s%s, MPI_SUM, uneven counts)", in_place ? "MPI_IN_PLACE, " : "",
             label);
    expect_same(what, got, want, big * size, comm);
    memcpy(got, send, big * size);
    memcpy(want, send, big * size);
    memcpy(want, all + (size_t)(r * block) * size, (size_t)block * size);
    MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, got, block, type, MPI_SUM, comm);
    snprintf(what, sizeof what, "MPI_Reduce_scatter_block(%s%s, MPI_SUM, %d)", in_place ? "MPI_IN_PLACE, " : "", label,
             block);
    expect_same(what, got, want, big * size, comm);
  }
  free(send);
  free(got);
  free(want);
  free(all);
  free(counts);
}

/* MPI_LONG_DOUBLE_INT (a long double and an int, 32 bytes with padding),
 * served as plait::value_index<long double> where a long double fills 16
 * bytes: MPI_MAXLOC with every rank tied on one element, and MPI_MINLOC in
 * place. Values and indices are compared, not the padding. */
static void test_long_double_pairs(MPI_Comm comm) {
  struct pair {
    long double value;
    int index;
  } send[5], got[5], want[5];
  for (int i = 0; i < 5; ++i) {
    send[i].value = i == 1 ? 2.0L : (long double)(value(rank, i, 13) % 7) * 0.25L;
    send[i].index = rank * 10 + i;
  }
  MPI_Allreduce(send, got, 5, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, comm);
  PMPI_Allreduce(send, want, 5, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, comm);
  int same = 1;
  for (int i = 0; i < 5; ++i) same = same && got[i].value == want[i].value && got[i].index == want[i].index;
  expect_same("MPI_Allreduce(MPI_LONG_DOUBLE_INT, MPI_MAXLOC)", &same, &(int){1}, sizeof same, comm);
  memcpy(got, send, sizeof got);
  MPI_Allreduce(MPI_IN_PLACE, got, 5, MPI_LONG_DOUBLE_INT, MPI_MINLOC, comm);
  PMPI_Allreduce(send, want, 5, MPI_LONG_DOUBLE_INT, MPI_MINLOC, comm);
  same = 1;
  for (int i = 0; i < 5; ++i) same = same && got[i].value == want[i].value && got[i].index == want[i].index;
  expect_same("MPI_Allreduce(MPI_IN_PLACE, MPI_LONG_DOUBLE_INT, MPI_MINLOC)", &same, &(int){1}, sizeof same, comm);
}

/* What passes to PMPI must still be right: a user op on 40-byte elements
 * (five doubles), wider than any element a user op is served on. */
static void user_sum_doubles(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  const double* a = in;
  double* b = inout;
  for (int i = 0; i < *len * 5; ++i) b[i] += a[i];
}
static void test_passed(MPI_Comm comm) {
  MPI_Datatype five;
  MPI_Type_contiguous(5, MPI_DOUBLE, &five);
  MPI_Type_commit(&five);
  MPI_Op op;
  MPI_Op_create(user_sum_doubles, 1, &op);
  double send[10], got[10], want[10];
  for (int i = 0; i < 10; ++i) send[i] = value(rank, i, 14) * 0.5; /* halves: exact in any order */
  MPI_Allreduce(send, got, 2, five, op, comm);
  ++must_pass_allreduces;
  PMPI_Allreduce(send, want, 10, MPI_DOUBLE, MPI_SUM, comm);
  expect_same("MPI_Allreduce(user op on 40-byte elements), passed", got, want, sizeof got, comm);
  MPI_Op_free(&op);
  MPI_Type_free(&five);
}

static void test_reductions(MPI_Comm comm) {
  test_reduction(comm, MPI_INT, MPI_SUM, "MPI_INT, MPI_SUM");
  test_reduction(comm, MPI_INT, MPI_PROD, "MPI_INT, MPI_PROD");
  test_reduction(comm, MPI_INT, MPI_MIN, "MPI_INT, MPI_MIN");
  test_reduction(comm, MPI_INT, MPI_MAX, "MPI_INT, MPI_MAX");
  test_reduction(comm, MPI_INT, MPI_LAND, "MPI_INT, MPI_LAND");
  test_reduction(comm, MPI_INT, MPI_LXOR, "MPI_INT, MPI_LXOR");
  test_reduction(comm, MPI_UNSIGNED, MPI_BXOR, "MPI_UNSIGNED, MPI_BXOR");
  test_reduction(comm, MPI_UNSIGNED, MPI_MAX, "MPI_UNSIGNED, MPI_MAX");
  test_reduction(comm, MPI_UNSIGNED_LONG, MPI_MAX,
                 "MPI_UNSIGNED_LONG, MPI_MAX"); /* MPI's own is wrong at P >= 3, both MPIs */
  test_reduction(comm, MPI_LONG, MPI_SUM, "MPI_LONG, MPI_SUM");
  test_reduction(comm, MPI_LONG_LONG, MPI_MIN, "MPI_LONG_LONG, MPI_MIN");
  test_reduction(comm, MPI_SHORT, MPI_SUM, "MPI_SHORT, MPI_SUM");
  test_reduction(comm, MPI_SIGNED_CHAR, MPI_MAX, "MPI_SIGNED_CHAR, MPI_MAX");
  test_reduction(comm, MPI_UNSIGNED_CHAR, MPI_BAND, "MPI_UNSIGNED_CHAR, MPI_BAND");
  test_reduction(comm, MPI_BYTE, MPI_BOR, "MPI_BYTE, MPI_BOR");
  test_reduction(comm, MPI_C_BOOL, MPI_LOR, "MPI_C_BOOL, MPI_LOR");
  test_reduction(comm, MPI_FLOAT, MPI_SUM, "MPI_FLOAT, MPI_SUM");
  test_reduction(comm, MPI_DOUBLE, MPI_SUM, "MPI_DOUBLE, MPI_SUM");
  test_reduction(comm, MPI_DOUBLE, MPI_MIN, "MPI_DOUBLE, MPI_MIN");
  test_reduction(comm, MPI_LONG_DOUBLE, MPI_SUM, "MPI_LONG_DOUBLE, MPI_SUM");
  test_reduction(comm, MPI_LONG_DOUBLE, MPI_MAX, "MPI_LONG_DOUBLE, MPI_MAX");
  test_reduction(comm, MPI_C_FLOAT_COMPLEX, MPI_SUM, "MPI_C_FLOAT_COMPLEX, MPI_SUM");
  test_reduction(comm, MPI_C_DOUBLE_COMPLEX, MPI_PROD, "MPI_C_DOUBLE_COMPLEX, MPI_PROD");
  test_reduction(comm, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, "MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM");
  test_reduction(comm, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, "MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD");
  test_reduce_scatter_sizes(comm, MPI_INT);
  test_reduce_scatter_sizes(comm, MPI_DOUBLE);

  /* A contiguous derived type: two ints per element, summed as ints (Open
   * MPI itself refuses predefined ops on derived types, so the reference is
   * the same data as eight MPI_INTs). */
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  int send[8], got[8], want[8];
  fill_int(send, 8, 8);
  MPI_Allreduce(send, got, 4, pair, MPI_SUM, comm);
  PMPI_Allreduce(send, want, 8, MPI_INT, MPI_SUM, comm);
  expect_same("MPI_Allreduce(contiguous(2, MPI_INT), MPI_SUM)", got, want, sizeof got, comm);
  MPI_Type_free(&pair);

  test_user_ops(comm);
  test_pairs(comm);
  test_long_double_pairs(comm);
  test_passed(comm);
}

/* MPI's error semantics for a served call: every rank passes counts whose
 * signatures disagree (an erroneous program, alike on every rank, so plait
 * refuses it on each before any byte moves). Under MPI_ERRORS_RETURN the
 * call returns a code of the library's own error class, whose string names
 * the library, and the communicator stays usable. Served calls only: MPI
 * itself need not detect this. */
static void test_errors(MPI_Comm comm) {
  const char* forced = getenv("PLAIT_PMPI");
  if (forced == NULL || strcmp(forced, "on") != 0) return;
  MPI_Comm c;
  MPI_Comm_dup(comm, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int p;
  MPI_Comm_size(c, &p);
  int send[2] = {1, 2};
  int* recv = malloc(sizeof(int) * 3 * p);
  int rc = MPI_Allgather(send, 2, MPI_INT, recv, 3, MPI_INT, c);
  int error_class = MPI_SUCCESS, length = 0;
  char text[MPI_MAX_ERROR_STRING] = "";
  if (rc != MPI_SUCCESS) {
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, text, &length);
  }
  int ok = rc != MPI_SUCCESS && error_class > MPI_ERR_LASTCODE && strncmp(text, "plait_pmpi: ", 12) == 0;
  if (!ok)
    fprintf(stderr, "rank %d: mismatched MPI_Allgather returned %d, class %d, '%s'\n", rank, rc, error_class, text);
  int sum = 0, one = 1;
  ok = ok && MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c) == MPI_SUCCESS && sum == p;
  expect_same("MPI_Allgather error through the communicator's handler", &ok, &(int){1}, sizeof ok, comm);
  free(recv);
  MPI_Comm_free(&c);
}

/* Zero counts everywhere: served, and nothing is written. */
static void test_empty(MPI_Comm comm) {
  int p;
  MPI_Comm_size(comm, &p);
  int one[1] = {5}, got[1] = {-1};
  int* zeros = calloc((size_t)p, sizeof(int));
  MPI_Allgather(one, 0, MPI_INT, got, 0, MPI_INT, comm);
  MPI_Allgatherv(one, 0, MPI_INT, got, zeros, zeros, MPI_INT, comm);
  MPI_Alltoall(one, 0, MPI_INT, got, 0, MPI_INT, comm);
  MPI_Alltoallv(one, zeros, zeros, MPI_INT, got, zeros, zeros, MPI_INT, comm);
  MPI_Allreduce(one, got, 0, MPI_INT, MPI_SUM, comm);
  MPI_Reduce_scatter_block(one, got, 0, MPI_INT, MPI_SUM, comm);
  MPI_Reduce_scatter(one, got, zeros, MPI_INT, MPI_SUM, comm);
  expect_same("zero-count calls leave the buffer alone", got, &(int){-1}, sizeof got, comm);
  free(zeros);
}

/* A freed communicator's handle may name the next one made, of other ranks:
 * the library remembers the last communicator it served on (src/pmpi/state.cpp,
 * known_state), and must not serve the new one on the old one's state.
 * Alternates duplicates of MPI_COMM_WORLD and splits of it into odd and even
 * ranks, each freed before the next is made, and checks each sum against the
 * ranks that communicator holds. */
static void test_reused_handles(void) {
  for (int i = 0; i < 8; ++i) {
    MPI_Comm c;
    if (i % 2 == 0) {
      MPI_Comm_dup(MPI_COMM_WORLD, &c);
    } else {
      MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
    }
    int size = 0, mine[2] = {1, rank}, sums[2] = {0, 0}, want[2] = {0, 0};
    MPI_Comm_size(c, &size);
    MPI_Allreduce(mine, sums, 2, MPI_INT, MPI_SUM, c);
    for (int r = 0; r < P; ++r) {
      if (i % 2 == 0 || r % 2 == rank % 2) want[0] += 1, want[1] += r;
    }
    int bad = sums[0] != size || sums[0] != want[0] || sums[1] != want[1], any = 0;
    if (bad) {
      fprintf(
          stderr,
          "rank %d: MPI_Allreduce on a communicator made after another was freed summed %d ranks (%d), not %d (%d)\n",
          rank, sums[0], sums[1], want[0], want[1]);
    }
    PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) ++failures;
    MPI_Comm_free(&c);
  }
}

static void test_all(MPI_Comm comm) {
  test_empty(comm);
  test_allgather(comm);
  test_allgatherv(comm);
  test_alltoall(comm);
  test_alltoallv(comm);
  test_reductions(comm);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  test_all(MPI_COMM_WORLD);
  test_errors(MPI_COMM_WORLD);

  /* A split and a duplicate get their own state, freed with them. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
  test_all(half);
  MPI_Comm dup;
  MPI_Comm_dup(half, &dup);
  test_allgather(dup);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&half);
  test_reused_handles();

  int any = 0;
  PMPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int must_pass = 0;
  PMPI_Allreduce(&must_pass_allreduces, &must_pass, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("test_pmpi: %d MPI_Allreduce calls must pass\n", must_pass);
  if (rank == 0) printf("test_pmpi: %d ranks, %d failed check(s)\n", P, any);
  fflush(stdout); /* out before the report MPI_Finalize writes */
  MPI_Finalize();
  return any == 0 ? 0 : 1;
}

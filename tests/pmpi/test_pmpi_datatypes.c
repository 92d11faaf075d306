/* Derived datatypes with gaps through MPI_Allgather(v) and
 * MPI_Alltoall(v): every call goes through MPI_* (served by plait) and
 * through PMPI_* (the MPI library itself) on the same data, and the
 * receive buffers, gaps included, must be equal byte for byte. The
 * datatypes are the ones plait moves as strided views without packing
 * (vector, hvector, subarray in C and Fortran order, resized, nested, a
 * named type with padding), with send and receive types of one signature
 * but different shapes, in place, different datatypes on different ranks,
 * the v calls with blocks in rank order (views) and with gaps between
 * blocks (packed), and the ones it still packs (indexed, struct), on
 * MPI_COMM_WORLD and on halves of it. Rank 0 prints how many calls, summed
 * over ranks, should have been moved as views on each where it lies on one
 * node: run_pmpi_datatypes_test.sh compares that with the report. Exit
 * status: nonzero if any check failed on any rank. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, failures, views_expected;

/* Bytes that differ by rank, position and call: gaps keep the fill. */
static void fill(void* buffer, size_t bytes, int salt) {
  unsigned char* b = buffer;
  for (size_t i = 0; i < bytes; ++i) b[i] = (unsigned char)((rank * 131 + (int)i * 7 + salt * 13) % 251);
}

static void expect_same(const char* what, const void* got, const void* want, size_t bytes, MPI_Comm comm) {
  int bad = memcmp(got, want, bytes) != 0;
  int any = 0;
  PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
  if (bad) fprintf(stderr, "rank %d: %s differs from MPI's own\n", rank, what);
  if (any) ++failures;
}

/* Bytes from a buffer's start to the end of the data of n elements of
 * `type` (all the types here start at or after their buffer), plus a
 * margin the calls must leave alone. */
static size_t span_of(MPI_Datatype type, size_t n) {
  if (type == MPI_DATATYPE_NULL || n == 0) return 64; /* in place: no send type */
  MPI_Aint lb, extent, true_lb, true_extent;
  MPI_Type_get_extent(type, &lb, &extent);
  MPI_Type_get_true_extent(type, &true_lb, &true_extent);
  return (n - 1) * (size_t)extent + (size_t)(true_lb + true_extent) + 64;
}

enum function { allgather, allgatherv, alltoall, alltoallv };

/* One call's arguments but its buffers (in_place: MPI_IN_PLACE as sendbuf,
 * and for MPI_Alltoallv nothing else of the send side). */
struct call {
  enum function function;
  int scount;
  const int *scounts, *sdispls;
  MPI_Datatype stype;
  int rcount;
  const int *rcounts, *rdispls;
  MPI_Datatype rtype;
  int in_place;
};

/* Makes the call through MPI_* (mine, served by plait) or PMPI_*. */
static void make(const struct call* c, int mine, const void* send, void* recv, MPI_Comm comm) {
  const void* from = c->in_place ? MPI_IN_PLACE : send;
  switch (c->function) {
    case allgather:
      (mine ? MPI_Allgather : PMPI_Allgather)(from, c->scount, c->stype, recv, c->rcount, c->rtype, comm);
      break;
    case allgatherv:
      (mine ? MPI_Allgatherv : PMPI_Allgatherv)(from, c->scount, c->stype, recv, c->rcounts, c->rdispls, c->rtype,
                                                comm);
      break;
    case alltoall:
      (mine ? MPI_Alltoall : PMPI_Alltoall)(from, c->scount, c->stype, recv, c->rcount, c->rtype, comm);
      break;
    case alltoallv:
      (mine ? MPI_Alltoallv : PMPI_Alltoallv)(from, c->scounts, c->sdispls, c->stype, recv, c->rcounts, c->rdispls,
                                              c->rtype, comm);
      break;
  }
}

/* The elements a v call's buffer reaches: the furthest displs[i] + counts[i]. */
static size_t reach_of(const int* counts, const int* displs, int p) {
  size_t reach = 0;
  for (int i = 0; i < p; ++i) {
    if (counts[i] > 0 && (size_t)(displs[i] + counts[i]) > reach) reach = (size_t)(displs[i] + counts[i]);
  }
  return reach;
}

/* A v call's elements received: the sum of its counts. */
static size_t sum_of(const int* counts, int p) {
  size_t sum = 0;
  for (int i = 0; i < p; ++i) sum += (size_t)counts[i];
  return sum;
}

/* The library's PLAIT_PMPI_VIEWS_FROM: the smallest receive payload moved as views. */
static size_t views_from(void) {
  const char* b = getenv("PLAIT_PMPI_VIEWS_FROM");
  return b != NULL && *b != '\0' ? (size_t)atoll(b) : 4096;
}

/* Makes the call served and native on the same data and compares the
 * receive buffers, gaps included. `view`: whether plait should move it as
 * views, where this rank's receive payload is at least views_from() (a
 * rank that receives nothing takes the byte path, which does nothing). In
 * place, this rank's block is already in the receive buffer. */
static void check(const char* what, struct call c, int view, MPI_Comm comm) {
  int p;
  MPI_Comm_size(comm, &p);
  size_t sends = 0, receives = 0, received = 0; /* elements each buffer reaches; elements received */
  switch (c.function) {
    case allgather:
      sends = (size_t)c.scount;
      receives = received = (size_t)c.rcount * (size_t)p;
      break;
    case alltoall:
      sends = (size_t)c.scount * (size_t)p;
      receives = received = (size_t)c.rcount * (size_t)p;
      break;
    case allgatherv:
    case alltoallv:
      sends = c.function == allgatherv ? (size_t)c.scount : c.in_place ? 0 : reach_of(c.scounts, c.sdispls, p);
      receives = reach_of(c.rcounts, c.rdispls, p);
      received = sum_of(c.rcounts, p);
      break;
  }
  int type_size = 0;
  MPI_Type_size(c.rtype, &type_size);
  const size_t payload = received * (size_t)type_size;
  view = view && payload > 0 && payload >= views_from();
  size_t sbytes = span_of(c.in_place ? MPI_DATATYPE_NULL : c.stype, sends);
  size_t rbytes = span_of(c.rtype, receives);
  char* send = malloc(sbytes);
  char* got = malloc(rbytes);
  char* want = malloc(rbytes);
  fill(send, sbytes, 1 + (int)c.function);
  fill(got, rbytes, 5 + (int)c.function);
  memcpy(want, got, rbytes);
  make(&c, 1, send, got, comm);
  make(&c, 0, send, want, comm);
  expect_same(what, got, want, rbytes, comm);
  views_expected += view;
  free(send);
  free(got);
  free(want);
}

/* The even calls: scount x stype and rcount x rtype per rank. */
static void check_allgather(const char* what, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype,
                            int in_place, int view, MPI_Comm comm) {
  check(what, (struct call){allgather, scount, NULL, NULL, stype, rcount, NULL, NULL, rtype, in_place}, view, comm);
}
static void check_alltoall(const char* what, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype,
                           int in_place, int view, MPI_Comm comm) {
  check(what, (struct call){alltoall, scount, NULL, NULL, stype, rcount, NULL, NULL, rtype, in_place}, view, comm);
}

/* The v calls. */
static void check_allgatherv(const char* what, int scount, MPI_Datatype stype, const int* rcounts, const int* displs,
                             MPI_Datatype rtype, int in_place, int view, MPI_Comm comm) {
  check(what, (struct call){allgatherv, scount, NULL, NULL, stype, 0, rcounts, displs, rtype, in_place}, view, comm);
}
static void check_alltoallv(const char* what, const int* scounts, const int* sdispls, MPI_Datatype stype,
                            const int* rcounts, const int* rdispls, MPI_Datatype rtype, int in_place, int view,
                            MPI_Comm comm) {
  check(what, (struct call){alltoallv, 0, scounts, sdispls, stype, 0, rcounts, rdispls, rtype, in_place}, view, comm);
}

/* Prefix sums of counts into displs, each count times `scale`, with `gap`
 * elements before each block (so a gap is before every block that moves
 * something, and blocks are out of rank order unless gap is 0). */
static void lay_out(const int* counts, int* scaled, int* displs, int p, int scale, int gap) {
  int at = 0;
  for (int i = 0; i < p; ++i) {
    scaled[i] = counts[i] * scale;
    displs[i] = at + gap;
    at = displs[i] + scaled[i];
  }
}

static MPI_Datatype committed(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

/* Reductions on derived datatypes of one predefined type: MPI_Allreduce,
 * MPI_Reduce_scatter_block and MPI_Reduce_scatter, out of place and in
 * place, MPI_SUM. Open MPI's predefined ops refuse derived types, so the
 * oracle is MPI's datatype engine instead: each rank's data are small
 * integers (exact in doubles in any order) unpacked into the type's layout
 * from a contiguous array (MPI_Pack of `base`, MPI_Unpack of `type`: one
 * signature), the buffers' gaps hold a fill, and the expected buffer is the
 * fill with the rank-order sums unpacked into the data; the whole buffer is
 * compared, gaps included. The library packs them all (as views they
 * measured slower from 256 KiB: src/pmpi/reduction_buffers.hpp), so none
 * counts as moved as views. */
enum reduction_function { allreduce, reduce_scatter_block, reduce_scatter };

/* Moves `n` values of `base` between a contiguous array and `count`
 * elements of `type` at `buffer` (to_type: into the buffer). */
static void convert(void* values, int n, MPI_Datatype base, void* buffer, int count, MPI_Datatype type, int to_type) {
  int size = 0;
  MPI_Pack_size(n, base, MPI_COMM_SELF, &size);
  char* packed = malloc((size_t)size + 1);
  int at = 0;
  if (to_type) {
    MPI_Pack(values, n, base, packed, size, &at, MPI_COMM_SELF);
    at = 0;
    MPI_Unpack(packed, size, &at, buffer, count, type, MPI_COMM_SELF);
  } else {
    MPI_Pack(buffer, count, type, packed, size, &at, MPI_COMM_SELF);
    at = 0;
    MPI_Unpack(packed, size, &at, values, n, base, MPI_COMM_SELF);
  }
  free(packed);
}

/* Value i of rank q's contribution, and its sum over p ranks. */
static double term(int q, int i) { return (double)((q + 1) * 7 + i % 50); }
static double total(int p, int i) {
  double t = 0;
  for (int q = 0; q < p; ++q) t += term(q, i);
  return t;
}

static void set_values(int n, MPI_Datatype base, void* buffer, int count, MPI_Datatype type, int q, int p, int first) {
  double* d = malloc(sizeof(double) * (size_t)(n + 1));
  int* k = malloc(sizeof(int) * (size_t)(n + 1));
  for (int i = 0; i < n; ++i) {
    d[i] = q < 0 ? total(p, first + i) : term(q, first + i);
    k[i] = (int)d[i];
  }
  convert(base == MPI_DOUBLE ? (void*)d : (void*)k, n, base, buffer, count, type, 1);
  free(d);
  free(k);
}

static void check_reduction(const char* what, enum reduction_function f, MPI_Datatype type, MPI_Datatype base,
                            int in_place, MPI_Comm comm) {
  int p, r, type_size, base_size;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  MPI_Type_size(type, &type_size);
  MPI_Type_size(base, &base_size);
  const int per = type_size / base_size; /* base values per element */
  int* counts = malloc(sizeof(int) * (size_t)p);
  int in_count = 0, out_count = 0, first = 0; /* elements read, written; this rank's first element */
  for (int i = 0; i < p; ++i) counts[i] = f == allreduce ? 3 : f == reduce_scatter_block ? 2 : i % 3;
  for (int i = 0; i < p; ++i) {
    in_count += counts[i];
    if (i < r) first += counts[i];
  }
  if (f == allreduce) in_count = 3, first = 0;
  out_count = counts[r];
  const size_t bytes = span_of(type, (size_t)in_count);
  char* send = malloc(bytes);
  char* got = malloc(bytes);
  char* want = malloc(bytes);
  fill(send, bytes, 21 + (int)f);
  set_values(in_count * per, base, send, in_count, type, r, p, 0);
  if (in_place) {
    memcpy(got, send, bytes);
  } else {
    fill(got, bytes, 31 + (int)f);
  }
  memcpy(want, got, bytes);
  set_values(out_count * per, base, want, out_count, type, -1, p, first * per);
  const void* from = in_place ? MPI_IN_PLACE : send;
  switch (f) {
    case allreduce: MPI_Allreduce(from, got, 3, type, MPI_SUM, comm); break;
    case reduce_scatter_block: MPI_Reduce_scatter_block(from, got, 2, type, MPI_SUM, comm); break;
    case reduce_scatter: MPI_Reduce_scatter(from, got, counts, type, MPI_SUM, comm); break;
  }
  char label[200];
  snprintf(label, sizeof label, "%s%s", what, in_place ? " in place" : "");
  expect_same(label, got, want, bytes, comm);
  free(send);
  free(got);
  free(want);
  free(counts);
}

/* A user op on a struct with a hole: the library passes it to MPI. */
struct int_double {
  int i;
  double d;
};
static void add_int_doubles(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  struct int_double* a = in;
  struct int_double* b = inout;
  for (int k = 0; k < *len; ++k) {
    b[k].i += a[k].i;
    b[k].d += a[k].d;
  }
}

static void test_reductions(MPI_Comm comm) {
  int p, r;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  /* Boxes (vector, subarray, resized), of 48 B and of 8 KiB an element. */
  MPI_Datatype doubles_3x2;
  MPI_Type_vector(3, 2, 3, MPI_DOUBLE, &doubles_3x2); /* 3 runs of 2 doubles, 3 apart */
  doubles_3x2 = committed(doubles_3x2);
  MPI_Datatype long_vector;
  MPI_Type_vector(512, 2, 3, MPI_DOUBLE, &long_vector); /* 8 KiB of data an element */
  long_vector = committed(long_vector);
  MPI_Datatype interior;
  const int sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
  MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &interior);
  interior = committed(interior);
  MPI_Datatype spaced;
  MPI_Type_create_resized(MPI_INT, 0, 12, &spaced); /* an int every 12 bytes */
  spaced = committed(spaced);
  /* Ints 6 bytes apart (not whole ints), an indexed type (no box). */
  MPI_Datatype two_ints_6_apart;
  MPI_Type_create_hvector(2, 1, 6, MPI_INT, &two_ints_6_apart);
  two_ints_6_apart = committed(two_ints_6_apart);
  /* No gaps, but its data starts 4 bytes into each element: read there. */
  MPI_Datatype middle, shifted;
  const int whole[1] = {4}, part[1] = {2}, from[1] = {1};
  MPI_Type_create_subarray(1, whole, part, from, MPI_ORDER_C, MPI_INT, &middle);
  MPI_Type_create_resized(middle, 4, 8, &shifted);
  shifted = committed(shifted);
  MPI_Type_free(&middle);
  MPI_Datatype indexed;
  const int lengths[2] = {2, 1}, displacements[2] = {0, 3};
  MPI_Type_indexed(2, lengths, displacements, MPI_INT, &indexed);
  indexed = committed(indexed);

  const struct {
    const char* name;
    MPI_Datatype type, base;
  } types[] = {{"vector of doubles", doubles_3x2, MPI_DOUBLE},    {"long vector of doubles", long_vector, MPI_DOUBLE},
               {"subarray of ints", interior, MPI_INT},           {"resized int", spaced, MPI_INT},
               {"ints 6 bytes apart", two_ints_6_apart, MPI_INT}, {"indexed ints", indexed, MPI_INT},
               {"two ints 4 bytes in", shifted, MPI_INT}};
  const char* names[] = {"MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter"};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    for (int f = allreduce; f <= reduce_scatter; ++f) {
      for (int in_place = 0; in_place < 2; ++in_place) {
        char what[160];
        snprintf(what, sizeof what, "%s(%s)", names[f], types[t].name);
        check_reduction(what, (enum reduction_function)f, types[t].type, types[t].base, in_place, comm);
      }
    }
  }

  /* A struct with a hole under a user op passes through, as MPI's own. */
  MPI_Datatype pair;
  const int ones[2] = {1, 1};
  const MPI_Aint at[2] = {offsetof(struct int_double, i), offsetof(struct int_double, d)};
  const MPI_Datatype members[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Type_create_struct(2, ones, at, members, &pair);
  pair = committed(pair);
  MPI_Op add;
  MPI_Op_create(add_int_doubles, 1, &add);
  struct int_double mine[3], got[3], want[3];
  for (int k = 0; k < 3; ++k) mine[k] = (struct int_double){r + k, 0.5 * (r + k)};
  memset(got, 0, sizeof got);
  memset(want, 0, sizeof want);
  MPI_Allreduce(mine, got, 3, pair, add, comm);
  PMPI_Allreduce(mine, want, 3, pair, add, comm);
  expect_same("MPI_Allreduce(struct with a hole, user op)", got, want, sizeof got, comm);
  MPI_Op_free(&add);
  MPI_Type_free(&pair);
  MPI_Type_free(&doubles_3x2);
  MPI_Type_free(&long_vector);
  MPI_Type_free(&interior);
  MPI_Type_free(&spaced);
  MPI_Type_free(&two_ints_6_apart);
  MPI_Type_free(&indexed);
  MPI_Type_free(&shifted);
}

static void test_all(MPI_Comm comm) {
  int p;
  MPI_Comm_size(comm, &p);
  /* 3 blocks of 2 ints, 5 ints apart. */
  MPI_Datatype vector;
  MPI_Type_vector(3, 2, 5, MPI_INT, &vector);
  vector = committed(vector);
  check_allgather("allgather: vector to vector", 1, vector, 1, vector, 0, 1, comm);
  check_allgather("allgather: ints to vector", 6, MPI_INT, 1, vector, 0, 1, comm);
  check_allgather("allgather: vector to ints", 2, vector, 12, MPI_INT, 0, 1, comm);
  check_allgather("allgather: vector in place", 0, MPI_DATATYPE_NULL, 2, vector, 1, 1, comm);
  check_alltoall("alltoall: vector to vector", 1, vector, 1, vector, 0, 1, comm);
  check_alltoall("alltoall: ints to vector", 6, MPI_INT, 1, vector, 0, 1, comm);
  check_alltoall("alltoall: vector to ints", 2, vector, 12, MPI_INT, 0, 1, comm);
  check_alltoall("alltoall: vector in place", 0, MPI_DATATYPE_NULL, 2, vector, 1, 1, comm);

  /* A 2 x 2 x 3 box of doubles at (1, 0, 2) in a 4 x 3 x 5 array, C order;
   * a 3 x 2 box of ints at (1, 1) in a 5 x 4 array, Fortran order. */
  MPI_Datatype sub_c, sub_f;
  int sizes_c[3] = {4, 3, 5}, subsizes_c[3] = {2, 2, 3}, starts_c[3] = {1, 0, 2};
  MPI_Type_create_subarray(3, sizes_c, subsizes_c, starts_c, MPI_ORDER_C, MPI_DOUBLE, &sub_c);
  sub_c = committed(sub_c);
  int sizes_f[2] = {5, 4}, subsizes_f[2] = {3, 2}, starts_f[2] = {1, 1};
  MPI_Type_create_subarray(2, sizes_f, subsizes_f, starts_f, MPI_ORDER_FORTRAN, MPI_INT, &sub_f);
  sub_f = committed(sub_f);
  check_allgather("allgather: doubles to C subarray", 12, MPI_DOUBLE, 1, sub_c, 0, 1, comm);
  check_allgather("allgather: C subarray to itself", 2, sub_c, 2, sub_c, 0, 1, comm);
  check_allgather("allgather: Fortran subarray in place", 0, MPI_DATATYPE_NULL, 1, sub_f, 1, 1, comm);
  check_alltoall("alltoall: C subarray to doubles", 1, sub_c, 12, MPI_DOUBLE, 0, 1, comm);

  /* Two shapes of one signature, neither without gaps: the send side is
   * packed, the receive side still written in place. 6 ints as 3 rows of
   * 2 with a 12-byte pitch (hvector) against the Fortran subarray's 2 rows
   * of 3. */
  MPI_Datatype rows;
  MPI_Type_create_hvector(3, 2, 12, MPI_INT, &rows);
  rows = committed(rows);
  check_allgather("allgather: hvector to Fortran subarray", 1, rows, 1, sub_f, 0, 1, comm);
  check_alltoall("alltoall: Fortran subarray to hvector", 1, sub_f, 1, rows, 0, 1, comm);

  /* A column resized to one double: block j of the receive buffer starts
   * one double after block j - 1, its elements p doubles apart (the
   * transpose of a row-distributed matrix). */
  MPI_Datatype column, column_1;
  MPI_Type_vector(3, 1, p, MPI_DOUBLE, &column);
  MPI_Type_create_resized(column, 0, sizeof(double), &column_1);
  column_1 = committed(column_1);
  check_alltoall("alltoall: rows to resized columns", 3, MPI_DOUBLE, 1, column_1, 0, 1, comm);
  check_allgather("allgather: rows to resized columns", 3, MPI_DOUBLE, 1, column_1, 0, 1, comm);

  /* A vector of vectors (three strided dimensions), and bytes 13 apart. */
  MPI_Datatype pair, nested, odd;
  MPI_Type_vector(3, 2, 4, MPI_SHORT, &pair);
  MPI_Type_vector(2, 1, 3, pair, &nested);
  nested = committed(nested);
  check_allgather("allgather: vector of vectors", 1, nested, 1, nested, 0, 1, comm);
  check_alltoall("alltoall: shorts to vector of vectors", 12, MPI_SHORT, 1, nested, 0, 1, comm);
  MPI_Type_create_hvector(4, 3, 13, MPI_BYTE, &odd);
  odd = committed(odd);
  check_allgather("allgather: bytes 13 apart", 2, odd, 2, odd, 0, 1, comm);

  /* Padding between elements: MPI_DOUBLE_INT (12 bytes of data in 16), and
   * an int resized to 8 bytes. */
  MPI_Datatype padded;
  MPI_Type_create_resized(MPI_INT, 0, 8, &padded);
  padded = committed(padded);
  check_allgather("allgather: MPI_DOUBLE_INT", 3, MPI_DOUBLE_INT, 3, MPI_DOUBLE_INT, 0, 1, comm);
  check_alltoall("alltoall: ints to padded ints", 4, MPI_INT, 4, padded, 0, 1, comm);
  check_allgather("allgather: padded ints in place", 0, MPI_DATATYPE_NULL, 5, padded, 1, 1, comm);

  /* Not boxes: packed as before (no view). An indexed type whose blocks
   * come in reverse order, one that swaps two ints (its data spans exactly
   * its size, yet is not in order), and a struct. */
  MPI_Datatype reversed, swapped, mixed;
  MPI_Type_indexed(2, (int[]){2, 1}, (int[]){3, 0}, MPI_INT, &reversed);
  reversed = committed(reversed);
  MPI_Type_indexed(2, (int[]){1, 1}, (int[]){1, 0}, MPI_INT, &swapped);
  swapped = committed(swapped);
  check_allgather("allgather: swapped ints to ints", 1, swapped, 2, MPI_INT, 0, 0, comm);
  check_alltoall("alltoall: ints to swapped ints", 2, MPI_INT, 1, swapped, 0, 0, comm);
  MPI_Type_create_struct(2, (int[]){1, 2}, (MPI_Aint[]){0, 8}, (MPI_Datatype[]){MPI_INT, MPI_SHORT}, &mixed);
  mixed = committed(mixed);
  check_allgather("allgather: reversed indexed to ints", 1, reversed, 3, MPI_INT, 0, 0, comm);
  check_allgather("allgather: ints to reversed indexed", 3, MPI_INT, 1, reversed, 0, 0, comm);
  check_alltoall("alltoall: struct to struct", 2, mixed, 2, mixed, 0, 0, comm);
  /* A box receive with a non-box send: the send side is packed, the
   * receive side a view. */
  check_allgather("allgather: reversed indexed to vector", 2, reversed, 1, vector, 0, 1, comm);

  /* A send type that names some ints twice (3 runs of 4 ints, 2 ints
   * apart: MPI allows it on the send side) is packed, against a receive
   * type of its shape (still a view) or ints (no view). */
  MPI_Datatype overlapping, runs_of_4;
  MPI_Type_vector(3, 4, 2, MPI_INT, &overlapping);
  overlapping = committed(overlapping);
  MPI_Type_vector(3, 4, 6, MPI_INT, &runs_of_4);
  runs_of_4 = committed(runs_of_4);
  check_allgather("allgather: overlapping runs to runs of that shape", 2, overlapping, 2, runs_of_4, 0, 1, comm);
  check_alltoall("alltoall: overlapping runs to runs of that shape", 1, overlapping, 1, runs_of_4, 0, 1, comm);
  check_allgather("allgather: overlapping runs to ints", 1, overlapping, 12, MPI_INT, 0, 0, comm);

  /* The v calls, blocks in rank order: as views; with gaps between
   * blocks: packed. Rank q contributes q % 3 vectors (6 ints each); rank
   * s sends rank d (s + 2d) % 3 vectors, received as such or as ints. */
  int* counts = malloc(sizeof(int) * (size_t)p);
  int* scaled = malloc(sizeof(int) * (size_t)p);
  int* displs = malloc(sizeof(int) * (size_t)p);
  int* rcounts = malloc(sizeof(int) * (size_t)p);
  int* rscaled = malloc(sizeof(int) * (size_t)p);
  int* rdispls = malloc(sizeof(int) * (size_t)p);
  int r;
  MPI_Comm_rank(comm, &r);
  for (int q = 0; q < p; ++q) counts[q] = q % 3;
  lay_out(counts, scaled, displs, p, 1, 0);
  check_allgatherv("allgatherv: ints to vectors", counts[r] * 6, MPI_INT, counts, displs, vector, 0, 1, comm);
  check_allgatherv("allgatherv: vectors to vectors", counts[r], vector, counts, displs, vector, 0, 1, comm);
  check_allgatherv("allgatherv: vectors in place", 0, MPI_DATATYPE_NULL, counts, displs, vector, 1, 1, comm);
  lay_out(counts, scaled, displs, p, 12, 0);
  check_allgatherv("allgatherv: C subarrays to doubles", counts[r], sub_c, scaled, displs, MPI_DOUBLE, 0, 1, comm);
  lay_out(counts, scaled, displs, p, 1, 1);
  check_allgatherv("allgatherv: vectors with gaps between blocks", counts[r], vector, counts, displs, vector, 0, 0,
                   comm);
  for (int d = 0; d < p; ++d) {
    counts[d] = (r + 2 * d) % 3;  /* what this rank sends d */
    rcounts[d] = (d + 2 * r) % 3; /* what d sends this rank */
  }
  lay_out(counts, scaled, displs, p, 6, 0);
  lay_out(rcounts, rscaled, rdispls, p, 1, 0);
  check_alltoallv("alltoallv: ints to vectors", scaled, displs, MPI_INT, rcounts, rdispls, vector, 0, 1, comm);
  lay_out(counts, scaled, displs, p, 1, 0);
  lay_out(rcounts, rscaled, rdispls, p, 6, 0);
  check_alltoallv("alltoallv: vectors to ints", counts, displs, vector, rscaled, rdispls, MPI_INT, 0, 1, comm);
  lay_out(rcounts, rscaled, rdispls, p, 1, 0);
  check_alltoallv("alltoallv: vectors to vectors", counts, displs, vector, rcounts, rdispls, vector, 0, 1, comm);
  lay_out(rcounts, rscaled, rdispls, p, 1, 2);
  check_alltoallv("alltoallv: vectors with gaps between blocks", counts, displs, vector, rcounts, rdispls, vector, 0, 0,
                  comm);
  for (int d = 0; d < p; ++d) rcounts[d] = (r + d) % 3; /* in place: what each pair swaps */
  lay_out(rcounts, rscaled, rdispls, p, 1, 0);
  check_alltoallv("alltoallv: vectors in place", NULL, NULL, MPI_DATATYPE_NULL, rcounts, rdispls, vector, 1, 1, comm);
  free(counts);
  free(scaled);
  free(displs);
  free(rcounts);
  free(rscaled);
  free(rdispls);

  /* Past the shared slots: 1 MiB of data per block, 16384 runs of 64 bytes
   * 128 apart, through the large-message paths. */
  MPI_Datatype wide;
  MPI_Type_vector(1 << 14, 8, 16, MPI_DOUBLE, &wide);
  wide = committed(wide);
  check_allgather("allgather: 1 MiB of doubles to vector runs", 1 << 17, MPI_DOUBLE, 1, wide, 0, 1, comm);
  check_alltoall("alltoall: 1 MiB blocks of vector runs to doubles", 1, wide, 1 << 17, MPI_DOUBLE, 0, 1, comm);

  /* Different datatypes of one signature on different ranks: even ranks
   * receive vectors (views), odd ones ints (the byte path, straight). */
  const int on_odd = r % 2;
  check_allgather("allgather: vectors on even ranks, ints on odd", 6, MPI_INT, on_odd ? 6 : 1,
                  on_odd ? MPI_INT : vector, 0, !on_odd, comm);
  check_alltoall("alltoall: 1 MiB vector runs on even ranks, doubles on odd", 1 << 17, MPI_DOUBLE, on_odd ? 1 << 17 : 1,
                 on_odd ? MPI_DOUBLE : wide, 0, !on_odd, comm);

  /* Nothing to move: no view, nothing written. */
  check_allgather("allgather: zero vectors", 0, vector, 0, vector, 0, 0, comm);

  MPI_Type_free(&vector);
  MPI_Type_free(&sub_c);
  MPI_Type_free(&sub_f);
  MPI_Type_free(&rows);
  MPI_Type_free(&column);
  MPI_Type_free(&column_1);
  MPI_Type_free(&pair);
  MPI_Type_free(&nested);
  MPI_Type_free(&odd);
  MPI_Type_free(&padded);
  MPI_Type_free(&swapped);
  MPI_Type_free(&reversed);
  MPI_Type_free(&mixed);
  MPI_Type_free(&wide);
  MPI_Type_free(&overlapping);
  MPI_Type_free(&runs_of_4);
  test_reductions(comm);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  test_all(MPI_COMM_WORLD);
  int on_world = views_expected;
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
  test_all(half);
  MPI_Comm_free(&half);
  int any = 0;
  PMPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  /* Ranks expect different counts (a rank that receives nothing takes the byte path). */
  int mine[2] = {on_world, views_expected - on_world}, all[2] = {0, 0};
  PMPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("test_pmpi_datatypes: %d failed check(s), views summed over ranks: %d on the world, %d on the halves\n", any,
           all[0], all[1]);
  }
  fflush(stdout); /* out before the report MPI_Finalize writes */
  MPI_Finalize();
  return any == 0 ? 0 : 1;
}

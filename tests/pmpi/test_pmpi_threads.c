/* libplait_pmpi under MPI_THREAD_MULTIPLE: several threads per rank, each on
 * its own duplicate of MPI_COMM_WORLD, call MPI_Allreduce, MPI_Allgather and
 * MPI_Alltoallv (served by plait when PLAIT_PMPI=on) at the same time, and
 * compare every result with PMPI_* on the same data. The first calls build
 * the communicators' states concurrently; halfway each thread duplicates its
 * communicator, calls on the duplicate and frees it while the others run
 * (state built and pooled at once), twice (pooled states reused, or not, at
 * once); then every thread moves to another
 * thread's communicator (a state used from a second thread). MPI requires
 * collectives on one communicator to be ordered, so each communicator has
 * one thread at a time, the same one on every rank.
 * run_pmpi_threads_test.sh runs it with PLAIT_PMPI=on PLAIT_PMPI_REPORT=1
 * and checks the report: provided MPI_THREAD_MULTIPLE, the three functions
 * served, nothing passed. If MPI provides less than MPI_THREAD_MULTIPLE it
 * says so and exits 0. Usage: test_pmpi_threads [threads (2-4, default 3)
 * [rounds per phase (default 24)]]. Exit status 1 if any result differed on
 * any rank. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { max_threads = 4 };

static int rank, P, rounds = 24;
static MPI_Comm comms[max_threads];

struct worker {
  int thread;      /* which worker: its data differs from the others' */
  MPI_Comm comm;   /* the communicator it calls on in this phase */
  int phase;       /* 0: its own communicator, 1: another thread's */
  int failures;    /* results that differed from PMPI's, on this rank */
  char first[160]; /* the first difference, printed by the main thread */
};

static void differs(struct worker* w, const char* what, int round) {
  if (w->failures++ == 0) {
    snprintf(w->first, sizeof w->first, "rank %d thread %d phase %d round %d: %s differs from PMPI's result", rank,
             w->thread, w->phase, round, what);
  }
}

/* Integer content that differs by rank, thread, round and position. */
static int value(int r, int t, int round, int i) { return (r * 131 + t * 71 + round * 13 + i * 7) % 97 - 40; }

/* Sizes that vary from round to round: a few elements to tens of KiB. */
static int count_of(int round, int t) {
  static const int sizes[] = {1, 3, 17, 64, 250, 1000, 4099, 12000};
  return sizes[(round + t) % (int)(sizeof sizes / sizeof sizes[0])];
}

static void run_allreduce(struct worker* w, MPI_Comm comm, int round) {
  const int n = count_of(round, w->thread);
  int* send = malloc(sizeof(int) * n);
  int* got = malloc(sizeof(int) * n);
  int* want = malloc(sizeof(int) * n);
  for (int i = 0; i < n; ++i) send[i] = value(rank, w->thread, round, i);
  const MPI_Op op = round % 3 == 0 ? MPI_MAX : MPI_SUM;
  MPI_Allreduce(send, got, n, MPI_INT, op, comm);
  PMPI_Allreduce(send, want, n, MPI_INT, op, comm);
  if (memcmp(got, want, sizeof(int) * n) != 0) differs(w, "MPI_Allreduce(MPI_INT)", round);
  /* Doubles holding small integers: every order of summation is exact. */
  double* dsend = malloc(sizeof(double) * n);
  double* dgot = malloc(sizeof(double) * n);
  double* dwant = malloc(sizeof(double) * n);
  for (int i = 0; i < n; ++i) dsend[i] = send[i] * 0.5;
  memcpy(dgot, dsend, sizeof(double) * n);
  MPI_Allreduce(MPI_IN_PLACE, dgot, n, MPI_DOUBLE, MPI_SUM, comm);
  PMPI_Allreduce(dsend, dwant, n, MPI_DOUBLE, MPI_SUM, comm);
  if (memcmp(dgot, dwant, sizeof(double) * n) != 0) differs(w, "MPI_Allreduce(MPI_IN_PLACE, MPI_DOUBLE)", round);
  free(send), free(got), free(want), free(dsend), free(dgot), free(dwant);
}

static void run_allgather(struct worker* w, MPI_Comm comm, int round) {
  const int n = count_of(round + 3, w->thread);
  int* send = malloc(sizeof(int) * n);
  int* got = malloc(sizeof(int) * n * P);
  int* want = malloc(sizeof(int) * n * P);
  for (int i = 0; i < n; ++i) send[i] = value(rank, w->thread, round, i);
  MPI_Allgather(send, n, MPI_INT, got, n, MPI_INT, comm);
  PMPI_Allgather(send, n, MPI_INT, want, n, MPI_INT, comm);
  if (memcmp(got, want, sizeof(int) * n * P) != 0) differs(w, "MPI_Allgather(MPI_INT)", round);
  free(send), free(got), free(want);
}

/* Ints rank `from` sends `to` in `round`: 0 to a few thousand, zeros included. */
static int pair_count(int from, int to, int round, int t) {
  static const int scale[] = {1, 5, 300};
  return ((from * 3 + to * 5 + round + t) % 4) * scale[round % 3];
}

static void run_alltoallv(struct worker* w, MPI_Comm comm, int round) {
  int scounts[64] = {0}, sdispls[64] = {0}, rcounts[64] = {0}, rdispls[64] = {0};
  int stotal = 0, rtotal = 0;
  for (int j = 0; j < P; ++j) {
    /* One element of gap before every block, on both sides. */
    scounts[j] = pair_count(rank, j, round, w->thread);
    sdispls[j] = stotal + 1;
    stotal += scounts[j] + 1;
    rcounts[j] = pair_count(j, rank, round, w->thread);
    rdispls[j] = rtotal + 1;
    rtotal += rcounts[j] + 1;
  }
  int* send = calloc((size_t)stotal + 1, sizeof(int));
  int* got = calloc((size_t)rtotal + 1, sizeof(int));
  int* want = calloc((size_t)rtotal + 1, sizeof(int));
  for (int i = 0; i < stotal; ++i) send[i] = value(rank, w->thread, round, i);
  for (int i = 0; i < rtotal; ++i) got[i] = want[i] = -1;
  MPI_Alltoallv(send, scounts, sdispls, MPI_INT, got, rcounts, rdispls, MPI_INT, comm);
  PMPI_Alltoallv(send, scounts, sdispls, MPI_INT, want, rcounts, rdispls, MPI_INT, comm);
  if (memcmp(got, want, sizeof(int) * rtotal) != 0) differs(w, "MPI_Alltoallv(gapped displacements)", round);
  free(send), free(got), free(want);
}

static void run_rounds(struct worker* w, MPI_Comm comm, int from, int to) {
  for (int round = from; round < to; ++round) {
    run_allreduce(w, comm, round);
    run_allgather(w, comm, round);
    run_alltoallv(w, comm, round);
  }
}

static void* work(void* arg) {
  struct worker* w = arg;
  run_rounds(w, w->comm, 0, rounds / 2);
  if (w->phase == 0) {
    /* A communicator made, served (a state built) and freed (the state
     * pooled) while the other threads call on theirs; twice, so that the
     * second finds the pooled states of every thread's first, which threads
     * of one rank reserve and agree on at once (src/pmpi/state.cpp). */
    for (int again = 0; again < 2; ++again) {
      MPI_Comm dup;
      MPI_Comm_dup(w->comm, &dup);
      run_rounds(w, dup, 1000 + again, 1001 + again);
      MPI_Comm_free(&dup);
    }
  }
  run_rounds(w, w->comm, rounds / 2, rounds);
  return NULL;
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0)
      printf("test_pmpi_threads: skipped: MPI provides thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
    MPI_Finalize();
    return 0;
  }
  int threads = argc > 1 ? atoi(argv[1]) : 3;
  if (argc > 2) rounds = atoi(argv[2]);
  if (threads < 1 || threads > max_threads || P > 64 || rounds < 2) {
    if (rank == 0)
      fprintf(stderr, "usage: test_pmpi_threads [threads 1-%d [rounds >= 2]], at most 64 ranks\n", max_threads);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* Collectives on MPI_COMM_WORLD: the main thread alone, in order. */
  for (int t = 0; t < threads; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);

  struct worker workers[max_threads];
  int failures = 0;
  for (int phase = 0; phase < 2; ++phase) {
    pthread_t ids[max_threads];
    for (int t = 0; t < threads; ++t) {
      /* Phase 1: thread t calls on thread t + 1's communicator, whose state
       * another thread built and used. */
      workers[t] = (struct worker){.thread = t, .comm = comms[(t + phase) % threads], .phase = phase};
      if (pthread_create(&ids[t], NULL, work, &workers[t]) != 0) {
        fprintf(stderr, "rank %d: pthread_create failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
    for (int t = 0; t < threads; ++t) {
      pthread_join(ids[t], NULL);
      if (workers[t].failures != 0) fprintf(stderr, "%s (%d in all)\n", workers[t].first, workers[t].failures);
      failures += workers[t].failures;
    }
  }
  for (int t = 0; t < threads; ++t) MPI_Comm_free(&comms[t]);

  int any = 0;
  PMPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    /* run_pmpi_threads_test.sh reads the counts here. */
    printf(
        "test_pmpi_threads: %d ranks, MPI_THREAD_MULTIPLE provided, %d threads on their own communicators, "
        "%d rounds of 4 calls per thread and phase: %s\n",
        P, threads, rounds, any == 0 ? "every result equal to PMPI's" : "results differ");
  }
  MPI_Finalize();
  return any == 0 ? 0 : 1;
}

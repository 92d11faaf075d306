/* Communicators by the hundred: 300 duplicates of MPI_COMM_WORLD, 100 alive
 * at once (each new one replaces the oldest), a served MPI_Allreduce on each
 * new one and on an older one still alive, results checked. The library
 * pools a freed communicator's state (its duplicate, node levels and
 * shared-memory segment) for the next communicator of the same ranks
 * (src/pmpi/state.cpp): this process's open file descriptors and mapped
 * /dev/shm objects must not grow past what 100 live communicators hold, no
 * segment may stay named in /dev/shm, and run_pmpi_pool_test.sh checks in
 * the report that 200 states per rank were reused, not built. */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { total = 300, alive = 100 };

static int rank, P, failures;

static void check(int ok, const char* what, int i) {
  if (!ok) {
    ++failures;
    fprintf(stderr, "rank %d: %s (communicator %d)\n", rank, what, i);
  }
}

static int open_fds(void) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  while (readdir(d) != NULL) ++n;
  closedir(d);
  return n;
}

/* Mappings of /dev/shm objects in this process (distinct objects), and how
 * many of them still have a name there. */
static void shm_maps(int* mapped, int* named) {
  *mapped = *named = 0;
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == NULL) return;
  char line[1024], last[1024] = "";
  while (fgets(line, sizeof line, f) != NULL) {
    const char* path = strstr(line, "/dev/shm/");
    if (path == NULL || strcmp(path, last) == 0) continue;
    snprintf(last, sizeof last, "%s", path);
    ++*mapped;
    if (strstr(path, "(deleted)") == NULL && strstr(path, "plait") != NULL) ++*named;
  }
  fclose(f);
}

/* A served all-reduce on `c`, checked: sums of what every rank gives. */
static void reduce_on(MPI_Comm c, int i) {
  int v[3] = {rank + i, 1, i * rank}, out[3] = {0, 0, 0};
  MPI_Allreduce(v, out, 3, MPI_INT, MPI_SUM, c);
  const int ranks = P * (P - 1) / 2;
  check(out[0] == ranks + P * i && out[1] == P && out[2] == i * ranks, "MPI_Allreduce's result is wrong", i);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  reduce_on(MPI_COMM_WORLD, 0);
  MPI_Comm live[alive];
  for (int s = 0; s < alive; ++s) live[s] = MPI_COMM_NULL;
  int fds[3] = {0, 0, 0}, mapped[3] = {0, 0, 0}, named[3] = {0, 0, 0};
  double start = MPI_Wtime();
  for (int i = 0; i < total; ++i) {
    const int slot = i % alive;
    if (live[slot] != MPI_COMM_NULL) MPI_Comm_free(&live[slot]);
    MPI_Comm_dup(MPI_COMM_WORLD, &live[slot]);
    reduce_on(live[slot], i);
    const int older = (slot + 37) % alive;
    if (live[older] != MPI_COMM_NULL) reduce_on(live[older], i);
    if (i == alive - 1) {
      fds[0] = open_fds();
      shm_maps(&mapped[0], &named[0]);
    }
  }
  double took = MPI_Wtime() - start, slowest = 0;
  PMPI_Reduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  fds[1] = open_fds();
  shm_maps(&mapped[1], &named[1]);
  for (int s = 0; s < alive; ++s) MPI_Comm_free(&live[s]);
  fds[2] = open_fds();
  shm_maps(&mapped[2], &named[2]);
  /* A little slack: MPI may open a descriptor or map a segment of its own meanwhile. */
  check(fds[1] <= fds[0] + 2 && fds[2] <= fds[0] + 2, "open file descriptors grew past 100 live communicators'", total);
  check(mapped[1] <= mapped[0] + 2 && mapped[2] <= mapped[0] + 2,
        "mapped /dev/shm objects grew past 100 live communicators'", total);
  check(named[0] == 0 && named[1] == 0 && named[2] == 0, "a plait segment is still named in /dev/shm", total);
  int any = 0;
  PMPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    printf(
        "test_pmpi_pool: %d ranks, %d communicators (%d alive at once): open fds %d, %d, %d; mapped /dev/shm "
        "objects %d, %d, %d (at 100 alive, after 300, all freed); the loop took %.3f s; %d failed check(s)\n",
        P, total, alive, fds[0], fds[1], fds[2], mapped[0], mapped[1], mapped[2], slowest, any);
  MPI_Finalize();
  return any == 0 ? 0 : 1;
}

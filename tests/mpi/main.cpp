// Catch2 main for the MPI tests: MPI_Init, run the session on every rank,
// and combine the outcome so a failure on any rank fails the run on all of
// them (mpirun reports the worst exit code, but every rank's log should say
// where it went wrong).
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

namespace {

/// After each test case, every rank learns whether it passed everywhere; rank
/// 0 names the ranks where it failed. The Allreduce also keeps ranks in step:
/// a rank that left a test case early waits here for the others.
class rank_combiner : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    int rank = 0;
    int size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int failed = stats.totals.assertions.failed > 0 ? 1 : 0;
    std::string failed_on(static_cast<std::size_t>(size), '0');
    std::string mine(1, failed != 0 ? '1' : '0');
    MPI_Gather(mine.data(), 1, MPI_CHAR, failed_on.data(), 1, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0 && failed_on.find('1') != std::string::npos) {
      std::string ranks;
      for (int r = 0; r < size; ++r) {
        if (failed_on[static_cast<std::size_t>(r)] == '1') ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      }
      std::fprintf(stderr, "plait-mpi: test case \"%s\" failed on rank(s) %s of %d\n", stats.testInfo.name.c_str(),
                   ranks.c_str(), size);
    }
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(rank_combiner)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  Catch::Session session;
  int failures = session.applyCommandLine(argc, argv);
  if (failures == 0) failures = session.run();

  // Fail on every rank if any failed, so the exit code does not depend on
  // which rank mpirun happens to report.
  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::fprintf(stderr, "plait-mpi: %s\n", any == 0 ? "all ranks passed" : "FAILED on some rank");
  MPI_Finalize();
  return any == 0 ? 0 : 1;
}

// What a plait::mpi::communicator leaves behind in MPI: after a collective
// timed out, a later communicator on the same MPI_Comm never receives the old
// call's messages, and the application's own MPI calls still work.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test.hpp"
#include "plait/mpi.hpp"

using plait_test::first_mismatch;
using plait_test::pattern_bytes;

namespace {

/// Ends the whole job if `MPI_Comm_split` on the application's side does not
/// return within `limit`: a hang there is the failure this test looks for,
/// and MPI offers no nonblocking split to poll. The thread never calls MPI.
class split_watchdog {
 public:
  explicit split_watchdog(std::chrono::seconds limit)
      : thread_([this, limit] {
          const auto give_up = std::chrono::steady_clock::now() + limit;
          while (!done_.load() && std::chrono::steady_clock::now() < give_up) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
          if (!done_.load()) {
            std::fprintf(stderr, "plait-mpi: the application's MPI_Comm_split hung after a timed-out plait call\n");
            std::_Exit(3);
          }
        }) {}
  split_watchdog(const split_watchdog&) = delete;
  split_watchdog& operator=(const split_watchdog&) = delete;
  ~split_watchdog() {
    done_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("mpi communicator made after one that timed out never receives the old call's messages",
          "[mpi][transport][timeout]") {
  const int rank = plait_test::world_rank();
  const int p = plait_test::world_size();
  if (p < 2) return;             // nobody to leave a message with
  constexpr std::size_t n = 64;  // far below any eager limit: sent at once, received later
  bool first_timed_out = rank != 0;
  {
    plait::mpi::communicator old_comm{MPI_COMM_WORLD};
    old_comm.set_timeout(std::chrono::milliseconds(200));
    if (rank == 0) {
      // Only rank 0 enters the all-gather, after the others have destroyed
      // their communicator: its shard goes out to every peer at once and
      // arrives for a communicator nobody holds any more; its receives time out.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto mine = pattern_bytes(0, n, 1);
      std::vector<std::byte> all(n * static_cast<std::size_t>(p));
      try {
        plait::all_gather<plait::direct>(old_comm, mine, all);
      } catch (const plait::error& e) {
        first_timed_out = e.code() == plait::errc::timeout && old_comm.poisoned();
      }
    }
    if (rank != 0) {
      plait::mpi::communicator gone = std::move(old_comm);  // destroyed here, before rank 0 sends
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }

  // A new communicator on the same MPI_Comm: its first call takes tag 1 again.
  bool fresh_data = false;
  std::string what;
  {
    plait::mpi::communicator new_comm{MPI_COMM_WORLD};
    new_comm.set_timeout(std::chrono::seconds(5));
    const auto mine = pattern_bytes(rank, n, 2);
    std::vector<std::byte> all(n * static_cast<std::size_t>(p));
    try {
      plait::all_gather<plait::direct>(new_comm, mine, all);
      fresh_data = true;
      for (int r = 0; r < p; ++r) {
        fresh_data = fresh_data && first_mismatch(std::span(all).subspan(static_cast<std::size_t>(r) * n, n), r, 2) < 0;
      }
      if (!fresh_data && rank != 0 && first_mismatch(std::span(all).first(n), 0, 1) < 0) {
        what = "received rank 0's shard of the timed-out call";
      }
    } catch (const plait::error& e) {
      what = e.what();
    }
  }
  CAPTURE(what);
  CHECK(first_timed_out);
  CHECK(fresh_data);

  // The application's own communicator creation and traffic still work.
  int split_sum = -1;
  {
    const split_watchdog watchdog(std::chrono::seconds(20));
    MPI_Comm halves = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &halves);
    int one = 1;
    MPI_Allreduce(&one, &split_sum, 1, MPI_INT, MPI_SUM, halves);
    MPI_Comm_free(&halves);
  }
  CHECK(split_sum == (p + 1 - rank % 2) / 2);
  PLAIT_REQUIRE_ALL(first_timed_out && fresh_data && split_sum == (p + 1 - rank % 2) / 2);
}

// Setup steps are bounded by the timeout (issue 27): communicator
// construction, split, node_levels, node_local_shm and the two_level census
// (already bounded: its exchanges are plait collectives). A rank that rejects
// its own arguments makes every rank throw the same error naming it; a rank
// that skips a step makes the others time out, not hang. Each skipping rank
// waits in MPI_Barrier of MPI_COMM_WORLD, which the others reach once they
// have timed out, so every rank ends every test case. The checks are agreed
// on by all ranks (PLAIT_REQUIRE_ALL) after that barrier only.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test.hpp"
#include "plait/mpi.hpp"

namespace {

using namespace std::chrono_literals;

/// The plait::error `run` throws, if it throws one.
template <class F>
std::optional<plait::error> error_of(F&& run) {
  try {
    run();
  } catch (const plait::error& e) {
    return e;
  }
  return std::nullopt;
}

/// The error's message for CAPTURE, or "no error".
std::string what_of(const std::optional<plait::error>& e) { return e ? e->what() : "no error"; }

/// Sets PLAIT_TIMEOUT for one scope (construction has no other timeout), then
/// restores it: ctest sets it for the whole run.
class scoped_timeout {
 public:
  explicit scoped_timeout(const char* seconds) {
    if (const char* old = std::getenv("PLAIT_TIMEOUT")) old_ = old;
    setenv("PLAIT_TIMEOUT", seconds, 1);
  }
  scoped_timeout(const scoped_timeout&) = delete;
  scoped_timeout& operator=(const scoped_timeout&) = delete;
  ~scoped_timeout() {
    if (old_) {
      setenv("PLAIT_TIMEOUT", old_->c_str(), 1);
    } else {
      unsetenv("PLAIT_TIMEOUT");
    }
  }

 private:
  std::optional<std::string> old_;
};

/// Keeps `comm` until the program ends, after MPI_Finalize, when its
/// destructor does nothing. A rank that skipped a step must not free the
/// duplicate the others' unfinished exchange still sends to: Open MPI could
/// give its context id to a later communicator of this rank alone, which
/// then receives those messages (docs/mpi.md, "What a failure leaves
/// behind"; it crashed MPI_Comm_split_type here). The others' is poisoned
/// and never freed anyway.
void keep_until_exit(plait::mpi::communicator comm) {
  static std::vector<plait::mpi::communicator> kept;
  kept.push_back(std::move(comm));
}

}  // namespace

TEST_CASE("a negative node id on one rank makes every rank's node_levels throw invalid_argument naming that rank",
          "[mpi][setup]") {
  plait::mpi::communicator w{MPI_COMM_WORLD};
  w.set_timeout(30s);  // far longer than the test: a timeout here is the failure
  const auto e = error_of([&] { plait::mpi::node_levels n(w, w.rank() == 0 ? -1 : 3); });
  CAPTURE(what_of(e));
  const bool named = e && e->code() == plait::errc::invalid_argument &&
                     e->detail().find("rank 0: node id -1 is negative") != std::string::npos && e->peer() == 0 &&
                     e->operation() == "node_levels";
  // The exchange completed, so the world communicator stays usable.
  const bool usable = !w.poisoned() && error_of([&] { w.barrier(); }) == std::nullopt;
  PLAIT_REQUIRE_ALL(named && usable);
}

TEST_CASE("a split colour one rank rejects makes every rank's split throw invalid_argument naming that rank",
          "[mpi][setup]") {
  plait::mpi::communicator w{MPI_COMM_WORLD};
  w.set_timeout(30s);
  const int bad = w.size() - 1;
  const auto e = error_of([&] { (void)w.split(w.rank() == bad ? -5 : 0, w.rank()); });
  CAPTURE(what_of(e));
  const std::string who = "rank " + std::to_string(bad) + ": split color -5 is negative";
  const bool named = e && e->code() == plait::errc::invalid_argument && e->detail().find(who) != std::string::npos &&
                     e->peer() == bad && e->operation() == "split";
  const bool usable = !w.poisoned() && error_of([&] { w.barrier(); }) == std::nullopt;
  PLAIT_REQUIRE_ALL(named && usable);
}

TEST_CASE("a rank that skips split leaves the others with a timeout naming split and every rank goes on",
          "[mpi][setup]") {
  if (plait_test::world_size() < 2) return;  // the one rank would skip alone
  std::optional<plait::error> e;
  bool poisoned = false;
  const int skipper = plait_test::world_size() - 1;
  plait::mpi::communicator w{MPI_COMM_WORLD};
  w.set_timeout(1s);
  if (w.rank() != skipper) {
    e = error_of([&] { (void)w.split(0, w.rank()); });
    poisoned = w.poisoned();  // the unfinished exchange stays in MPI: w must never be used again
  }
  keep_until_exit(std::move(w));
  MPI_Barrier(MPI_COMM_WORLD);
  CAPTURE(what_of(e));
  const bool timed_out = e && e->code() == plait::errc::timeout && e->operation() == "split" &&
                         e->detail().find("split") != std::string::npos;
  PLAIT_REQUIRE_ALL(plait_test::world_rank() == skipper || (timed_out && poisoned));
}

TEST_CASE("a rank that skips node_levels leaves the others with a timeout naming node_levels in both forms",
          "[mpi][setup]") {
  if (plait_test::world_size() < 2) return;
  const int skipper = 0;
  for (const bool shared : {true, false}) {
    std::optional<plait::error> e;
    bool poisoned = false;
    plait::mpi::communicator w{MPI_COMM_WORLD};
    w.set_timeout(1s);
    if (w.rank() != skipper) {
      e = error_of([&] {
        if (shared) {
          plait::mpi::node_levels n(w);
        } else {
          plait::mpi::node_levels n(w, 0);
        }
      });
      poisoned = w.poisoned();
    }
    keep_until_exit(std::move(w));
    MPI_Barrier(MPI_COMM_WORLD);
    CAPTURE(shared, what_of(e));
    const bool timed_out = e && e->code() == plait::errc::timeout && e->operation() == "node_levels";
    PLAIT_REQUIRE_ALL(plait_test::world_rank() == skipper || (timed_out && poisoned));
  }
}

TEST_CASE("a rank that skips node_local_shm leaves the others with a timeout naming node_local_shm", "[mpi][setup]") {
  if (plait_test::world_size() < 2) return;
  const int skipper = plait_test::world_size() - 1;
  std::optional<plait::error> e;
  bool poisoned = false;
  plait::mpi::communicator w{MPI_COMM_WORLD};
  w.set_timeout(1s);
  if (w.rank() != skipper) {
    e = error_of([&] { (void)plait::mpi::node_local_shm(w); });
    poisoned = w.poisoned();
  }
  keep_until_exit(std::move(w));
  MPI_Barrier(MPI_COMM_WORLD);
  CAPTURE(what_of(e));
  const bool timed_out = e && e->code() == plait::errc::timeout && e->operation() == "node_local_shm";
  PLAIT_REQUIRE_ALL(plait_test::world_rank() == skipper || (timed_out && poisoned));
}

TEST_CASE("ranks that mix the two node_levels forms all throw invalid_argument naming both calls", "[mpi][setup]") {
  if (plait_test::world_size() < 2) return;  // one rank cannot mix
  plait::mpi::communicator w{MPI_COMM_WORLD};
  w.set_timeout(30s);
  const auto e = error_of([&] {
    if (w.rank() == 1) {
      plait::mpi::node_levels n(w);
    } else {
      plait::mpi::node_levels n(w, 0);
    }
  });
  CAPTURE(what_of(e));
  const bool named = e && e->code() == plait::errc::invalid_argument && e->operation() == "node_levels" &&
                     e->detail().find("rank 0") != std::string::npos &&
                     e->detail().find("node_levels(world, node_id)") != std::string::npos &&
                     e->detail().find("rank 1") != std::string::npos &&
                     e->detail().find("node_levels(world)") != std::string::npos && e->peer() == 1;
  const bool usable = !w.poisoned() && error_of([&] { w.barrier(); }) == std::nullopt;
  PLAIT_REQUIRE_ALL(named && usable);
}

TEST_CASE("a rank that skips constructing an mpi communicator leaves the others with a timeout after PLAIT_TIMEOUT",
          "[mpi][setup]") {
  if (plait_test::world_size() < 2) return;
  // The others' unfinished exchange stays on this communicator: it is the
  // test's own and is never used or freed again.
  MPI_Comm fresh = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  const int skipper = 0;
  std::optional<plait::error> e;
  const auto started = std::chrono::steady_clock::now();
  if (plait_test::world_rank() != skipper) {
    const scoped_timeout limit("1");
    e = error_of([&] { plait::mpi::communicator w{fresh}; });
  }
  const auto waited = std::chrono::steady_clock::now() - started;
  MPI_Barrier(MPI_COMM_WORLD);
  CAPTURE(what_of(e));
  const bool timed_out =
      e && e->code() == plait::errc::timeout && e->operation() == "mpi::communicator" && waited >= 1s && waited < 20s;
  PLAIT_REQUIRE_ALL(plait_test::world_rank() == skipper || timed_out);
}

TEST_CASE("a rank that skips the two_level census leaves the others with a timeout", "[mpi][setup]") {
  if (plait_test::world_size() < 2) return;
  const int skipper = plait_test::world_size() - 1;
  std::optional<plait::error> e;
  plait::mpi::communicator w{MPI_COMM_WORLD};
  w.set_timeout(1s);
  {
    // One rank per node: inter is the whole world, intra each rank alone.
    plait::mpi::communicator alone = w.split(w.rank(), 0);
    if (w.rank() != skipper) e = error_of([&] { plait::two_level levels{alone, w}; });
  }
  keep_until_exit(std::move(w));
  MPI_Barrier(MPI_COMM_WORLD);
  CAPTURE(what_of(e));
  const bool timed_out = e && e->code() == plait::errc::timeout;
  PLAIT_REQUIRE_ALL(plait_test::world_rank() == skipper || timed_out);
}

TEST_CASE("setup steps that every rank makes still succeed after the agreements", "[mpi][setup]") {
  plait::mpi::communicator w{MPI_COMM_WORLD};
  w.set_timeout(30s);
  plait::mpi::communicator half = w.split(w.rank() % 2, w.rank());
  plait::mpi::node_levels shared(w);
  plait::mpi::node_levels named(w, w.rank() % 2);
  std::vector<int> mine{w.rank()};
  std::vector<int> all(static_cast<std::size_t>(w.size()));
  plait::all_gather(named, mine, all);
  bool ok = half.size() == (w.size() + 1 - w.rank() % 2) / 2 && shared.rank() == w.rank() && named.rank() == w.rank();
  for (int r = 0; r < w.size(); ++r) ok = ok && all[static_cast<std::size_t>(r)] == r;
  PLAIT_REQUIRE_ALL(ok);
}

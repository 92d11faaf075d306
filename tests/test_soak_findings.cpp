// plait-test-labels: quick shm sanitize
// Bugs the fault-injection soak (scripts/soak, issue 29) found outside the
// issue's own list, each pinned by a test that failed before its fix.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.hpp"

using namespace std::chrono_literals;
using plait_test::mode;

// Soak trial 5295 of seed 20261204: a rank that reached a failed call late
// found its sender's single-copy message withdrawn and blamed that sender
// ("the sender withdrew its message"), which had only failed because of
// another rank; the group's record of who failed first, and why, was lost.
TEST_CASE("a rank that finds its sender's message withdrawn reports who failed first and why", "[shm][soak]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  // Blocks above the single-copy threshold, so rank 0's sends are references.
  constexpr std::size_t n = 8192;
  const auto verdicts = plait_test::run_ranks(m, 3, [&](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(10s);
    const int me = comm.rank();
    // Rank 1 calls another size: rank 0 fails on its message and withdraws
    // its own; rank 2 enters once that has happened.
    const std::size_t block = me == 1 ? n + 1 : n;
    if (me == 2) std::this_thread::sleep_for(500ms);
    std::vector<int> send(block * 3, me), recv(block * 3, -1);
    try {
      plait::all_to_all<plait::direct>(comm, send, recv);
      return "rank " + std::to_string(me) + " went through";
    } catch (const plait::error& e) {
      const std::string what = e.what();
      if (me != 2) return {};
      if (what.find("withdrew") != std::string::npos || what.find("the group failed: rank ") == std::string::npos ||
          what.find("peer sent") == std::string::npos) {
        return "rank 2 does not say who failed first and why: " + what;
      }
      return {};
    }
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

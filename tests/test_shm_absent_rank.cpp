// plait-test-labels: quick shm sanitize
// The rank to blame when one never calls (issue 29, item 1): in a ring the
// wait propagates, so the first rank to time out usually waits for a rank
// that is there. The waits form a chain; every rank's error must name the
// rank at its end, the one not in the call, and say what it is doing. A
// later call on the poisoned communicator names the call that failed first.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/expect_error.hpp"
#include "support/harness.hpp"

using namespace std::chrono_literals;
using plait_test::mode;

namespace {
constexpr int repetitions = 15;

/// P = 4, ring all-gather, rank 0 never enters the second call. Each
/// repetition runs on a fresh split communicator (a failure poisons it);
/// rank 0 stays alive, in the parent's barrier, until the others have failed.
/// `late`: rank 3 waits twice as long as ranks 1 and 2 before it times out,
/// so a present rank is still waiting when the first one gives up.
std::string absent_rank_zero(plait::shm::communicator& comm, bool check_mode, bool late) {
  comm.set_timeout(20s);
  const std::string operation = check_mode ? "check mode of all_gather<ring>" : "all_gather<ring>";
  std::string first;  // the first repetition's failure, if any
  for (int repetition = 0; repetition < repetitions; ++repetition) {
    auto group = comm.split(0, comm.rank());
    group.set_check_mode(check_mode);
    std::vector<int> mine(2, group.rank()), all(8, -1);
    plait::all_gather<plait::ring>(group, mine, all);  // every rank: the call rank 0 last finished
    std::string verdict;
    if (group.rank() != 0) {
      group.set_timeout(late && group.rank() == 3 ? 400ms : 200ms);
      verdict = plait_test::blames_rank_zero([&] { plait::all_gather<plait::ring>(group, mine, all); },
                                             {"rank 0 never entered " + operation + " #", "its last call was #"});
      // The communicator is poisoned: a later call names the call that failed first and why.
      if (verdict.empty()) {
        verdict = plait_test::blames_rank_zero([&] { plait::all_gather<plait::ring>(group, mine, all); },
                                               {"poisoned by " + operation + " #", "rank 0 never entered"});
      }
    }
    comm.barrier();
    // Every rank runs every repetition: one that left early would leave the
    // others failing in the next split, an error that hides this verdict.
    if (!verdict.empty() && first.empty()) first = "repetition " + std::to_string(repetition) + ": " + verdict;
  }
  return first;
}
}  // namespace

TEST_CASE("when rank 0 never enters a ring all-gather, every other rank's error names rank 0", "[shm][blame][chain]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts =
      plait_test::run_ranks(m, 4, [](plait::shm::communicator& comm) { return absent_rank_zero(comm, false, false); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("in check mode too, every rank's error names the rank that never entered", "[shm][blame][chain][check]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts =
      plait_test::run_ranks(m, 4, [](plait::shm::communicator& comm) { return absent_rank_zero(comm, true, false); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a rank still waiting when another times out is never the one blamed", "[shm][blame][chain]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts =
      plait_test::run_ranks(m, 4, [](plait::shm::communicator& comm) { return absent_rank_zero(comm, false, true); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a rank waiting in another transfer is named with what it is doing", "[shm][blame][chain]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 4, [](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(20s);
    auto group = comm.split(0, comm.rank());
    std::vector<int> mine(2, group.rank()), all(8, -1);
    std::string verdict;
    if (group.rank() == 0) {
      // Rank 0 waits in a receive from rank 2 (which sends only to rank 3), instead of the all-gather.
      group.set_timeout(5s);
      std::vector<std::byte> box(4);
      try {
        group.recv(2, box, 7);
        verdict = "the receive went through";
      } catch (const plait::error&) {  // the others' failure ends its wait
      }
    } else {
      group.set_timeout(200ms);
      verdict = plait_test::blames_rank_zero([&] { plait::all_gather<plait::ring>(group, mine, all); },
                                             {"rank 0 never entered all_gather<ring> #", "it waits for rank 2"});
    }
    comm.barrier();
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

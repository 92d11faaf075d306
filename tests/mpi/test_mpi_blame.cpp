// The rank to blame when one never calls, on MPI (issue 29, item 1): the rank
// whose wait times out asks the others what they wait for (ranks that do not
// answer are the suspects), follows the chain of waits, and tells every rank,
// so each one's error names the rank that never entered. A rank still
// waiting is never the one blamed. The absent rank itself learns it at its
// next wait on that communicator. A rank whose own reduction throws mid-call
// tells the others itself (op/abandon.hpp).
#include <mpi.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "../support/expect_error.hpp"
#include "../support/throwing_reduction.hpp"
#include "mpi_test.hpp"
#include "plait/mpi.hpp"

namespace {
/// "" when `call` fails with peer_lost or a timeout whose message holds
/// `words` and whose peer is another rank of `comm`, else what went wrong.
template <class Call>
std::string names_another_rank(const plait::mpi::communicator& comm, Call&& call, const std::string& words) {
  try {
    call();
    return "the call went through";
  } catch (const plait::error& e) {
    const std::string what = e.what();
    if (e.value() != plait::errc::peer_lost && e.value() != plait::errc::timeout) return "wrong code: " + what;
    if (what.find(words) == std::string::npos) return "message lacks '" + words + "': " + what;
    if (e.peer() < 0 || e.peer() >= comm.size() || e.peer() == comm.rank()) {
      return "names peer " + std::to_string(e.peer()) + ": " + what;
    }
  }
  return {};
}

/// Ring all-gather on a fresh communicator, rank 0 never enters the second
/// call (it waits in MPI_Barrier on the world meanwhile); `late`: the last
/// rank waits twice as long as the others.
std::string absent_rank_zero(bool check_mode, bool late) {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_check_mode(check_mode);
  comm.set_timeout(std::chrono::seconds(20));
  const std::string operation = check_mode ? "check mode of all_gather<ring>" : "all_gather<ring>";
  std::vector<int> mine(2, comm.rank()), all(2 * static_cast<std::size_t>(comm.size()), -1);
  plait::all_gather<plait::ring>(comm, mine, all);
  std::string verdict;
  if (comm.rank() != 0) {
    comm.set_timeout(std::chrono::milliseconds(late && comm.rank() == comm.size() - 1 ? 400 : 200));
    verdict = plait_test::blames_rank_zero([&] { plait::all_gather<plait::ring>(comm, mine, all); },
                                           {"rank 0 did not answer: it is not in " + operation + " #"});
    if (verdict.empty()) {  // a later call names the call that failed first
      verdict = plait_test::blames_rank_zero([&] { plait::all_gather<plait::ring>(comm, mine, all); },
                                             {"poisoned by " + operation + " #", "rank 0 did not answer"});
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm.rank() == 0) {
    // Its next wait on the communicator finds the verdict (a receive nobody
    // sends: its late all-gather could complete, from the messages the
    // others sent before they gave up). The verdict blames rank 0 itself, so
    // its peer is the rank that sent it, never itself.
    std::vector<int> box(1);
    verdict = names_another_rank(
        comm, [&] { comm.recv(1, std::as_writable_bytes(std::span(box)), 5); },
        "the group failed: rank 0 did not answer");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return verdict;
}

constexpr int repetitions = 5;
}  // namespace

TEST_CASE("mpi: when rank 0 never enters a ring all-gather, every rank's error names rank 0", "[mpi][blame][timeout]") {
  if (plait_test::world_size() < 2) return;
  for (int repetition = 0; repetition < repetitions; ++repetition) {
    const std::string verdict = absent_rank_zero(false, false);
    CAPTURE(repetition, verdict);
    CHECK(plait_test::on_all_ranks(verdict.empty()));
  }
}

TEST_CASE("mpi: in check mode too, every rank's error names the rank that never entered", "[mpi][blame][timeout]") {
  if (plait_test::world_size() < 2) return;
  for (int repetition = 0; repetition < repetitions; ++repetition) {
    const std::string verdict = absent_rank_zero(true, false);
    CAPTURE(repetition, verdict);
    CHECK(plait_test::on_all_ranks(verdict.empty()));
  }
}

TEST_CASE("mpi: a rank still waiting when another times out is never the one blamed", "[mpi][blame][timeout]") {
  if (plait_test::world_size() < 3) return;
  for (int repetition = 0; repetition < repetitions; ++repetition) {
    const std::string verdict = absent_rank_zero(false, true);
    CAPTURE(repetition, verdict);
    CHECK(plait_test::on_all_ranks(verdict.empty()));
  }
}

namespace {
/// "" when `call` throws within `bound` with an error whose peer() is
/// `faulty` or whose text names "rank <faulty>"; else what went wrong.
template <class Call>
std::string names_within(Call&& call, int faulty, std::chrono::milliseconds bound) {
  const auto start = std::chrono::steady_clock::now();
  try {
    call();
    return "the call went through";
  } catch (const plait::error& e) {
    const auto took = std::chrono::steady_clock::now() - start;
    const std::string text = e.what();
    if (e.peer() != faulty && text.find("rank " + std::to_string(faulty)) == std::string::npos) {
      return "does not name rank " + std::to_string(faulty) + ": " + text;
    }
    if (took > bound) {
      return "took " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
             " ms: " + text;
    }
  }
  return {};
}
}  // namespace

TEST_CASE("mpi: a rank whose collective fails tells the others, whose waits end at once naming the rank at fault",
          "[mpi][blame]") {
  // The last rank all-gathers one element more: its successor's receive is
  // truncated, its own is short. Both fail at once; the ranks between them
  // wait for a block that rank 0 will not forward. Without the failing
  // ranks' announcements they would wait out the 20 s timeout and blame
  // rank 0, which is present.
  if (plait_test::world_size() < 2) return;
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_timeout(std::chrono::seconds(20));
  const int faulty = comm.size() - 1;
  const std::size_t n = comm.rank() == faulty ? 3 : 2;
  std::vector<int> mine(n, comm.rank()), all(n * static_cast<std::size_t>(comm.size()), -1);
  std::string verdict;
  if (comm.rank() != faulty) {
    verdict =
        names_within([&] { plait::all_gather<plait::ring>(comm, mine, all); }, faulty, std::chrono::milliseconds(5000));
  } else {
    try {
      plait::all_gather<plait::ring>(comm, mine, all);
      verdict = "the faulty rank's call went through";
    } catch (const plait::error&) {
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CAPTURE(verdict);
  CHECK(plait_test::on_all_ranks(verdict.empty()));
}

TEST_CASE("mpi: a rank that another rank's verdict blames names that rank as its peer, never itself", "[mpi][blame]") {
  // Rank 1 fails blaming rank 0, as it does when it sees a mismatch on rank
  // 0's message first. Rank 0 named itself as its error's peer before.
  if (plait_test::world_size() < 2) return;
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_timeout(std::chrono::seconds(20));
  std::string verdict;
  if (comm.rank() == 1) {
    comm.abandon_call(plait::error(plait::errc::size_mismatch, "peer's message of call 1 is from another collective",
                                   {1, "all_to_all<pairwise>", 0, 0}));
  } else {
    std::vector<int> mine(2, comm.rank()), all(2 * static_cast<std::size_t>(comm.size()), -1);
    verdict =
        plait_test::expect_error([&] { plait::all_gather<plait::ring>(comm, mine, all); }, {plait::errc::peer_lost},
                                 comm.rank() == 0 ? 1 : 0, {"rank 1 failed in all_to_all<pairwise>"});
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CAPTURE(verdict);
  CHECK(plait_test::on_all_ranks(verdict.empty()));
}

TEST_CASE("mpi: a rank that stays out of MPI does not hold a timed-out rank past its timeout",
          "[mpi][blame][timeout]") {
  // Rank 0 sleeps outside MPI instead of entering the all-gather. A query
  // sent with a blocking MPI_Send waited until it woke (Open MPI's shared
  // memory path needs the receiver): the others' errors came 1.5 s late.
  if (plait_test::world_size() < 2) return;
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_timeout(std::chrono::milliseconds(200));
  std::vector<int> mine(2, comm.rank()), all(2 * static_cast<std::size_t>(comm.size()), -1);
  std::string verdict;
  if (comm.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  } else {
    verdict =
        names_within([&] { plait::all_gather<plait::ring>(comm, mine, all); }, 0, std::chrono::milliseconds(1000));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CAPTURE(verdict);
  CHECK(plait_test::on_all_ranks(verdict.empty()));
}

namespace {
/// plait_test::abandoned_by_a_throwing_reduction on a fresh communicator,
/// which must end long before its timeout.
std::string abandoned_by_a_throwing_reduction(std::size_t block, int form) {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_timeout(std::chrono::seconds(60));
  const auto start = std::chrono::steady_clock::now();
  std::string verdict = plait_test::abandoned_by_a_throwing_reduction(comm, block, form);
  if (verdict.empty() && std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) {
    verdict = "took more than 10 s: the timeout ended the wait, not the thrower's verdict";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return verdict;
}
}  // namespace

TEST_CASE("mpi: a reduction that throws on one rank fails every rank at once, naming it, and poisons its communicator",
          "[mpi][blame][reduce]") {
  if (plait_test::world_size() < 2) return;
  for (const std::size_t block : {std::size_t{4}, std::size_t{20000}}) {
    for (int form = 0; form < 3; ++form) {
      const std::string verdict = abandoned_by_a_throwing_reduction(block, form);
      CAPTURE(block, form, verdict);
      PLAIT_REQUIRE_ALL(verdict.empty());
    }
  }
}

// plait-test-labels: quick shm sanitize
// plait-test-also: header-only
// Check mode: ranks that disagree on a call fail on every rank with
// size_mismatch naming both ranks and their calls, instead of hanging or
// returning silently wrong data, even when the disagreeing calls move the same
// bytes; and a custom algorithm whose schedules are broken fails with the
// broken rule before any byte moves.
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <span>
#include <vector>

#include "support/harness.hpp"

using namespace std::chrono_literals;
using plait_test::mode;

namespace {
/// Every rank must throw size_mismatch whose message names both ranks' calls.
std::string expect_disagreement(plait::shm::communicator& comm, const std::function<void()>& call,
                                const std::vector<std::string>& words) {
  comm.set_timeout(5s);
  try {
    call();
    return "the disagreeing call went through";
  } catch (const plait::error& e) {
    if (e.code() != plait::errc::size_mismatch) return std::string("wrong code: ") + e.what();
    for (const auto& w : words) {
      if (std::string(e.what()).find(w) == std::string::npos) return "message lacks '" + w + "': " + e.what();
    }
  }
  return {};
}

/// Two correct custom algorithms without a name of their own.
struct unnamed_ring {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_gather, int rank, int size) {
    return plait::ring::plan(plait::op::all_gather{}, rank, size);
  }
};
struct unnamed_direct {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_gather, int rank, int size) {
    return plait::direct::plan(plait::op::all_gather{}, rank, size);
  }
};

/// An all-gather that passes every rank's own checks but scrambles data: each
/// rank sends its shard to every peer in one step, and rank 2 files the shards
/// of ranks 0 and 1 under each other's numbers. Only the whole group's view
/// (plait::verify) sees that rank 0 sends block 0 where rank 2 expects block 1.
struct swapped_receives {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr std::string_view name = "swapped_receives";
  static constexpr plait::schedule plan(plait::op::all_gather, int rank, int size) {
    plait::schedule s;
    plait::step& only = s.next_step();
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      only.send(peer, {rank});
      const bool swapped = rank == 2 && (peer == 0 || peer == 1);
      only.recv(peer, {swapped ? 1 - peer : peer});
    }
    return s;
  }
};
}  // namespace

TEST_CASE("check mode reports ranks that disagree on the shard size, on every rank", "[check][shm]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 3, [](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    const std::size_t n = comm.rank() == 2 ? 3 : 2;  // rank 2 believes in bigger shards
    std::vector<int> mine(n), all(3 * n);
    return expect_disagreement(comm, [&] { plait::all_gather<plait::ring>(comm, mine, all); },
                               {"rank 0 calls all_gather<ring>", "blocks of 8 8 8 bytes",
                                "rank 2 calls all_gather<ring>", "blocks of 12 12 12 bytes"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode reports ranks that call different algorithms or operations", "[check][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    std::vector<int> mine(2), all(4);
    return expect_disagreement(comm,
                               [&] {
                                 if (comm.rank() == 0) {
                                   plait::all_gather<plait::ring>(comm, mine, all);
                                 } else {
                                   plait::all_to_all<plait::pairwise>(comm, std::span(all).first(2),
                                                                      std::span(all).last(2));
                                 }
                               },
                               {"all_gather<ring>", "all_to_all<pairwise>"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode reports ranks that call redistribute<1, 1> and redistribute<0, 0> with the same bytes",
          "[check][shm]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    // [4, 4] on both sides either way: every block is 8 ints, only the layout differs.
    std::vector<int> send(16), recv(16);
    plait::tensor_view<int, 2> x(send.data(), {4, 4});
    plait::tensor_view<int, 2> y(recv.data(), {4, 4});
    return expect_disagreement(comm,
                               [&] {
                                 if (comm.rank() == 0) {
                                   plait::all_to_all<plait::pairwise, plait::redistribute<1, 1>>(comm, x, y);
                                 } else {
                                   plait::all_to_all<plait::pairwise, plait::redistribute<0, 0>>(comm, x, y);
                                 }
                               },
                               {"on the layout", "rank 0 calls all_to_all<pairwise> with redistribute<1, 1>",
                                "rank 1 calls all_to_all<pairwise> with redistribute<0, 0>"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode reports an all_to_all against an all_gather that moves the same bytes", "[check][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    std::vector<int> send(3 * 2), recv(3 * 2);  // blocks of 2 ints either way
    return expect_disagreement(comm,
                               [&] {
                                 if (comm.rank() == 1) {
                                   plait::all_gather<plait::ring>(comm, std::span(send).first(2), recv);
                                 } else {
                                   plait::all_to_all<plait::ring>(comm, send, recv);
                                 }
                               },
                               {"on the operation", "calls all_gather<ring>", "calls all_to_all<ring>"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode reports ranks that gather along different dimensions", "[check][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    std::vector<int> shard(4), full(8);
    plait::tensor_view<int, 2> x(shard.data(), {2, 2});
    return expect_disagreement(comm,
                               [&] {
                                 if (comm.rank() == 0) {
                                   plait::tensor_view<int, 2> y(full.data(), {4, 2});
                                   plait::all_gather<plait::ring, plait::along<0>>(comm, x, y);
                                 } else {
                                   plait::tensor_view<int, 2> y(full.data(), {2, 4});
                                   plait::all_gather<plait::ring, plait::along<1>>(comm, x, y);
                                 }
                               },
                               {"on the layout", "along<0>", "along<1>", "recv [4, 2]", "recv [2, 4]"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode reports ranks whose elements differ in size although the bytes agree", "[check][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    std::vector<double> wide(1), wide_all(2);     // 8 bytes a shard
    std::vector<float> narrow(2), narrow_all(4);  // 8 bytes a shard
    return expect_disagreement(comm,
                               [&] {
                                 if (comm.rank() == 0) {
                                   plait::all_gather<plait::ring>(comm, wide, wide_all);
                                 } else {
                                   plait::all_gather<plait::ring>(comm, narrow, narrow_all);
                                 }
                               },
                               {"on the element size", "8-byte elements", "4-byte elements"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// Two correct schedules of different algorithms do not compose: the k-th
// message between two ranks carries different blocks under ring and direct
// (from P = 3), so mixing them may scramble data or hang. An error, always.
TEST_CASE("check mode reports ranks that run different algorithms with the same layout", "[check][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    std::vector<int> mine(2), all(6);
    return expect_disagreement(comm,
                               [&] {
                                 if (comm.rank() == 0) {
                                   plait::all_gather<plait::direct>(comm, mine, all);
                                 } else {
                                   plait::all_gather<plait::ring>(comm, mine, all);
                                 }
                               },
                               {"on the algorithm", "rank 0 calls all_gather<direct>", "calls all_gather<ring>"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode tells apart custom algorithms that have no name", "[check][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    std::vector<int> mine(2), all(6);
    return expect_disagreement(comm,
                               [&] {
                                 if (comm.rank() == 2) {
                                   plait::all_gather<unnamed_direct>(comm, mine, all);
                                 } else {
                                   plait::all_gather<unnamed_ring>(comm, mine, all);
                                 }
                               },
                               {"on the algorithm", "unnamed_ring", "unnamed_direct"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode takes contiguous and along<0> of 1-d data as the same call", "[check][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    std::vector<int> mine{comm.rank() + 1}, all(2);
    if (comm.rank() == 0) {
      plait::all_gather<plait::ring>(comm, mine, all);
    } else {
      plait::all_gather<plait::ring, plait::along<0>>(comm, mine, all);
    }
    return all == std::vector<int>{1, 2} ? "" : "wrong result";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode rejects a custom algorithm whose schedules break a rule, naming the rule", "[check][shm]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 3, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    comm.set_timeout(5s);
    std::vector<int> mine{comm.rank() + 1}, all(3, -1);
    for (int attempt = 0; attempt < 2; ++attempt) {  // the verdict is remembered, and given again
      try {
        plait::all_gather<swapped_receives>(comm, mine, all);
        return "the broken schedule ran";
      } catch (const plait::error& e) {
        const std::string what = e.what();
        if (e.code() != plait::errc::invalid_argument) return "wrong code: " + what;
        for (const char* word : {"swapped_receives", "mismatched_blocks", "3 ranks", "rank 0, step 0"}) {
          if (what.find(word) == std::string::npos) return "message lacks '" + std::string(word) + "': " + what;
        }
      }
      if (all != std::vector<int>(3, -1)) return "bytes moved before the error";
    }
    if (comm.bytes_sent() != 0) return "payload sent: " + std::to_string(comm.bytes_sent());
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// What check mode is for: without it, the same broken schedule runs and rank 2
// silently ends with the shards of ranks 0 and 1 swapped.
TEST_CASE("without check mode a broken custom algorithm scrambles data silently", "[check][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(false);
    std::vector<int> mine{comm.rank() + 1}, all(3, -1);
    plait::all_gather<swapped_receives>(comm, mine, all);
    const std::vector<int> want = comm.rank() == 2 ? std::vector<int>{2, 1, 3} : std::vector<int>{1, 2, 3};
    return all == want ? "" : "unexpected result";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode lets agreeing calls through and does not count as payload", "[check][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 4, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    std::vector<int> mine{comm.rank()}, all(4);
    plait::all_gather<plait::ring>(comm, mine, all);
    if (all != std::vector<int>{0, 1, 2, 3}) return "wrong result";
    if (comm.bytes_sent() != 3 * sizeof(int)) return "bytes_sent " + std::to_string(comm.bytes_sent());
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("PLAIT_CHECK=1 turns check mode on for every communicator", "[check][shm][env]") {
  setenv("PLAIT_CHECK", "1", 1);
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) {
    std::vector<int> mine(comm.rank() + 1), all(2 * mine.size());
    return expect_disagreement(comm, [&] { plait::all_gather<plait::ring>(comm, mine, all); }, {"rank 1 calls"});
  });
  unsetenv("PLAIT_CHECK");
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("PLAIT_CHECK is read when a shm communicator is created, not at every call", "[check][shm][env]") {
  setenv("PLAIT_CHECK", "1", 1);
  const auto created_under_it = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) {
    return std::string(comm.check_mode() ? "" : "check mode off although PLAIT_CHECK=1 at creation");
  });
  unsetenv("PLAIT_CHECK");
  const auto created_without = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) {
    return std::string(comm.check_mode() ? "check mode on without PLAIT_CHECK" : "");
  });
  REQUIRE(plait_test::failures(created_under_it) == "");
  REQUIRE(plait_test::failures(created_without) == "");
}

TEST_CASE("PLAIT_TIMEOUT bounds every wait of a new communicator", "[timeout][shm][env]") {
  setenv("PLAIT_TIMEOUT", "0.2", 1);
  const auto start = std::chrono::steady_clock::now();
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    if (comm.timeout() != 200ms) return "timeout not taken from PLAIT_TIMEOUT";
    if (comm.rank() == 0) return {};
    std::vector<std::byte> buf(8);
    try {
      comm.recv(0, buf);
      return "recv returned";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::timeout) return "wrong code";
    }
    return {};
  });
  unsetenv("PLAIT_TIMEOUT");
  REQUIRE(plait_test::failures(verdicts) == "");
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

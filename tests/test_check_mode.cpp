// plait-test-labels: quick shm sanitize
// plait-test-also: compiled
// Check mode: ranks that disagree on a call fail on every rank with
// size_mismatch naming both ranks and their shapes, instead of hanging or
// returning silently wrong data.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
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
}  // namespace

TEST_CASE("check mode reports ranks that disagree on the shard size, on every rank", "[check][shm]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 3, [](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    const std::size_t n = comm.rank() == 2 ? 3 : 2;  // rank 2 believes in bigger shards
    std::vector<int> mine(n), all(3 * n);
    return expect_disagreement(comm, [&] { plait::all_gather<plait::ring>(comm, mine, all); },
                               {"rank 0 calls all_gather<ring> with blocks of 8 8 8 bytes",
                                "rank 2 calls all_gather<ring> with blocks of 12 12 12 bytes"});
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

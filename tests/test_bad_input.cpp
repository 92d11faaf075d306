// plait-test-labels: quick shm sanitize
// plait-test-also: compiled
// Bad input is rejected with a clear plait::error before any byte moves: the
// recv buffer is untouched and no peer is left waiting (every rank makes the
// same bad call and throws locally).
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <vector>

#include "support/harness.hpp"

using plait_test::mode;

namespace {
constexpr int sentinel = -12345;

/// Runs `call` on every rank of a P-rank thread group; each rank checks that it
/// threw `code` with a message containing `words` and left `recv` untouched.
std::string expect_rejected(int ranks, plait::errc code, std::string_view words,
                            const std::function<void(plait::shm::communicator&, std::vector<int>&)>& call) {
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) -> std::string {
    std::vector<int> recv(64, sentinel);
    try {
      call(comm, recv);
      return "accepted";
    } catch (const plait::error& e) {
      if (e.code() != code) return std::string("wrong code: ") + e.what();
      if (std::string(e.what()).find(words) == std::string::npos) return std::string("unclear message: ") + e.what();
      if (e.rank() != comm.rank()) return "error does not name the rank";
    }
    for (int v : recv) {
      if (v != sentinel) return "recv was written";
    }
    // The communicator is still usable: rejection happened before any byte moved.
    std::vector<int> mine{comm.rank()}, all(static_cast<std::size_t>(comm.size()));
    plait::all_gather<plait::ring>(comm, mine, all);
    return {};
  });
  return plait_test::failures(verdicts);
}
}  // namespace

TEST_CASE("all-gather rejects a recv buffer of the wrong size", "[bad_input][all_gather]") {
  const int ranks = GENERATE(1, 3);
  const std::size_t shard = GENERATE(std::size_t{4}, std::size_t{21});
  CAPTURE(ranks, shard);
  auto short_recv = [&](plait::shm::communicator& comm, std::vector<int>& recv) {
    std::vector<int> mine(shard, 1);
    plait::all_gather<plait::ring>(comm, mine,
                                   std::span(recv).first(shard * static_cast<std::size_t>(comm.size()) - 1));
  };
  REQUIRE(expect_rejected(ranks, plait::errc::size_mismatch, "recv holds", short_recv) == "");
  auto long_recv = [&](plait::shm::communicator& comm, std::vector<int>& recv) {
    std::vector<int> mine(shard, 1);
    plait::all_gather<plait::ring>(comm, mine,
                                   std::span(recv).first(shard * static_cast<std::size_t>(comm.size()) + 1));
  };
  REQUIRE(expect_rejected(ranks, plait::errc::size_mismatch, "recv holds", long_recv) == "");
}

TEST_CASE("all-to-all rejects a send that P does not divide", "[bad_input][all_to_all]") {
  auto indivisible = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    std::vector<int> send(7, 1);
    plait::all_to_all<plait::pairwise>(comm, send, std::span(recv).first(7));
    (void)comm;
  };
  REQUIRE(expect_rejected(3, plait::errc::size_mismatch, "do not divide", indivisible) == "");
  auto unequal = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    std::vector<int> send(6, 1);
    plait::all_to_all<plait::pairwise>(comm, send, std::span(recv).first(9));
    (void)comm;
  };
  REQUIRE(expect_rejected(3, plait::errc::size_mismatch, "all-to-all needs them equal", unequal) == "");
}

TEST_CASE("null data with a nonzero size is rejected", "[bad_input]") {
  auto null_source = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    const std::span<const int> bogus(static_cast<const int*>(nullptr), 2);
    plait::all_gather<plait::ring>(comm, bogus, std::span(recv).first(2 * static_cast<std::size_t>(comm.size())));
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument, "send buffer is null", null_source) == "");
  auto null_dest = [](plait::shm::communicator& comm, std::vector<int>&) {
    std::vector<int> mine(2, 1);
    plait::all_to_all<plait::pairwise>(
        comm, std::span(mine).first(static_cast<std::size_t>(comm.size())),
        std::span<int>(static_cast<int*>(nullptr), static_cast<std::size_t>(comm.size())));
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument, "recv buffer is null", null_dest) == "");
}

TEST_CASE("send and recv that overlap outside in-place use are rejected", "[bad_input]") {
  auto overlapping = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    // The shard aliases the recv buffer: a silent in-place misuse.
    std::vector<int> copy = recv;
    plait::all_gather<plait::ring>(comm, std::span(recv).subspan(1, 2),
                                   std::span(recv).first(2 * static_cast<std::size_t>(comm.size())));
    (void)copy;
  };
  REQUIRE(expect_rejected(3, plait::errc::invalid_argument, "overlap", overlapping) == "");
  auto overlapping_exchange = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    const auto n = 2 * static_cast<std::size_t>(comm.size());
    plait::all_to_all<plait::pairwise>(comm, std::span(recv).first(n), std::span(recv).subspan(1, n));
  };
  REQUIRE(expect_rejected(3, plait::errc::invalid_argument, "overlap", overlapping_exchange) == "");
}

TEST_CASE("in-place all-gather rejects a recv that P does not divide", "[bad_input][in_place]") {
  auto indivisible = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    plait::all_gather<plait::ring>(comm, plait::in_place, std::span(recv).first(7));
  };
  REQUIRE(expect_rejected(3, plait::errc::size_mismatch, "do not divide", indivisible) == "");
}

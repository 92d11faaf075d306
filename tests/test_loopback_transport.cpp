// plait-test-labels: quick
// plait-test-timeout: 300
// The loopback transport (tests/support/loopback_transport.hpp): an
// in-memory transport of point-to-point moves only, written against the
// transport concept alone. Every all-gather and all-to-all algorithm runs on
// it for P = 1..8 with 1-d ranges (zero-size shards, 1-, 3-, 4-, 8- and
// 12-byte elements, in place), along<D> on strided rank-2 and rank-3 views
// (in place too) and redistribute<S, C> (S == C included), checked against a
// serial reference: proof that a new transport needs nothing else. Then the
// transport's own promises: matching order, timeouts, size mismatches, a
// failing rank, tags, payload counting and the barrier.
// test_loopback_transport_full.cpp runs every arrangement pair and element type.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "support/algorithm_lists.hpp"
#include "support/harness.hpp"
#include "support/layout_sweep.hpp"
#include "support/loopback_transport.hpp"

using layout_sweep::arrangement;

namespace {

/// The strided sweep's arrangements over its shapes and one more with an
/// empty dimension among the last two (zero-size rank-2 views too), with
/// rank-2 views added.
const layout_sweep::plan loopback_plan{
    {{1, 2, 3}, {0, 2, 3}, {3, 1, 5}, {2, 0, 3}}, layout_sweep::strided_views.arrangements, true, true};

/// One shape and two arrangement pairs: for the element types beyond int32.
const layout_sweep::plan odd_type_plan{
    {{2, 1, 3}},
    {{arrangement::dense, arrangement::dense}, {arrangement::padded, arrangement::column_major}},
    true,
    true};

/// In-place all-gather of 1-d ranges: the own shard is already at recv[rank].
template <class T, class Algorithm>
std::string gather_in_place_and_check(loopback::communicator& comm, std::size_t n) {
  const auto ranks = static_cast<std::size_t>(comm.size());
  std::vector<T> all(n * ranks);
  for (std::size_t i = 0; i < n; ++i)
    all[static_cast<std::size_t>(comm.rank()) * n + i] = plait_test::make_value<T>(comm.rank(), i);
  plait::all_gather<Algorithm>(comm, plait::in_place, all);
  std::vector<T> want;
  for (int r = 0; r < comm.size(); ++r) {
    for (std::size_t i = 0; i < n; ++i) want.push_back(plait_test::make_value<T>(r, i));
  }
  return plait_test::compare(all, want, "in-place all_gather n=" + std::to_string(n));
}

/// Appends one check's verdict, "; " after each failing one.
void add(std::string& verdict, const std::string& more) {
  if (!more.empty()) verdict += more + "; ";
}

template <class Algorithm>
std::string gather_ranges(loopback::communicator& comm) {
  std::string verdict;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}}) {
    add(verdict, plait_test::gather_and_check<std::int32_t, Algorithm>(comm, n));
    add(verdict, plait_test::gather_and_check<double, Algorithm>(comm, n));
    add(verdict, plait_test::gather_and_check<plait_test::three_bytes, Algorithm>(comm, n));
    add(verdict, plait_test::gather_and_check<plait_test::triple, Algorithm>(comm, n));
    add(verdict, plait_test::gather_and_check<std::uint8_t, Algorithm>(comm, n));
    add(verdict, gather_in_place_and_check<plait_test::three_bytes, Algorithm>(comm, n));
  }
  return verdict;
}

template <class Algorithm>
std::string exchange_ranges(loopback::communicator& comm) {
  std::string verdict;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}}) {
    add(verdict, plait_test::exchange_and_check<std::int32_t, Algorithm>(comm, n));
    add(verdict, plait_test::exchange_and_check<double, Algorithm>(comm, n));
    add(verdict, plait_test::exchange_and_check<plait_test::three_bytes, Algorithm>(comm, n));
    add(verdict, plait_test::exchange_and_check<plait_test::triple, Algorithm>(comm, n));
    add(verdict, plait_test::exchange_and_check<std::uint8_t, Algorithm>(comm, n));
  }
  return verdict;
}

/// The code a call raised on this rank, as text ("none" when it raised nothing).
template <class Call>
std::string code_of(Call call) {
  try {
    call();
    return "none";
  } catch (const plait::error& e) {
    return e.code().message();
  }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("every all-gather algorithm gathers 1-d ranges of any element type on the loopback, P = 1..8",
                        "[loopback][all_gather]", plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const int ranks = GENERATE(range(1, 9));
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(ranks);
  REQUIRE(plait_test::failures(loopback::run(ranks, gather_ranges<TestType>)) == "");
}

TEMPLATE_LIST_TEST_CASE(
    "every all-gather algorithm gathers along<D> of strided rank-2 and rank-3 views on the loopback",
    "[loopback][all_gather][along]", plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const int ranks = GENERATE(range(1, 9));
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(ranks);
  const auto verdicts = loopback::run(ranks, [](loopback::communicator& comm) {
    return layout_sweep::gather_sweep<TestType, std::int32_t>(comm, loopback_plan) +
           layout_sweep::gather_sweep<TestType, plait_test::three_bytes>(comm, odd_type_plan) +
           layout_sweep::gather_sweep<TestType, double>(comm, odd_type_plan);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("every all-to-all algorithm exchanges 1-d ranges of any element type on the loopback, P = 1..8",
                        "[loopback][all_to_all]", plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const int ranks = GENERATE(range(1, 9));
  CAPTURE(ranks);
  REQUIRE(plait_test::failures(loopback::run(ranks, exchange_ranges<TestType>)) == "");
}

TEMPLATE_LIST_TEST_CASE("every all-to-all algorithm redistributes strided rank-2 and rank-3 views on the loopback",
                        "[loopback][all_to_all][redistribute]", plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const int ranks = GENERATE(range(1, 9));
  CAPTURE(ranks);
  const auto verdicts = loopback::run(ranks, [](loopback::communicator& comm) {
    return layout_sweep::exchange_sweep<TestType, std::int32_t>(comm, loopback_plan) +
           layout_sweep::exchange_sweep<TestType, plait_test::three_bytes>(comm, odd_type_plan) +
           layout_sweep::exchange_sweep<TestType, double>(comm, odd_type_plan);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("neighbor_exchange on an odd number of loopback ranks is unsupported before any byte moves",
          "[loopback][errors]") {
  const int ranks = GENERATE(3, 5, 7);
  CAPTURE(ranks);
  const auto verdicts = loopback::run(ranks, [](loopback::communicator& comm) -> std::string {
    std::vector<int> mine(2, comm.rank());
    std::vector<int> all(2 * static_cast<std::size_t>(comm.size()), -1);
    const std::string code = code_of([&] { plait::all_gather<plait::neighbor_exchange>(comm, mine, all); });
    if (code != plait::make_error_code(plait::errc::unsupported).message()) return "raised " + code;
    if (comm.bytes_sent() != 0) return "bytes moved before the error";
    if (all != std::vector<int>(all.size(), -1)) return "recv was written";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("loopback collectives count exactly their payload in bytes_sent", "[loopback][bytes]") {
  const int ranks = GENERATE(1, 3, 8);
  CAPTURE(ranks);
  const auto verdicts = loopback::run(ranks, [](loopback::communicator& comm) -> std::string {
    // Ring and direct all-gathers and a pairwise all-to-all send every other
    // rank n elements once: (P - 1) x n x the element size each.
    const std::size_t n = 7;
    const std::uint64_t each = static_cast<std::uint64_t>(comm.size() - 1) * n * sizeof(plait_test::three_bytes);
    std::uint64_t want = 0;
    std::string verdict = plait_test::gather_and_check<plait_test::three_bytes, plait::ring>(comm, n);
    want += each;
    if (comm.bytes_sent() != want) verdict += "ring all_gather sent " + std::to_string(comm.bytes_sent()) + "; ";
    add(verdict, plait_test::gather_and_check<plait_test::three_bytes, plait::direct>(comm, n));
    want += each;
    if (comm.bytes_sent() != want) verdict += "direct all_gather: total " + std::to_string(comm.bytes_sent()) + "; ";
    add(verdict, plait_test::exchange_and_check<plait_test::three_bytes, plait::pairwise>(comm, n));
    want += each;
    if (comm.bytes_sent() != want) verdict += "pairwise all_to_all: total " + std::to_string(comm.bytes_sent()) + "; ";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("loopback messages with the same tag match in posting order whatever order they are waited in",
          "[loopback][matching]") {
  const auto verdicts = loopback::run(2, [](loopback::communicator& comm) -> std::string {
    const auto first = plait_test::pattern(16, 1);
    const auto second = plait_test::pattern(16, 2);
    const auto other_tag = plait_test::pattern(16, 3);
    if (comm.rank() == 0) {
      comm.send(1, first, 5);
      comm.send(1, other_tag, 6);
      comm.send(1, second, 5);
      return {};
    }
    std::vector<std::byte> a(16);
    std::vector<std::byte> b(16);
    std::vector<std::byte> c(16);
    std::array<loopback::communicator::request, 3> r{comm.irecv(0, a, 5), comm.irecv(0, b, 5), comm.irecv(0, c, 6)};
    const auto until = plait::clock::now() + std::chrono::seconds(30);
    comm.wait_all(std::span(&r[2], 1), until);  // the tag-6 message, sent between the two others
    comm.wait_all(std::span(&r[1], 1), until);  // the second receive of tag 5 gets the second message
    comm.wait_all(std::span(&r[0], 1), until);
    if (a != first || b != second) return "tag-5 messages matched out of posting order";
    if (c != other_tag) return "the tag-6 message went elsewhere";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a loopback wait for a message never sent times out naming rank, operation and peer, then poisons",
          "[loopback][errors][timeout]") {
  SECTION("a point-to-point receive") {
    const auto verdicts = loopback::run(2, [](loopback::communicator& comm) -> std::string {
      if (comm.rank() == 1) return {};
      comm.set_timeout(std::chrono::milliseconds(50));
      std::vector<std::byte> into(8);
      try {
        comm.recv(1, into);
        return "no error";
      } catch (const plait::error& e) {
        if (e.code() != plait::errc::timeout) return std::string("wrong code: ") + e.what();
        if (e.rank() != 0 || e.peer() != 1) return std::string("wrong rank or peer: ") + e.what();
        if (std::string(e.what()).find("wait_all") == std::string::npos)
          return std::string("no operation: ") + e.what();
      }
      const std::string later = code_of([&] { comm.send(1, std::span<const std::byte>()); });
      if (later != plait::make_error_code(plait::errc::peer_lost).message()) return "not poisoned: " + later;
      return {};
    });
    REQUIRE(plait_test::failures(verdicts) == "");
  }
  SECTION("a collective whose peer never joins") {
    const auto verdicts = loopback::run(2, [](loopback::communicator& comm) -> std::string {
      if (comm.rank() == 1) return {};
      comm.set_timeout(std::chrono::milliseconds(50));
      std::vector<int> mine(3, 1);
      std::vector<int> all(6, 0);
      try {
        plait::all_gather<plait::ring>(comm, mine, all);
        return "no error";
      } catch (const plait::error& e) {
        const std::string what = e.what();
        if (e.code() != plait::errc::timeout) return "wrong code: " + what;
        for (const char* needle : {"rank 0", "all_gather<ring>", "step 0", "peer 1"}) {
          if (what.find(needle) == std::string::npos) return std::string("message lacks `") + needle + "`: " + what;
        }
        return {};
      }
    });
    REQUIRE(plait_test::failures(verdicts) == "");
  }
}

TEST_CASE("a loopback receive of the wrong length is size_mismatch naming the peer", "[loopback][errors]") {
  const auto verdicts = loopback::run(2, [](loopback::communicator& comm) -> std::string {
    if (comm.rank() == 0) {
      comm.send(1, plait_test::pattern(4, 0));
      return {};
    }
    std::vector<std::byte> into(8);
    try {
      comm.recv(0, into);
      return "no error";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) return std::string("wrong code: ") + e.what();
      if (e.peer() != 0 || std::string(e.what()).find("4 bytes") == std::string::npos) {
        return std::string("message lacks the peer or the length: ") + e.what();
      }
      return {};
    }
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a loopback rank that throws ends the others' waits with peer_lost, and run rethrows its exception",
          "[loopback][errors]") {
  std::array<std::string, 4> seen;  // each rank writes its own slot; read after run joined them
  auto body = [&seen](loopback::communicator& comm) -> int {
    if (comm.rank() == 2) throw std::runtime_error("rank 2 gives up");
    comm.set_timeout(std::chrono::seconds(20));  // a broken failure path fails the test instead of hanging it
    std::vector<int> mine(2, comm.rank());
    std::vector<int> all(8);
    seen[static_cast<std::size_t>(comm.rank())] = code_of([&] { plait::all_gather<plait::ring>(comm, mine, all); });
    return 0;
  };
  REQUIRE_THROWS_WITH(loopback::run(4, body), "rank 2 gives up");
  const std::string lost = plait::make_error_code(plait::errc::peer_lost).message();
  CHECK(seen[0] == lost);
  CHECK(seen[1] == lost);
  CHECK(seen[3] == lost);
}

TEST_CASE("loopback next_tag gives every rank the same sequence and never the user tag", "[loopback][tags]") {
  const auto tags = loopback::run(3, [](loopback::communicator& comm) {
    std::vector<int> taken;
    for (int i = 0; i < 5; ++i) taken.push_back(comm.next_tag());
    return taken;
  });
  CHECK(tags[0] == tags[1]);
  CHECK(tags[0] == tags[2]);
  for (int tag : tags[0]) CHECK(tag != plait::user_tag);
}

TEST_CASE("a loopback barrier holds every rank until all have arrived", "[loopback][barrier]") {
  std::atomic<int> arrived{0};
  const auto verdicts = loopback::run(5, [&arrived](loopback::communicator& comm) -> std::string {
    for (int round = 1; round <= 3; ++round) {
      arrived.fetch_add(1);
      comm.barrier();
      if (arrived.load() < round * comm.size()) return "left barrier " + std::to_string(round) + " early";
      comm.barrier();  // nobody starts the next round before everyone has checked this one
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("loopback::run returns each rank's result in rank order and rejects an empty group", "[loopback][run]") {
  const std::vector<int> products =
      loopback::run(3, [](loopback::communicator& comm) { return comm.rank() * comm.size(); });
  CHECK(products == std::vector<int>{0, 3, 6});
  CHECK_THROWS_AS(loopback::run(0, [](loopback::communicator&) { return 0; }), plait::error);
}

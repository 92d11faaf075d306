// plait-test-labels: quick shm sanitize
// Bad input is rejected with a clear plait::error before any byte moves: the
// recv buffer is untouched and no peer is left waiting (every rank makes the
// same bad call and throws locally).
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "support/harness.hpp"

using plait_test::mode;

namespace {
constexpr int sentinel = -12345;

/// Runs `call` on every rank of a P-rank thread group; each rank checks that it
/// threw `code` with a message containing every one of `words` and left
/// `recv` untouched.
std::string expect_rejected(int ranks, plait::errc code, std::initializer_list<std::string_view> words,
                            const std::function<void(plait::shm::communicator&, std::vector<int>&)>& call) {
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) -> std::string {
    std::vector<int> recv(64, sentinel);
    try {
      call(comm, recv);
      return "accepted";
    } catch (const plait::error& e) {
      if (e.code() != code) return std::string("wrong code: ") + e.what();
      for (std::string_view w : words) {
        if (std::string_view(e.what()).find(w) == std::string_view::npos) {
          return "message lacks '" + std::string(w) + "': " + e.what();
        }
      }
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

std::string expect_rejected(int ranks, plait::errc code, std::string_view words,
                            const std::function<void(plait::shm::communicator&, std::vector<int>&)>& call) {
  return expect_rejected(ranks, code, {words}, call);
}

// Views with huge extents over a few real elements (zero strides, or one
// row): the checks must reject them before any element is addressed.
constexpr std::size_t two_to(int k) { return std::size_t{1} << k; }
const int few[4] = {1, 2, 3, 4};

using send_2d = plait::tensor_view<const int, 2>;
using recv_2d = plait::tensor_view<int, 2>;
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

TEST_CASE("an overlap error suggests plait::in_place only for an operation that has an in-place form",
          "[bad_input][in_place]") {
  // all_to_all has no in-place form: its message must not send the user to
  // plait::in_place (which would not compile), but say what works.
  const auto exchange_v = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    const std::vector<int> counts(static_cast<std::size_t>(comm.size()), 2);
    const auto n = 2 * static_cast<std::size_t>(comm.size());
    plait::all_to_all_v<plait::pairwise>(comm, std::span(recv).first(n), counts, std::span(recv).subspan(1, n), counts);
  };
  const auto exchange_tensor = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    const auto p = static_cast<std::size_t>(comm.size());
    plait::all_to_all<plait::pairwise, plait::redistribute<0, 0>>(comm, plait::tensor_view<int, 2>(recv.data(), {p, 2}),
                                                                  plait::tensor_view<int, 2>(recv.data() + 1, {p, 2}));
  };
  const std::function<void(plait::shm::communicator&, std::vector<int>&)> calls[] = {exchange_v, exchange_tensor};
  for (const auto& call : calls) {
    const auto verdicts = plait_test::run_ranks(mode::threads, 3, [&](plait::shm::communicator& comm) -> std::string {
      std::vector<int> recv(64, 0);
      try {
        call(comm, recv);
        return "accepted";
      } catch (const plait::error& e) {
        const std::string text = e.what();
        if (e.code() != plait::errc::invalid_argument) return "wrong code: " + text;
        if (text.find("in_place") != std::string::npos) return "suggests in_place: " + text;
        if (text.find("all_to_all has no in-place form") == std::string::npos) return "unclear: " + text;
      }
      return {};
    });
    REQUIRE(plait_test::failures(verdicts) == "");
  }
  // all_gather has one: its message still says how to use it.
  auto gather = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    plait::all_gather<plait::ring>(comm, std::span(recv).subspan(1, 2),
                                   std::span(recv).first(2 * static_cast<std::size_t>(comm.size())));
  };
  REQUIRE(expect_rejected(3, plait::errc::invalid_argument, "pass plait::in_place as send", gather) == "");
}

TEST_CASE("in-place all-gather rejects a recv that P does not divide", "[bad_input][in_place]") {
  auto indivisible = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    plait::all_gather<plait::ring>(comm, plait::in_place, std::span(recv).first(7));
  };
  REQUIRE(expect_rejected(3, plait::errc::size_mismatch, "do not divide", indivisible) == "");
}

// Issue 27, item 2: products of extents, strides and element size are
// checked where a view becomes bytes, the one step every form takes, before
// any element is addressed.

TEST_CASE("an all-gather whose extents' product wraps to zero is rejected, not run as an empty call",
          "[bad_input][overflow]") {
  // {2^32, 2^32} into {2^33, 2^32}: 2^64 elements wrap to 0, and the call once returned having moved nothing.
  auto wrapped = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    plait::all_gather<plait::ring, plait::along<0>>(comm, send_2d(few, {two_to(32), two_to(32)}),
                                                    recv_2d(recv.data(), {two_to(33), two_to(32)}));
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"all_gather<ring>", "send view's extents [4294967296, 4294967296]", "overflows"},
                          wrapped) == "");
}

TEST_CASE("an all-gather whose element count wraps to a matching shape is rejected before it reads past the view",
          "[bad_input][overflow]") {
  // {2^63 + 1, 2} with strides {0, 1} holds 2^64 + 2 elements, wrapped to 2,
  // and 2 ranks x 2^63 + 1 rows wrap to the 2 rows of recv: the shapes
  // checked out and the copy wrote past the end of recv (a crash).
  auto wrapped = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    plait::all_gather<plait::ring, plait::along<0>>(comm, send_2d(few, {two_to(63) + 1, 2}, {0, 1}),
                                                    recv_2d(recv.data(), {2, 2}));
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"all_gather<ring>", "send view's extents [9223372036854775809, 2]", "overflows"},
                          wrapped) == "");
  // One-byte elements: the send view's 2^63 + 1 bytes fit, but P x its
  // extent does not, so no recv can match it.
  auto ranks_times_extent = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(few);
    plait::all_gather<plait::ring, plait::along<0>>(
        comm, plait::tensor_view<const unsigned char, 1>(bytes, {two_to(63) + 1}, {0}),
        plait::tensor_view<unsigned char, 1>(reinterpret_cast<unsigned char*>(recv.data()), {2}));
  };
  REQUIRE(expect_rejected(2, plait::errc::size_mismatch, {"all_gather<ring>", "need more than std::size_t holds"},
                          ranks_times_extent) == "");
}

TEST_CASE("an all-to-all along a dimension rejects views whose element count, stride or span overflows",
          "[bad_input][overflow][all_to_all]") {
  using redistribute_1 = plait::redistribute<1, 1>;
  auto count = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    plait::all_to_all<plait::pairwise, redistribute_1>(comm, send_2d(few, {two_to(32), two_to(32)}, {0, 0}),
                                                       recv_2d(recv.data(), {two_to(32), two_to(32)}));
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"all_to_all<pairwise>", "send view's extents [4294967296, 4294967296]", "overflows"},
                          count) == "");
  auto stride = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    plait::all_to_all<plait::pairwise, redistribute_1>(comm, send_2d(few, {2, 2}, {two_to(62), 1}),
                                                       recv_2d(recv.data(), {2, 2}));
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"all_to_all<pairwise>", "send view's stride along dimension 0", "overflows"}, stride) == "");
  // Each stride fits in bytes (2^63), but the last element lies 2 x 2^63 bytes past the first.
  auto span = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    plait::all_to_all<plait::pairwise, redistribute_1>(comm, send_2d(few, {3, 2}, {0, 1}),
                                                       recv_2d(recv.data(), {3, 2}, {two_to(61), 1}));
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"all_to_all<pairwise>", "recv view's extents [3, 2] and strides [2305843009213693952, 1]",
                           "span overflows"},
                          span) == "");
}

TEST_CASE("the uneven and bundled forms reject a view whose element count overflows", "[bad_input][overflow][uneven]") {
  using send_3d = plait::tensor_view<const int, 3>;
  using recv_3d = plait::tensor_view<int, 3>;
  // {1, 2^32, 2^32}: the counts' unit (2^64 elements a slice) wraps to 0,
  // so no count looked too large; recv's strides name each element once.
  auto uneven = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    const std::vector<int> counts(static_cast<std::size_t>(comm.size()), 1);
    plait::all_gather_v<plait::ring, plait::along<0>>(
        comm, send_3d(few, {1, two_to(32), two_to(32)}),
        recv_3d(recv.data(), {static_cast<std::size_t>(comm.size()), two_to(32), two_to(32)},
                {two_to(61), two_to(32), 1}),
        counts);
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"all_gather_v<ring>", "send view's extents [1, 4294967296, 4294967296]", "overflows"},
                          uneven) == "");
  // A sound member first, then one that overflows: neither moves.
  auto bundled = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    const std::vector<int> shard{comm.rank()};
    plait::all_gather<plait::ring, plait::along<0>>(
        comm,
        plait::bundle(plait::tensor_view<const int, 1>(shard.data(), {1}), send_2d(few, {two_to(32), two_to(32)})),
        plait::bundle(plait::tensor_view<int, 1>(recv.data(), {static_cast<std::size_t>(comm.size())}),
                      recv_2d(recv.data() + 8, {2 * two_to(32), two_to(32)})));
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"all_gather<ring>", "send view's extents [4294967296, 4294967296]", "overflows"},
                          bundled) == "");
}

TEST_CASE("nonblocking, persistent and split forms reject a view whose element count overflows",
          "[bad_input][overflow][nonblocking]") {
  auto nonblocking = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    auto request = plait::iall_gather<plait::ring, plait::along<0>>(comm, send_2d(few, {two_to(32), two_to(32)}),
                                                                    recv_2d(recv.data(), {two_to(33), two_to(32)}));
    request.wait();
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"all_gather<ring>", "send view's extents [4294967296, 4294967296]", "overflows"},
                          nonblocking) == "");
  auto persistent = [](plait::shm::communicator& comm, std::vector<int>& recv) {
    const send_2d send(few, {two_to(63) + 1, 2}, {0, 1});
    const recv_2d into(recv.data(), {2, 2});
    auto p = plait::all_gather_init<plait::ring, plait::along<0>>(comm, send, into);
    p.start();
    p.wait();
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"all_gather<ring>", "send view's extents [9223372036854775809, 2]", "overflows"},
                          persistent) == "");
  auto split = [](plait::shm::communicator& comm, std::vector<int>&) {
    auto boundary = plait::split_all_gather<plait::ring, plait::along<0>>(comm, comm);
    boundary.send((comm.rank() + 1) % comm.size(), send_2d(few, {two_to(32), two_to(32)}));
  };
  REQUIRE(expect_rejected(2, plait::errc::invalid_argument,
                          {"split_all_gather.send", "x view's extents [4294967296, 4294967296]", "overflows"},
                          split) == "");
}

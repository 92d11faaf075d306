// plait-test-labels: quick shm sanitize
// Aliasing (issue 29, item 3): an element shared by two recv members of a
// bundle, or by a send member and another member's recv, or a recv view that
// names an element twice (a stride of 0), is errc::invalid_argument on the
// rank that makes the call, before any byte moves, in every form. Views that
// interleave without sharing an element (the real and imaginary parts of
// complex numbers, stride 2, offsets 0 and 1) are legal, and the overlap test
// is exact for strided views (core/overlap.hpp).
#include <catch2/catch.hpp>

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <plait/core/overlap.hpp>

#include "support/harness.hpp"

using plait_test::mode;

namespace {
constexpr int sentinel = -777;
using view1 = plait::tensor_view<int, 1>;
using cview1 = plait::tensor_view<const int, 1>;

/// Every rank of a P = 2 thread group makes the call `call`; each must throw
/// invalid_argument naming every one of `words`, with `recv` (the memory its
/// views point into) untouched, and the communicator still usable.
std::string expect_aliasing(std::initializer_list<std::string_view> words,
                            const std::function<void(plait::shm::communicator&, std::vector<int>&)>& call) {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [&](plait::shm::communicator& comm) -> std::string {
    std::vector<int> recv(64, sentinel);
    try {
      call(comm, recv);
      return "accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) return std::string("wrong code: ") + e.what();
      for (std::string_view w : words) {
        if (std::string_view(e.what()).find(w) == std::string_view::npos) {
          return "message lacks '" + std::string(w) + "': " + e.what();
        }
      }
    }
    for (int v : recv) {
      if (v != sentinel) return "recv was written";
    }
    std::vector<int> mine{comm.rank()}, all(2);
    plait::all_gather<plait::ring>(comm, mine, all);
    return all == std::vector<int>{0, 1} ? "" : "the communicator no longer works";
  });
  return plait_test::failures(verdicts);
}

/// The int elements of `s` as a strided_set over caller-held arrays.
struct ints {
  std::size_t extent[2];
  std::size_t stride[2];
  plait::detail::strided_set set;
  ints(const int* data, std::size_t n, std::size_t step, std::size_t rows = 1, std::size_t row_step = 0)
      : extent{rows, n}, stride{row_step * sizeof(int), step * sizeof(int)} {
    set = {reinterpret_cast<const std::byte*>(data), sizeof(int), extent, stride, 2};
  }
};
}  // namespace

TEST_CASE("a bundle whose recv members are the same buffer is invalid_argument in every form", "[aliasing][bundle]") {
  // all_gather(c, bundle(a, b), bundle(r, r)): member 0's data would be lost.
  REQUIRE(expect_aliasing({"all_gather<ring>", "recv members 0 and 1", "share elements"},
                          [](plait::shm::communicator& comm, std::vector<int>& r) {
                            std::vector<int> a(2, 1), b(2, 2);
                            auto all = std::span(r).first(4);
                            plait::all_gather<plait::ring>(comm, plait::bundle(a, b), plait::bundle(all, all));
                          }) == "");
  // Members that overlap in part, all_to_all.
  REQUIRE(expect_aliasing({"all_to_all<pairwise>", "recv members 0 and 1"}, [](plait::shm::communicator& comm,
                                                                               std::vector<int>& r) {
            std::vector<int> a(4, 1), b(4, 2);
            plait::all_to_all<plait::pairwise>(comm, plait::bundle(a, b),
                                               plait::bundle(std::span(r).first(4), std::span(r).subspan(3, 4)));
          }) == "");
  // The uneven forms and the nonblocking and persistent ones check the same.
  REQUIRE(expect_aliasing(
              {"all_gather_v<ring>", "recv members 0 and 1"}, [](plait::shm::communicator& comm, std::vector<int>& r) {
                std::vector<int> a(2, 1), b(2, 2);
                const std::vector<std::size_t> counts{2, 2};
                auto all = std::span(r).first(4);
                plait::all_gather_v<plait::ring>(comm, plait::bundle(a, b), plait::bundle(all, all), counts);
              }) == "");
  REQUIRE(expect_aliasing({"all_to_all_v<pairwise>", "recv members 0 and 1"}, [](plait::shm::communicator& comm,
                                                                                 std::vector<int>& r) {
            std::vector<int> a(4, 1), b(4, 2);
            const std::vector<std::size_t> counts{2, 2};
            auto all = std::span(r).first(4);
            plait::all_to_all_v<plait::pairwise>(comm, plait::bundle(a, b), counts, plait::bundle(all, all), counts);
          }) == "");
  REQUIRE(expect_aliasing(
              {"all_gather<ring>", "recv members 0 and 1"}, [](plait::shm::communicator& comm, std::vector<int>& r) {
                std::vector<int> a(2, 1), b(2, 2);
                auto all = std::span(r).first(4);
                auto request = plait::iall_gather<plait::ring>(comm, plait::bundle(a, b), plait::bundle(all, all));
                request.wait();
              }) == "");
  REQUIRE(expect_aliasing({"all_to_all<pairwise>", "recv members 0 and 1"},
                          [](plait::shm::communicator& comm, std::vector<int>& r) {
                            std::vector<int> a(4, 1), b(4, 2);
                            auto all = std::span(r).first(4);
                            auto persistent = plait::all_to_all_init<plait::pairwise>(comm, plait::bundle(a, b),
                                                                                      plait::bundle(all, all));
                            persistent.start();
                            persistent.wait();
                          }) == "");
}

TEST_CASE("a send member that shares an element with another member's recv is invalid_argument", "[aliasing][bundle]") {
  // Member 1 receives into memory member 0 still has to send.
  REQUIRE(expect_aliasing({"all_gather<ring>", "send member 0 and recv member 1"},
                          [](plait::shm::communicator& comm, std::vector<int>& r) {
                            std::vector<int> b(2, 2), other(4);
                            auto a = std::span(r).subspan(8, 2);
                            plait::all_gather<plait::ring>(comm, plait::bundle(a, b),
                                                           plait::bundle(std::span(other), std::span(r).subspan(8, 4)));
                          }) == "");
  REQUIRE(expect_aliasing({"all_to_all<pairwise>", "send member 1 and recv member 0"},
                          [](plait::shm::communicator& comm, std::vector<int>& r) {
                            std::vector<int> a(4, 1), other(4);
                            auto b = std::span(r).subspan(10, 4);
                            plait::all_to_all<plait::pairwise>(comm, plait::bundle(a, b),
                                                               plait::bundle(std::span(r).subspan(12, 4), other));
                          }) == "");
}

TEST_CASE("send and recv that share one element through their strides are invalid_argument", "[aliasing][strided]") {
  // send: elements 0, 3 (stride 3); recv: elements 1, 3, 5, 7 (stride 2): element 3 is both.
  REQUIRE(expect_aliasing({"send and recv"}, [](plait::shm::communicator& comm, std::vector<int>& r) {
            plait::all_gather<plait::ring, plait::along<0>>(comm, cview1(r.data(), {2}, {3}),
                                                            view1(r.data() + 1, {4}, {2}));
          }) == "");
  REQUIRE(expect_aliasing({"send and recv"}, [](plait::shm::communicator& comm, std::vector<int>& r) {
            plait::all_to_all<plait::pairwise, plait::redistribute<0, 0>>(comm, cview1(r.data(), {4}, {3}),
                                                                          view1(r.data() + 1, {4}, {2}));
          }) == "");
}

TEST_CASE("a recv view with a stride of 0 is invalid_argument", "[aliasing][strided]") {
  REQUIRE(expect_aliasing({"recv view's stride along dimension 0", "overlap"}, [](plait::shm::communicator& comm,
                                                                                  std::vector<int>& r) {
            std::vector<int> mine(2, 1);
            plait::all_gather<plait::ring, plait::along<0>>(comm, cview1(mine.data(), {2}), view1(r.data(), {4}, {0}));
          }) == "");
  REQUIRE(expect_aliasing({"recv view's stride along dimension 0"},
                          [](plait::shm::communicator& comm, std::vector<int>& r) {
                            std::vector<int> mine(4, 1);
                            plait::all_to_all<plait::pairwise, plait::redistribute<0, 0>>(
                                comm, cview1(mine.data(), {4}), view1(r.data(), {4}, {0}));
                          }) == "");
  REQUIRE(expect_aliasing({"recv view's stride along dimension 0"},
                          [](plait::shm::communicator& comm, std::vector<int>& r) {
                            std::vector<int> a(2, 1), b(2, 2);
                            plait::all_gather<plait::ring, plait::along<0>>(
                                comm, plait::bundle(cview1(a.data(), {2}), cview1(b.data(), {2})),
                                plait::bundle(view1(r.data(), {4}), view1(r.data() + 8, {4}, {0})));
                          }) == "");
}

TEST_CASE("interleaved views that share no element stay legal: real and imaginary parts", "[aliasing][strided]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    const int me = comm.rank();
    std::string verdict;
    // One buffer of interleaved (re, im) pairs: send the real parts, gather
    // into the imaginary parts of the same buffer.
    std::vector<int> z(8, -1);
    for (int i = 0; i < 2; ++i) z[static_cast<std::size_t>(2 * i)] = 10 * me + i;
    plait::all_gather<plait::ring, plait::along<0>>(comm, cview1(z.data(), {2}, {2}), view1(z.data() + 1, {4}, {2}));
    for (int j = 0; j < 4; ++j) {
      if (z[static_cast<std::size_t>(2 * j + 1)] != 10 * (j / 2) + j % 2) verdict += "all_gather im wrong; ";
    }
    // all_to_all from the real parts into the imaginary parts.
    std::vector<int> w(8, -1);
    for (int i = 0; i < 4; ++i) w[static_cast<std::size_t>(2 * i)] = 100 * me + i;
    plait::all_to_all<plait::pairwise, plait::redistribute<0, 0>>(comm, cview1(w.data(), {4}, {2}),
                                                                  view1(w.data() + 1, {4}, {2}));
    for (int j = 0; j < 4; ++j) {
      // Block s (2 elements) of rank me's recv comes from rank s's block me.
      const int s = j / 2;
      if (w[static_cast<std::size_t>(2 * j + 1)] != 100 * s + 2 * me + j % 2) verdict += "all_to_all im wrong; ";
    }
    // A bundle whose two recv members interleave: real and imaginary parts.
    std::vector<int> re{me, me}, im{-me - 1, -me - 1}, c(8, 0);
    plait::all_gather<plait::ring, plait::along<0>>(
        comm, plait::bundle(cview1(re.data(), {2}), cview1(im.data(), {2})),
        plait::bundle(view1(c.data(), {4}, {2}), view1(c.data() + 1, {4}, {2})));
    for (int j = 0; j < 4; ++j) {
      if (c[static_cast<std::size_t>(2 * j)] != j / 2 || c[static_cast<std::size_t>(2 * j + 1)] != -(j / 2) - 1) {
        verdict += "bundle re/im wrong; ";
      }
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("share_bytes is exact for strided sets", "[aliasing][overlap]") {
  std::vector<int> buf(64);
  const int* p = buf.data();
  using plait::detail::share_bytes;
  // Interleaved: evens and odds share nothing; evens and multiples of 3 share 0, 6, ...
  REQUIRE_FALSE(share_bytes(ints(p, 16, 2).set, ints(p + 1, 16, 2).set));
  REQUIRE(share_bytes(ints(p, 16, 2).set, ints(p, 10, 3).set));
  // Stride 4 and stride 2 from 1: parity never meets, whatever the lengths.
  REQUIRE_FALSE(share_bytes(ints(p, 16, 4).set, ints(p + 1, 30, 2).set));
  // Stride 3 from 0 and stride 2 from 1: 3 is in both.
  REQUIRE(share_bytes(ints(p, 2, 3).set, ints(p + 1, 4, 2).set));
  REQUIRE_FALSE(share_bytes(ints(p, 1, 3).set, ints(p + 1, 1, 2).set));  // {0} and {1}
  // Disjoint and adjacent ranges; one element of overlap at the end.
  REQUIRE_FALSE(share_bytes(ints(p, 8, 1).set, ints(p + 8, 8, 1).set));
  REQUIRE(share_bytes(ints(p, 9, 1).set, ints(p + 8, 8, 1).set));
  // Two columns of a 8 x 8 matrix: distinct; a column and a row meet once.
  REQUIRE_FALSE(share_bytes(ints(p, 8, 8).set, ints(p + 1, 8, 8).set));
  REQUIRE(share_bytes(ints(p + 3, 8, 8).set, ints(p + 40, 8, 1).set));
  // 2-d: the left and right halves of 4 rows of 8.
  REQUIRE_FALSE(share_bytes(ints(p, 4, 1, 4, 8).set, ints(p + 4, 4, 1, 4, 8).set));
  REQUIRE(share_bytes(ints(p, 5, 1, 4, 8).set, ints(p + 4, 4, 1, 4, 8).set));
  // Bytes, not elements: a 4-byte int and the char at its third byte.
  const std::size_t one = 1;
  const std::size_t step = 1;
  const plait::detail::strided_set byte{reinterpret_cast<const std::byte*>(p) + 2, 1, &one, &step, 1};
  REQUIRE(share_bytes(ints(p, 1, 1).set, byte));
  REQUIRE_FALSE(share_bytes(ints(p + 1, 1, 1).set, byte));
  // Empty views share nothing.
  REQUIRE_FALSE(share_bytes(ints(p, 0, 1).set, ints(p, 8, 1).set));
}

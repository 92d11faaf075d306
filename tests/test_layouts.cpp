// plait-test-labels: quick shm
// plait-test-timeout: 300
// Layouts on the shared-memory transport, the quick part: every algorithm x
// along<0/1/2> (and in place) and x redistribute<1,0 / 0,1 / 0,0 / 2,2 / 2,0>
// on threads and processes for a few P, strided and dense views on both
// sides, zero-size and odd extents; plus the block plans themselves (no copy
// for contiguous blocks, merged runs), argument errors raised before any byte
// moves, 1-d ranges and user mdspan-like types. test_layouts_full.cpp runs
// the exhaustive sweep (P = 1..8, every arrangement pair).
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "support/algorithm_lists.hpp"
#include "support/harness.hpp"
#include "support/layout_sweep.hpp"

using layout_sweep::arrangement;
using plait_test::mode;

namespace {

const layout_sweep::plan quick_plan{{{1, 2, 3}, {0, 2, 3}, {3, 1, 5}},
                                    {{arrangement::dense, arrangement::dense},
                                     {arrangement::padded, arrangement::interleaved},
                                     {arrangement::column_major, arrangement::dense},
                                     {arrangement::interleaved, arrangement::column_major}},
                                    true};

}  // namespace

TEMPLATE_LIST_TEST_CASE("every all-gather algorithm works with along<D> on strided views", "[layout][along][shm]",
                        plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>({{mode::threads, 1},
                                                     {mode::threads, 2},
                                                     {mode::threads, 3},
                                                     {mode::threads, 4},
                                                     {mode::processes, 4},
                                                     {mode::processes, 5}}));
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) {
    return layout_sweep::gather_sweep<TestType, std::int32_t>(comm, quick_plan);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("every all-to-all algorithm works with redistribute<S, C> on strided views",
                        "[layout][redistribute][shm]", plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>(
      {{mode::threads, 1}, {mode::threads, 2}, {mode::threads, 3}, {mode::processes, 4}, {mode::processes, 5}}));
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) {
    return layout_sweep::exchange_sweep<TestType, std::int32_t>(comm, quick_plan);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("layouts move odd-sized elements", "[layout][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) {
    return layout_sweep::gather_sweep<plait::ring, plait_test::triple>(comm, quick_plan) +
           layout_sweep::exchange_sweep<plait::bruck, plait_test::triple>(comm, quick_plan) +
           layout_sweep::gather_sweep<plait::bruck, std::uint8_t>(comm, quick_plan) +
           layout_sweep::exchange_sweep<plait::pairwise, std::uint8_t>(comm, quick_plan);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {

const plait::detail::call_site site_of_4{1, 4, "test"};

}  // namespace

TEST_CASE("contiguous blocks are located in user memory, strided ones as merged runs", "[layout][plan]") {
  std::vector<float> shard(2 * 3 * 4);
  std::vector<float> full(2 * 12 * 4);
  plait::tensor_view<const float, 3> send(shard.data(), {2, 3, 4});
  plait::tensor_view<float, 3> recv(full.data(), {2, 12, 4});

  SECTION("along<0> of a row-major tensor: every block is one run in recv") {
    plait::tensor_view<const float, 3> s(shard.data(), {1, 6, 4});
    plait::tensor_view<float, 3> r(full.data(), {4, 6, 4});
    auto plan = plait::detail::make_plan(plait::along<0>{}, plait::op::all_gather{}, site_of_4, s, r);
    for (int j = 0; j < 4; ++j) {
      const plait::region block = plan.location(j);
      CHECK(block.is_contiguous());
      CHECK(block.dims == 0);
      CHECK(block.data == reinterpret_cast<std::byte*>(full.data() + static_cast<std::size_t>(j) * 24));
      CHECK(block.bytes() == 24 * sizeof(float));
    }
  }
  SECTION("along<1>: the inner dimensions fold into one run of 3 x 4 floats, 2 runs apart by a recv plane") {
    auto plan = plait::detail::make_plan(plait::along<1>{}, plait::op::all_gather{}, site_of_4, send, recv);
    const plait::region block = plan.location(2);
    CHECK_FALSE(block.is_contiguous());
    CHECK(block.run_bytes == 3 * 4 * sizeof(float));
    REQUIRE(block.dims == 1);
    CHECK(block.extent[0] == 2);
    CHECK(block.stride[0] == static_cast<std::ptrdiff_t>(12 * 4 * sizeof(float)));
    CHECK(block.data == reinterpret_cast<std::byte*>(full.data() + 2 * 3 * 4));
    CHECK(plan.block_bytes(0) == shard.size() * sizeof(float));
  }
  SECTION("extent-1 dimensions are dropped and evenly stepping dimensions merged") {
    // A [1, 4, 1, 3] view with element stride 2 along the last dimension:
    // dimensions 0 and 2 drop out, and 1 merges with 3 (stride 6 = 3 x 2).
    std::vector<float> data(64);
    plait::tensor_view<float, 4> odd(data.data(), {1, 4, 1, 3}, {100, 6, 50, 2});
    const plait::region whole =
        plait::detail::to_region(plait::detail::to_box(odd, site_of_4, "test"), site_of_4, "test");
    CHECK(whole.run_bytes == sizeof(float));
    REQUIRE(whole.dims == 1);
    CHECK(whole.extent[0] == 12);
    CHECK(whole.stride[0] == static_cast<std::ptrdiff_t>(2 * sizeof(float)));
  }
  SECTION("redistribute<0, 0> of row-major tensors: contiguous blocks on both sides") {
    std::vector<float> a(8 * 3);
    std::vector<float> b(8 * 3);
    plait::tensor_view<const float, 2> s(a.data(), {8, 3});
    plait::tensor_view<float, 2> r(b.data(), {8, 3});
    auto plan = plait::detail::make_plan(plait::redistribute<0, 0>{}, plait::op::all_to_all{}, site_of_4, s, r);
    for (int block = 0; block < 16; ++block) {
      if (!plan.has_location(block)) continue;
      CHECK(plan.location(block).is_contiguous());
    }
    CHECK(plan.location(plait::op::all_to_all::block(1, 3, 4)).data == reinterpret_cast<std::byte*>(a.data() + 18));
    CHECK(plan.location(plait::op::all_to_all::block(2, 1, 4)).data == reinterpret_cast<std::byte*>(b.data() + 12));
  }
}

namespace {

/// Runs `call` on 3 threads and checks each rank sees `code` with every
/// needle in the message, and that recv still holds its initial bytes.
template <class Call>
void expect_rejected(plait::errc code, std::vector<std::string> needles, Call call) {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [&](plait::shm::communicator& comm) -> std::string {
    try {
      std::vector<int> recv = call(comm);
      (void)recv;
      return "no error was raised";
    } catch (const plait::error& e) {
      if (e.code() != code) return std::string("wrong code: ") + e.what();
      const std::string what = e.what();
      for (const auto& needle : needles) {
        if (what.find(needle) == std::string::npos) return "message lacks `" + needle + "`: " + what;
      }
      return {};
    }
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

}  // namespace

TEST_CASE("extents that do not fit are size_mismatch naming the dimension and both extents", "[layout][errors]") {
  SECTION("along<1>: recv extent is not P x send extent") {
    expect_rejected(plait::errc::size_mismatch, {"along<1>", "dimension 1", "recv extent 7", "send extent 2"},
                    [](plait::shm::communicator& comm) {
                      std::vector<int> s(2 * 2 * 2, 1);
                      std::vector<int> r(2 * 7 * 2, 5);
                      const auto before = r;
                      try {
                        plait::all_gather<plait::ring, plait::along<1>>(
                            comm, plait::tensor_view<const int, 3>(s.data(), {2, 2, 2}),
                            plait::tensor_view<int, 3>(r.data(), {2, 7, 2}));
                      } catch (...) {
                        if (r != before) throw std::runtime_error("recv was written before the error");
                        throw;
                      }
                      return r;
                    });
  }
  SECTION("along<2>: another dimension differs") {
    expect_rejected(plait::errc::size_mismatch, {"dimension 0", "send extent 2", "recv extent 3"},
                    [](plait::shm::communicator& comm) {
                      std::vector<int> s(2 * 2, 1);
                      std::vector<int> r(3 * 6, 5);
                      plait::all_gather<plait::ring, plait::along<1>>(comm,
                                                                      plait::tensor_view<int, 2>(s.data(), {2, 2}),
                                                                      plait::tensor_view<int, 2>(r.data(), {3, 6}));
                      return r;
                    });
  }
  SECTION("redistribute<1, 0>: P does not divide the split dimension") {
    expect_rejected(plait::errc::size_mismatch, {"redistribute<1, 0>", "dimension 1", "send extent 4"},
                    [](plait::shm::communicator& comm) {
                      std::vector<int> s(2 * 4, 1);
                      std::vector<int> r(6 * 4, 5);
                      plait::all_to_all<plait::pairwise, plait::redistribute<1, 0>>(
                          comm, plait::tensor_view<int, 2>(s.data(), {2, 4}),
                          plait::tensor_view<int, 2>(r.data(), {6, 4}));
                      return r;
                    });
  }
  SECTION("redistribute<1, 0>: recv's split dimension is not send's divided by P") {
    expect_rejected(plait::errc::size_mismatch, {"dimension 1", "send extent 6", "recv extent 3", "must be 2"},
                    [](plait::shm::communicator& comm) {
                      std::vector<int> s(2 * 6, 1);
                      std::vector<int> r(6 * 3, 5);
                      plait::all_to_all<plait::pairwise, plait::redistribute<1, 0>>(
                          comm, plait::tensor_view<int, 2>(s.data(), {2, 6}),
                          plait::tensor_view<int, 2>(r.data(), {6, 3}));
                      return r;
                    });
  }
  SECTION("in-place along<0>: P does not divide recv") {
    expect_rejected(plait::errc::size_mismatch, {"along<0>", "dimension 0", "extent 4"},
                    [](plait::shm::communicator& comm) {
                      std::vector<int> r(4 * 2, 5);
                      plait::all_gather<plait::ring, plait::along<0>>(comm, plait::in_place,
                                                                      plait::tensor_view<int, 2>(r.data(), {4, 2}));
                      return r;
                    });
  }
}

TEST_CASE("bad views are invalid_argument or unsupported, raised before any byte moves", "[layout][errors]") {
  SECTION("a recv whose stride names one element twice") {
    expect_rejected(plait::errc::invalid_argument, {"recv", "overlap"}, [](plait::shm::communicator& comm) {
      std::vector<int> s(2, 1);
      std::vector<int> r(8, 5);
      plait::all_gather<plait::ring, plait::along<1>>(comm, plait::tensor_view<int, 2>(s.data(), {1, 2}),
                                                      plait::tensor_view<int, 2>(r.data(), {1, 6}, {6, 0}));
      return r;
    });
  }
  SECTION("send and recv overlapping") {
    expect_rejected(plait::errc::invalid_argument, {"overlap", "in_place"}, [](plait::shm::communicator& comm) {
      std::vector<int> r(12, 5);
      plait::all_gather<plait::ring, plait::along<0>>(comm, plait::tensor_view<int, 2>(r.data(), {1, 4}),
                                                      plait::tensor_view<int, 2>(r.data(), {3, 4}));
      return r;
    });
  }
  SECTION("a null pointer with elements") {
    expect_rejected(plait::errc::invalid_argument, {"send", "null"}, [](plait::shm::communicator& comm) {
      std::vector<int> r(12, 5);
      plait::all_gather<plait::ring, plait::along<0>>(comm, plait::tensor_view<const int, 2>(nullptr, {1, 4}),
                                                      plait::tensor_view<int, 2>(r.data(), {3, 4}));
      return r;
    });
  }
  SECTION("a block needing more strided dimensions than a region holds") {
    expect_rejected(plait::errc::unsupported, {"strided dimensions", "at most 6"}, [](plait::shm::communicator& comm) {
      // Rank 8, extent 2 everywhere, every dimension padded: nothing merges.
      std::array<std::size_t, 8> extents{};
      std::array<std::size_t, 8> strides{};
      std::size_t step = 2;
      for (std::size_t r = 8; r-- > 0;) {
        extents[r] = 2;
        strides[r] = step;
        step *= 3;
      }
      std::vector<int> s(step);
      extents[0] = 6;
      std::vector<int> r(step * 3);
      std::array<std::size_t, 8> recv_strides = strides;
      plait::all_gather<plait::ring, plait::along<0>>(
          comm, plait::tensor_view<int, 8>(s.data(), {2, 2, 2, 2, 2, 2, 2, 2}, strides),
          plait::tensor_view<int, 8>(r.data(), extents, recv_strides));
      return r;
    });
  }
}

TEST_CASE("a destination whose rows end short of the next row's stride is taken and written exactly",
          "[layout][errors][shm]") {
  // Rank j's slice: 3 rows of 2 ints, 5 apart, slices 12 apart: a slice
  // spans 2 x 5 + 2 = 12 ints, so no two elements meet (an MPI vector
  // type's shape; the check once took a slice's span as 3 x 5 and refused it).
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) -> std::string {
    const auto P = static_cast<std::size_t>(comm.size());
    std::vector<int> send(6);
    for (int i = 0; i < 6; ++i) send[static_cast<std::size_t>(i)] = comm.rank() * 100 + i;
    std::vector<int> recv(12 * P, -1);
    plait::all_gather<plait::ring, plait::along<0>>(comm, plait::tensor_view<const int, 3>(send.data(), {1, 3, 2}),
                                                    plait::tensor_view<int, 3>(recv.data(), {P, 3, 2}, {12, 5, 1}));
    for (std::size_t i = 0; i < recv.size(); ++i) {
      const std::size_t j = i / 12;
      const std::size_t row = i % 12 / 5;
      const std::size_t column = i % 12 % 5;
      const int want = column < 2 ? static_cast<int>(j * 100 + row * 2 + column) : -1;
      if (recv[i] != want) return "recv[" + std::to_string(i) + "] is " + std::to_string(recv[i]);
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("1-d ranges and contiguous tensors take the tensor layouts' meaning", "[layout][shm]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) -> std::string {
    const int me = comm.rank();
    const int p = comm.size();
    // along<0> with std::vector on both sides is the 1-d all-gather.
    std::vector<int> mine{me * 10, me * 10 + 1};
    std::vector<int> all(2 * static_cast<std::size_t>(p));
    plait::all_gather<plait::ring, plait::along<0>>(comm, mine, all);
    for (int j = 0; j < p; ++j) {
      if (all[2 * static_cast<std::size_t>(j)] != j * 10 || all[2 * static_cast<std::size_t>(j) + 1] != j * 10 + 1) {
        return "along<0> over vectors is wrong";
      }
    }
    // contiguous with a tensor_view: along<0>.
    std::vector<int> grid(static_cast<std::size_t>(p) * 2, -1);
    plait::all_gather<plait::ring>(comm, plait::tensor_view<const int, 2>(mine.data(), {1, 2}),
                                   plait::tensor_view<int, 2>(grid.data(), {static_cast<std::size_t>(p), 2}));
    if (grid != all) return "contiguous over tensor_view differs from along<0>";
    // redistribute<0, 0> over vectors is the 1-d all-to-all; contiguous over tensors too.
    std::vector<int> out(static_cast<std::size_t>(p));
    for (int j = 0; j < p; ++j) out[static_cast<std::size_t>(j)] = me * 100 + j;
    std::vector<int> in(static_cast<std::size_t>(p));
    plait::all_to_all<plait::pairwise, plait::redistribute<0, 0>>(comm, out, in);
    std::vector<int> in2(static_cast<std::size_t>(p));
    plait::all_to_all<plait::pairwise>(comm, plait::tensor_view<int, 1>(out.data(), {static_cast<std::size_t>(p)}),
                                       plait::tensor_view<int, 1>(in2.data(), {static_cast<std::size_t>(p)}));
    for (int i = 0; i < p; ++i) {
      if (in[static_cast<std::size_t>(i)] != i * 100 + me) return "redistribute<0, 0> over vectors is wrong";
    }
    if (in2 != in) return "contiguous all-to-all over tensor_view differs";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {

/// A user's own mdspan-shaped type, with mdspan's extents protocol.
struct user_extents {
  std::array<std::size_t, 2> e;
  [[nodiscard]] std::size_t extent(std::size_t r) const { return e[r]; }
};
template <class T>
struct user_matrix {
  T* p;
  user_extents ext;
  std::size_t row_stride;
  static constexpr std::size_t rank() { return 2; }
  [[nodiscard]] T* data_handle() const { return p; }
  [[nodiscard]] user_extents extents() const { return ext; }
  [[nodiscard]] std::size_t stride(std::size_t r) const { return r == 0 ? row_stride : 1; }
};

}  // namespace

TEST_CASE("a user's mdspan-like type works as a tensor", "[layout][mdspan][shm]") {
  static_assert(plait::mdspan_like<user_matrix<float>>);
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    const int me = comm.rank();
    std::vector<float> mine{float(me), float(me) + 0.5f};  // [2, 1]
    std::vector<float> all(2 * 3, -1.0f);                  // [2, 2] with a padding column
    plait::all_gather<plait::direct, plait::along<1>>(comm, user_matrix<const float>{mine.data(), {{2, 1}}, 1},
                                                      user_matrix<float>{all.data(), {{2, 2}}, 3});
    const std::vector<float> want{0.0f, 1.0f, -1.0f, 0.5f, 1.5f, -1.0f};
    return all == want ? "" : "user mdspan-like all-gather is wrong";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

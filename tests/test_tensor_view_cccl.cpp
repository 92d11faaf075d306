// plait-test-labels: quick shm
// plait-test-needs: cuda
// libcu++'s ::cuda::std::mdspan (CCCL, header-only, compiled here by the host
// compiler) is mdspan_like and works as a tensor with the layouts, with
// layout_right and with layout_stride (a padded destination).
#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <vector>

#include <cuda/std/array>
#include <cuda/std/mdspan>

#include "support/harness.hpp"

namespace {
using extents3 = ::cuda::std::dextents<std::size_t, 3>;
}

static_assert(plait::mdspan_like<::cuda::std::mdspan<float, extents3>>);
static_assert(plait::mdspan_like<::cuda::std::mdspan<const float, extents3, ::cuda::std::layout_stride>>);

TEST_CASE("cuda::std::mdspan works with along<D> and redistribute<S, C>", "[tensor_view][mdspan][shm]") {
  const auto verdicts =
      plait_test::run_ranks(plait_test::mode::threads, 3, [](plait::shm::communicator& comm) -> std::string {
        const auto p = static_cast<std::size_t>(comm.size());
        const auto me = comm.rank();
        std::vector<float> mine(2 * 1 * 4);
        for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>(me * 100 + static_cast<int>(i));
        ::cuda::std::mdspan<const float, extents3> send(mine.data(), 2, 1, 4);

        // Destination [2, P, 4] with rows padded to 5 floats: a layout_stride mapping.
        std::vector<float> all(2 * p * 5, -1.0f);
        const ::cuda::std::array<std::size_t, 3> strides{p * 5, 5, 1};
        ::cuda::std::layout_stride::mapping<extents3> map(extents3(2, p, 4), strides);
        ::cuda::std::mdspan<float, extents3, ::cuda::std::layout_stride> recv(all.data(), map);
        plait::all_gather<plait::ring, plait::along<1>>(comm, send, recv);
        for (std::size_t a = 0; a < 2; ++a)
          for (std::size_t j = 0; j < p; ++j) {
            for (std::size_t k = 0; k < 4; ++k) {
              if (all[a * p * 5 + j * 5 + k] !=
                  static_cast<float>(static_cast<int>(j) * 100 + static_cast<int>(a * 4 + k))) {
                return "along<1> into a layout_stride mdspan is wrong";
              }
            }
            if (all[a * p * 5 + j * 5 + 4] != -1.0f) return "padding was written";
          }

        // redistribute<1, 0>: [1, P, 2] -> [P, 1, 2] with layout_right mdspans.
        std::vector<float> out(p * 2);
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(me * 10 + static_cast<int>(i));
        std::vector<float> in(p * 2);
        plait::all_to_all<plait::pairwise, plait::redistribute<1, 0>>(
            comm, ::cuda::std::mdspan<float, extents3>(out.data(), 1, p, 2),
            ::cuda::std::mdspan<float, extents3>(in.data(), p, 1, 2));
        for (std::size_t i = 0; i < p; ++i)
          for (std::size_t k = 0; k < 2; ++k)
            if (in[i * 2 + k] != static_cast<float>(static_cast<int>(i) * 10 + me * 2 + static_cast<int>(k))) {
              return "redistribute<1, 0> over mdspans is wrong";
            }
        return {};
      });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// plait-test-labels: quick shm
// plait-test-timeout: 300
// The form matrix on one node: every cell of {all_gather, all_to_all} x
// {even, v, bundle, bundle of v} x {blocking, nonblocking, persistent}
// (tests/support/form_matrix.hpp) on shm threads and processes, P = 1..8,
// with and without check mode; on the NVLink emulation; on a two_level of
// shm levels that also offers its whole group; and on plain two_levels
// (no whole communicator: every cell hierarchical) with nodes of different
// sizes and rank tables. Over MPI and node_levels:
// tests/mpi/test_mpi_form_matrix.cpp.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include <plait/transport/nvlink/host_emulation.hpp>

#include "support/form_matrix.hpp"
#include "support/harness.hpp"
#include "support/shm_levels.hpp"

using plait_test::mode;

TEST_CASE("every form of both operations equals the reference on shm, P = 1..8, with and without check mode",
          "[forms][shm]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 4, 5, 8);
  const bool check = GENERATE(false, true);
  CAPTURE(plait_test::to_string(m), ranks, check);
  const auto verdicts = plait_test::run_ranks(m, ranks, [check](plait::shm::communicator& comm) {
    comm.set_check_mode(check);
    return plait_test::every_cell<plait::ring, plait::automatic>(comm);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("every form of both operations equals the reference on the NVLink emulation", "[forms][nvlink]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& boot) {
    plait::nvlink::emulated_communicator gpu(boot, 0, {}, {2, 64});
    return plait_test::every_cell<plait::bruck, plait::pairwise>(gpu);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("every form of both operations equals the reference on a two_level, nodes of different sizes",
          "[forms][two_level]") {
  // ranks / 2 + ranks % 2 nodes: pairs, and one node of one rank for odd P.
  const int ranks = GENERATE(2, 3, 4, 5, 6);
  CAPTURE(ranks);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [](plait::shm::communicator& world) {
    const int node = world.rank() / 2;
    auto intra = world.split(node, world.rank() % 2);
    auto inter = world.split(world.rank() % 2, node);
    plait_test::shm_levels levels(intra, inter, world);
    std::string out =
        plait_test::every_cell<plait::hierarchical<plait::ring, plait::pairwise>, plait::automatic>(levels);
    return out + plait_test::every_cell<plait::automatic, plait::ring>(levels);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE(
    "every form of both operations runs hierarchically on a plain two_level, nodes of different sizes, any "
    "rank table",
    "[forms][two_level]") {
  // 0: blocks of 2 (the last node of 1 for odd P); 1: dealt round-robin over
  // ceil(P / 2) nodes; 2: blocks of 3 in reverse rank order (rank P - 1 at
  // position 0). A plain two_level has no world(): the v forms and bundles
  // run hierarchically too, as the even forms do.
  const int ranks = GENERATE(2, 3, 4, 5, 6, 7);
  const int placement = GENERATE(0, 1, 2);
  CAPTURE(ranks, placement);
  const auto verdicts =
      plait_test::run_ranks(mode::threads, ranks, [ranks, placement](plait::shm::communicator& world) {
        const int dealt = (ranks + 1) / 2;
        const auto node_of = [&](int r) {
          return placement == 0 ? r / 2 : placement == 1 ? r % dealt : (ranks - 1 - r) / 3;
        };
        const auto local_of = [&](int r) {
          return placement == 0 ? r % 2 : placement == 1 ? r / dealt : (ranks - 1 - r) % 3;
        };
        std::vector<int> sizes;
        for (int r = 0; r < ranks; ++r) {
          const auto n = static_cast<std::size_t>(node_of(r));
          if (sizes.size() <= n) sizes.resize(n + 1, 0);
          ++sizes[n];
        }
        std::vector<int> offsets(sizes.size() + 1, 0);
        for (std::size_t n = 0; n < sizes.size(); ++n) offsets[n + 1] = offsets[n] + sizes[n];
        std::vector<int> table(static_cast<std::size_t>(ranks));
        for (int r = 0; r < ranks; ++r) {
          table[static_cast<std::size_t>(offsets[static_cast<std::size_t>(node_of(r))] + local_of(r))] = r;
        }
        auto intra = world.split(node_of(world.rank()), local_of(world.rank()));
        auto inter = world.split(local_of(world.rank()), node_of(world.rank()));
        plait::two_level levels(intra, inter, table, sizes);
        if (levels.rank() != world.rank()) return std::string("two_level rank is not the world rank; ");
        using hier = plait::hierarchical<plait::ring, plait::pairwise>;
        std::string out = plait_test::every_cell<hier, hier>(levels);
        out += plait_test::every_cell<plait::hierarchical<plait::direct, plait::direct>,
                                      plait::hierarchical<plait::direct, plait::ring>>(levels);
        return out + plait_test::every_cell<plait::automatic, plait::automatic>(levels);
      });
  REQUIRE(plait_test::failures(verdicts) == "");
}

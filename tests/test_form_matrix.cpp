// plait-test-labels: quick shm
// plait-test-timeout: 300
// The form matrix on one node: every cell of {all_gather, all_to_all} x
// {even, v, bundle, bundle of v} x {blocking, nonblocking, persistent}
// (tests/support/form_matrix.hpp) on shm threads and processes, P = 1..8,
// with and without check mode; on the NVLink emulation; and on a two_level
// of shm levels that also offers its whole group (hierarchical even forms,
// the rest flat). Over MPI and node_levels: tests/mpi/test_mpi_form_matrix.cpp.
#include <catch2/catch.hpp>

#include <string>

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

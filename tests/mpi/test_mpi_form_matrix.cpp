// The form matrix over MPI (tests/support/form_matrix.hpp): every cell of
// {all_gather, all_to_all} x {even, v, bundle, bundle of v} x {blocking,
// nonblocking, persistent} on plait::mpi::communicator, and on node_levels
// with emulated nodes of different sizes: every cell hierarchical<...>
// (the v forms and bundles too), or automatic, or flat on world(). The
// nodes dealt round-robin give a rank table (world order is not position
// order); results are compared with MPI_Allgatherv / MPI_Alltoallv's order.
// Run at every np of the two-level tests (2..8; 6 and 7 in the full run).
#include <mpi.h>

#include <catch2/catch.hpp>

#include <string>

#include "../support/form_matrix.hpp"
#include "mpi_test.hpp"
#include "plait/mpi.hpp"

TEST_CASE("mpi every form of both operations equals the reference, flat and on node_levels",
          "[mpi][forms][two_level]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  const int p = world.size();
  std::string verdict = plait_test::every_cell<plait::ring, plait::automatic>(world);
  // Two nodes, the first one rank larger for odd P; then nodes dealt round-robin over three.
  const int halves = world.rank() < (p + 1) / 2 ? 0 : 1;
  plait::mpi::node_levels by_halves(world, halves);
  using hier = plait::hierarchical<plait::ring, plait::pairwise>;
  verdict += plait_test::every_cell<hier, plait::automatic>(by_halves);
  verdict += plait_test::every_cell<hier, hier>(by_halves);
  plait::mpi::node_levels dealt(world, world.rank() % 3);
  verdict += plait_test::every_cell<plait::automatic, plait::ring>(dealt);
  verdict += plait_test::every_cell<hier, plait::hierarchical<plait::direct, plait::direct>>(dealt);
  CAPTURE(verdict);
  PLAIT_REQUIRE_ALL(verdict.empty());
}

// plait::mpi::node_local_shm: the shm transport among the ranks of one node,
// bootstrapped from MPI. Checked against MPI's own view of the node
// (MPI_Comm_split_type) and against MPI_Allgather on that node communicator.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <sched.h>

#include "mpi_test.hpp"
#include "plait/mpi.hpp"

TEST_CASE("mpi node_local_shm gives the node's ranks a working shm communicator", "[mpi][shm][node]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  plait::shm::communicator node = plait::mpi::node_local_shm(world);
  REQUIRE(static_cast<bool>(node));

  // MPI's independent answer to "who shares my node", in the same order.
  MPI_Comm reference = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, plait_test::world_rank(), MPI_INFO_NULL, &reference);
  int node_rank = -1;
  int node_size = 0;
  MPI_Comm_rank(reference, &node_rank);
  MPI_Comm_size(reference, &node_size);
  CHECK(node.rank() == node_rank);
  CHECK(node.size() == node_size);
  CHECK(node.timeout() == world.timeout());

  const std::size_t n = 4099;
  const auto mine = plait_test::pattern_bytes(node.rank(), n, 30);
  std::vector<std::byte> all(n * static_cast<std::size_t>(node.size()));
  plait::all_gather<plait::ring>(node, mine, all);
  std::vector<std::byte> expected(all.size());
  MPI_Allgather(mine.data(), static_cast<int>(n), MPI_BYTE, expected.data(), static_cast<int>(n), MPI_BYTE, reference);
  MPI_Comm_free(&reference);
  CHECK(all == expected);
  CHECK(node.bytes_sent() >= (static_cast<std::uint64_t>(node.size()) - 1) * n);
  // No byte of it went through MPI.
  CHECK(world.bytes_sent() == 0);

  // A second group on the same node gets a name of its own and works beside the first.
  plait::shm::communicator second = plait::mpi::node_local_shm(world);
  std::vector<std::byte> again(all.size());
  plait::all_gather<plait::automatic>(second, mine, again);
  PLAIT_REQUIRE_ALL(all == expected && again == expected);
}

TEST_CASE("mpi node_local_shm waits as the MPI communicator does, even when each rank is bound to one core",
          "[mpi][shm][node]") {
  // Launchers bind each rank to a core of its own, so the affinity mask says
  // one CPU while the node has one per rank: the MPI communicator's choice,
  // made from the node, holds for its node group too.
  plait::mpi::communicator world{MPI_COMM_WORLD};
  cpu_set_t before;
  CPU_ZERO(&before);
  REQUIRE(sched_getaffinity(0, sizeof before, &before) == 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &before)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  const plait::shm::communicator bound = plait::mpi::node_local_shm(world);
  world.set_busy_poll(std::chrono::milliseconds(7));
  const plait::shm::communicator chosen = plait::mpi::node_local_shm(world);
  sched_setaffinity(0, sizeof before, &before);
  PLAIT_REQUIRE_ALL(bound.busy_poll() == plait::mpi::communicator{MPI_COMM_WORLD}.busy_poll() &&
                    chosen.busy_poll() == std::chrono::milliseconds(7));
}

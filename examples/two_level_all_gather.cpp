// plait-example-needs: mpi
// A node-aware all-gather: each rank's shard crosses the slow level (MPI
// between nodes) once per node, and the fast level (shared memory inside a
// node) spreads it. Run with any number of ranks:
//   mpirun -np 4 build/default/examples/two_level_all_gather
// plait::mpi::node_levels(world) finds the nodes as MPI sees them (on one
// machine the node level is everything); the example also pretends the job
// runs on two nodes, ranks alternating between them (a round-robin
// placement), which is how a cluster with two ranks per node would look.
// Every rank checks its result against the serial answer and prints the
// bytes each level carried.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include <plait/mpi.hpp>

namespace {

constexpr std::size_t n = 1000;  // elements per shard

double value(int rank, std::size_t i) { return rank * 1e6 + static_cast<double>(i); }

/// All-gathers over `levels` and returns the number of wrong elements.
template <class Levels>
int gather_and_count_wrong(Levels& levels) {
  std::vector<double> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = value(levels.rank(), i);
  std::vector<double> all(n * static_cast<std::size_t>(levels.size()));
  plait::all_gather<plait::hierarchical<plait::ring, plait::recursive_doubling>>(levels, mine, all);
  int wrong = 0;
  for (std::size_t j = 0; j < all.size(); ++j) wrong += all[j] != value(static_cast<int>(j / n), j % n) ? 1 : 0;
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int wrong = 0;
  {
    plait::mpi::communicator world{MPI_COMM_WORLD};

    auto machine = plait::mpi::node_levels(world);
    wrong += gather_and_count_wrong(machine);

    // Two emulated nodes when the job divides into them, ranks alternating.
    const int nodes = world.size() % 2 == 0 ? 2 : 1;
    plait::mpi::node_levels emulated(world, world.rank() % nodes);
    wrong += gather_and_count_wrong(emulated);
    const plait::level_bytes sent = emulated.bytes_sent();
    std::printf("rank %d: %d node(s) of %d; sent %llu bytes between nodes, %llu inside its node\n", world.rank(),
                emulated.node_count(), emulated.node_size(), static_cast<unsigned long long>(sent.inter),
                static_cast<unsigned long long>(sent.intra));

    // automatic weighs both levels' cost models against a flat all-gather over world.
    std::vector<double> mine(n, 1.0);
    std::vector<double> all(n * static_cast<std::size_t>(world.size()));
    plait::all_gather(emulated, mine, all);
    if (world.rank() == 0) {
      const plait::level_choice& picked = emulated.last_choice();
      std::printf("automatic ran %.*s (predicted %.3g s hierarchical, %.3g s flat)\n",
                  static_cast<int>(picked.name().size()), picked.name().data(), picked.hierarchical_seconds,
                  picked.flat_seconds);
    }
  }
  int total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  if (total != 0) {
    std::printf("two-level all-gather: %d wrong elements\n", total);
    return 1;
  }
  return 0;
}

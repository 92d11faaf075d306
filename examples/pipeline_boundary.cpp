// plait-example-needs: mpi
// A pipeline boundary between two stages of t tensor-parallel ranks, as in
// Megatron-LM: MPI carries the activation between the stages (the slow
// inter-node link in a real job), the shared-memory transport rebuilds it
// inside a stage (the fast intra-node link). Run with an even number of ranks:
//   mpirun -np 4 build/default/examples/pipeline_boundary
// Stage A is world ranks [0, t), stage B is [t, 2t); rank j of A sends to rank j of B.
// It moves the activation once naively (every sender sends the whole tensor)
// and once with split/all-gather, checks the result, and prints the bytes that
// crossed the boundary.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include <plait/mpi.hpp>

namespace {
float activation(std::size_t token, std::size_t feature) { return static_cast<float>(token * 31 + feature % 97); }
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    plait::mpi::communicator world{MPI_COMM_WORLD};
    if (world.size() % 2 != 0) {
      if (world.rank() == 0) std::fprintf(stderr, "pipeline_boundary needs an even number of ranks\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int t = world.size() / 2;
    const int stage = world.rank() / t;
    const int position = world.rank() % t;
    plait::shm::communicator node = plait::mpi::node_local_shm(world);
    auto intra = node.split(stage, position);   // the t ranks of this stage
    auto inter = world.split(position, stage);  // sender j (rank 0) and receiver j (rank 1)

    // The activation: [tokens, hidden], with tokens not a multiple of t on purpose.
    const std::size_t tokens = 1000 * static_cast<std::size_t>(t) + 1;
    const std::size_t hidden = 256;
    std::vector<float> x(tokens * hidden, 0.0f);
    plait::tensor_view<float, 2> view(x.data(), {tokens, hidden});

    std::uint64_t crossed[2] = {0, 0};
    const plait::boundary_mode modes[2] = {plait::boundary_mode::naive, plait::boundary_mode::split};
    bool correct = true;
    for (int m = 0; m < 2; ++m) {
      std::fill(x.begin(), x.end(), 0.0f);
      if (stage == 0) {
        for (std::size_t i = 0; i < tokens; ++i)
          for (std::size_t f = 0; f < hidden; ++f) view(i, f) = activation(i, f);
      }
      auto boundary = plait::split_all_gather<plait::ring, plait::along<0>>(inter, intra, {modes[m]});
      const std::uint64_t before = inter.bytes_sent();
      if (stage == 0) {
        boundary.send(1, view);
      } else {
        boundary.recv(0, view);
        for (std::size_t i = 0; i < tokens; ++i)
          for (std::size_t f = 0; f < hidden; ++f) correct = correct && view(i, f) == activation(i, f);
      }
      std::uint64_t mine = inter.bytes_sent() - before;
      MPI_Allreduce(&mine, &crossed[m], 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    int ok = correct ? 1 : 0;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (world.rank() == 0) {
      const double tensor = static_cast<double>(tokens * hidden * sizeof(float));
      std::printf("pipeline boundary: 2 stages x t = %d ranks, activation [%zu, %zu] floats (%.2f MiB)\n", t, tokens,
                  hidden, tensor / (1 << 20));
      std::printf("  %-26s %12s %10s\n", "mode", "bytes across", "tensors");
      std::printf("  %-26s %12llu %10.2f\n", "naive (full tensor each)", static_cast<unsigned long long>(crossed[0]),
                  static_cast<double>(crossed[0]) / tensor);
      std::printf("  %-26s %12llu %10.2f\n", "split/all-gather", static_cast<unsigned long long>(crossed[1]),
                  static_cast<double>(crossed[1]) / tensor);
      std::printf("  receivers rebuilt the activation: %s\n", all_ok ? "yes, exactly" : "NO");
    }
    const bool traffic_right = crossed[1] == tokens * hidden * sizeof(float) &&
                               crossed[0] == static_cast<std::uint64_t>(t) * tokens * hidden * sizeof(float);
    status = all_ok && traffic_right ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}

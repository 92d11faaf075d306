// Pipeline-boundary bench: times moving one activation between two stages of t
// ranks, naive (every sender sends the whole tensor) vs split/all-gather (each
// sender its 1/t shard, receivers all-gather inside their stage), and counts
// the bytes each mode puts on the inter-stage link. Run by
// two_nodes_boundary.sh across two emulated hosts joined by a rate-limited
// link; it also runs on one host (mpirun -np 2t) for a quick look.
//   boundary_bench [MiB per activation] [repetitions]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <plait/mpi.hpp>

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    plait::mpi::communicator world{MPI_COMM_WORLD};
    const double mib = argc > 1 ? std::atof(argv[1]) : 16.0;
    const int repetitions = argc > 2 ? std::atoi(argv[2]) : 3;
    const int t = world.size() / 2;
    const int stage = world.rank() / t;
    const int position = world.rank() % t;
    // Ranks of one stage share a host: the node-local group is the stage (on
    // one host, split it by stage).
    plait::shm::communicator node = plait::mpi::node_local_shm(world);
    auto intra = node.size() == t ? std::move(node) : node.split(stage, position);
    auto inter = world.split(position, stage);

    const std::size_t hidden = 1024;
    const std::size_t tokens =
        std::max<std::size_t>(1, static_cast<std::size_t>(mib * (1 << 20)) / (hidden * sizeof(float)));
    std::vector<float> x(tokens * hidden, 1.0f);
    plait::tensor_view<float, 2> view(x.data(), {tokens, hidden});

    const plait::boundary_mode modes[2] = {plait::boundary_mode::naive, plait::boundary_mode::split};
    double seconds[2] = {0, 0};
    std::uint64_t link_bytes[2] = {0, 0};
    bool correct = true;
    for (int m = 0; m < 2; ++m) {
      auto boundary = plait::split_all_gather<plait::automatic, plait::along<0>>(inter, intra, {modes[m]});
      std::vector<double> times;
      for (int r = 0; r < repetitions + 1; ++r) {  // the first is a warm-up
        if (stage == 0) {
          for (std::size_t i = 0; i < x.size(); i += 997) x[i] = static_cast<float>(r * 7 + i % 13);
        } else {
          std::fill(x.begin(), x.end(), -1.0f);
        }
        const std::uint64_t before = inter.bytes_sent();
        world.barrier();
        const auto start = std::chrono::steady_clock::now();
        if (stage == 0) {
          boundary.send(1, view);
        } else {
          boundary.recv(0, view);
        }
        world.barrier();  // done when the last receiver holds the whole tensor
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (stage == 1) {
          for (std::size_t i = 0; i < x.size(); i += 997)
            correct = correct && x[i] == static_cast<float>(r * 7 + i % 13);
        }
        std::uint64_t mine = inter.bytes_sent() - before;
        std::uint64_t total = 0;
        MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (r > 0) times.push_back(elapsed);
        link_bytes[m] = total;
      }
      seconds[m] = median(times);
    }
    int ok = correct ? 1 : 0;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (world.rank() == 0) {
      const double tensor = static_cast<double>(x.size() * sizeof(float));
      std::printf(
          "boundary t=%d activation=%.1fMiB naive_s=%.4f split_s=%.4f speedup=%.2f target=%.2f "
          "naive_bytes=%llu split_bytes=%llu tensor_bytes=%.0f correct=%s\n",
          t, tensor / (1 << 20), seconds[0], seconds[1], seconds[0] / seconds[1], 0.8 * t,
          static_cast<unsigned long long>(link_bytes[0]), static_cast<unsigned long long>(link_bytes[1]), tensor,
          all_ok ? "yes" : "NO");
    }
    status = all_ok ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}

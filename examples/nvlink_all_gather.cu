// All-gather along the hidden dimension between the GPUs of one node, with
// the NVLink transport: tensor parallelism shards a [batch, seq, hidden]
// activation along hidden; each rank holds [b, s, h/P] in device memory and
// plait::all_gather<plait::ring, plait::along<2>> writes [b, s, h] on every
// GPU, ordered on the rank's stream like any other kernel.
//
// Ranks are processes bootstrapped over shm (plait::shm::run_processes); rank
// r uses GPU r % device_count, so one GPU runs it too (its ranks share the
// device through CUDA IPC). Under MPI the bootstrap is the node's group
// instead (docs/nvlink.md):
//   plait::mpi::communicator world{MPI_COMM_WORLD};
//   auto node = plait::mpi::node_local_shm(world);
//   plait::nvlink::communicator gpu(node, node.rank() % device_count, stream);
//
// Usage: nvlink_all_gather [ranks]   (default: the number of GPUs, at least 2)
// Every rank checks its result against the serial reference; the program exits
// non-zero on any difference, and 0 with a message when there is no GPU.
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <plait/algorithm/ring.hpp>
#include <plait/cuda.hpp>
#include <plait/plait.hpp>

namespace {

constexpr std::size_t batch = 4;
constexpr std::size_t seq = 256;
constexpr std::size_t hidden = 4096;  // divisible by every P used here

float activation(std::size_t b, std::size_t t, std::size_t f) {
  return static_cast<float>((b * 131 + t * 17 + f) % 8191);
}

/// Asked in a child: a process that has initialised CUDA must not fork ranks.
int device_count_in_child() {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  const pid_t child = fork();
  if (child == 0) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    (void)!write(fds[1], &count, sizeof count);
    _exit(0);
  }
  close(fds[1]);
  int count = 0;
  if (child < 0 || read(fds[0], &count, sizeof count) != static_cast<ssize_t>(sizeof count)) count = 0;
  close(fds[0]);
  if (child > 0) waitpid(child, nullptr, 0);
  return count;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void rank_main(plait::shm::communicator& boot, int devices) {
  const int device = boot.rank() % devices;
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  const auto p = static_cast<std::size_t>(boot.size());
  const auto me = static_cast<std::size_t>(boot.rank());
  const std::size_t local = hidden / p;

  std::vector<float> shard(batch * seq * local);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < seq; ++t)
      for (std::size_t f = 0; f < local; ++f) shard[(b * seq + t) * local + f] = activation(b, t, me * local + f);

  float* x = nullptr;
  float* y = nullptr;
  check(cudaMalloc(&x, shard.size() * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&y, batch * seq * hidden * sizeof(float)), "cudaMalloc");
  check(cudaMemcpyAsync(x, shard.data(), shard.size() * sizeof(float), cudaMemcpyHostToDevice, stream), "upload");

  {
    // Collective: every rank maps every other rank's staging area.
    plait::nvlink::communicator gpu(boot, device, stream);
    plait::tensor_view<const float, 3> mine(x, {batch, seq, local});
    plait::tensor_view<float, 3> full(y, {batch, seq, hidden});
    plait::all_gather<plait::ring, plait::along<2>>(gpu, mine, full);  // enqueued on `stream`
    gpu.synchronize();                                                 // waits, and raises anything the device found
  }

  std::vector<float> got(batch * seq * hidden);
  check(cudaMemcpy(got.data(), y, got.size() * sizeof(float), cudaMemcpyDeviceToHost), "download");
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < seq; ++t)
      for (std::size_t f = 0; f < hidden; ++f)
        if (got[(b * seq + t) * hidden + f] != activation(b, t, f)) {
          throw std::runtime_error("rank " + std::to_string(me) + ": wrong value at (" + std::to_string(b) + ", " +
                                   std::to_string(t) + ", " + std::to_string(f) + ")");
        }
  cudaFree(x);
  cudaFree(y);
  cudaStreamDestroy(stream);
  if (me == 0) {
    std::printf("all-gather along hidden: %zu ranks on %d GPU(s), [%zu, %zu, %zu] -> [%zu, %zu, %zu]: correct\n", p,
                devices, batch, seq, local, batch, seq, hidden);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int devices = device_count_in_child();
  if (devices == 0) {
    std::printf("nvlink_all_gather: no CUDA device; nothing to run\n");
    return 0;
  }
  const int ranks = argc > 1 ? std::atoi(argv[1]) : (devices < 2 ? 2 : devices);
  if (ranks < 1 || hidden % static_cast<std::size_t>(ranks) != 0) {
    std::fprintf(stderr, "ranks must divide %zu\n", hidden);
    return 2;
  }
  try {
    plait::shm::run_processes(ranks, [devices](plait::shm::communicator& boot) { rank_main(boot, devices); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nvlink_all_gather: %s\n", e.what());
    return 1;
  }
  return 0;
}

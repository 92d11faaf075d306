// DistributedDataParallel's gradient bucket on 4 threads over shared memory.
// DDP does not wait for the whole backward pass: as soon as the gradients of a
// bucket (the last layers' tensors, whose backward finishes first) are ready,
// it starts their all-reduce and goes on computing the gradients of the
// earlier layers; the optimizer waits for the reductions just before it
// steps. Here the bucket holds three tensors of two element types: a float
// weight gradient, a float bias gradient and a double gradient (a parameter
// kept in double precision). The bucket is one bundle: a single
// plait::iall_reduce sums all three (one collective's latency for the
// bucket, each tensor combined in its own type), "the rest of the backward"
// runs meanwhile, and the request is waited for. Every rank checks the sums against a serial sum of
// all ranks' gradients (integer values, so the sums are exact in any order)
// and the program exits non-zero on any difference.
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include <plait/plait.hpp>

namespace {

constexpr int ranks = 4;
constexpr std::size_t weight_elements = 1000;
constexpr std::size_t bias_elements = 10;
constexpr std::size_t double_elements = 250;

/// Rank r's gradient element i of tensor `which` (integer values).
double grad(int r, int which, std::size_t i) {
  return static_cast<double>(
      static_cast<int>((static_cast<std::size_t>(r) * 31 + i * 7 + static_cast<std::size_t>(which)) % 17) - 8);
}

/// The serial reference: the sum over ranks.
double total(int which, std::size_t i) {
  double sum = 0.0;
  for (int r = 0; r < ranks; ++r) sum += grad(r, which, i);
  return sum;
}

template <class T>
std::vector<T> local_grad(int rank, int which, std::size_t n) {
  std::vector<T> g(n);
  for (std::size_t i = 0; i < n; ++i) g[i] = static_cast<T>(grad(rank, which, i));
  return g;
}

template <class T>
int count_wrong(const std::vector<T>& summed, int which) {
  int wrong = 0;
  for (std::size_t i = 0; i < summed.size(); ++i)
    if (summed[i] != static_cast<T>(total(which, i))) ++wrong;
  return wrong;
}

}  // namespace

int main() {
  std::atomic<int> wrong{0};
  plait::shm::run_threads(ranks, [&](plait::shm::communicator& comm) {
    // Backward of the last layer: its gradients fill the bucket.
    std::vector<float> weight_grad = local_grad<float>(comm.rank(), 0, weight_elements);
    std::vector<float> bias_grad = local_grad<float>(comm.rank(), 1, bias_elements);
    std::vector<double> master_grad = local_grad<double>(comm.rank(), 2, double_elements);

    // The bucket is ready: start its all-reduce, one nonblocking call for
    // the whole bundle. Its buffers must not be touched until it completes.
    std::vector<float> weight_sum(weight_elements);
    std::vector<float> bias_sum(bias_elements);
    std::vector<double> master_sum(double_elements);
    auto bucket = plait::iall_reduce(comm, plait::bundle(weight_grad, bias_grad, master_grad),
                                     plait::bundle(weight_sum, bias_sum, master_sum), plait::sum{});

    // "The rest of the backward": the earlier layers' gradients, computed
    // while the bucket moves. test() lets the reduction progress here too.
    std::vector<float> earlier(4096);
    for (int round = 0; round < 8; ++round) {
      for (std::size_t i = 0; i < earlier.size(); ++i) earlier[i] = earlier[i] * 0.5f + static_cast<float>(i % 3);
      (void)bucket.test();
    }

    // The optimizer needs the summed gradients. (DDP then divides by the
    // world size; plait::avg{} would do that in the call.)
    bucket.wait();

    wrong += count_wrong(weight_sum, 0) + count_wrong(bias_sum, 1) + count_wrong(master_sum, 2);
  });
  if (wrong != 0) {
    std::fprintf(stderr, "ddp_bucket: FAILED: %d wrong elements\n", wrong.load());
    return 1;
  }
  std::printf(
      "ddp_bucket: a bucket of float[%zu], float[%zu] and double[%zu] gradients all-reduced with iall_reduce over "
      "%d threads, overlapped with the rest of the backward: verified\n",
      weight_elements, bias_elements, double_elements, ranks);
  return 0;
}

// Fully sharded data parallelism (FSDP, ZeRO-3) on 4 processes over shared
// memory: three training steps of a small MLP. Each rank owns 1/P of the flat
// parameter buffer and sees its own micro-batch. A step all-gathers the
// parameters (plait::all_gather), runs forward and backward on the whole
// model, reduce-scatters the gradients so that each rank receives the mean
// gradient of its own shard only (plait::reduce_scatter with
// plait::ordered<plait::avg>), and applies SGD to that shard. A serial run
// over all micro-batches computes the same steps; every rank's shard must
// equal the serial parameters bit for bit, and the program exits non-zero on
// any difference.
#include <cstddef>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <plait/plait.hpp>

namespace {

constexpr int ranks = 4;
constexpr int steps = 3;
constexpr std::size_t inputs = 3;  // the MLP: 3 -> 4 (ReLU) -> 2
constexpr std::size_t hidden = 4;
constexpr std::size_t outputs = 2;
constexpr std::size_t batch = 2;  // samples per micro-batch (one micro-batch per rank)
constexpr float learning_rate = 0.125f;

// The flat parameter buffer: W1 [hidden, inputs], b1 [hidden], W2 [outputs,
// hidden], b2 [outputs] one after the other, 26 floats. FSDP flattens a
// module's parameters like this and pads the buffer to a multiple of the
// world size so that every rank owns an equal shard: 26 is not a multiple of
// 4, so the buffer is padded to 28 and each rank owns 7 elements (the last
// rank's shard ends with the 2 padding elements, which stay zero: their
// gradient is zero).
constexpr std::size_t w1 = 0;
constexpr std::size_t b1 = w1 + hidden * inputs;
constexpr std::size_t w2 = b1 + hidden;
constexpr std::size_t b2 = w2 + outputs * hidden;
constexpr std::size_t parameters = b2 + outputs;                          // 26
constexpr std::size_t padded = (parameters + ranks - 1) / ranks * ranks;  // 28
constexpr std::size_t shard = padded / ranks;                             // 7
static_assert(parameters % ranks != 0, "the example is about uneven shards");

/// Input feature k of sample i of micro-batch m at step s, and its target.
float input(int s, int m, std::size_t i, std::size_t k) {
  return static_cast<float>(static_cast<int>((7 * m + 5 * i + 3 * k + static_cast<std::size_t>(s)) % 11) - 5) / 4.0f;
}
float target(int s, int m, std::size_t i, std::size_t j) {
  return static_cast<float>(static_cast<int>((3 * m + 2 * i + j + static_cast<std::size_t>(s)) % 5) - 2) / 2.0f;
}

/// The initial parameters (padding zero).
std::vector<float> initial_parameters() {
  std::vector<float> p(padded, 0.0f);
  for (std::size_t i = 0; i < parameters; ++i) p[i] = static_cast<float>(static_cast<int>(i * 5 % 9) - 4) / 8.0f;
  return p;
}

/// Forward and backward of micro-batch m with the whole parameter buffer `p`:
/// the gradient of the mean squared-error loss over the micro-batch, as a
/// flat buffer laid out as `p` (padding zero). The distributed run and the
/// serial reference call this same function.
std::vector<float> gradient(const std::vector<float>& p, int s, int m) {
  std::vector<float> g(padded, 0.0f);
  for (std::size_t i = 0; i < batch; ++i) {
    float x[inputs], z[hidden], h[hidden], y[outputs];
    for (std::size_t k = 0; k < inputs; ++k) x[k] = input(s, m, i, k);
    for (std::size_t u = 0; u < hidden; ++u) {  // z = W1 x + b1, h = relu(z)
      z[u] = p[b1 + u];
      for (std::size_t k = 0; k < inputs; ++k) z[u] += p[w1 + u * inputs + k] * x[k];
      h[u] = z[u] > 0.0f ? z[u] : 0.0f;
    }
    for (std::size_t j = 0; j < outputs; ++j) {  // y = W2 h + b2
      y[j] = p[b2 + j];
      for (std::size_t u = 0; u < hidden; ++u) y[j] += p[w2 + j * hidden + u] * h[u];
    }
    // Backward: loss = sum_i 0.5 * |y - t|^2 / batch.
    float dh[hidden] = {};
    for (std::size_t j = 0; j < outputs; ++j) {
      const float dy = (y[j] - target(s, m, i, j)) / static_cast<float>(batch);
      g[b2 + j] += dy;
      for (std::size_t u = 0; u < hidden; ++u) {
        g[w2 + j * hidden + u] += dy * h[u];
        dh[u] += p[w2 + j * hidden + u] * dy;
      }
    }
    for (std::size_t u = 0; u < hidden; ++u) {
      const float dz = z[u] > 0.0f ? dh[u] : 0.0f;
      g[b1 + u] += dz;
      for (std::size_t k = 0; k < inputs; ++k) g[w1 + u * inputs + k] += dz * x[k];
    }
  }
  return g;
}

/// The SGD update of one parameter.
float sgd(float parameter, float grad) { return parameter - learning_rate * grad; }

/// The serial reference: every step's gradients of all micro-batches averaged
/// as plait::ordered<plait::avg> does (the left fold over ranks, g0 + g1 + g2
/// + g3, then one division by P), then SGD on the whole buffer.
std::vector<float> serial_training() {
  std::vector<float> p = initial_parameters();
  for (int s = 0; s < steps; ++s) {
    std::vector<float> mean = gradient(p, s, 0);
    for (int m = 1; m < ranks; ++m) {
      const std::vector<float> g = gradient(p, s, m);
      for (std::size_t i = 0; i < padded; ++i) mean[i] = mean[i] + g[i];
    }
    for (std::size_t i = 0; i < padded; ++i) p[i] = sgd(p[i], mean[i] / static_cast<float>(ranks));
  }
  return p;
}

void rank_main(plait::shm::communicator& comm) {
  const auto me = static_cast<std::size_t>(comm.rank());

  // This rank owns parameters [me * shard, (me + 1) * shard) of the padded buffer.
  const std::vector<float> start = initial_parameters();
  std::vector<float> my_shard(start.begin() + static_cast<std::ptrdiff_t>(me * shard),
                              start.begin() + static_cast<std::ptrdiff_t>((me + 1) * shard));
  std::vector<float> full(padded);  // the gathered parameters: alive only for forward and backward
  std::vector<float> my_grad_shard(shard);

  for (int s = 0; s < steps; ++s) {
    // Unshard: every rank's shard, in rank order, is the whole flat buffer.
    plait::all_gather<plait::ring>(comm, my_shard, full);

    // Forward and backward on this rank's micro-batch (micro-batch = rank).
    const std::vector<float> grads = gradient(full, s, comm.rank());

    // Reshard the gradients: block r of `grads` (the gradient of rank r's
    // shard) is averaged over all ranks and lands on rank r only. avg is the
    // sum divided once by P at the end. plait::avg{} would let any algorithm
    // combine in any order (ring, the bandwidth-optimal one, included), so the
    // sum could differ from a serial sum in the last bits; ordered<avg> makes
    // every element the left fold ((g0 + g1) + g2) + g3, the same bits on every
    // run, algorithm and P, so the check below can be exact. automatic picks
    // an algorithm that keeps that order (direct or chain).
    plait::reduce_scatter(comm, grads, my_grad_shard, plait::ordered<plait::avg>{});

    // Sharded optimizer step: each rank updates only the parameters it owns.
    for (std::size_t i = 0; i < shard; ++i) my_shard[i] = sgd(my_shard[i], my_grad_shard[i]);
  }

  const std::vector<float> reference = serial_training();
  if (reference == start) throw std::runtime_error("the serial run did not train: the example checks nothing");
  for (std::size_t i = 0; i < shard; ++i) {
    if (my_shard[i] != reference[me * shard + i]) {
      throw std::runtime_error("rank " + std::to_string(me) + ": parameter " + std::to_string(me * shard + i) + " is " +
                               std::to_string(my_shard[i]) + ", the serial run has " +
                               std::to_string(reference[me * shard + i]));
    }
  }
}

}  // namespace

int main() {
  try {
    plait::shm::run_processes(ranks, rank_main);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fsdp_step: FAILED: %s\n", e.what());
    return 1;
  }
  std::printf(
      "fsdp_step: %d steps of a %zu-parameter MLP sharded %zu per rank (padded to %zu) on %d processes: "
      "equal to the serial run bit for bit\n",
      steps, parameters, shard, padded, ranks);
  return 0;
}

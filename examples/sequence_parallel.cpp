// Megatron-LM sequence parallelism on 4 processes over shared memory: one
// tensor-parallel MLP block, Z = relu(X A) B, on activations X [s, h] that
// live sharded along the sequence, [s/P, h], outside the block (where
// LayerNorm and dropout run on each rank's own positions).
//
//   X shard [s/P, h] --all_gather--> X [s, h]
//   column-parallel: rank r holds the columns A_r [h, f/P] of A; Y_r = relu(X A_r) [s, f/P]
//   row-parallel:    rank r holds the rows    B_r [f/P, h] of B; Z_r = Y_r B_r   [s, h]
//   Z = Z_0 + Z_1 + ... (each Z_r is a partial sum) --reduce_scatter(sum)--> Z shard [s/P, h]
//
// Plain tensor parallelism would all-reduce Z and keep it whole on every rank;
// sequence parallelism replaces that all-reduce by a reduce-scatter along the
// sequence and the next block's all-gather, moving the same bytes but keeping
// only 1/P of the activations between blocks. Every rank checks its shard of
// Z against the serial two-layer computation and the program exits non-zero
// on any difference (the values are small integers, so the float sums are
// exact in any order).
#include <cstddef>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <plait/plait.hpp>

namespace {

constexpr std::size_t ranks = 4;
constexpr std::size_t seq = 8;    // s, divisible by P
constexpr std::size_t model = 6;  // h
constexpr std::size_t ffn = 12;   // f, divisible by P

/// The whole input X, the whole weights A [h, f] and B [f, h] (small integers).
float x_at(std::size_t t, std::size_t k) { return static_cast<float>(static_cast<int>((3 * t + k) % 7) - 3); }
float a_at(std::size_t k, std::size_t c) { return static_cast<float>(static_cast<int>((k + 2 * c) % 5) - 2); }
float b_at(std::size_t c, std::size_t k) { return static_cast<float>(static_cast<int>((2 * c + 3 * k) % 5) - 2); }

float relu(float v) { return v > 0.0f ? v : 0.0f; }

/// The serial reference: Z = relu(X A) B, row t, column k.
float reference(std::size_t t, std::size_t k) {
  float z = 0.0f;
  for (std::size_t c = 0; c < ffn; ++c) {
    float y = 0.0f;
    for (std::size_t i = 0; i < model; ++i) y += x_at(t, i) * a_at(i, c);
    z += relu(y) * b_at(c, k);
  }
  return z;
}

void rank_main(plait::shm::communicator& comm) {
  const auto p = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::size_t local_seq = seq / p;
  const std::size_t local_ffn = ffn / p;

  // This rank's sequence shard of X, row-major [s/P, h].
  std::vector<float> x_shard(local_seq * model);
  for (std::size_t t = 0; t < local_seq; ++t)
    for (std::size_t k = 0; k < model; ++k) x_shard[t * model + k] = x_at(me * local_seq + t, k);

  // Gather the sequence: shards in rank order are consecutive rows, so the
  // contiguous all-gather of [s/P, h] shards is X [s, h].
  std::vector<float> x(seq * model);
  plait::all_gather<plait::ring>(comm, x_shard, x);

  // Column-parallel linear and ReLU: this rank's f/P columns of the hidden layer.
  std::vector<float> y(seq * local_ffn);
  for (std::size_t t = 0; t < seq; ++t)
    for (std::size_t c = 0; c < local_ffn; ++c) {
      float v = 0.0f;
      for (std::size_t i = 0; i < model; ++i) v += x[t * model + i] * a_at(i, me * local_ffn + c);
      y[t * local_ffn + c] = relu(v);  // elementwise: needs no communication
    }

  // Row-parallel linear: this rank's f/P rows of B give a partial sum of the whole output.
  std::vector<float> z_partial(seq * model, 0.0f);
  for (std::size_t t = 0; t < seq; ++t)
    for (std::size_t c = 0; c < local_ffn; ++c)
      for (std::size_t k = 0; k < model; ++k)
        z_partial[t * model + k] += y[t * local_ffn + c] * b_at(me * local_ffn + c, k);

  // Sum the partials and scatter along the sequence: z_partial is P blocks of
  // [s/P, h] (block r: rank r's positions), and this rank receives the sum of
  // its block. ring sends each rank (P-1)/P of the data, the bandwidth-optimal
  // choice for the large activations of a real model.
  std::vector<float> z_shard(local_seq * model);
  plait::reduce_scatter<plait::ring>(comm, z_partial, z_shard, plait::sum{});

  for (std::size_t t = 0; t < local_seq; ++t)
    for (std::size_t k = 0; k < model; ++k)
      if (z_shard[t * model + k] != reference(me * local_seq + t, k)) {
        throw std::runtime_error("rank " + std::to_string(me) + ": wrong output at position " +
                                 std::to_string(me * local_seq + t) + ", feature " + std::to_string(k));
      }
}

}  // namespace

int main() {
  try {
    plait::shm::run_processes(static_cast<int>(ranks), rank_main);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sequence_parallel: FAILED: %s\n", e.what());
    return 1;
  }
  std::printf(
      "sequence_parallel: [s/P, h] = [%zu, %zu] -> all_gather -> relu(X A) B with f = %zu split %zu ways -> "
      "reduce_scatter -> [s/P, h] on %zu processes: verified\n",
      seq / ranks, model, ffn, ranks, ranks);
  return 0;
}

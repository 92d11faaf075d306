// DeepSpeed-Ulysses sequence parallelism with plait::redistribute on 4
// processes over shared memory. Each rank holds a sequence shard of the
// activations, [s/P, H, d]. Attention needs the whole sequence for each head,
// so one all-to-all turns the tensor head-sharded, [s, H/P, d]
// (redistribute<1, 0>: split heads, concatenate sequence), each rank runs its
// heads over the full sequence (here a causal prefix sum, which needs every
// earlier position), and the reverse all-to-all (redistribute<0, 1>) brings
// the result back to sequence shards. Every rank checks its shard against a
// serial computation of the whole thing; the program exits non-zero on any
// difference.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <plait/plait.hpp>

namespace {

constexpr std::size_t ranks = 4;
constexpr std::size_t seq = 12;      // s, divisible by P
constexpr std::size_t heads = 8;     // H, divisible by P
constexpr std::size_t head_dim = 3;  // d

/// The input activation at (position, head, feature) of the whole tensor.
std::int64_t input(std::size_t t, std::size_t h, std::size_t k) {
  return static_cast<std::int64_t>(t * 1000 + h * 10 + k);
}

/// The serial reference: causal prefix sum over the sequence, per head and feature.
std::int64_t reference(std::size_t t, std::size_t h, std::size_t k) {
  std::int64_t sum = 0;
  for (std::size_t u = 0; u <= t; ++u) sum += input(u, h, k);
  return sum;
}

void rank_main(plait::shm::communicator& comm) {
  const auto p = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::size_t local_seq = seq / p;
  const std::size_t local_heads = heads / p;

  // This rank's sequence shard [s/P, H, d].
  std::vector<std::int64_t> seq_shard(local_seq * heads * head_dim);
  plait::tensor_view<std::int64_t, 3> x(seq_shard.data(), {local_seq, heads, head_dim});
  for (std::size_t t = 0; t < local_seq; ++t)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t k = 0; k < head_dim; ++k) x(t, h, k) = input(me * local_seq + t, h, k);

  // Sequence-sharded -> head-sharded: [s/P, H, d] -> [s, H/P, d].
  std::vector<std::int64_t> head_shard(seq * local_heads * head_dim);
  plait::tensor_view<std::int64_t, 3> y(head_shard.data(), {seq, local_heads, head_dim});
  plait::all_to_all<plait::pairwise, plait::redistribute<1, 0>>(comm, plait::tensor_view<const std::int64_t, 3>(x), y);

  // "Attention" for this rank's heads over the whole sequence.
  for (std::size_t h = 0; h < local_heads; ++h)
    for (std::size_t k = 0; k < head_dim; ++k)
      for (std::size_t t = 1; t < seq; ++t) y(t, h, k) += y(t - 1, h, k);

  // And back: [s, H/P, d] -> [s/P, H, d].
  std::vector<std::int64_t> out(seq_shard.size());
  plait::tensor_view<std::int64_t, 3> z(out.data(), {local_seq, heads, head_dim});
  plait::all_to_all<plait::pairwise, plait::redistribute<0, 1>>(comm, y, z);

  for (std::size_t t = 0; t < local_seq; ++t)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t k = 0; k < head_dim; ++k)
        if (z(t, h, k) != reference(me * local_seq + t, h, k)) {
          throw std::runtime_error("rank " + std::to_string(me) + ": wrong value at position " +
                                   std::to_string(me * local_seq + t) + ", head " + std::to_string(h));
        }
}

}  // namespace

int main() {
  try {
    plait::shm::run_processes(static_cast<int>(ranks), rank_main);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ulysses: FAILED: %s\n", e.what());
    return 1;
  }
  std::printf(
      "ulysses: [s/P, H, d] = [%zu, %zu, %zu] -> [s, H/P, d] = [%zu, %zu, %zu] and back on %zu processes: "
      "verified\n",
      seq / ranks, heads, head_dim, seq, heads / ranks, head_dim, ranks);
  return 0;
}

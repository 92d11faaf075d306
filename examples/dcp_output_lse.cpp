// Decode context parallelism's exact merge (vLLM DCP): the KV cache of one
// sequence is split over P ranks; every rank computes, for every query head,
// a partial attention output o_r (over its share of the keys) and the
// log-sum-exp of its scores, lse_r. Rank j owns heads [j*H/P, (j+1)*H/P) in
// the end, so one all-to-all moves both the outputs [H, D] and the LSEs [H]
// to their owners, as one bundle: one collective, not two. The owner then
// merges exactly:
//
//   lse = log(sum_r exp(lse_r)),   o = sum_r exp(lse_r - lse) * o_r
//
// which equals attention over all keys at once. Every rank checks its heads
// against a serial computation over the whole KV cache.
#include <plait/plait.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int heads = 8;
constexpr int dim = 4;
constexpr int keys_per_rank = 6;

float query(int h, int d) { return std::sin(0.3f * static_cast<float>(h * dim + d)); }
float key(int k, int h, int d) { return std::cos(0.17f * static_cast<float>(k * 31 + h * dim + d)); }
float value(int k, int h, int d) { return 0.01f * static_cast<float>((k * 13 + h * 7 + d * 3) % 50); }

float score(int k, int h) {
  float s = 0.0f;
  for (int d = 0; d < dim; ++d) s += query(h, d) * key(k, h, d);
  return s;
}

/// Attention of head h over keys [first, first + count): the output and the LSE.
void attend(int h, int first, int count, float* out, float& lse) {
  float most = -INFINITY;
  for (int k = first; k < first + count; ++k) most = std::max(most, score(k, h));
  float sum = 0.0f;
  for (int d = 0; d < dim; ++d) out[d] = 0.0f;
  for (int k = first; k < first + count; ++k) {
    const float w = std::exp(score(k, h) - most);
    sum += w;
    for (int d = 0; d < dim; ++d) out[d] += w * value(k, h, d);
  }
  for (int d = 0; d < dim; ++d) out[d] /= sum;
  lse = most + std::log(sum);
}

void decode_step(plait::shm::communicator& comm) {
  const int p = comm.size();
  if (heads % p != 0) throw std::runtime_error("heads must divide among the ranks");
  const int mine = heads / p;
  // Partial attention over this rank's keys, for every head: [H, D] and [H].
  std::vector<float> out(heads * dim), lse(heads);
  for (int h = 0; h < heads; ++h)
    attend(h, comm.rank() * keys_per_rank, keys_per_rank, &out[static_cast<std::size_t>(h * dim)],
           lse[static_cast<std::size_t>(h)]);
  // Heads of owner j are block j: one all-to-all of the bundle.
  std::vector<float> out_in(heads * dim), lse_in(heads);  // [P sources x mine heads, D] and [P x mine]
  plait::all_to_all<plait::pairwise>(comm, plait::bundle(out, lse), plait::bundle(out_in, lse_in));
  // The exact merge, then the check against attention over every key.
  for (int local = 0; local < mine; ++local) {
    const int h = comm.rank() * mine + local;
    float most = -INFINITY;
    for (int r = 0; r < p; ++r) most = std::max(most, lse_in[static_cast<std::size_t>(r * mine + local)]);
    float total = 0.0f;
    for (int r = 0; r < p; ++r) total += std::exp(lse_in[static_cast<std::size_t>(r * mine + local)] - most);
    const float merged_lse = most + std::log(total);
    std::vector<float> want(dim);
    float want_lse = 0.0f;
    attend(h, 0, p * keys_per_rank, want.data(), want_lse);
    if (std::fabs(merged_lse - want_lse) > 1e-4f) throw std::runtime_error("head " + std::to_string(h) + ": LSE wrong");
    for (int d = 0; d < dim; ++d) {
      float o = 0.0f;
      for (int r = 0; r < p; ++r) {
        const auto at = static_cast<std::size_t>(r * mine + local);
        o += std::exp(lse_in[at] - merged_lse) * out_in[at * dim + static_cast<std::size_t>(d)];
      }
      if (std::fabs(o - want[static_cast<std::size_t>(d)]) > 1e-4f) {
        throw std::runtime_error("head " + std::to_string(h) + ": merged output wrong");
      }
    }
  }
}

}  // namespace

int main() {
  plait::shm::run_processes(4, [](plait::shm::communicator& comm) { decode_step(comm); });
  std::printf("dcp_output_lse: 4 ranks, %d heads, output and LSE in one all-to-all, exact merge verified\n", heads);
  return 0;
}

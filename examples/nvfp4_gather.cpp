// NVFP4 training all-gathers quantized weight shards together with their
// scale factors. Each rank quantizes its shard of a weight matrix to 4-bit
// E2M1 codes (two per byte) with one scale per block of 16 values, then one
// all-gather moves the packed codes (uint8) and the scales (float) as a
// bundle: one collective for both, each landing in its own buffer. Every
// rank dequantizes the full matrix and checks it against quantizing the
// whole matrix serially (bit-exact) and against the original values (within
// the format's error).
#include <plait/plait.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int block = 16;  // values per scale factor
constexpr int values_per_rank = 4 * block;

/// The eight non-negative magnitudes of FP4 E2M1.
constexpr std::array<float, 8> e2m1 = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

float weight(int i) { return std::sin(0.37f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 7)); }

std::uint8_t encode(float v, float scale) {
  const float x = std::fabs(v) / scale;
  int best = 0;
  for (int c = 1; c < 8; ++c) {
    if (std::fabs(e2m1[static_cast<std::size_t>(c)] - x) < std::fabs(e2m1[static_cast<std::size_t>(best)] - x))
      best = c;
  }
  return static_cast<std::uint8_t>(best | (v < 0 ? 8 : 0));
}
float decode(std::uint8_t code, float scale) {
  const float m = e2m1[code & 7u] * scale;
  return (code & 8u) != 0 ? -m : m;
}

/// Quantizes values [first, first + n): packed codes and one scale per block.
void quantize(int first, int n, std::vector<std::uint8_t>& codes, std::vector<float>& scales) {
  codes.assign(static_cast<std::size_t>(n / 2), 0);
  scales.assign(static_cast<std::size_t>(n / block), 0.0f);
  for (int b = 0; b < n / block; ++b) {
    float most = 0.0f;
    for (int i = 0; i < block; ++i) most = std::max(most, std::fabs(weight(first + b * block + i)));
    const float scale = most > 0 ? most / 6.0f : 1.0f;
    scales[static_cast<std::size_t>(b)] = scale;
    for (int i = 0; i < block; ++i) {
      const int at = b * block + i;
      const std::uint8_t code = encode(weight(first + at), scale);
      codes[static_cast<std::size_t>(at / 2)] |= static_cast<std::uint8_t>(at % 2 == 0 ? code : code << 4);
    }
  }
}

void gather_weights(plait::shm::communicator& comm) {
  const auto p = static_cast<std::size_t>(comm.size());
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
  quantize(comm.rank() * values_per_rank, values_per_rank, codes, scales);
  std::vector<std::uint8_t> all_codes(codes.size() * p);
  std::vector<float> all_scales(scales.size() * p);
  plait::all_gather<plait::ring>(comm, plait::bundle(codes, scales), plait::bundle(all_codes, all_scales));

  const int total = values_per_rank * comm.size();
  std::vector<std::uint8_t> want_codes;
  std::vector<float> want_scales;
  quantize(0, total, want_codes, want_scales);
  if (all_codes != want_codes || all_scales != want_scales) throw std::runtime_error("gathered codes or scales differ");
  for (int i = 0; i < total; ++i) {
    const std::uint8_t byte = all_codes[static_cast<std::size_t>(i / 2)];
    const auto code = static_cast<std::uint8_t>(i % 2 == 0 ? byte & 0xFu : byte >> 4);
    const float scale = all_scales[static_cast<std::size_t>(i / block)];
    // E2M1's largest gap is 2 (between 4 and 6): the error is at most one scale.
    if (std::fabs(decode(code, scale) - weight(i)) > scale * 1.0001f) {
      throw std::runtime_error("value " + std::to_string(i) + " dequantized too far from the weight");
    }
  }
}

}  // namespace

int main() {
  plait::shm::run_processes(4, [](plait::shm::communicator& comm) { gather_weights(comm); });
  std::printf(
      "nvfp4_gather: 4 ranks, %d FP4 values each with %d scales, codes and scales in one all-gather: verified\n",
      values_per_rank, values_per_rank / block);
  return 0;
}

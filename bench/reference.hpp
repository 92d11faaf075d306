// Serial references for the benchmark's verify mode (-c) and the tour: every
// rank's send buffer is a known function of (rank, byte index), so any rank can
// compute, on its own and without communication, what its receive buffer must
// hold after an all-gather, an all-to-all, a reduce-scatter or an all-reduce.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plait {
inline namespace v0 {
namespace bench {

/// The byte at `index` of `rank`'s send buffer. Mixes both so a block that
/// lands at the wrong offset or from the wrong rank shows up.
[[nodiscard]] constexpr std::byte pattern(int rank, std::size_t index) noexcept {
  std::uint64_t x = (static_cast<std::uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ULL + index;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 32;
  return static_cast<std::byte>(x);
}

inline void fill_pattern(int rank, std::span<std::byte> send) noexcept {
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = pattern(rank, i);
}

/// "" when `recv` is what an all-gather of `ranks` pattern-filled shards of
/// recv.size()/ranks bytes gives, else where the first difference is.
inline std::string check_all_gather(int ranks, std::span<const std::byte> recv) {
  const std::size_t shard = recv.size() / static_cast<std::size_t>(ranks);
  for (int from = 0; from < ranks; ++from) {
    for (std::size_t i = 0; i < shard; ++i) {
      if (recv[static_cast<std::size_t>(from) * shard + i] != pattern(from, i)) {
        return "all_gather: byte " + std::to_string(i) + " of rank " + std::to_string(from) + "'s shard differs";
      }
    }
  }
  return {};
}

/// "" when `recv` is what rank `rank` gets from an all-to-all of `ranks`
/// pattern-filled send buffers of recv.size() bytes, else where it differs.
/// Block s of recv is block `rank` of rank s's send buffer.
inline std::string check_all_to_all(int rank, int ranks, std::span<const std::byte> recv) {
  const std::size_t block = recv.size() / static_cast<std::size_t>(ranks);
  for (int from = 0; from < ranks; ++from) {
    for (std::size_t i = 0; i < block; ++i) {
      if (recv[static_cast<std::size_t>(from) * block + i] !=
          pattern(from, static_cast<std::size_t>(rank) * block + i)) {
        return "all_to_all: byte " + std::to_string(i) + " of the block from rank " + std::to_string(from) + " differs";
      }
    }
  }
  return {};
}

/// The skewed, MoE-like split of `total` bytes into `ranks` parts used by the
/// v-form benchmarks: part k gets a weight 1/(1+k')^1.1 (Zipf, exponent 1.1:
/// a few hot experts take most tokens), where k' is k's place in an order
/// shuffled by `seed` (so each row's hot rank differs), rounded down, the
/// remainder to the hottest part. The same on every rank for the same seed.
inline std::vector<std::size_t> skewed_parts(std::size_t total, int ranks, unsigned seed) {
  const auto p = static_cast<std::size_t>(ranks);
  std::vector<std::size_t> order(p);
  for (std::size_t k = 0; k < p; ++k) order[k] = k;
  std::uint64_t state = 0x2545F4914F6CDD1DULL ^ (static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ULL);
  for (std::size_t k = p; k > 1; --k) {  // Fisher-Yates with a fixed generator: the same everywhere
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    std::swap(order[k - 1], order[static_cast<std::size_t>(state >> 33) % k]);
  }
  std::vector<double> weight(p);
  double sum = 0;
  for (std::size_t k = 0; k < p; ++k) sum += weight[k] = 1.0 / std::pow(1.0 + static_cast<double>(order[k]), 1.1);
  std::vector<std::size_t> parts(p);
  std::size_t given = 0;
  std::size_t hottest = 0;
  for (std::size_t k = 0; k < p; ++k) {
    parts[k] = static_cast<std::size_t>(static_cast<double>(total) * weight[k] / sum);
    given += parts[k];
    if (order[k] == 0) hottest = k;
  }
  parts[hottest] += total - given;
  return parts;
}

/// "" when `recv` is what an all_gather_v of pattern-filled shards of
/// `counts` bytes gives, else where the first difference is.
inline std::string check_all_gather_v(std::span<const std::size_t> counts, std::span<const std::byte> recv) {
  std::size_t at = 0;
  for (std::size_t from = 0; from < counts.size(); ++from) {
    for (std::size_t i = 0; i < counts[from]; ++i, ++at) {
      if (recv[at] != pattern(static_cast<int>(from), i)) {
        return "all_gather_v: byte " + std::to_string(i) + " of rank " + std::to_string(from) + "'s shard differs";
      }
    }
  }
  return {};
}

/// "" when `recv` is what rank `rank` gets from an all_to_all_v in which rank
/// s sends `row(s)[d]` bytes of its pattern-filled send buffer to rank d.
template <class Row>
std::string check_all_to_all_v(int rank, int ranks, Row&& row, std::span<const std::byte> recv) {
  std::size_t at = 0;
  for (int from = 0; from < ranks; ++from) {
    const std::vector<std::size_t> counts = row(from);
    std::size_t offset = 0;
    for (int d = 0; d < rank; ++d) offset += counts[static_cast<std::size_t>(d)];
    for (std::size_t i = 0; i < counts[static_cast<std::size_t>(rank)]; ++i, ++at) {
      if (recv[at] != pattern(from, offset + i)) {
        return "all_to_all_v: byte " + std::to_string(i) + " of the block from rank " + std::to_string(from) +
               " differs";
      }
    }
  }
  return {};
}

/// Element `index` of `rank`'s float input to the reduction benchmarks: a
/// small integer, so that a float sum over any number of ranks up to 2^14 is
/// exact in every order and every algorithm's result can be checked exactly.
[[nodiscard]] constexpr float reduction_input(int rank, std::size_t index) noexcept {
  return static_cast<float>((index * 7 + static_cast<std::size_t>(rank) * 13) % 1024);
}

inline void fill_reduction_input(int rank, std::span<float> send) noexcept {
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = reduction_input(rank, i);
}

/// "" when `recv` holds the sum over `ranks` ranks of reduction_input at
/// elements `first`, `first` + 1, ...: an all-reduce's result (first = 0) or
/// rank r's block of a reduce-scatter (first = r x the block), else where the
/// first difference is.
inline std::string check_sum(std::string_view operation, int ranks, std::size_t first, std::span<const float> recv) {
  for (std::size_t i = 0; i < recv.size(); ++i) {
    float want = 0;
    for (int r = 0; r < ranks; ++r) want += reduction_input(r, first + i);
    if (recv[i] != want) {
      return std::string(operation) + ": element " + std::to_string(first + i) + " is " + std::to_string(recv[i]) +
             ", want " + std::to_string(want);
    }
  }
  return {};
}

}  // namespace bench
}  // namespace v0
}  // namespace plait

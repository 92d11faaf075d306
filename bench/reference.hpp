// Serial references for the benchmark's verify mode (-c) and the tour: every
// rank's send buffer is a known function of (rank, byte index), so any rank can
// compute, on its own and without communication, what its receive buffer must
// hold after an all-gather or an all-to-all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

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

}  // namespace bench
}  // namespace v0
}  // namespace plait

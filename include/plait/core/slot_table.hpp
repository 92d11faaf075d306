// How a round sits in a shared slot (op/slot_run.hpp): a count, a table of
// one entry per block, then the blocks, each starting on a 16-byte boundary.
// Written once here because two layers size rounds: the slot run, which
// writes them, and automatic's rule (algorithm/select.hpp), which decides
// beforehand whether direct's rounds fit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace plait {
inline namespace v0 {
namespace detail {

/// One block in a round's table: where in the slot its bytes are.
struct slot_entry {
  std::uint32_t block;
  std::uint32_t reserved;
  std::uint64_t offset;
  std::uint64_t bytes;
};

inline constexpr std::size_t slot_alignment = 16;

/// `bytes` rounded up to where the next block may start.
constexpr std::size_t slot_aligned(std::size_t bytes) noexcept {
  return (bytes + slot_alignment - 1) / slot_alignment * slot_alignment;
}

/// Where the table of a round of `blocks` blocks ends and the first block starts.
constexpr std::size_t slot_data_offset(std::size_t blocks) noexcept {
  return slot_aligned(sizeof(std::uint64_t) + blocks * sizeof(slot_entry));
}

/// A round of `blocks` blocks of at most `block_bytes` each, table included.
constexpr std::size_t slot_round_size(std::size_t blocks, std::size_t block_bytes) noexcept {
  return slot_data_offset(blocks) + blocks * slot_aligned(block_bytes);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Operation tags and their block model: which blocks exist, which rank holds
// which at the start, which it must hold at the end. Schedules and verify()
// are written against this model; they never see bytes.
#pragma once

#include <concepts>
#include <string_view>

namespace plait {
inline namespace v0 {
namespace op {

/// all-gather: block j is rank j's shard. Rank r starts with block r and ends
/// with all P blocks.
struct all_gather {
  /// The name errors show.
  static constexpr std::string_view name = "all_gather";
  /// P blocks on P ranks: block j is rank j's shard.
  static constexpr int blocks(int size) noexcept { return size; }
  /// Rank r starts with block r.
  static constexpr bool holds_initially(int rank, int block, int /*size*/) noexcept { return block == rank; }
  /// Every rank ends with every block.
  static constexpr bool needs_finally(int /*rank*/, int /*block*/, int /*size*/) noexcept { return true; }
};

/// all-to-all: block s*P + d travels from rank s to rank d. Rank r starts with
/// blocks (r, *) and ends with blocks (*, r).
struct all_to_all {
  /// The name errors show.
  static constexpr std::string_view name = "all_to_all";
  /// P*P blocks on P ranks.
  static constexpr int blocks(int size) noexcept { return size * size; }
  /// The block that travels from `source` to `destination`.
  static constexpr int block(int source, int destination, int size) noexcept { return source * size + destination; }
  /// The rank that starts with `block`.
  static constexpr int source(int block, int size) noexcept { return block / size; }
  /// The rank that ends with `block`.
  static constexpr int destination(int block, int size) noexcept { return block % size; }
  /// Rank r starts with the blocks (r, *).
  static constexpr bool holds_initially(int rank, int block, int size) noexcept { return source(block, size) == rank; }
  /// Rank r ends with the blocks (*, r).
  static constexpr bool needs_finally(int rank, int block, int size) noexcept {
    return destination(block, size) == rank;
  }
};

}  // namespace op

/// True for the operation tags plait knows (the block model above).
template <class Op>
concept operation = requires(int r) {
  { Op::name } -> std::convertible_to<std::string_view>;
  { Op::blocks(r) } -> std::same_as<int>;
  { Op::holds_initially(r, r, r) } -> std::same_as<bool>;
  { Op::needs_finally(r, r, r) } -> std::same_as<bool>;
};

}  // namespace v0
}  // namespace plait

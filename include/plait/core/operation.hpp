// Operation tags: each is the description of its operation. The block model
// (which blocks exist, which rank holds which at the start, which it must hold
// at the end) is what schedules and verify() are written against; they never
// see bytes. The rest is what the collective engine needs to know about the
// operation (its names, its call kinds for the call stamp, its in-place rule),
// so that no code outside the description asks which operation it runs.
#pragma once

#include <concepts>
#include <string_view>

#include "plait/core/call_stamp.hpp"

namespace plait {
inline namespace v0 {
namespace op {

/// all-gather: block j is rank j's shard. Rank r starts with block r and ends
/// with all P blocks.
struct all_gather {
  /// The name errors show.
  static constexpr std::string_view name = "all_gather";
  /// The uneven form's name (shards of different lengths).
  static constexpr std::string_view v_name = "all_gather_v";
  /// The even form's call kind, for the call stamp.
  static constexpr call_kind kind = call_kind::all_gather;
  /// The uneven form's call kind.
  static constexpr call_kind v_kind = call_kind::all_gather_v;
  /// all_gather_v takes one count array: every rank's part (recv_counts).
  static constexpr int v_count_arrays = 1;
  /// plait::in_place: this rank's shard is already in its slice of recv.
  static constexpr bool allows_in_place = true;
  /// contiguous moves the same bytes to the same places as this layout with
  /// each of its `contiguous_as_parameters` dimension parameters 0 (along<0>),
  /// so the two calls have the same stamp and check-mode signature.
  static constexpr std::string_view contiguous_as = "along";
  /// How many dimension parameters that layout has (along<D>: one).
  static constexpr int contiguous_as_parameters = 1;
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
  /// The uneven form's name (blocks of different lengths).
  static constexpr std::string_view v_name = "all_to_all_v";
  /// The even form's call kind, for the call stamp.
  static constexpr call_kind kind = call_kind::all_to_all;
  /// The uneven form's call kind.
  static constexpr call_kind v_kind = call_kind::all_to_all_v;
  /// all_to_all_v takes two: what goes to each rank and what comes from each.
  static constexpr int v_count_arrays = 2;
  /// No in_place: every block of the send buffer leaves it.
  static constexpr bool allows_in_place = false;
  /// contiguous moves the same bytes to the same places as redistribute<0, 0>.
  static constexpr std::string_view contiguous_as = "redistribute";
  /// How many dimension parameters that layout has (redistribute<S, C>: two).
  static constexpr int contiguous_as_parameters = 2;
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

/// The order in which a reduction's contributions may be combined, which
/// decides the algorithms that can run it (each says so by the schedules it
/// has: an algorithm without a plan for an order cannot keep it).
enum class fold_order : unsigned char {
  /// Any order and grouping: commutative reductions (sum, max, ...).
  any,
  /// Any grouping, operands in rank order: associative reductions that do not commute.
  rank,
  /// Exactly ((x0 op x1) op x2) ... op x(P-1): plait::ordered<Reduction>.
  left,
};

/// reduce-scatter: block j is rank j's part of the result. Every rank starts
/// with its contribution to every block; rank r ends with block r combined
/// over all ranks, in the order Order allows.
template <fold_order Order = fold_order::any>
struct reduce_scatter {
  /// The name errors show.
  static constexpr std::string_view name = "reduce_scatter";
  /// The uneven form's name (parts of different lengths).
  static constexpr std::string_view v_name = "reduce_scatter_v";
  /// The even form's call kind, for the call stamp.
  static constexpr call_kind kind = call_kind::reduce_scatter;
  /// The uneven form's call kind.
  static constexpr call_kind v_kind = call_kind::reduce_scatter_v;
  /// reduce_scatter_v takes one count array: every rank's part (recv_counts).
  static constexpr int v_count_arrays = 1;
  /// plait::in_place: the result stays in this rank's own block of the buffer.
  static constexpr bool allows_in_place = true;
  /// Blocks are combined on arrival, never placed as they are.
  static constexpr bool combines = true;
  /// How contributions may be combined.
  static constexpr fold_order order = Order;
  /// contiguous has no other name here.
  static constexpr std::string_view contiguous_as = "contiguous";
  /// No dimension parameters.
  static constexpr int contiguous_as_parameters = 0;
  /// P blocks on P ranks: block j is rank j's part.
  static constexpr int blocks(int size) noexcept { return size; }
  /// Every rank contributes to every block.
  static constexpr bool holds_initially(int /*rank*/, int /*block*/, int /*size*/) noexcept { return true; }
  /// Rank r ends with block r, combined.
  static constexpr bool needs_finally(int rank, int block, int /*size*/) noexcept { return block == rank; }
};

/// Whether Op is a reduce-scatter (any fold order): layouts that split one
/// tensor into P blocks serve it.
template <class Op>
inline constexpr bool is_reduce_scatter = false;
template <fold_order Order>
inline constexpr bool is_reduce_scatter<reduce_scatter<Order>> = true;

/// all-reduce: the data cut into P blocks (so that a schedule may spread the
/// combining over the ranks); every rank contributes to every block and ends
/// with every block combined over all ranks, the same bits on every rank.
template <fold_order Order = fold_order::any>
struct all_reduce {
  /// The name errors show.
  static constexpr std::string_view name = "all_reduce";
  /// all_reduce has no uneven form (every rank holds the whole result).
  static constexpr std::string_view v_name = "all_reduce";
  /// The call kind, for the call stamp.
  static constexpr call_kind kind = call_kind::all_reduce;
  /// No uneven form: the even one's kind.
  static constexpr call_kind v_kind = call_kind::all_reduce;
  /// No uneven form, so no count arrays.
  static constexpr int v_count_arrays = 0;
  /// plait::in_place: one buffer holds the contribution and receives the result.
  static constexpr bool allows_in_place = true;
  /// Blocks are combined on arrival, never placed as they are.
  static constexpr bool combines = true;
  /// How contributions may be combined.
  static constexpr fold_order order = Order;
  /// contiguous has no other name here.
  static constexpr std::string_view contiguous_as = "contiguous";
  /// No dimension parameters.
  static constexpr int contiguous_as_parameters = 0;
  /// P blocks on P ranks (pieces of the data).
  static constexpr int blocks(int size) noexcept { return size; }
  /// Every rank contributes to every block.
  static constexpr bool holds_initially(int /*rank*/, int /*block*/, int /*size*/) noexcept { return true; }
  /// Every rank ends with every block, combined.
  static constexpr bool needs_finally(int /*rank*/, int /*block*/, int /*size*/) noexcept { return true; }
};

/// Whether Op is an all-reduce (any fold order): a layout that cuts one
/// tensor into P blocks serves it, the cut being the schedule's business.
template <class Op>
inline constexpr bool is_all_reduce = false;
template <fold_order Order>
inline constexpr bool is_all_reduce<all_reduce<Order>> = true;

}  // namespace op

/// True for the operation tags plait knows (the block model above).
template <class Op>
concept operation = requires(int r) {
  { Op::name } -> std::convertible_to<std::string_view>;
  { Op::blocks(r) } -> std::same_as<int>;
  { Op::holds_initially(r, r, r) } -> std::same_as<bool>;
  { Op::needs_finally(r, r, r) } -> std::same_as<bool>;
};

/// An operation the collective engine can run in every form: the block model
/// and the rest of its description (names, call kinds, in-place rule).
template <class Op>
concept described_operation = operation<Op> && requires {
  { Op::v_name } -> std::convertible_to<std::string_view>;
  { Op::kind } -> std::convertible_to<call_kind>;
  { Op::v_kind } -> std::convertible_to<call_kind>;
  { Op::allows_in_place } -> std::convertible_to<bool>;
  { Op::v_count_arrays } -> std::convertible_to<int>;
  { Op::contiguous_as } -> std::convertible_to<std::string_view>;
  { Op::contiguous_as_parameters } -> std::convertible_to<int>;
};

/// Whether Op combines the blocks that arrive (reductions) instead of placing
/// them (Op::combines; false when the description does not say).
template <class Op>
inline constexpr bool combines_blocks = requires {
  requires Op::combines;
};

/// An operation whose blocks are combined: reduce_scatter and all_reduce.
template <class Op>
concept combining_operation = operation<Op> && combines_blocks<Op> && requires {
  { Op::order } -> std::convertible_to<op::fold_order>;
};

}  // namespace v0
}  // namespace plait

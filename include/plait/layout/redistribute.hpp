// plait::redistribute<S, C> — all-to-all of N-d tensors that moves the
// sharding from one dimension to another: send's extent S is P*a, recv's
// extent C is P*b; slice j of dimension S goes to rank j and lands there as
// slice (sender rank) of dimension C. Every block therefore has send's shape
// with a along S, which must equal recv's shape with b along C. S == C is a
// plain all-to-all along that dimension.
//
// DeepSpeed-Ulysses, sequence-sharded -> head-sharded, is redistribute<1, 0>:
//   send [s/P, H, d]: split H (dim 1) into P slices of H/P heads
//   recv [s, H/P, d]: the slice from rank i fills rows [i*s/P, (i+1)*s/P) (dim 0)
// and redistribute<0, 1> is the way back.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include "plait/core/operation.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/layout.hpp"
#include "plait/layout/tensor_plans.hpp"

namespace plait {
inline namespace v0 {

/// Layout policy: all-to-all splitting send along SplitDim and concatenating
/// the received slices in rank order along ConcatDim.
template <std::size_t SplitDim, std::size_t ConcatDim>
struct redistribute {
  /// Marks redistribute as a layout (the opt-in tag).
  using layout_concept = layout_tag;
  /// The send tensor's dimension cut into P slices, slice d to rank d.
  static constexpr std::size_t split_dimension = SplitDim;
  /// The receive tensor's dimension the slices are concatenated along, in rank order.
  static constexpr std::size_t concat_dimension = ConcatDim;
  /// The name errors show.
  static constexpr std::string_view name = "redistribute";
  /// redistribute serves all-to-all only.
  template <class Op>
  static constexpr bool serves = std::is_same_v<Op, op::all_to_all>;
};

namespace detail {

template <std::size_t S, std::size_t C, tensor_argument Send, tensor_argument Recv>
tensor_exchange_plan make_plan(redistribute<S, C>, op::all_to_all, const call_site& at, Send&& send, Recv&& recv) {
  check_tensor_pair<tensor_of<Send>, tensor_of<Recv>>();
  layout_dimension_in_range<S, tensor_of<Send>::rank()>();
  layout_dimension_in_range<C, tensor_of<Recv>::rank()>();
  const std::string name = "redistribute<" + std::to_string(S) + ", " + std::to_string(C) + ">";
  return exchange_split_concat(name, S, C, at, as_tensor(send), as_tensor(recv));
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// plait::along<D> — all-gather of N-d tensors along dimension D: recv's extent
// D is P x send's, every other extent is equal, and rank j's shard lands at
// slice [j*n, (j+1)*n) of dimension D. Works with plait::in_place, and with
// strided views on either side.
//
//   send [2, 3, 4] on each of 4 ranks, along<1>  ->  recv [2, 12, 4]
//   recv[:, 3j:3j+3, :] is rank j's send
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include "plait/core/config.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/layout.hpp"
#include "plait/layout/tensor_plans.hpp"

namespace plait {
inline namespace v0 {

/// Layout policy: all-gather along dimension D (D = 0 for 1-d data is contiguous).
template <std::size_t D>
struct along {
  /// Marks along<D> as a layout (the opt-in tag).
  using layout_concept = layout_tag;
  /// The dimension shards are concatenated along.
  static constexpr std::size_t dimension = D;
  /// The name errors show.
  static constexpr std::string_view name = "along";
  /// along<D> serves the all-gather (recv concatenated along D), the
  /// reduce-scatter (send split along D) and the all-reduce (send and recv of
  /// one shape, its blocks slabs along D: layout/along_folds.hpp).
  template <class Op>
  static constexpr bool serves =
      std::is_same_v<Op, op::all_gather> || op::is_reduce_scatter<Op> || op::is_all_reduce<Op>;
};

namespace detail {

/// "along<D>", as error messages name the layout.
PLAIT_DECL std::string along_name(std::size_t d);

template <std::size_t D, tensor_argument Send, tensor_argument Recv>
tensor_gather_plan make_plan(along<D>, op::all_gather, const call_site& at, Send&& send, Recv&& recv) {
  check_tensor_pair<tensor_of<Send>, tensor_of<Recv>>();
  layout_dimension_in_range<D, tensor_of<Recv>::rank()>();
  return gather_along(along_name(D), D, at, as_tensor(send), as_tensor(recv));
}

template <std::size_t D, tensor_argument Recv>
tensor_gather_plan make_plan(along<D>, op::all_gather, const call_site& at, in_place_t, Recv&& recv) {
  layout_dimension_in_range<D, tensor_of<Recv>::rank()>();
  return gather_along_in_place(along_name(D), D, at, as_tensor(recv));
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/layout/impl/along.ipp"
#endif

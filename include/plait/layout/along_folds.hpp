// plait::along<D> for the reductions.
//
// reduce_scatter: send is an N-d tensor whose extent D is P x recv's (every
// other extent equal), and rank r ends with slice [r*n, (r+1)*n) of
// dimension D combined over all ranks: all_gather along<D> run backwards
// (FSDP's flat-parameter shards of a tensor, Megatron's sequence-parallel
// reduce-scatter along the sequence). plait::in_place leaves the result in
// this rank's slice.
//
//   send [2, 12, 4] on each of 4 ranks, along<1>  ->  recv [2, 3, 4]
//   recv = sum over ranks of send[:, 3r:3r+3, :]
//
// all_reduce: send and recv are tensors of one shape, and every element of
// recv is that element of send combined over all ranks (a slice of a larger
// tensor, a padded or transposed buffer, without packing it first). The
// blocks the schedule moves are slabs along D, cut as the 1-D all-reduce
// cuts its elements: extent D / P slices each, the first extent D mod P
// one slice longer (a slab may be empty). Which D changes no bit of the
// result, only how the bytes travel: along<0> of a row-major tensor moves
// the fewest runs.
//
//   send [6, 5] (a view of every other row of [12, 5]), along<0>, 4 ranks
//   -> recv [6, 5]; the blocks are rows 0-1, 2-3, 4, 5
//
// Strided views on either side, of any stride order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/core/call_site.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/overlap.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/along.hpp"
#include "plait/layout/fold_plans.hpp"
#include "plait/layout/tensor_plans.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// The fold plan of one tensor whose blocks are slices along `dim`: the
/// contributions from `whole`, this rank's result into `result`.
template <class T, std::size_t Rank>
contiguous_fold_plan slices_fold_plan(std::size_t dim, const call_site& at, const byte_box<Rank>& whole,
                                      const region& result, kept_reduction reduction, bool in_place) {
  const auto p = static_cast<std::size_t>(at.size);
  const std::size_t n = whole.extent[dim] / p;
  std::vector<region> blocks;
  blocks.reserve(p);
  for (std::size_t j = 0; j < p; ++j) blocks.push_back(to_region(whole.slice(dim, j * n, n), at, "send"));
  fold_member m{{}, {}, whole.elements(), std::move(reduction), {}, at.rank, at.size, false, in_place, {}, {}, {}};
  m.blocks = std::move(blocks);
  m.own_result = result;
  return contiguous_fold_plan({std::move(m)});
}

/// Both boxes of an out-of-place fold along a dimension, checked as every
/// such fold checks them: present, of the shapes `check_extents` accepts,
/// recv without repeated elements, the two apart (`overlap_hint` says what
/// to pass instead).
template <class SendTensor, class RecvTensor, class CheckExtents>
auto checked_fold_boxes(const call_site& at, const SendTensor& s, const RecvTensor& r, const char* overlap_hint,
                        CheckExtents check_extents) {
  auto boxes = std::pair{to_box(s, at, "send"), to_box(r, at, "recv")};
  check_view_not_null(at, s.data_handle(), boxes.first.elements(), "send");
  check_view_not_null(at, r.data_handle(), boxes.second.elements(), "recv");
  check_extents();
  check_unique(boxes.second, at, "recv");
  if (share_bytes(elements_of(boxes.first), elements_of(boxes.second))) {
    at.fail(errc::invalid_argument, {"send and recv views overlap; ", overlap_hint});
  }
  return boxes;
}

/// The box of an in-place fold's one writable view, checked: present, and
/// without repeated elements.
template <class Tensor>
auto checked_in_place_box(const call_site& at, const Tensor& buffer) {
  static_assert(!std::is_const_v<typename Tensor::element_type>,
                "plait: recv must be writable (a view of non-const elements)");
  const auto box = to_box(buffer, at, "recv");
  check_view_not_null(at, buffer.data_handle(), box.elements(), "recv");
  check_unique(box, at, "recv");
  return box;
}

template <std::size_t D, op::fold_order Order, tensor_argument Send, tensor_argument Recv, class Reduction>
contiguous_fold_plan make_plan(along<D>, op::reduce_scatter<Order>, const call_site& at, Send&& send, Recv&& recv,
                               const Reduction& reduction) {
  using send_tensor = tensor_of<Send>;
  using recv_tensor = tensor_of<Recv>;
  check_tensor_pair<send_tensor, recv_tensor>();
  layout_dimension_in_range<D, recv_tensor::rank()>();
  using element = std::remove_cv_t<typename recv_tensor::element_type>;
  const auto s = as_tensor(send);
  const auto r = as_tensor(recv);
  const auto [send_box, recv_box] =
      checked_fold_boxes(at, s, r, "for an in-place reduce_scatter pass plait::in_place as send", [&] {
        const std::string layout = along_name(D);
        for (std::size_t d = 0; d < recv_tensor::rank(); ++d) {
          if (d == D) continue;
          if (s.extent(d) != r.extent(d)) {
            at.fail(errc::size_mismatch, {layout, ": dimension ", d, ": send extent ", s.extent(d), ", recv extent ",
                                          r.extent(d), "; all but the split dimension must be equal"});
          }
        }
        std::size_t need = 0;
        if (mul_overflows(static_cast<std::size_t>(at.size), r.extent(D), need) || s.extent(D) != need) {
          at.fail(errc::size_mismatch, {layout, ": dimension ", D, ": send extent ", s.extent(D), ", but ", at.size,
                                        " ranks x recv extent ", r.extent(D), " need ", at.size, " x ", r.extent(D)});
        }
      });
  return slices_fold_plan<element>(D, at, send_box, to_region(recv_box, at, "recv"),
                                   kept_reduction::of<element>(reduction), false);
}

template <std::size_t D, op::fold_order Order, tensor_argument Recv, class Reduction>
contiguous_fold_plan make_plan(along<D>, op::reduce_scatter<Order>, const call_site& at, in_place_t, Recv&& buffer,
                               const Reduction& reduction) {
  using recv_tensor = tensor_of<Recv>;
  layout_dimension_in_range<D, recv_tensor::rank()>();
  using element = std::remove_cv_t<typename recv_tensor::element_type>;
  const auto b = as_tensor(buffer);
  const auto box = checked_in_place_box(at, b);
  const auto p = static_cast<std::size_t>(at.size);
  if (b.extent(D) % p != 0) {
    at.fail(errc::size_mismatch, {along_name(D), ": dimension ", D, ": in-place buffer extent ", b.extent(D),
                                  ", which ", p, " ranks do not divide"});
  }
  const std::size_t n = b.extent(D) / p;
  const region mine = to_region(box.slice(D, static_cast<std::size_t>(at.rank) * n, n), at, "recv");
  return slices_fold_plan<element>(D, at, box, mine, kept_reduction::of<element>(reduction), true);
}

/// Slab `block` of `box` along `dim`, cut as the 1-D all-reduce cuts: the
/// first extent mod P slabs one slice longer.
template <std::size_t Rank>
byte_box<Rank> all_reduce_slab(const byte_box<Rank>& box, std::size_t dim, std::size_t p, std::size_t block) {
  const std::size_t each = box.extent[dim] / p;
  const std::size_t longer = box.extent[dim] % p;
  const std::size_t begin = block * each + std::min(block, longer);
  return box.slice(dim, begin, each + (block < longer ? 1 : 0));
}

/// The fold plan of an all-reduce whose blocks are slabs along `dim`: the
/// contributions from `send`, every block's result into `recv` (the same box
/// in place).
template <class T, std::size_t Rank>
contiguous_fold_plan slabs_fold_plan(std::size_t dim, const call_site& at, const byte_box<Rank>& send,
                                     const byte_box<Rank>& recv, kept_reduction reduction, bool in_place) {
  const auto p = static_cast<std::size_t>(at.size);
  std::vector<region> blocks;
  std::vector<region> results;
  blocks.reserve(p);
  results.reserve(p);
  for (std::size_t j = 0; j < p; ++j) {
    blocks.push_back(to_region(all_reduce_slab(send, dim, p, j), at, in_place ? "recv" : "send"));
    results.push_back(to_region(all_reduce_slab(recv, dim, p, j), at, "recv"));
  }
  fold_member m{{}, {}, send.elements(), std::move(reduction), {}, at.rank, at.size, true, in_place, {}, {}, {}};
  m.blocks = std::move(blocks);
  m.result_blocks = std::move(results);
  return contiguous_fold_plan({std::move(m)});
}

template <std::size_t D, op::fold_order Order, tensor_argument Send, tensor_argument Recv, class Reduction>
contiguous_fold_plan make_plan(along<D>, op::all_reduce<Order>, const call_site& at, Send&& send, Recv&& recv,
                               const Reduction& reduction) {
  using send_tensor = tensor_of<Send>;
  using recv_tensor = tensor_of<Recv>;
  check_tensor_pair<send_tensor, recv_tensor>();
  layout_dimension_in_range<D, recv_tensor::rank()>();
  using element = std::remove_cv_t<typename recv_tensor::element_type>;
  const auto s = as_tensor(send);
  const auto r = as_tensor(recv);
  const auto [send_box, recv_box] =
      checked_fold_boxes(at, s, r, "for an in-place all_reduce pass plait::in_place and the one view", [&] {
        for (std::size_t d = 0; d < recv_tensor::rank(); ++d) {
          if (s.extent(d) != r.extent(d)) {
            at.fail(errc::size_mismatch,
                    {along_name(D), ": dimension ", d, ": send extent ", s.extent(d), ", recv extent ", r.extent(d),
                     "; all_reduce needs send and recv of one shape"});
          }
        }
      });
  return slabs_fold_plan<element>(D, at, send_box, recv_box, kept_reduction::of<element>(reduction), false);
}

template <std::size_t D, op::fold_order Order, tensor_argument Recv, class Reduction>
contiguous_fold_plan make_plan(along<D>, op::all_reduce<Order>, const call_site& at, in_place_t, Recv&& buffer,
                               const Reduction& reduction) {
  using recv_tensor = tensor_of<Recv>;
  layout_dimension_in_range<D, recv_tensor::rank()>();
  using element = std::remove_cv_t<typename recv_tensor::element_type>;
  const auto box = checked_in_place_box(at, as_tensor(buffer));
  return slabs_fold_plan<element>(D, at, box, box, kept_reduction::of<element>(reduction), true);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

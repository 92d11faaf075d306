// Block plans over N-d views: how along<D>, redistribute<S, C> and contiguous
// (for tensors) turn the user's views into regions, one per block, for the
// executor. Every check on extents and pointers runs here, in make_plan,
// before the schedule starts: a plan that exists is one that can run.
//
// A view becomes a byte box (pointer, extents, strides in bytes); a block is a
// slice of that box along one dimension; a slice becomes a region by dropping
// extent-1 dimensions, folding the contiguous innermost dimensions into one
// run and merging outer dimensions that step evenly. A block whose region is
// one run is sent from (or received into) user memory with no copy at all.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/overlap.hpp"
#include "plait/core/region.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/contiguous_plans.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// What a tensor layout accepts on either side: any mdspan-like view, or a
/// contiguous range taken as a 1-d tensor.
template <class X>
concept tensor_argument = mdspan_like<X> || send_range<X>;

/// Either argument is N-d (so the contiguous layout means along<0>, not 1-d).
template <class A, class B>
concept some_mdspan = mdspan_like<A> || mdspan_like<B>;

/// Any tensor argument as a tensor_view (mdspan-like views keep their strides;
/// ranges become 1-d views).
template <class X>
auto as_tensor(X&& x) {
  if constexpr (mdspan_like<X>) {
    using element = view_element<X>;
    constexpr std::size_t rank = view_rank<X>;
    std::array<std::size_t, rank> extents{};
    std::array<std::size_t, rank> strides{};
    for (std::size_t r = 0; r < rank; ++r) {
      extents[r] = extent_of(x, r);
      strides[r] = stride_of(x, r);
    }
    return tensor_view<element, rank>(x.data_handle(), extents, strides);
  } else {
    using element = std::remove_reference_t<std::ranges::range_reference_t<X>>;
    return tensor_view<element, 1>(std::ranges::data(x), {std::ranges::size(x)});
  }
}

template <class X>
using tensor_of = decltype(as_tensor(std::declval<X>()));

/// Static checks shared by every tensor layout: same element type on both sides,
/// trivially copyable, writable destination, same rank.
template <class SendTensor, class RecvTensor>
constexpr void check_tensor_pair() {
  using send_t = std::remove_cv_t<typename SendTensor::element_type>;
  using recv_t = std::remove_cv_t<typename RecvTensor::element_type>;
  static_assert(std::is_same_v<send_t, recv_t>, "plait: send and recv must hold the same element type");
  static_assert(std::is_trivially_copyable_v<recv_t>, "plait: tensor elements must be trivially copyable");
  static_assert(!std::is_const_v<typename RecvTensor::element_type>,
                "plait: recv must be writable (a view of non-const elements)");
  static_assert(SendTensor::rank() == RecvTensor::rank(), "plait: send and recv views must have the same rank");
}

/// A dimension named by a layout must exist in the views. The instantiation of
/// this function in the compiler's message shows both numbers.
template <std::size_t Dim, std::size_t Rank>
constexpr void layout_dimension_in_range() {
  static_assert(Dim < Rank,
                "plait: the layout names a dimension the view does not have: along<D> needs D < the view's rank, "
                "redistribute<S, C> needs S and C < the view's rank (see Dim and Rank in this instantiation)");
}

/// A view in bytes: where it starts, its extents and its strides in bytes.
template <std::size_t Rank>
struct byte_box {
  std::byte* data = nullptr;
  std::size_t element = 0;
  std::array<std::size_t, Rank> extent{};
  std::array<std::size_t, Rank> stride{};  ///< bytes

  [[nodiscard]] std::size_t elements() const {
    std::size_t n = 1;
    for (std::size_t e : extent) n *= e;
    return n;
  }
  /// The part of this box with index [begin, begin + count) along dim.
  [[nodiscard]] byte_box slice(std::size_t dim, std::size_t begin, std::size_t count) const {
    byte_box out = *this;
    if (elements() != 0) out.data = data + begin * stride[dim];
    out.extent[dim] = count;
    return out;
  }
  /// The bytes from the lowest to the highest element (empty when no element).
  [[nodiscard]] std::span<const std::byte> footprint() const {
    if (elements() == 0) return {};
    std::size_t last = 0;
    for (std::size_t r = 0; r < Rank; ++r) last += (extent[r] - 1) * stride[r];
    return {data, last + element};
  }
};

/// Fills `byte_stride` (`rank` entries) with `stride` in bytes, or throws
/// errc::invalid_argument when a product of the view's extents, strides and
/// element size overflows std::size_t: its bytes (the product of its nonzero
/// extents x `element`), a stride in bytes, or its span (the bytes from its
/// first element to past its last). One function for any rank, compiled once.
PLAIT_DECL void box_byte_strides(std::size_t element, const std::size_t* extent, const std::size_t* stride,
                                 std::size_t rank, std::size_t* byte_stride, const call_site& at,
                                 std::string_view which);

/// A view as a byte box, checked: every plan (and split_all_gather) makes
/// its boxes with this before it reads a view's shape, so a view whose
/// products of extents, strides and element size overflow is rejected before
/// any of them is used (issue 27: a wrapped element count passed the shape
/// checks, then moved nothing or read past the view).
template <class T, std::size_t Rank>
byte_box<Rank> to_box(const tensor_view<T, Rank>& v, const call_site& at, std::string_view which) {
  byte_box<Rank> box;
  // Send views may be const; the executor only ever reads through a send
  // region, so dropping const here is safe and keeps region one type.
  box.data = reinterpret_cast<std::byte*>(const_cast<std::remove_cv_t<T>*>(v.data_handle()));
  box.element = sizeof(T);
  box.extent = v.extents();
  box_byte_strides(sizeof(T), v.extents().data(), v.strides().data(), Rank, box.stride.data(), at, which);
  return box;
}

/// to_region and check_unique for any rank: one function each, compiled once
/// (impl/tensor_plans.ipp), not once per rank. `extent` and `stride` (bytes)
/// hold `rank` entries; `scratch` and `scratch2` are `rank` entries the
/// function may overwrite (the caller's stack, so no allocation).
PLAIT_DECL region box_region(std::byte* data, std::size_t element, const std::size_t* extent, const std::size_t* stride,
                             std::size_t rank, std::size_t* scratch, std::size_t* scratch2, const call_site& at,
                             std::string_view which);
PLAIT_DECL void check_box_unique(std::size_t element, const std::size_t* extent, const std::size_t* stride,
                                 std::size_t rank, std::size_t* scratch, const call_site& at, std::string_view which);
/// check_box_unique's rule without the throw, for callers that take another
/// path where plait would refuse a destination (the PMPI library): the
/// dimension along which the box names an element twice, or `rank` when it
/// names each once.
PLAIT_DECL std::size_t box_repeat_dimension(std::size_t element, const std::size_t* extent, const std::size_t* stride,
                                            std::size_t rank, std::size_t* scratch) noexcept;

/// The region of a box: extent-1 dimensions dropped, the contiguous innermost
/// dimensions folded into one run, evenly stepping outer dimensions merged.
/// Throws `unsupported` when more strided dimensions remain than a region holds.
template <std::size_t Rank>
region to_region(const byte_box<Rank>& box, const call_site& at, std::string_view which) {
  std::array<std::size_t, Rank> extent{};
  std::array<std::size_t, Rank> stride{};
  return box_region(box.data, box.element, box.extent.data(), box.stride.data(), Rank, extent.data(), stride.data(), at,
                    which);
}

inline void check_view_not_null(const call_site& at, const void* data, std::size_t count, std::string_view which) {
  check_not_null(at, data, count, which);
}

/// recv must not name one element twice: several ranks would write it. The
/// check sorts dimensions by stride and asks each to step past all smaller
/// ones, which every row-major, column-major or padded layout does.
template <std::size_t Rank>
void check_unique(const byte_box<Rank>& box, const call_site& at, std::string_view which) {
  std::array<std::size_t, Rank> order{};
  check_box_unique(box.element, box.extent.data(), box.stride.data(), Rank, order.data(), at, which);
}

/// A box's elements for share_bytes (core/overlap.hpp); refers to the box.
template <std::size_t Rank>
strided_set elements_of(const byte_box<Rank>& box) noexcept {
  return {box.data, box.element, box.extent.data(), box.stride.data(), Rank};
}

/// send and recv must share no element (views that interleave, as the real
/// and imaginary parts of complex numbers, share none and pass).
template <class Op, std::size_t Rank>
void check_disjoint(const byte_box<Rank>& send, const byte_box<Rank>& recv, const call_site& at) {
  if (share_bytes(elements_of(send), elements_of(recv))) fail_overlap<Op>(at, "send and recv views");
}

/// all-gather over tensors: block j is slice [j*n, (j+1)*n) of recv along dim.
class tensor_gather_plan {
 public:
  tensor_gather_plan(region own, std::vector<region> blocks, int rank, bool in_place)
      : own_(own), blocks_(std::move(blocks)), rank_(rank), in_place_(in_place) {}

  [[nodiscard]] std::size_t block_bytes(int block) const { return blocks_[static_cast<std::size_t>(block)].bytes(); }
  [[nodiscard]] bool has_location(int /*block*/) const { return true; }
  [[nodiscard]] region location(int block) const { return blocks_[static_cast<std::size_t>(block)]; }
  /// Local copies before the schedule, done by `copy(src, dst)` on regions.
  template <class Copy>
  void prepare(Copy&& copy) const {
    if (!in_place_) copy(own_, blocks_[static_cast<std::size_t>(rank_)]);
  }
  void prepare() const { prepare(host_copy{}); }
  /// As the contiguous gather plan: the own shard's copy, which a transport
  /// with isend_with_copy may take over when both ends are contiguous runs
  /// (along<0> of row-major tensors), and sends of the own shard alone read
  /// it from the send view.
  [[nodiscard]] int own_copy_block() const { return in_place_ ? -1 : rank_; }
  void prepare_without_own_copy() const {}  // that copy is all prepare() does
  [[nodiscard]] region send_location(int block) const { return block == rank_ && !in_place_ ? own_ : location(block); }

 private:
  region own_;
  std::vector<region> blocks_;
  int rank_;
  bool in_place_;
};

/// all-to-all over tensors: block (s, d) is slice d of send along the split
/// dimension on rank s, and slice s of recv along the concat dimension on rank d.
class tensor_exchange_plan {
 public:
  tensor_exchange_plan(std::vector<region> send, std::vector<region> recv, int rank, int size)
      : send_(std::move(send)), recv_(std::move(recv)), rank_(rank), size_(size) {}

  [[nodiscard]] std::size_t block_bytes(int /*block*/) const { return send_.front().bytes(); }
  [[nodiscard]] bool has_location(int block) const {
    return op::all_to_all::source(block, size_) == rank_ || op::all_to_all::destination(block, size_) == rank_;
  }
  [[nodiscard]] region location(int block) const {
    if (op::all_to_all::destination(block, size_) == rank_) {
      return recv_[static_cast<std::size_t>(op::all_to_all::source(block, size_))];
    }
    return send_[static_cast<std::size_t>(op::all_to_all::destination(block, size_))];
  }
  template <class Copy>
  void prepare(Copy&& copy) const {
    const auto own = static_cast<std::size_t>(rank_);
    copy(send_[own], recv_[own]);
  }
  void prepare() const { prepare(host_copy{}); }

 protected:
  // exchange_v_plan (uneven_plans.hpp) is this plan with blocks of any size.
  std::vector<region> send_;
  std::vector<region> recv_;
  int rank_;
  int size_;
};

/// all-gather along `dim` (checked against the rank by the caller).
template <class S, class R, std::size_t Rank>
tensor_gather_plan gather_along(std::string_view layout, std::size_t dim, const call_site& at,
                                const tensor_view<S, Rank>& send, const tensor_view<R, Rank>& recv) {
  check_tensor_pair<tensor_view<S, Rank>, tensor_view<R, Rank>>();
  const auto p = static_cast<std::size_t>(at.size);
  const auto send_box = to_box(send, at, "send");
  const auto recv_box = to_box(recv, at, "recv");
  check_view_not_null(at, send.data_handle(), send_box.elements(), "send");
  check_view_not_null(at, recv.data_handle(), recv_box.elements(), "recv");
  for (std::size_t r = 0; r < Rank; ++r) {
    if (r == dim) continue;
    if (send.extent(r) != recv.extent(r)) {
      at.fail(errc::size_mismatch, {layout, ": dimension ", r, ": send extent ", send.extent(r), ", recv extent ",
                                    recv.extent(r), "; all but the gathered dimension must be equal"});
    }
  }
  const std::size_t n = send.extent(dim);
  std::size_t need = 0;
  if (mul_overflows(p, n, need)) {
    // No extent can be P x n: a wrapped product once matched a small recv.
    at.fail(errc::size_mismatch, {layout, ": dimension ", dim, ": recv extent ", recv.extent(dim), ", but ", p,
                                  " ranks x send extent ", n, " need more than std::size_t holds"});
  }
  if (recv.extent(dim) != need) {
    at.fail(errc::size_mismatch, {layout, ": dimension ", dim, ": recv extent ", recv.extent(dim), ", but ", p,
                                  " ranks x send extent ", n, " need ", need});
  }
  check_unique(recv_box, at, "recv");
  check_disjoint<op::all_gather>(send_box, recv_box, at);
  std::vector<region> blocks;
  blocks.reserve(p);
  for (std::size_t j = 0; j < p; ++j) blocks.push_back(to_region(recv_box.slice(dim, j * n, n), at, "recv"));
  return tensor_gather_plan(to_region(send_box, at, "send"), std::move(blocks), at.rank, false);
}

/// in-place all-gather along `dim`: this rank's slice of recv already holds its shard.
template <class R, std::size_t Rank>
tensor_gather_plan gather_along_in_place(std::string_view layout, std::size_t dim, const call_site& at,
                                         const tensor_view<R, Rank>& recv) {
  static_assert(!std::is_const_v<R>, "plait: recv must be writable (a view of non-const elements)");
  static_assert(std::is_trivially_copyable_v<R>, "plait: tensor elements must be trivially copyable");
  const auto p = static_cast<std::size_t>(at.size);
  const auto recv_box = to_box(recv, at, "recv");
  check_view_not_null(at, recv.data_handle(), recv_box.elements(), "recv");
  if (recv.extent(dim) % p != 0) {
    at.fail(errc::size_mismatch, {layout, ": dimension ", dim, ": in-place recv extent ", recv.extent(dim), ", which ",
                                  p, " ranks do not divide"});
  }
  const std::size_t n = recv.extent(dim) / p;
  check_unique(recv_box, at, "recv");
  std::vector<region> blocks;
  blocks.reserve(p);
  for (std::size_t j = 0; j < p; ++j) blocks.push_back(to_region(recv_box.slice(dim, j * n, n), at, "recv"));
  return tensor_gather_plan(region{}, std::move(blocks), at.rank, true);
}

/// all-to-all splitting send along `split` and concatenating into recv along `concat`.
template <class S, class R, std::size_t Rank>
tensor_exchange_plan exchange_split_concat(std::string_view layout, std::size_t split, std::size_t concat,
                                           const call_site& at, const tensor_view<S, Rank>& send,
                                           const tensor_view<R, Rank>& recv) {
  check_tensor_pair<tensor_view<S, Rank>, tensor_view<R, Rank>>();
  const auto p = static_cast<std::size_t>(at.size);
  const auto send_box = to_box(send, at, "send");
  const auto recv_box = to_box(recv, at, "recv");
  check_view_not_null(at, send.data_handle(), send_box.elements(), "send");
  check_view_not_null(at, recv.data_handle(), recv_box.elements(), "recv");
  if (send.extent(split) % p != 0) {
    at.fail(errc::size_mismatch, {layout, ": dimension ", split, ": send extent ", send.extent(split), ", which ", p,
                                  " ranks do not divide into equal slices"});
  }
  if (recv.extent(concat) % p != 0) {
    at.fail(errc::size_mismatch, {layout, ": dimension ", concat, ": recv extent ", recv.extent(concat), ", which ", p,
                                  " ranks do not divide into equal slices"});
  }
  const std::size_t a = send.extent(split) / p;
  const std::size_t b = recv.extent(concat) / p;
  // Every block has send's shape with extent `a` along split, and recv's
  // shape with extent `b` along concat; those two shapes must be the same.
  for (std::size_t r = 0; r < Rank; ++r) {
    const std::size_t from = r == split ? a : send.extent(r);
    const std::size_t into = r == concat ? b : recv.extent(r);
    if (from == into) continue;
    if (r == split && r == concat) {
      at.fail(errc::size_mismatch, {layout, ": dimension ", r, ": send extent ", send.extent(r), ", recv extent ",
                                    recv.extent(r), "; redistribute<S, S> needs them equal"});
    } else if (r == split) {
      at.fail(errc::size_mismatch,
              {layout, ": dimension ", r, ": send extent ", send.extent(r), ", recv extent ", recv.extent(r), " (", p,
               " slices of ", a, " each go out), so recv extent must be ", a});
    } else if (r == concat) {
      at.fail(errc::size_mismatch,
              {layout, ": dimension ", r, ": send extent ", send.extent(r), ", recv extent ", recv.extent(r), " (", p,
               " slices of ", b, " each come in), so send extent must be ", b});
    } else {
      at.fail(errc::size_mismatch, {layout, ": dimension ", r, ": send extent ", send.extent(r), ", recv extent ",
                                    recv.extent(r), "; all but the split and concat dimensions must be equal"});
    }
  }
  check_unique(recv_box, at, "recv");
  check_disjoint<op::all_to_all>(send_box, recv_box, at);
  std::vector<region> out;
  std::vector<region> in;
  out.reserve(p);
  in.reserve(p);
  for (std::size_t j = 0; j < p; ++j) {
    out.push_back(to_region(send_box.slice(split, j * a, a), at, "send"));
    in.push_back(to_region(recv_box.slice(concat, j * b, b), at, "recv"));
  }
  return tensor_exchange_plan(std::move(out), std::move(in), at.rank, at.size);
}

// contiguous for tensors means along<0> (all-gather) and split/concat along
// dimension 0 (all-to-all): for row-major data these are the 1-d meanings.

template <tensor_argument Send, tensor_argument Recv>
requires some_mdspan<Send, Recv> tensor_gather_plan make_plan(contiguous, op::all_gather, const call_site& at,
                                                              Send&& send, Recv&& recv) {
  check_tensor_pair<tensor_of<Send>, tensor_of<Recv>>();
  constexpr std::size_t rank = tensor_of<Recv>::rank();
  layout_dimension_in_range<0, rank>();
  return gather_along("contiguous", 0, at, as_tensor(send), as_tensor(recv));
}

template <mdspan_like Recv>
tensor_gather_plan make_plan(contiguous, op::all_gather, const call_site& at, in_place_t, Recv&& recv) {
  constexpr std::size_t rank = tensor_of<Recv>::rank();
  layout_dimension_in_range<0, rank>();
  return gather_along_in_place("contiguous", 0, at, as_tensor(recv));
}

template <tensor_argument Send, tensor_argument Recv>
requires some_mdspan<Send, Recv> tensor_exchange_plan make_plan(contiguous, op::all_to_all, const call_site& at,
                                                                Send&& send, Recv&& recv) {
  check_tensor_pair<tensor_of<Send>, tensor_of<Recv>>();
  constexpr std::size_t rank = tensor_of<Recv>::rank();
  layout_dimension_in_range<0, rank>();
  return exchange_split_concat("contiguous", 0, 0, at, as_tensor(send), as_tensor(recv));
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/layout/impl/tensor_plans.ipp"
#endif

// Block plans of the uneven ("v") collectives. The executor already moves
// blocks of any size; what changes is where the blocks are: at the running
// offsets of the counts instead of at multiples of one block size.
//
//   all_gather_v:  block j is recv_counts[j] elements (or slices along the
//                  layout's dimension) at offset recv_counts[0] + ... + recv_counts[j-1]
//   all_to_all_v:  block (s, d) is send_counts[d] of rank s, at its running
//                  offset in s's send, and recv_counts[s] of rank d in d's recv
//
// Every check runs here, before the schedule starts: a wrong number of counts
// or a negative one is errc::invalid_argument, counts that disagree with a
// buffer are errc::size_mismatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/region.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/along.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/counts.hpp"
#include "plait/layout/redistribute.hpp"
#include "plait/layout/tensor_plans.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// all-to-all with blocks of any size: block (s, d) is send_[d] on rank s and
/// recv_[s] on rank d. Blocks this rank only forwards (ring, Bruck) have
/// their sizes in `sizes_` (P x P bytes, from the count exchange); without it
/// only the schedules that move every block straight from its source to its
/// destination (pairwise, direct) can run.
class exchange_v_plan : public tensor_exchange_plan {
 public:
  exchange_v_plan(std::vector<region> send, std::vector<region> recv, int rank, int size)
      : tensor_exchange_plan(std::move(send), std::move(recv), rank, size) {}

  /// The bytes rank s sends rank d, for every (s, d): sizes[s * P + d].
  void set_block_sizes(std::vector<std::size_t> sizes) { sizes_ = std::move(sizes); }

  /// Hides the even plan's one block size: each block has its own.
  [[nodiscard]] std::size_t block_bytes(int block) const {
    const int source = op::all_to_all::source(block, size_);
    const int destination = op::all_to_all::destination(block, size_);
    if (source == rank_) return send_[static_cast<std::size_t>(destination)].bytes();
    if (destination == rank_) return recv_[static_cast<std::size_t>(source)].bytes();
    return sizes_.empty() ? 0 : sizes_[static_cast<std::size_t>(block)];
  }

  /// Bytes this rank sends to each peer, then bytes it expects from each: its
  /// row of the count exchange.
  [[nodiscard]] std::vector<std::uint64_t> own_counts() const {
    std::vector<std::uint64_t> row(2 * send_.size());
    for (std::size_t j = 0; j < send_.size(); ++j) {
      row[j] = send_[j].bytes();
      row[send_.size() + j] = recv_[j].bytes();
    }
    return row;
  }

 private:
  std::vector<std::size_t> sizes_;
};

/// The product of every extent but `dim`: how many elements one slice along
/// `dim` holds.
template <class T, std::size_t Rank>
std::size_t slice_elements(const tensor_view<T, Rank>& v, std::size_t dim) {
  std::size_t n = 1;
  for (std::size_t r = 0; r < Rank; ++r) {
    if (r != dim) n *= v.extent(r);
  }
  return n;
}

/// all_gather_v's size checks, in one wording for every layout and path:
/// this rank's send (null in place) holds its own count of slices along
/// `dim`, and recv the counts' sum.
inline void check_gather_v_sizes(const call_site& at, std::string_view layout, std::size_t dim,
                                 const std::size_t* send_slices, std::size_t recv_slices,
                                 const checked_counts& counts) {
  const auto me = static_cast<std::size_t>(at.rank);
  if (send_slices != nullptr && *send_slices != counts.count[me]) {
    at.fail(errc::size_mismatch, {layout, ": send holds ", *send_slices, " slices along dimension ", dim,
                                  ", but recv_counts[", at.rank, "] is ", counts.count[me]});
  }
  if (recv_slices != counts.total) {
    at.fail(errc::size_mismatch, {layout, ": recv holds ", recv_slices, " slices along dimension ", dim,
                                  ", but recv_counts add up to ", counts.total});
  }
}

/// all_gather_v along `dim`: rank j's recv_counts[j] slices at their running offset.
template <class S, class R, std::size_t Rank, count_range Counts>
tensor_gather_plan gather_v_along(std::string_view layout, std::size_t dim, const call_site& at,
                                  const tensor_view<S, Rank>& send, const tensor_view<R, Rank>& recv,
                                  const Counts& recv_counts) {
  check_tensor_pair<tensor_view<S, Rank>, tensor_view<R, Rank>>();
  const auto send_box = to_box(send, at, "send");
  const auto recv_box = to_box(recv, at, "recv");
  check_view_not_null(at, send.data_handle(), send_box.elements(), "send");
  check_view_not_null(at, recv.data_handle(), recv_box.elements(), "recv");
  for (std::size_t r = 0; r < Rank; ++r) {
    if (r != dim && send.extent(r) != recv.extent(r)) {
      at.fail(errc::size_mismatch, {layout, ": dimension ", r, ": send extent ", send.extent(r), ", recv extent ",
                                    recv.extent(r), "; all but the gathered dimension must be equal"});
    }
  }
  checked_counts counts;
  read_counts(recv_counts, at, "recv_counts", slice_elements(recv, dim), counts);
  const std::size_t send_slices = send.extent(dim);
  check_gather_v_sizes(at, layout, dim, &send_slices, recv.extent(dim), counts);
  check_unique(recv_box, at, "recv");
  check_disjoint<op::all_gather>(send_box, recv_box, at);
  std::vector<region> blocks;
  blocks.reserve(counts.count.size());
  for (std::size_t j = 0; j < counts.count.size(); ++j) {
    blocks.push_back(to_region(recv_box.slice(dim, counts.offset[j], counts.count[j]), at, "recv"));
  }
  return tensor_gather_plan(to_region(send_box, at, "send"), std::move(blocks), at.rank, false);
}

/// in-place all_gather_v along `dim`: this rank's slices already sit at its offset in recv.
template <class R, std::size_t Rank, count_range Counts>
tensor_gather_plan gather_v_along_in_place(std::string_view layout, std::size_t dim, const call_site& at,
                                           const tensor_view<R, Rank>& recv, const Counts& recv_counts) {
  static_assert(!std::is_const_v<R>, "plait: recv must be writable (a view of non-const elements)");
  static_assert(std::is_trivially_copyable_v<R>, "plait: tensor elements must be trivially copyable");
  const auto recv_box = to_box(recv, at, "recv");
  check_view_not_null(at, recv.data_handle(), recv_box.elements(), "recv");
  checked_counts counts;
  read_counts(recv_counts, at, "recv_counts", slice_elements(recv, dim), counts);
  check_gather_v_sizes(at, layout, dim, nullptr, recv.extent(dim), counts);
  check_unique(recv_box, at, "recv");
  std::vector<region> blocks;
  blocks.reserve(counts.count.size());
  for (std::size_t j = 0; j < counts.count.size(); ++j) {
    blocks.push_back(to_region(recv_box.slice(dim, counts.offset[j], counts.count[j]), at, "recv"));
  }
  return tensor_gather_plan(region{}, std::move(blocks), at.rank, true);
}

/// One side of an all_to_all_v: the dimension it is cut along, the slices
/// it holds there, the elements in one slice and its counts.
struct exchange_v_side {
  std::size_t dim;
  std::size_t slices;
  std::size_t slice_elements;
  const checked_counts& counts;
};

/// all_to_all_v's size checks, in one wording for every layout and path:
/// each side holds its counts' sum, and what this rank sends itself is what
/// it expects from itself.
inline void check_exchange_v_sizes(const call_site& at, std::string_view layout, const exchange_v_side& send,
                                   const exchange_v_side& recv) {
  if (send.slices != send.counts.total) {
    at.fail(errc::size_mismatch, {layout, ": send holds ", send.slices, " slices along dimension ", send.dim,
                                  ", but send_counts add up to ", send.counts.total});
  }
  if (recv.slices != recv.counts.total) {
    at.fail(errc::size_mismatch, {layout, ": recv holds ", recv.slices, " slices along dimension ", recv.dim,
                                  ", but recv_counts add up to ", recv.counts.total});
  }
  const auto me = static_cast<std::size_t>(at.rank);
  const std::size_t own_out = send.counts.count[me] * send.slice_elements;
  const std::size_t own_in = recv.counts.count[me] * recv.slice_elements;
  if (own_out != own_in) {
    at.fail(errc::size_mismatch, {layout, ": this rank sends itself ", own_out, " elements (send_counts[", at.rank,
                                  "] = ", send.counts.count[me], ") but expects ", own_in, " (recv_counts[", at.rank,
                                  "] = ", recv.counts.count[me], ")"});
  }
}

/// all_to_all_v splitting send along `split` by send_counts and concatenating
/// into recv along `concat` by recv_counts. Every dimension but those two
/// must be equal on both sides; that the blocks' shapes agree between two
/// ranks (for split != concat) is a matter of both ranks' counts, which the
/// count exchange and the transports' exact receive sizes check.
template <class S, class R, std::size_t Rank, count_range SendCounts, count_range RecvCounts>
exchange_v_plan exchange_v_split_concat(std::string_view layout, std::size_t split, std::size_t concat,
                                        const call_site& at, const tensor_view<S, Rank>& send,
                                        const SendCounts& send_counts, const tensor_view<R, Rank>& recv,
                                        const RecvCounts& recv_counts) {
  check_tensor_pair<tensor_view<S, Rank>, tensor_view<R, Rank>>();
  const auto send_box = to_box(send, at, "send");
  const auto recv_box = to_box(recv, at, "recv");
  check_view_not_null(at, send.data_handle(), send_box.elements(), "send");
  check_view_not_null(at, recv.data_handle(), recv_box.elements(), "recv");
  for (std::size_t r = 0; r < Rank; ++r) {
    if (r != split && r != concat && send.extent(r) != recv.extent(r)) {
      at.fail(errc::size_mismatch, {layout, ": dimension ", r, ": send extent ", send.extent(r), ", recv extent ",
                                    recv.extent(r), "; all but the split and concat dimensions must be equal"});
    }
  }
  const std::size_t send_unit = slice_elements(send, split);
  const std::size_t recv_unit = slice_elements(recv, concat);
  checked_counts out;
  read_counts(send_counts, at, "send_counts", send_unit, out);
  checked_counts in;
  read_counts(recv_counts, at, "recv_counts", recv_unit, in);
  check_exchange_v_sizes(at, layout, {split, send.extent(split), send_unit, out},
                         {concat, recv.extent(concat), recv_unit, in});
  check_unique(recv_box, at, "recv");
  check_disjoint<op::all_to_all>(send_box, recv_box, at);
  std::vector<region> from;
  std::vector<region> into;
  from.reserve(out.count.size());
  into.reserve(in.count.size());
  for (std::size_t j = 0; j < out.count.size(); ++j) {
    from.push_back(to_region(send_box.slice(split, out.offset[j], out.count[j]), at, "send"));
    into.push_back(to_region(recv_box.slice(concat, in.offset[j], in.count[j]), at, "recv"));
  }
  return exchange_v_plan(std::move(from), std::move(into), at.rank, at.size);
}

/// all_gather_v of contiguous ranges (`send` null in place): gather_v_along's
/// checks and messages on byte spans, without the tensor boxes, whose
/// strides, uniqueness and overlap tests cost about 1,000 of a small call's
/// 1,500 planning instructions (callgrind, docs/pmpi.md). A range never
/// names an element twice, and two ranges overlap where their bytes do.
inline tensor_gather_plan gather_v_of_spans(const call_site& at, const std::span<const std::byte>* send,
                                            std::span<std::byte> recv, std::size_t element,
                                            const checked_counts& counts) {
  const std::size_t send_slices = send != nullptr ? send->size() / element : 0;
  check_gather_v_sizes(at, "contiguous", 0, send != nullptr ? &send_slices : nullptr, recv.size() / element, counts);
  if (send != nullptr && overlap(*send, recv)) fail_overlap<op::all_gather>(at, "send and recv views");
  std::vector<region> blocks;
  blocks.reserve(counts.count.size());
  for (std::size_t j = 0; j < counts.count.size(); ++j) {
    blocks.push_back(region::contiguous(recv.data() + counts.offset[j] * element, counts.count[j] * element));
  }
  if (send == nullptr) return tensor_gather_plan(region{}, std::move(blocks), at.rank, true);
  return tensor_gather_plan(region::contiguous(const_cast<std::byte*>(send->data()), send->size()), std::move(blocks),
                            at.rank, false);
}

/// all_to_all_v of contiguous ranges: exchange_v_split_concat's checks and
/// messages on byte spans, without the tensor boxes (as gather_v_of_spans).
inline exchange_v_plan exchange_v_of_spans(const call_site& at, std::span<const std::byte> send,
                                           const checked_counts& out, std::span<std::byte> recv,
                                           const checked_counts& in, std::size_t element) {
  check_exchange_v_sizes(at, "contiguous", {0, send.size() / element, 1, out}, {0, recv.size() / element, 1, in});
  if (overlap(send, recv)) fail_overlap<op::all_to_all>(at, "send and recv views");
  std::vector<region> from;
  std::vector<region> into;
  from.reserve(out.count.size());
  into.reserve(in.count.size());
  std::byte* const send_data = const_cast<std::byte*>(send.data());
  for (std::size_t j = 0; j < out.count.size(); ++j) {
    from.push_back(region::contiguous(send_data + out.offset[j] * element, out.count[j] * element));
    into.push_back(region::contiguous(recv.data() + in.offset[j] * element, in.count[j] * element));
  }
  return exchange_v_plan(std::move(from), std::move(into), at.rank, at.size);
}

// ---- the layouts' v-plans, found by argument-dependent lookup ---------------

/// contiguous: 1-D ranges (and tensors along dimension 0).
template <tensor_argument Send, tensor_argument Recv, count_range Counts>
tensor_gather_plan make_v_plan(contiguous, op::all_gather, const call_site& at, Send&& send, Recv&& recv,
                               const Counts& recv_counts) {
  check_tensor_pair<tensor_of<Send>, tensor_of<Recv>>();
  if constexpr (send_range<Send> && recv_range<Recv>) {
    check_not_null(at, std::ranges::data(send), std::ranges::size(send), "send");
    check_not_null(at, std::ranges::data(recv), std::ranges::size(recv), "recv");
    checked_counts counts;
    read_counts(recv_counts, at, "recv_counts", 1, counts);
    const std::span<const std::byte> mine = const_bytes(send);
    return gather_v_of_spans(at, &mine, mutable_bytes(recv), sizeof(std::ranges::range_value_t<Recv>), counts);
  } else {
    return gather_v_along("contiguous", 0, at, as_tensor(send), as_tensor(recv), recv_counts);
  }
}

template <tensor_argument Recv, count_range Counts>
tensor_gather_plan make_v_plan(contiguous, op::all_gather, const call_site& at, in_place_t, Recv&& recv,
                               const Counts& recv_counts) {
  if constexpr (recv_range<Recv>) {
    check_not_null(at, std::ranges::data(recv), std::ranges::size(recv), "recv");
    checked_counts counts;
    read_counts(recv_counts, at, "recv_counts", 1, counts);
    return gather_v_of_spans(at, nullptr, mutable_bytes(recv), sizeof(std::ranges::range_value_t<Recv>), counts);
  } else {
    return gather_v_along_in_place("contiguous", 0, at, as_tensor(recv), recv_counts);
  }
}

template <std::size_t D, tensor_argument Send, tensor_argument Recv, count_range Counts>
tensor_gather_plan make_v_plan(along<D>, op::all_gather, const call_site& at, Send&& send, Recv&& recv,
                               const Counts& recv_counts) {
  check_tensor_pair<tensor_of<Send>, tensor_of<Recv>>();
  layout_dimension_in_range<D, tensor_of<Recv>::rank()>();
  return gather_v_along(along_name(D), D, at, as_tensor(send), as_tensor(recv), recv_counts);
}

template <std::size_t D, tensor_argument Recv, count_range Counts>
tensor_gather_plan make_v_plan(along<D>, op::all_gather, const call_site& at, in_place_t, Recv&& recv,
                               const Counts& recv_counts) {
  layout_dimension_in_range<D, tensor_of<Recv>::rank()>();
  return gather_v_along_in_place(along_name(D), D, at, as_tensor(recv), recv_counts);
}

template <tensor_argument Send, tensor_argument Recv, count_range SendCounts, count_range RecvCounts>
exchange_v_plan make_v_plan(contiguous, op::all_to_all, const call_site& at, Send&& send, const SendCounts& send_counts,
                            Recv&& recv, const RecvCounts& recv_counts) {
  check_tensor_pair<tensor_of<Send>, tensor_of<Recv>>();
  if constexpr (send_range<Send> && recv_range<Recv>) {
    check_not_null(at, std::ranges::data(send), std::ranges::size(send), "send");
    check_not_null(at, std::ranges::data(recv), std::ranges::size(recv), "recv");
    checked_counts out;
    read_counts(send_counts, at, "send_counts", 1, out);
    checked_counts in;
    read_counts(recv_counts, at, "recv_counts", 1, in);
    return exchange_v_of_spans(at, const_bytes(send), out, mutable_bytes(recv), in,
                               sizeof(std::ranges::range_value_t<Recv>));
  } else {
    return exchange_v_split_concat("contiguous", 0, 0, at, as_tensor(send), send_counts, as_tensor(recv), recv_counts);
  }
}

template <std::size_t S, std::size_t C, tensor_argument Send, tensor_argument Recv, count_range SendCounts,
          count_range RecvCounts>
exchange_v_plan make_v_plan(redistribute<S, C>, op::all_to_all, const call_site& at, Send&& send,
                            const SendCounts& send_counts, Recv&& recv, const RecvCounts& recv_counts) {
  check_tensor_pair<tensor_of<Send>, tensor_of<Recv>>();
  layout_dimension_in_range<S, tensor_of<Send>::rank()>();
  layout_dimension_in_range<C, tensor_of<Recv>::rank()>();
  const std::string name = "redistribute<" + std::to_string(S) + ", " + std::to_string(C) + ">";
  return exchange_v_split_concat(name, S, C, at, as_tensor(send), send_counts, as_tensor(recv), recv_counts);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

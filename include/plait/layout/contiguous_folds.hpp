// plait::contiguous for the reductions: 1-D data. reduce_scatter's send holds
// P equal blocks and recv one (this rank's); all_reduce's send and recv hold
// the same number of elements, cut into P blocks (layout/fold_plans.hpp). In
// place, one buffer holds the contributions and receives the result (for
// reduce_scatter, in this rank's own block of it, as NCCL does).
#pragma once

#include <cstddef>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/core/call_site.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/fold_plans.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

inline contiguous_fold_plan one_member(std::span<const std::byte> contributions, std::span<std::byte> results,
                                       std::size_t elements, kept_reduction reduction, const call_site& at,
                                       bool all_results, bool in_place, std::vector<std::size_t> offsets = {}) {
  return contiguous_fold_plan(std::in_place, [&] {
    return fold_member{contributions,      results, elements, std::move(reduction),
                       std::move(offsets), at.rank, at.size,  all_results,
                       in_place,           {},      {},       {}};
  });
}

/// reduce_scatter_v's counts as P + 1 element offsets into the P blocks,
/// checked: one non-negative count per rank, a total std::size_t holds.
template <class Counts>
std::vector<std::size_t> offsets_of(const call_site& at, const Counts& counts) {
  const std::size_t p = static_cast<std::size_t>(at.size);
  if (std::ranges::size(counts) != p) {
    at.fail(errc::invalid_argument,
            {"recv_counts has ", std::ranges::size(counts), " entries, not one per rank (", at.size, ")"});
  }
  std::vector<std::size_t> offsets(p + 1, 0);
  std::size_t r = 0;
  for (const auto& c : counts) {
    if constexpr (std::is_signed_v<std::remove_cvref_t<decltype(c)>>) {
      if (c < 0) at.fail(errc::invalid_argument, {"recv_counts[", r, "] is negative (", c, ")"});
    }
    const auto count = static_cast<std::size_t>(c);
    if (add_overflows(offsets[r], count, offsets[r + 1])) {
      at.fail(errc::invalid_argument, {"recv_counts add up to more than std::size_t holds"});
    }
    ++r;
  }
  return offsets;
}

/// reduce_scatter_v: send holds sum(recv_counts) elements, rank r's part
/// recv_counts[r] of them; recv holds this rank's part.
template <op::fold_order Order, send_range Send, recv_range Recv, class Counts, class Reduction>
contiguous_fold_plan make_v_plan(contiguous, op::reduce_scatter<Order>, const call_site& at, Send&& send, Recv&& recv,
                                 const Counts& recv_counts, const Reduction& reduction) {
  check_same_elements<Send, Recv>();
  using element = std::remove_cv_t<std::ranges::range_value_t<Recv>>;
  std::vector<std::size_t> offsets = offsets_of(at, recv_counts);
  const std::size_t n = std::ranges::size(send);
  const std::size_t part = std::ranges::size(recv);
  const auto me = static_cast<std::size_t>(at.rank);
  check_not_null(at, std::ranges::data(send), n, "send");
  check_not_null(at, std::ranges::data(recv), part, "recv");
  if (n != offsets.back()) {
    at.fail(errc::size_mismatch, {"send holds ", n, " elements, but recv_counts add up to ", offsets.back()});
  }
  if (part != offsets[me + 1] - offsets[me]) {
    at.fail(errc::size_mismatch,
            {"recv holds ", part, " elements, but recv_counts[", at.rank, "] is ", offsets[me + 1] - offsets[me]});
  }
  auto contributions = const_bytes(send);
  auto result = mutable_bytes(recv);
  if (overlap(contributions, result)) {
    at.fail(errc::invalid_argument,
            {"send and recv overlap; for an in-place reduce_scatter_v pass plait::in_place and one buffer of all "
             "the parts (the result lands in this rank's part)"});
  }
  return one_member(contributions, result, n, kept_reduction::of<element>(reduction), at, false, false,
                    std::move(offsets));
}

/// reduce_scatter_v in place: the buffer holds every part; the result replaces this rank's.
template <op::fold_order Order, recv_range Recv, class Counts, class Reduction>
contiguous_fold_plan make_v_plan(contiguous, op::reduce_scatter<Order>, const call_site& at, in_place_t, Recv&& buffer,
                                 const Counts& recv_counts, const Reduction& reduction) {
  using element = std::remove_cv_t<std::ranges::range_value_t<Recv>>;
  std::vector<std::size_t> offsets = offsets_of(at, recv_counts);
  const std::size_t n = std::ranges::size(buffer);
  check_not_null(at, std::ranges::data(buffer), n, "recv");
  if (n != offsets.back()) {
    at.fail(errc::size_mismatch,
            {"in-place buffer holds ", n, " elements, but recv_counts add up to ", offsets.back()});
  }
  auto all = mutable_bytes(buffer);
  return one_member(all, all, n, kept_reduction::of<element>(reduction), at, false, true, std::move(offsets));
}

/// reduce_scatter: send holds P blocks of recv.size() elements.
template <op::fold_order Order, send_range Send, recv_range Recv, class Reduction>
contiguous_fold_plan make_plan(contiguous, op::reduce_scatter<Order>, const call_site& at, Send&& send, Recv&& recv,
                               const Reduction& reduction) {
  check_same_elements<Send, Recv>();
  using element = std::remove_cv_t<std::ranges::range_value_t<Recv>>;
  const std::size_t n = std::ranges::size(send);
  const std::size_t part = std::ranges::size(recv);
  check_not_null(at, std::ranges::data(send), n, "send");
  check_not_null(at, std::ranges::data(recv), part, "recv");
  std::size_t need = 0;
  if (mul_overflows(part, static_cast<std::size_t>(at.size), need) || n != need) {
    at.fail(errc::size_mismatch, {"send holds ", n, " elements, but ", at.size, " ranks x recv's ", part,
                                  " elements need ", at.size, " x ", part});
  }
  auto contributions = const_bytes(send);
  auto result = mutable_bytes(recv);
  if (overlap(contributions, result)) {
    at.fail(errc::invalid_argument,
            {"send and recv overlap; for an in-place reduce_scatter pass plait::in_place and one buffer of P "
             "blocks (the result lands in this rank's block)"});
  }
  return one_member(contributions, result, n, kept_reduction::of<element>(reduction), at, false, false);
}

/// reduce_scatter in place: the buffer holds P blocks; the result replaces this rank's.
template <op::fold_order Order, recv_range Recv, class Reduction>
contiguous_fold_plan make_plan(contiguous, op::reduce_scatter<Order>, const call_site& at, in_place_t, Recv&& buffer,
                               const Reduction& reduction) {
  using element = std::remove_cv_t<std::ranges::range_value_t<Recv>>;
  const std::size_t n = std::ranges::size(buffer);
  check_not_null(at, std::ranges::data(buffer), n, "recv");
  if (n % static_cast<std::size_t>(at.size) != 0) {
    at.fail(errc::size_mismatch,
            {"in-place buffer holds ", n, " elements, which ", at.size, " ranks do not divide into equal blocks"});
  }
  auto all = mutable_bytes(buffer);
  return one_member(all, all, n, kept_reduction::of<element>(reduction), at, false, true);
}

/// all_reduce: send and recv hold the same number of elements.
template <op::fold_order Order, send_range Send, recv_range Recv, class Reduction>
contiguous_fold_plan make_plan(contiguous, op::all_reduce<Order>, const call_site& at, Send&& send, Recv&& recv,
                               const Reduction& reduction) {
  check_same_elements<Send, Recv>();
  using element = std::remove_cv_t<std::ranges::range_value_t<Recv>>;
  const std::size_t n = std::ranges::size(send);
  const std::size_t total = std::ranges::size(recv);
  check_not_null(at, std::ranges::data(send), n, "send");
  check_not_null(at, std::ranges::data(recv), total, "recv");
  if (total != n) {
    at.fail(errc::size_mismatch,
            {"recv holds ", total, " elements, but send holds ", n, "; all_reduce needs them equal"});
  }
  auto contributions = const_bytes(send);
  auto result = mutable_bytes(recv);
  if (overlap(contributions, result)) {
    at.fail(errc::invalid_argument,
            {"send and recv overlap; for an in-place all_reduce pass plait::in_place and the one buffer"});
  }
  return one_member(contributions, result, n, kept_reduction::of<element>(reduction), at, true, false);
}

/// all_reduce in place: the buffer holds the contribution and receives the result.
template <op::fold_order Order, recv_range Recv, class Reduction>
contiguous_fold_plan make_plan(contiguous, op::all_reduce<Order>, const call_site& at, in_place_t, Recv&& buffer,
                               const Reduction& reduction) {
  using element = std::remove_cv_t<std::ranges::range_value_t<Recv>>;
  const std::size_t n = std::ranges::size(buffer);
  check_not_null(at, std::ranges::data(buffer), n, "recv");
  auto all = mutable_bytes(buffer);
  return one_member(all, all, n, kept_reduction::of<element>(reduction), at, true, true);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

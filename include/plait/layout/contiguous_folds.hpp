// plait::contiguous for the reductions: 1-D data. reduce_scatter's send holds
// P equal blocks and recv one (this rank's); all_reduce's send and recv hold
// the same number of elements, cut into P blocks (layout/fold_plans.hpp). In
// place, one buffer holds the contributions and receives the result (for
// reduce_scatter, in this rank's own block of it, as NCCL does).
#pragma once

#include <cstddef>
#include <ranges>
#include <type_traits>

#include "plait/core/call_site.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/fold_plans.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

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
  return contiguous_fold_plan(contributions, result, n, kept_reduction::of<element>(reduction), at.rank, at.size, false,
                              false);
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
  return contiguous_fold_plan(all, all, n, kept_reduction::of<element>(reduction), at.rank, at.size, false, true);
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
  return contiguous_fold_plan(contributions, result, n, kept_reduction::of<element>(reduction), at.rank, at.size, true,
                              false);
}

/// all_reduce in place: the buffer holds the contribution and receives the result.
template <op::fold_order Order, recv_range Recv, class Reduction>
contiguous_fold_plan make_plan(contiguous, op::all_reduce<Order>, const call_site& at, in_place_t, Recv&& buffer,
                               const Reduction& reduction) {
  using element = std::remove_cv_t<std::ranges::range_value_t<Recv>>;
  const std::size_t n = std::ranges::size(buffer);
  check_not_null(at, std::ranges::data(buffer), n, "recv");
  auto all = mutable_bytes(buffer);
  return contiguous_fold_plan(all, all, n, kept_reduction::of<element>(reduction), at.rank, at.size, true, true);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

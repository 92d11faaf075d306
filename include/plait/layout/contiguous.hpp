// plait::contiguous — 1-D data: all-gather concatenates equal shards in rank
// order, all-to-all exchanges P equal blocks. (For tensors it means along<0>.)
#pragma once

#include <cstddef>
#include <numeric>
#include <string>
#include <string_view>
#include <type_traits>

#include "plait/core/call_site.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous_plans.hpp"
#include "plait/layout/layout.hpp"

namespace plait {
inline namespace v0 {

/// Layout policy for 1-D data: all-gather concatenates equal shards in rank order, all-to-all exchanges P equal blocks.
struct contiguous {
  /// Marks contiguous as a layout (the opt-in tag).
  using layout_concept = layout_tag;
  /// The name errors show.
  static constexpr std::string_view name = "contiguous";
  /// contiguous serves both operations.
  template <class Op>
  static constexpr bool serves = true;  // both all-gather and all-to-all
};

namespace detail {

inline void check_not_null(const call_site& at, const void* data, std::size_t count, std::string_view which) {
  if (data == nullptr && count != 0) {
    at.fail(errc::invalid_argument, {which, " buffer is null but holds ", count, " elements"});
  }
}

/// Throws: send and recv share bytes. The way out depends on whether the
/// operation has an in-place form (its description says), so that no call is
/// sent to plait::in_place where it would not compile. `what`: "send and
/// recv" or "send and recv views".
template <class Op>
[[noreturn]] void fail_overlap(const call_site& at, std::string_view what = "send and recv") {
  if constexpr (Op::allows_in_place) {
    at.fail(errc::invalid_argument, {what, " overlap; to run in place pass plait::in_place as send"});
  } else {
    at.fail(errc::invalid_argument, {what, " overlap; ", Op::name,
                                     " has no in-place form: give recv a buffer that shares no element with send"});
  }
}

template <class Send, class Recv>
constexpr void check_same_elements() {
  using send_t = std::remove_cv_t<std::ranges::range_value_t<Send>>;
  using recv_t = std::remove_cv_t<std::ranges::range_value_t<Recv>>;
  static_assert(std::is_same_v<send_t, recv_t>, "plait: send and recv must hold the same element type");
}

template <send_range Send, recv_range Recv>
gather_plan make_plan(contiguous, op::all_gather, const call_site& at, Send&& send, Recv&& recv) {
  check_same_elements<Send, Recv>();
  const std::size_t n = std::ranges::size(send);
  const std::size_t total = std::ranges::size(recv);
  check_not_null(at, std::ranges::data(send), n, "send");
  check_not_null(at, std::ranges::data(recv), total, "recv");
  std::size_t need = 0;
  if (mul_overflows(n, static_cast<std::size_t>(at.size), need)) {
    at.fail(errc::size_mismatch, {"recv holds ", total, " elements, but ", at.size, " ranks x ", n,
                                  " elements need more than std::size_t holds"});
  }
  if (total != need) {
    at.fail(errc::size_mismatch,
            {"recv holds ", total, " elements, but ", at.size, " ranks x ", n, " elements need ", need});
  }
  auto own = const_bytes(send);
  auto all = mutable_bytes(recv);
  if (overlap(own, all)) fail_overlap<op::all_gather>(at);
  return gather_plan(own, all, own.size(), at.rank, false);
}

template <recv_range Recv>
gather_plan make_plan(contiguous, op::all_gather, const call_site& at, in_place_t, Recv&& recv) {
  const std::size_t total = std::ranges::size(recv);
  check_not_null(at, std::ranges::data(recv), total, "recv");
  if (total % static_cast<std::size_t>(at.size) != 0) {
    at.fail(errc::size_mismatch, {"in-place recv holds ", total, " elements, which ", at.size, " ranks do not divide"});
  }
  auto all = mutable_bytes(recv);
  const std::size_t shard = all.size() / static_cast<std::size_t>(at.size);
  return gather_plan({}, all, shard, at.rank, true);
}

template <send_range Send, recv_range Recv>
exchange_plan make_plan(contiguous, op::all_to_all, const call_site& at, Send&& send, Recv&& recv) {
  check_same_elements<Send, Recv>();
  const std::size_t n = std::ranges::size(send);
  const std::size_t total = std::ranges::size(recv);
  check_not_null(at, std::ranges::data(send), n, "send");
  check_not_null(at, std::ranges::data(recv), total, "recv");
  if (n % static_cast<std::size_t>(at.size) != 0) {
    at.fail(errc::size_mismatch,
            {"send holds ", n, " elements, which ", at.size, " ranks do not divide into equal blocks"});
  }
  if (total != n) {
    at.fail(errc::size_mismatch,
            {"recv holds ", total, " elements, but send holds ", n, "; all-to-all needs them equal"});
  }
  auto out = const_bytes(send);
  auto in = mutable_bytes(recv);
  if (overlap(out, in)) fail_overlap<op::all_to_all>(at);
  return exchange_plan(out, in, out.size() / static_cast<std::size_t>(at.size), at.rank, at.size);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

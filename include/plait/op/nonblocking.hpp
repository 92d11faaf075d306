// plait::iall_gather, iall_to_all, iall_gather_v, iall_to_all_v: the
// collectives with the same arguments as the blocking forms, returning a
// plait::collective_request at once (op/request.hpp).
//
// Everything a blocking call checks is checked here, before the call
// returns; the schedule is planned and the call's tag taken here too. The
// bytes move while the request (or any other collective of the communicator)
// is tested or waited for, or on the communicator's progress thread
// (communicator_core::start_progress_thread). Where a check needs the
// other ranks (check mode's signatures, all_to_all_v's count exchange under
// ring, bruck and automatic), that exchange is a small blocking collective
// inside the call.
//
// On a stream-ordered device transport (the NVLink communicator: a step is
// enqueued on the stream and wait_all returns without waiting for it) the
// i-forms run the collective as the blocking forms do, which already returns
// once it is on the stream: the request is complete, the bytes arrive in
// stream order (synchronize() or a stream event waits for them).
#pragma once

#include <ranges>
#include <string_view>
#include <type_traits>
#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/all_gather_v.hpp"
#include "plait/op/all_to_all_v.hpp"
#include "plait/op/bundled.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/in_flight.hpp"
#include "plait/op/request.hpp"
#include "plait/op/uneven.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A device transport without test_all: its collectives complete in stream order.
template <class Comm>
inline constexpr bool stream_ordered = has_copy_engine<Comm> && !tests_requests<Comm>;

/// The one error for a transport that cannot have collectives in flight.
template <class Comm>
consteval bool check_in_flight_transport() {
  static_assert(can_be_in_flight<Comm> || stream_ordered<Comm>,
                "plait: nonblocking and persistent collectives need a transport derived from "
                "plait::communicator_core (its progress engine) with `bool test_all(std::span<request>, "
                "plait::deadline)` (core/transport.hpp), or a stream-ordered device transport");
  return can_be_in_flight<Comm> || stream_ordered<Comm>;
}

/// Whether a collective argument of type X (as deduced by a forwarding
/// reference) may be kept past the call: an lvalue, or a non-owning view
/// (std::span, tensor views, plait::in_place, a bundle of such members).
template <class X>
inline constexpr bool kept_safely =
    std::is_lvalue_reference_v<X> || std::ranges::borrowed_range<std::remove_cvref_t<X>> ||
    mdspan_like<std::remove_cvref_t<X>> || std::is_same_v<std::remove_cvref_t<X>, in_place_t> ||
    is_bundle<std::remove_cvref_t<X>>;

/// The one error for a temporary container given to a call that keeps referring to it.
template <class Send, class Recv>
consteval bool check_kept_arguments() {
  static_assert(kept_safely<Send> && kept_safely<Recv>,
                "plait: a nonblocking or persistent collective refers to its buffers after the call returns: pass "
                "lvalues or views (std::span, plait::tensor_view), not a temporary container that dies at the end "
                "of the statement");
  return kept_safely<Send> && kept_safely<Recv>;
}

/// The i-forms' launch: the planned schedule becomes a run the request owns,
/// queued in the engine under the call's tag (stream-ordered transports: run now).
struct start_in_flight {
  in_flight_handle* out;

  template <class Comm, class Plan>
  void operator()(Comm& comm, const schedule& steps, const Plan& plan, std::string_view name, call_stamp stamp) const {
    if constexpr (stream_ordered<Comm>) {
      run_now{}(comm, steps, plan, name, stamp);
    } else {
      const int tag = take_tag(comm, stamp);
      *out = own_run(comm, steps, plan, name, stamp, tag, false);
      queue(*out, true);
    }
  }
};

/// The even forms' dispatch for a call that keeps its buffers (i-forms and
/// *_init): the checks every such call makes, then the bundle or the plain
/// collective of Op with `launch`. Returns what `launch` recorded.
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class Launch>
in_flight_handle launch_kept(Comm& comm, Send&& send, Recv&& recv) {
  constexpr bool comm_ok =
      check_transport<Comm>() && check_in_flight_transport<Comm>() && check_kept_arguments<Send, Recv>();
  in_flight_handle h;
  if constexpr (is_bundle<std::remove_cvref_t<Send>> || is_bundle<std::remove_cvref_t<Recv>>) {
    if constexpr (comm_ok) bundled_collective<Op, Comm, Algorithm, Layout>::even(comm, send, recv, Launch{&h});
  } else if constexpr (comm_ok && check_data_arguments<Send, Recv, std::is_same_v<Op, op::all_gather>>()) {
    collective<Op, Comm, Algorithm, Layout>::run(comm, std::forward<Send>(send), std::forward<Recv>(recv), Launch{&h});
  }
  return h;
}

}  // namespace detail

/// Nonblocking all_gather: the same arguments and checks as plait::all_gather
/// (bundles and plait::in_place included); returns at once.
///   auto r = plait::iall_gather<plait::ring>(comm, next_layer_shard, next_layer);
///   compute(this_layer);
///   r.wait();
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] collective_request iall_gather(Comm& comm, Send&& send, Recv&& recv) {
  return collective_request(
      detail::launch_kept<op::all_gather, Algorithm, Layout, Comm, Send, Recv, detail::start_in_flight>(
          comm, std::forward<Send>(send), std::forward<Recv>(recv)));
}

/// Nonblocking all_to_all: the same arguments and checks as plait::all_to_all; returns at once.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] collective_request iall_to_all(Comm& comm, Send&& send, Recv&& recv) {
  return collective_request(
      detail::launch_kept<op::all_to_all, Algorithm, Layout, Comm, Send, Recv, detail::start_in_flight>(
          comm, std::forward<Send>(send), std::forward<Recv>(recv)));
}

/// Nonblocking all_gather_v: the same arguments and checks as plait::all_gather_v; returns at once.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Counts>
[[nodiscard]] collective_request iall_gather_v(Comm& comm, Send&& send, Recv&& recv, const Counts& recv_counts) {
  constexpr bool ok = detail::check_transport<Comm>() && detail::check_in_flight_transport<Comm>() &&
                      detail::check_kept_arguments<Send, Recv>();
  detail::check_counts_type<Counts>();
  detail::in_flight_handle h;
  if constexpr (!ok) {
    // stopped at the static_assert above
  } else if constexpr (detail::is_bundle<std::remove_cvref_t<Send>> || detail::is_bundle<std::remove_cvref_t<Recv>>) {
    detail::bundled_collective<op::all_gather, Comm, Algorithm, Layout>::gather_v(comm, send, recv, recv_counts,
                                                                                  detail::start_in_flight{&h});
  } else {
    detail::gather_v_one<Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv), recv_counts,
                                            detail::start_in_flight{&h});
  }
  return collective_request(h);
}

/// Nonblocking all_to_all_v: the same arguments and checks as
/// plait::all_to_all_v; returns once the counts are known (under ring, bruck
/// and automatic, or in check mode, after a small blocking count exchange).
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class SendCounts, class Recv,
          class RecvCounts>
[[nodiscard]] collective_request iall_to_all_v(Comm& comm, Send&& send, const SendCounts& send_counts, Recv&& recv,
                                               const RecvCounts& recv_counts) {
  constexpr bool ok = detail::check_transport<Comm>() && detail::check_in_flight_transport<Comm>() &&
                      detail::check_kept_arguments<Send, Recv>();
  detail::check_counts_type<SendCounts>();
  detail::check_counts_type<RecvCounts>();
  detail::in_flight_handle h;
  if constexpr (!ok) {
    // stopped at the static_assert above
  } else if constexpr (detail::is_bundle<std::remove_cvref_t<Send>> || detail::is_bundle<std::remove_cvref_t<Recv>>) {
    detail::bundled_collective<op::all_to_all, Comm, Algorithm, Layout>::exchange_v(
        comm, send, send_counts, recv, recv_counts, detail::start_in_flight{&h});
  } else {
    detail::exchange_v_one<Algorithm, Layout>(comm, std::forward<Send>(send), send_counts, std::forward<Recv>(recv),
                                              recv_counts, detail::start_in_flight{&h});
  }
  return collective_request(h);
}

}  // namespace v0
}  // namespace plait

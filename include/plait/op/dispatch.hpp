// The one dispatch every form goes through. A public function (all_gather,
// iall_to_all_v, all_gather_v_init, ...) names an operation and a launch
// (run_now: blocking; start_in_flight: nonblocking; bind_persistent:
// persistent) and calls dispatch_even or dispatch_v here, which pick the call
// shape from the arguments (one member, or a bundle of members) and hand it to
// the engine (op/collective.hpp, op/uneven.hpp, op/bundled.hpp). The checks
// that depend on the launch (a transport that can keep collectives in flight,
// arguments that outlive the call) are made here too, once.
#pragma once

#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>

#include "plait/core/tensor_view.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/views.hpp"
#include "plait/op/bundle.hpp"
#include "plait/op/bundled.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/in_flight.hpp"
#include "plait/op/launch.hpp"
#include "plait/op/uneven.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

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

/// Whether a launch keeps the call's buffers past its return (nonblocking,
/// persistent): such a launch has `static constexpr bool keeps_buffers = true`.
template <class Launch>
inline constexpr bool keeps_buffers = requires {
  requires std::remove_cvref_t<Launch>::keeps_buffers;
};

/// The checks of the transport and of the arguments' lifetimes that every
/// form makes before anything else; false (after one static_assert) stops it.
template <class Comm, class Launch, class Send, class Recv>
consteval bool check_call_shape() {
  if constexpr (!check_transport<Comm>()) {
    return false;
  } else if constexpr (keeps_buffers<Launch>) {
    return check_in_flight_transport<Comm>() && check_kept_arguments<Send, Recv>();
  } else {
    return true;
  }
}

/// Whether either side is a bundle (then both must be: bundled_collective says so).
template <class Send, class Recv>
inline constexpr bool bundled_call = is_bundle<std::remove_cvref_t<Send>> || is_bundle<std::remove_cvref_t<Recv>>;

/// The even form of Op: one member through collective<...>, a bundle through
/// bundled_collective<...>, launched with `launch`.
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class Launch>
void dispatch_even(Comm& comm, Send&& send, Recv&& recv, Launch&& launch) {
  if constexpr (!check_call_shape<Comm, Launch, Send, Recv>()) {
    // stopped at the static_assert that says why
  } else if constexpr (bundled_call<Send, Recv>) {
    bundled_collective<Op, Comm, Algorithm, Layout>::even(comm, send, recv, launch);
    watch_sends(comm, launch, send);
  } else if constexpr (check_data_arguments<Send, Recv, Op::allows_in_place>()) {
    collective<Op, Comm, Algorithm, Layout>::run(comm, std::forward<Send>(send), std::forward<Recv>(recv), launch);
    watch_sends(comm, launch, send);  // NOLINT(bugprone-use-after-move): forwarded by reference, never moved from
  }
}

/// The uneven form of Op, its counts after the buffers: (recv_counts) for an
/// operation whose v form takes one count array (all_gather_v), (send_counts,
/// recv_counts) for one that takes two (all_to_all_v). One member goes
/// through uneven_collective<...>, a bundle through bundled_collective<...>.
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class Launch, class... Counts>
void dispatch_v(Comm& comm, Launch&& launch, Send&& send, Recv&& recv, const Counts&... counts) {
  static_assert(Op::v_count_arrays == sizeof...(Counts), "plait: this uneven form takes another number of counts");
  constexpr bool shape_ok = check_call_shape<Comm, Launch, Send, Recv>();
  (check_counts_type<Counts>(), ...);
  if constexpr (!shape_ok) {
    // stopped at the static_assert that says why
  } else if constexpr (sizeof...(Counts) == 1) {
    if constexpr (bundled_call<Send, Recv>) {
      bundled_collective<Op, Comm, Algorithm, Layout>::gather_v(comm, send, recv, counts..., launch);
    } else {
      gather_v_one<Op, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv), counts..., launch);
    }
    watch_sends(comm, launch, send);  // NOLINT(bugprone-use-after-move): forwarded by reference, never moved from
  } else {
    const auto& [send_counts, recv_counts] = std::tie(counts...);
    if constexpr (bundled_call<Send, Recv>) {
      bundled_collective<Op, Comm, Algorithm, Layout>::exchange_v(comm, send, send_counts, recv, recv_counts, launch);
    } else {
      exchange_v_one<Op, Algorithm, Layout>(comm, std::forward<Send>(send), send_counts, std::forward<Recv>(recv),
                                            recv_counts, launch);
    }
    watch_sends(comm, launch, send);  // NOLINT(bugprone-use-after-move): forwarded by reference, never moved from
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

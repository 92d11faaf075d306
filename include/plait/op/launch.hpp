// What a collective does with its planned schedule: the launches. run_now
// (op/collective.hpp) runs it at once, the blocking forms'; start_in_flight
// makes it a run a request owns and queues it in the communicator's progress
// engine (the nonblocking forms); bind_persistent makes it a run a persistent
// collective owns, started by each start() (the *_init forms). The dispatch
// (op/dispatch.hpp) hands one of them to the engine with the call.
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/call_site.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/error.hpp"
#include "plait/core/region.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/tensor_plans.hpp"
#include "plait/op/bundle.hpp"
#include "plait/op/check.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/in_flight.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A device transport without test_all: its collectives complete in stream order.
template <class Comm>
inline constexpr bool stream_ordered = has_copy_engine<Comm> && !tests_requests<Comm>;

/// The i-forms' launch: the planned schedule becomes a run the request owns,
/// queued in the engine under the call's tag (stream-ordered transports: run now).
struct start_in_flight {
  /// The call's buffers are used after it returns (op/dispatch.hpp checks them).
  static constexpr bool keeps_buffers = true;
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

/// The *_init forms' launch: the planned schedule becomes a run the
/// persistent object owns, not started (no tag yet: start() takes one).
struct bind_persistent {
  /// The call's buffers are used at every start (op/dispatch.hpp checks them).
  static constexpr bool keeps_buffers = true;
  in_flight_handle* out;

  template <class Comm, class Plan>
  void operator()(Comm& comm, const schedule& steps, const Plan& plan, std::string_view name, call_stamp stamp) const {
    *out = own_run(comm, steps, plan, name, stamp, user_tag, stream_ordered<Comm>);
  }
};

/// The bytes of one send member as a region: empty for plait::in_place
/// (its bytes are recv's, which the collective writes) and for anything
/// that is not a host view (not watched).
template <class X>
region send_member_region(const call_site& at, X& x) {
  using T = std::remove_cvref_t<X>;
  if constexpr (mdspan_like<T> || send_range<X&>) {
    try {
      return to_region(to_box(as_tensor(x), at, "send"), at, "send");
    } catch (const error&) {  // the plan took the same view, so this does not happen; then nothing is watched
      return {};
    }
  } else {
    return {};
  }
}

/// Check mode, after a nonblocking or persistent launch (one that keeps the
/// buffers) of `send` on `comm`: the handle watches the send members while
/// the collective is in flight (send_watch). The one place every form's
/// launch passes through (dispatch_even, dispatch_v, dispatch_fold call
/// it), so the blocking forms, device transports (their bytes are not the
/// host's to read) and calls outside check mode compute nothing.
template <class Comm, class Launch, class Send>
void watch_sends(Comm& comm, Launch& launch, Send& send) {
  if constexpr (requires { launch.out; } && std::is_same_v<typename Comm::memory_space, host_memory>) {
    in_flight_handle& h = *launch.out;
    if (h.run == nullptr || !check_mode(comm)) return;
    const call_site at{comm.rank(), comm.size(), h.operation};
    std::vector<region> members;
    if constexpr (is_bundle<std::remove_cvref_t<Send>>) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (members.push_back(send_member_region(at, send.template get<I>())), ...);
      }
      (std::make_index_sequence<std::remove_cvref_t<Send>::size>{});
    } else {
      members.push_back(send_member_region(at, send));
    }
    h.sends = new send_watch(std::move(members), is_bundle<std::remove_cvref_t<Send>>);
    if constexpr (std::is_same_v<std::remove_cvref_t<Launch>, start_in_flight>) h.sends->take();  // posted now
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

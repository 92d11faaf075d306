// What a collective does with its planned schedule: the launches. run_now
// (op/collective.hpp) runs it at once, the blocking forms'; start_in_flight
// makes it a run a request owns and queues it in the communicator's progress
// engine (the nonblocking forms); bind_persistent makes it a run a persistent
// collective owns, started by each start() (the *_init forms). The dispatch
// (op/dispatch.hpp) hands one of them to the engine with the call.
#pragma once

#include <string_view>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/transport.hpp"
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

}  // namespace detail
}  // namespace v0
}  // namespace plait

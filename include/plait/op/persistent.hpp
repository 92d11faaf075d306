// plait::all_gather_init and plait::all_to_all_init: persistent collectives
// (MPI-4's MPI_Allgather_init). The call validates the arguments, builds the
// block plan and the schedule (under automatic: chooses the algorithm) once,
// and in check mode checks the call across ranks once; it moves no payload.
// Each start() of the returned plait::persistent_collective (op/request.hpp)
// then checks only that the communicator is usable and the previous start
// complete, takes the call's tag, and moves the bytes: no plan, no schedule,
// no argument check, no name formatting per start. The bound buffers' contents
// are read at every start; their addresses and sizes are fixed at init.
#pragma once

#include <string_view>
#include <type_traits>
#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/bundled.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/nonblocking.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// The *_init forms' launch: the planned schedule becomes a run the
/// persistent object owns, not started (no tag yet: start() takes one).
struct bind_persistent {
  in_flight_handle* out;

  template <class Comm, class Plan>
  void operator()(Comm& comm, const schedule& steps, const Plan& plan, std::string_view name, call_stamp stamp) const {
    *out = own_run(comm, steps, plan, name, stamp, user_tag, stream_ordered<Comm>);
  }
};

}  // namespace detail

/// A persistent all_gather of `send` into `recv` (arguments as
/// plait::all_gather, bundles and plait::in_place included).
///   auto p = plait::all_gather_init<plait::ring>(comm, shard, full);
///   for (int step = 0; step < steps; ++step) { fill(shard); p.start(); p.wait(); use(full); }
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] persistent_collective all_gather_init(Comm& comm, Send&& send, Recv&& recv) {
  return persistent_collective(
      detail::launch_kept<op::all_gather, Algorithm, Layout, Comm, Send, Recv, detail::bind_persistent>(
          comm, std::forward<Send>(send), std::forward<Recv>(recv)));
}

/// A persistent all_to_all of `send` into `recv` (arguments as plait::all_to_all).
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] persistent_collective all_to_all_init(Comm& comm, Send&& send, Recv&& recv) {
  return persistent_collective(
      detail::launch_kept<op::all_to_all, Algorithm, Layout, Comm, Send, Recv, detail::bind_persistent>(
          comm, std::forward<Send>(send), std::forward<Recv>(recv)));
}

}  // namespace v0
}  // namespace plait

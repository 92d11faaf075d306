// plait::all_gather_init, all_to_all_init and their _v forms: persistent
// collectives (MPI-4's MPI_Allgather_init, MPI_Alltoallv_init). The call validates the arguments, builds the
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
#include "plait/op/collective.hpp"
#include "plait/op/dispatch.hpp"
#include "plait/op/hierarchical.hpp"
#include "plait/op/nonblocking.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {
/// A persistent all_gather of `send` into `recv` (arguments as
/// plait::all_gather, bundles and plait::in_place included).
///   auto p = plait::all_gather_init<plait::ring>(comm, shard, full);
///   for (int step = 0; step < steps; ++step) { fill(shard); p.start(); p.wait(); use(full); }
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] persistent_collective all_gather_init(Comm& comm, Send&& send, Recv&& recv) {
  if constexpr (detail::two_level_communicator<Comm>) {  // op/hierarchical.hpp
    return detail::two_level_collective<op::all_gather, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [](auto& whole, auto&& s, auto&& r) {
          return all_gather_init<Algorithm, Layout>(whole, std::forward<decltype(s)>(s), std::forward<decltype(r)>(r));
        },
        detail::two_level_bound{});
  } else {
    detail::in_flight_handle h;
    detail::dispatch_even<op::all_gather, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                             detail::bind_persistent{&h});
    return persistent_collective(h);
  }
}

/// A persistent all_to_all of `send` into `recv` (arguments as plait::all_to_all).
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] persistent_collective all_to_all_init(Comm& comm, Send&& send, Recv&& recv) {
  if constexpr (detail::two_level_communicator<Comm>) {  // op/hierarchical.hpp
    return detail::two_level_collective<op::all_to_all, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [](auto& whole, auto&& s, auto&& r) {
          return all_to_all_init<Algorithm, Layout>(whole, std::forward<decltype(s)>(s), std::forward<decltype(r)>(r));
        },
        detail::two_level_bound{});
  } else {
    detail::in_flight_handle h;
    detail::dispatch_even<op::all_to_all, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                             detail::bind_persistent{&h});
    return persistent_collective(h);
  }
}

/// A persistent all_gather_v (arguments as plait::all_gather_v). The counts
/// are read and checked once, here: every start moves the parts they gave,
/// whatever the counts array holds by then.
///   auto p = plait::all_gather_v_init<plait::ring>(comm, mine, all, counts);
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Counts>
[[nodiscard]] persistent_collective all_gather_v_init(Comm& comm, Send&& send, Recv&& recv, const Counts& recv_counts) {
  if constexpr (detail::two_level_communicator<Comm>) {  // flat on its whole communicator
    return detail::two_level_v_collective<Algorithm>(comm, [&](auto& whole) {
      return all_gather_v_init<Algorithm, Layout>(whole, std::forward<Send>(send), std::forward<Recv>(recv),
                                                  recv_counts);
    });
  } else {
    detail::in_flight_handle h;
    detail::dispatch_v<op::all_gather, Algorithm, Layout>(comm, detail::bind_persistent{&h}, std::forward<Send>(send),
                                                          std::forward<Recv>(recv), recv_counts);
    return persistent_collective(h);
  }
}

/// A persistent all_to_all_v (arguments as plait::all_to_all_v). The counts
/// are read, checked and (where the algorithm needs every rank's) exchanged
/// once, here; every start moves the blocks they gave.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class SendCounts, class Recv,
          class RecvCounts>
[[nodiscard]] persistent_collective all_to_all_v_init(Comm& comm, Send&& send, const SendCounts& send_counts,
                                                      Recv&& recv, const RecvCounts& recv_counts) {
  if constexpr (detail::two_level_communicator<Comm>) {  // flat on its whole communicator
    return detail::two_level_v_collective<Algorithm>(comm, [&](auto& whole) {
      return all_to_all_v_init<Algorithm, Layout>(whole, std::forward<Send>(send), send_counts,
                                                  std::forward<Recv>(recv), recv_counts);
    });
  } else {
    detail::in_flight_handle h;
    detail::dispatch_v<op::all_to_all, Algorithm, Layout>(comm, detail::bind_persistent{&h}, std::forward<Send>(send),
                                                          std::forward<Recv>(recv), send_counts, recv_counts);
    return persistent_collective(h);
  }
}

}  // namespace v0
}  // namespace plait

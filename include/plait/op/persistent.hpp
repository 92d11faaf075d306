// plait::all_gather_init, all_to_all_init and their _v forms: persistent
// collectives (MPI-4's MPI_Allgather_init, MPI_Alltoallv_init). The call validates the arguments, builds the
// block plan and the schedule (under automatic: chooses the algorithm) once,
// and in check mode checks the call across ranks once; it moves no payload.
// Each start() of the returned plait::persistent_collective (op/request.hpp)
// then checks only that the communicator is usable and the previous start
// complete, takes the call's tag, and moves the bytes: no plan, no schedule,
// no argument check, no name formatting per start. Each start sends the bound
// buffers' contents as they are at that start(): change a send buffer only
// between a start's completion (wait() returned, test() true) and the next
// start(), never while it is active (check mode reports a change made then;
// docs/nonblocking.md, "Buffers in flight"). Addresses and sizes are fixed at init.
#pragma once

#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/operation.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/forms.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {
/// A persistent all_gather of `send` into `recv` (arguments as
/// plait::all_gather, bundles and plait::in_place included).
///   auto p = plait::all_gather_init<plait::ring>(comm, shard, full);
///   for (int step = 0; step < steps; ++step) { fill(shard); p.start(); p.wait(); use(full); }
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] persistent_collective all_gather_init(Comm& comm, Send&& send, Recv&& recv) {
  return init_collective<op::all_gather, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv));
}

/// A persistent all_to_all of `send` into `recv` (arguments as plait::all_to_all).
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] persistent_collective all_to_all_init(Comm& comm, Send&& send, Recv&& recv) {
  return init_collective<op::all_to_all, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv));
}

/// A persistent all_gather_v (arguments as plait::all_gather_v). The counts
/// are read and checked once, here: every start moves the parts they gave.
/// In check mode every start() reads the counts array again (when it was
/// passed as an lvalue or a view) and throws before any byte moves if it
/// changed since init.
///   auto p = plait::all_gather_v_init<plait::ring>(comm, mine, all, counts);
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Counts>
[[nodiscard]] persistent_collective all_gather_v_init(Comm& comm, Send&& send, Recv&& recv, Counts&& recv_counts) {
  return init_collective_v<op::all_gather, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                              std::forward<Counts>(recv_counts));
}

/// A persistent all_to_all_v (arguments as plait::all_to_all_v). The counts
/// are read, checked and (where the algorithm needs every rank's) exchanged
/// once, here; every start moves the blocks they gave (check mode: as
/// all_gather_v_init, both arrays read again at every start()).
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class SendCounts, class Recv,
          class RecvCounts>
[[nodiscard]] persistent_collective all_to_all_v_init(Comm& comm, Send&& send, SendCounts&& send_counts, Recv&& recv,
                                                      RecvCounts&& recv_counts) {
  return init_collective_v<op::all_to_all, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                              std::forward<SendCounts>(send_counts),
                                                              std::forward<RecvCounts>(recv_counts));
}

}  // namespace v0
}  // namespace plait

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
// The buffers belong to the collective until it completes (wait()
// returned, or test() returned true): a send buffer changed before then is
// read at no fixed moment, so peers get old bytes, new ones or a mix. Check
// mode compares a digest of each send member taken here with one taken at
// completion and reports a change as invalid_argument (op/request.hpp,
// send_watch; docs/nonblocking.md, "Buffers in flight").
//
// On a stream-ordered device transport (the NVLink communicator: a step is
// enqueued on the stream and wait_all returns without waiting for it) the
// i-forms run the collective as the blocking forms do, which already returns
// once it is on the stream: the request is complete, the bytes arrive in
// stream order (synchronize() or a stream event waits for them).
#pragma once

#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/operation.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/forms.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {
/// Nonblocking all_gather: the same arguments and checks as plait::all_gather
/// (bundles and plait::in_place included); returns at once.
///   auto r = plait::iall_gather<plait::ring>(comm, next_layer_shard, next_layer);
///   compute(this_layer);
///   r.wait();
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] collective_request iall_gather(Comm& comm, Send&& send, Recv&& recv) {
  return start_collective<op::all_gather, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv));
}

/// Nonblocking all_to_all: the same arguments and checks as plait::all_to_all; returns at once.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] collective_request iall_to_all(Comm& comm, Send&& send, Recv&& recv) {
  return start_collective<op::all_to_all, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv));
}

/// Nonblocking all_gather_v: the same arguments and checks as plait::all_gather_v; returns at once.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Counts>
[[nodiscard]] collective_request iall_gather_v(Comm& comm, Send&& send, Recv&& recv, const Counts& recv_counts) {
  return start_collective_v<op::all_gather, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                               recv_counts);
}

/// Nonblocking all_to_all_v: the same arguments and checks as
/// plait::all_to_all_v; returns once the counts are known (under ring, bruck
/// and automatic, or in check mode, after a small blocking count exchange).
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class SendCounts, class Recv,
          class RecvCounts>
[[nodiscard]] collective_request iall_to_all_v(Comm& comm, Send&& send, const SendCounts& send_counts, Recv&& recv,
                                               const RecvCounts& recv_counts) {
  return start_collective_v<op::all_to_all, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                               send_counts, recv_counts);
}

}  // namespace v0
}  // namespace plait

// plait::all_gather_v: every rank contributes a shard of its own length;
// every rank ends with all shards, packed in rank order (MPI_Allgatherv with
// packed displacements; context parallelism's sequences of different lengths).
#pragma once

#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/operation.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/forms.hpp"

namespace plait {
inline namespace v0 {

/// all-gather of shards of different lengths: rank j contributes
/// `recv_counts[j]` elements (1-D ranges) or slices along the layout's
/// dimension (tensors, along<D>); `send` holds exactly recv_counts[rank] of
/// them and `recv` their sum, rank 0's first. Every rank passes the same
/// recv_counts (check mode verifies it). With `plait::in_place` as send, this
/// rank's part is already at its offset in recv.
///   std::vector<int> counts{3, 0, 5};                 // rank 1 contributes nothing
///   plait::all_gather_v<plait::ring>(comm, mine, all, counts);
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Counts>
void all_gather_v(Comm& comm, Send&& send, Recv&& recv, const Counts& recv_counts) {
  run_collective_v<op::all_gather, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                      recv_counts);
}

}  // namespace v0
}  // namespace plait

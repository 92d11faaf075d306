// plait::all_to_all_v: every rank sends each rank a block of its own length
// (MoE token dispatch: a different number of tokens to every expert rank;
// torch's all_to_all_single with split sizes; MPI_Alltoallv with packed
// displacements).
#pragma once

#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/operation.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/forms.hpp"

namespace plait {
inline namespace v0 {

/// all-to-all of blocks of different lengths: `send_counts[j]` elements (1-D
/// ranges) or slices along the split dimension (redistribute<S, C>: dim S)
/// go to rank j, and `recv_counts[i]` (slices along C) come from rank i, both
/// packed in rank order. send holds exactly the sum of send_counts, recv the
/// sum of recv_counts. Rank i's send_counts[j] must equal rank j's
/// recv_counts[i]: plait::exchange_counts computes recv_counts from
/// send_counts, and check mode verifies them.
///   auto recv_counts = plait::exchange_counts(comm, send_counts);
///   plait::all_to_all_v<plait::pairwise>(comm, tokens, send_counts, routed, recv_counts);
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class SendCounts, class Recv,
          class RecvCounts>
void all_to_all_v(Comm& comm, Send&& send, const SendCounts& send_counts, Recv&& recv, const RecvCounts& recv_counts) {
  run_collective_v<op::all_to_all, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                      send_counts, recv_counts);
}

}  // namespace v0
}  // namespace plait

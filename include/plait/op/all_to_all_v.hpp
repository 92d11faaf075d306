// plait::all_to_all_v: every rank sends each rank a block of its own length
// (MoE token dispatch: a different number of tokens to every expert rank;
// torch's all_to_all_single with split sizes; MPI_Alltoallv with packed
// displacements).
#pragma once

#include <algorithm>
#include <type_traits>
#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/uneven_plans.hpp"
#include "plait/op/bundled.hpp"
#include "plait/op/uneven.hpp"

namespace plait {
inline namespace v0 {

namespace detail {
/// all_to_all_v of one member (not a bundle).
template <class Algorithm, class Layout, class Comm, class Send, class SendCounts, class Recv, class RecvCounts,
          class Launch = run_now>
void exchange_v_one(Comm& comm, Send&& send, const SendCounts& send_counts, Recv&& recv, const RecvCounts& recv_counts,
                    Launch&& launch = {}) {
  using engine = uneven_collective<op::all_to_all, Comm, Algorithm, Layout>;
  const call_site at = engine::site(comm);
  auto plan = make_v_plan(Layout{}, op::all_to_all{}, at, std::forward<Send>(send), send_counts,
                          std::forward<Recv>(recv), recv_counts);
  // This rank's largest block; the engine replaces it by every rank's when
  // automatic needs one number for all ranks.
  std::size_t largest = 0;
  for (int j = 0; j < comm.size(); ++j) {
    largest = std::max({largest, plan.block_bytes(op::all_to_all::block(comm.rank(), j, comm.size())),
                        plan.block_bytes(op::all_to_all::block(j, comm.rank(), comm.size()))});
  }
  engine::run(comm, plan, largest, send, recv, launch);
}
}  // namespace detail

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
  static_assert(detail::check_transport<Comm>());  // one message naming what a non-transport lacks
  detail::check_counts_type<SendCounts>();
  detail::check_counts_type<RecvCounts>();
  if constexpr (detail::is_bundle<std::remove_cvref_t<Send>> || detail::is_bundle<std::remove_cvref_t<Recv>>) {
    detail::bundled_collective<op::all_to_all, Comm, Algorithm, Layout>::exchange_v(comm, send, send_counts, recv,
                                                                                    recv_counts);
  } else {
    detail::exchange_v_one<Algorithm, Layout>(comm, std::forward<Send>(send), send_counts, std::forward<Recv>(recv),
                                              recv_counts);
  }
}

}  // namespace v0
}  // namespace plait

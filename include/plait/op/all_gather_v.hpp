// plait::all_gather_v: every rank contributes a shard of its own length;
// every rank ends with all shards, packed in rank order (MPI_Allgatherv with
// packed displacements; context parallelism's sequences of different lengths).
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
/// all_gather_v of one member (not a bundle).
template <class Algorithm, class Layout, class Comm, class Send, class Recv, class Counts, class Launch = run_now>
void gather_v_one(Comm& comm, Send&& send, Recv&& recv, const Counts& recv_counts, Launch&& launch = {}) {
  using engine = uneven_collective<op::all_gather, Comm, Algorithm, Layout>;
  const call_site at = engine::site(comm);
  // Unqualified: argument-dependent lookup finds every layout's make_v_plan.
  auto plan =
      make_v_plan(Layout{}, op::all_gather{}, at, std::forward<Send>(send), std::forward<Recv>(recv), recv_counts);
  std::size_t largest = 0;
  for (int j = 0; j < comm.size(); ++j) largest = std::max(largest, plan.block_bytes(j));
  engine::run(comm, plan, largest, send, recv, launch);
}
}  // namespace detail

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
  static_assert(detail::check_transport<Comm>());  // one message naming what a non-transport lacks
  detail::check_counts_type<Counts>();
  if constexpr (detail::is_bundle<std::remove_cvref_t<Send>> || detail::is_bundle<std::remove_cvref_t<Recv>>) {
    detail::bundled_collective<op::all_gather, Comm, Algorithm, Layout>::gather_v(comm, send, recv, recv_counts);
  } else {
    detail::gather_v_one<Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv), recv_counts);
  }
}

}  // namespace v0
}  // namespace plait

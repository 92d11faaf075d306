// plait::reduce_scatter, ireduce_scatter, reduce_scatter_init — every rank
// contributes P blocks; rank r ends with block r combined over all ranks by
// the reduction (docs/reductions.md).
#pragma once

#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/operation.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/fold_collective.hpp"
#include "plait/op/forms.hpp"
#include "plait/reduction/reductions.hpp"

namespace plait {
inline namespace v0 {
namespace detail {
/// The reduce-scatter operation for a reduction (its fold order).
template <class Reduction>
using reduce_scatter_for =
    op::reduce_scatter<is_reduction_v<Reduction> ? fold_order_of<Reduction>() : op::fold_order::any>;
}  // namespace detail

/// reduce-scatter of `send` (P blocks of recv.size() elements) into `recv`
/// (this rank's block) with `reduction`. With `plait::in_place` as send, the
/// buffer holds the P blocks and the result replaces this rank's block.
///   plait::reduce_scatter<plait::ring>(comm, grads, my_shard, plait::avg{});
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Reduction>
void reduce_scatter(Comm& comm, Send&& send, Recv&& recv, const Reduction& reduction) {
  run_reduction<detail::reduce_scatter_for<Reduction>, Algorithm, Layout>(comm, std::forward<Send>(send),
                                                                          std::forward<Recv>(recv), reduction);
}

/// reduce_scatter, nonblocking: returns a request at once.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Reduction>
[[nodiscard]] collective_request ireduce_scatter(Comm& comm, Send&& send, Recv&& recv, const Reduction& reduction) {
  return start_reduction<detail::reduce_scatter_for<Reduction>, Algorithm, Layout>(comm, std::forward<Send>(send),
                                                                                   std::forward<Recv>(recv), reduction);
}

/// reduce_scatter, persistent: checks and plans once; every start() reduces
/// the buffers' contents as they are then.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Reduction>
[[nodiscard]] persistent_collective reduce_scatter_init(Comm& comm, Send&& send, Recv&& recv,
                                                        const Reduction& reduction) {
  return init_reduction<detail::reduce_scatter_for<Reduction>, Algorithm, Layout>(comm, std::forward<Send>(send),
                                                                                  std::forward<Recv>(recv), reduction);
}

/// reduce-scatter of parts of different sizes: `send` holds
/// sum(recv_counts) elements, rank r's part recv_counts[r] of them in rank
/// order; `recv` receives this rank's part (recv_counts[rank] elements). With
/// `plait::in_place` the buffer holds every part and the result replaces
/// this rank's. Every rank passes the same recv_counts.
///   plait::reduce_scatter_v<plait::ring>(comm, grads, my_shard, shard_sizes, plait::sum{});
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Counts,
          class Reduction>
void reduce_scatter_v(Comm& comm, Send&& send, Recv&& recv, const Counts& recv_counts, const Reduction& reduction) {
  detail::check_counts_type<Counts>();
  run_reduction<detail::reduce_scatter_for<Reduction>, Algorithm, Layout>(
      comm, std::forward<Send>(send), std::forward<Recv>(recv), recv_counts, reduction);
}

/// reduce_scatter_v, nonblocking: returns a request at once (the counts are read now).
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Counts,
          class Reduction>
[[nodiscard]] collective_request ireduce_scatter_v(Comm& comm, Send&& send, Recv&& recv, const Counts& recv_counts,
                                                   const Reduction& reduction) {
  detail::check_counts_type<Counts>();
  return start_reduction<detail::reduce_scatter_for<Reduction>, Algorithm, Layout>(
      comm, std::forward<Send>(send), std::forward<Recv>(recv), recv_counts, reduction);
}

/// reduce_scatter_v, persistent: the counts are read and checked once, at init.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Counts,
          class Reduction>
[[nodiscard]] persistent_collective reduce_scatter_v_init(Comm& comm, Send&& send, Recv&& recv,
                                                          const Counts& recv_counts, const Reduction& reduction) {
  detail::check_counts_type<Counts>();
  return init_reduction<detail::reduce_scatter_for<Reduction>, Algorithm, Layout>(
      comm, std::forward<Send>(send), std::forward<Recv>(recv), recv_counts, reduction);
}

}  // namespace v0
}  // namespace plait

// plait::all_reduce, iall_reduce, all_reduce_init — every rank contributes
// its data; every rank ends with the data combined over all ranks by the
// reduction, the same bits on every rank (docs/reductions.md).
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
/// The all-reduce operation for a reduction: its fold order decides which
/// algorithms can run it (ordered<...>: the exact left fold).
template <class Reduction>
using all_reduce_for = op::all_reduce<is_reduction_v<Reduction> ? fold_order_of<Reduction>() : op::fold_order::any>;
}  // namespace detail

/// all-reduce of `send` into `recv` (the same number of elements) with
/// `reduction` (plait::sum{}, plait::ordered<plait::sum>{}, ...). With
/// `plait::in_place` as send, `recv` holds this rank's contribution and
/// receives the result. With plait::along<D> as the layout, send and recv
/// are tensor views of one shape (any strides), moved in slabs along D
/// (layout/along_folds.hpp).
///   plait::all_reduce<plait::ring>(comm, grads, summed, plait::sum{});
///   plait::all_reduce<plait::automatic, plait::along<0>>(comm, rows_in, rows_out, plait::sum{});
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Reduction>
void all_reduce(Comm& comm, Send&& send, Recv&& recv, const Reduction& reduction) {
  run_reduction<detail::all_reduce_for<Reduction>, Algorithm, Layout>(comm, std::forward<Send>(send),
                                                                      std::forward<Recv>(recv), reduction);
}

/// all_reduce, nonblocking: returns a request at once (docs/nonblocking.md).
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Reduction>
[[nodiscard]] collective_request iall_reduce(Comm& comm, Send&& send, Recv&& recv, const Reduction& reduction) {
  return start_reduction<detail::all_reduce_for<Reduction>, Algorithm, Layout>(comm, std::forward<Send>(send),
                                                                               std::forward<Recv>(recv), reduction);
}

/// all_reduce, persistent: checks and plans once; every start() reduces the
/// buffers' contents as they are then.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv, class Reduction>
[[nodiscard]] persistent_collective all_reduce_init(Comm& comm, Send&& send, Recv&& recv, const Reduction& reduction) {
  return init_reduction<detail::all_reduce_for<Reduction>, Algorithm, Layout>(comm, std::forward<Send>(send),
                                                                              std::forward<Recv>(recv), reduction);
}

}  // namespace v0
}  // namespace plait

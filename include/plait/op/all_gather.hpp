// plait::all_gather — every rank contributes a shard; every rank ends with
// all shards in rank order.
#pragma once

#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/operation.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/forms.hpp"

namespace plait {
inline namespace v0 {

/// all-gather of `send` (this rank's shard) into `recv` (P shards). With
/// `plait::in_place` as send, this rank's shard is already in its slice of recv.
///   plait::all_gather<plait::ring>(comm, mine, all);
/// Comm, Send and Recv are not constrained here: a type that is not a
/// transport, or an argument that is not accepted, stops the compiler with one
/// static_assert that names what is missing, not with a list of overloads.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
void all_gather(Comm& comm, Send&& send, Recv&& recv) {
  run_collective<op::all_gather, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv));
}

}  // namespace v0
}  // namespace plait

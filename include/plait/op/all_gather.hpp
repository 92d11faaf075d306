// plait::all_gather — every rank contributes a shard; every rank ends with
// all shards in rank order.
#pragma once

#include <type_traits>
#include <utility>

#include "plait/algorithm/select.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/dispatch.hpp"
#include "plait/op/hierarchical.hpp"

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
  if constexpr (detail::two_level_communicator<Comm>) {  // op/hierarchical.hpp
    detail::two_level_collective<op::all_gather, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [](auto& whole, auto&& s, auto&& r) {
          all_gather<Algorithm, Layout>(whole, std::forward<decltype(s)>(s), std::forward<decltype(r)>(r));
        },
        detail::two_level_now{});
  } else {
    detail::dispatch_even<op::all_gather, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                             detail::run_now{});
  }
}

}  // namespace v0
}  // namespace plait

// plait::all_to_all — block j of rank i ends up as block i of rank j.
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

/// all-to-all: `send` holds P blocks, block j for rank j; `recv` receives
/// block i from rank i.
///   plait::all_to_all<plait::pairwise>(comm, send, recv);
/// Comm, Send and Recv are not constrained here: a type that is not a
/// transport, or an argument that is not accepted, stops the compiler with one
/// static_assert that names what is missing, not with a list of overloads.
template <class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
void all_to_all(Comm& comm, Send&& send, Recv&& recv) {
  if constexpr (detail::two_level_communicator<Comm>) {  // op/hierarchical.hpp
    detail::two_level_collective<op::all_to_all, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [](auto& whole, auto&& s, auto&& r) {
          all_to_all<Algorithm, Layout>(whole, std::forward<decltype(s)>(s), std::forward<decltype(r)>(r));
        },
        detail::two_level_now{});
  } else {
    detail::dispatch_even<op::all_to_all, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                             detail::run_now{});
  }
}

}  // namespace v0
}  // namespace plait

// plait::all_to_all — block j of rank i ends up as block i of rank j.
#pragma once

#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/operation.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/forms.hpp"

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
  run_collective<op::all_to_all, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv));
}

}  // namespace v0
}  // namespace plait

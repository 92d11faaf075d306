// plait::all_to_all — block j of rank i ends up as block i of rank j.
#pragma once

#include <type_traits>
#include <utility>

#include "plait/algorithm/select.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/bundled.hpp"
#include "plait/op/collective.hpp"

namespace plait {
inline namespace v0 {

/// all-to-all: `send` holds P blocks, block j for rank j; `recv` receives
/// block i from rank i.
///   plait::all_to_all<plait::pairwise>(comm, send, recv);
template <class Algorithm = automatic, class Layout = contiguous, transport Comm, class Send, class Recv>
void all_to_all(Comm& comm, Send&& send, Recv&& recv) {
  if constexpr (detail::is_bundle<std::remove_cvref_t<Send>> || detail::is_bundle<std::remove_cvref_t<Recv>>) {
    detail::bundled_collective<op::all_to_all, Comm, Algorithm, Layout>::even(comm, send, recv);
  } else {
    collective<op::all_to_all, Comm, Algorithm, Layout>::run(comm, std::forward<Send>(send), std::forward<Recv>(recv));
  }
}

}  // namespace v0
}  // namespace plait

// plait::collective<Op, Transport, Algorithm, Layout>: the composed policy type
// behind plait::all_gather and plait::all_to_all. It checks the combination at
// compile time, validates arguments before any byte moves, then runs the
// algorithm's schedule through the executor.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "plait/algorithm/select.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/layout.hpp"
#include "plait/op/check.hpp"
#include "plait/op/executor.hpp"

namespace plait {
inline namespace v0 {
namespace detail {
/// "all_gather<ring>": how errors name a call. Out of line: one copy of the
/// string building for every collective in a program.
[[gnu::noinline]] inline std::string operation_label(std::string_view operation, std::string_view algorithm) {
  std::string label;
  label.reserve(operation.size() + algorithm.size() + 2);
  label.append(operation).append(1, '<').append(algorithm).append(1, '>');
  return label;
}
}  // namespace detail

template <class Op, class Transport, class Algorithm, class Layout>
struct collective {
  static_assert(operation<Op>, "plait: Op must be plait::op::all_gather or plait::op::all_to_all");
  static_assert(detail::check_transport<Transport>());
  static_assert(detail::check_algorithm<Algorithm, Op>());
  static_assert(layout<Layout>,
                "plait: the Layout argument is not a layout: it lacks "
                "`using layout_concept = plait::layout_tag;` (use plait::contiguous, "
                "plait::along<D> or plait::redistribute<S, C>)");
  static_assert(Layout::template serves<Op>,
                "plait: this layout does not fit this operation: all_gather takes plait::contiguous or "
                "plait::along<D>; all_to_all takes plait::contiguous or plait::redistribute<S, C>");

  /// Runs the operation. `send` may be plait::in_place for an all-gather.
  template <class Send, class Recv>
  static void run(Transport& comm, Send&& send, Recv&& recv) {
    const std::string requested = detail::operation_label(Op::name, algorithm_name<Algorithm>());
    const detail::call_site at{comm.rank(), comm.size(), requested};
    // Unqualified on purpose: argument-dependent lookup (call_site lives in
    // plait::detail) finds make_plan overloads declared after this header,
    // such as along<D>'s and redistribute<S, C>'s; a qualified call would see
    // only those declared before it.
    auto plan = make_plan(Layout{}, Op{}, at, std::forward<Send>(send), std::forward<Recv>(recv));
    auto planned = detail::plan_schedule<Algorithm, Op, Transport>(at.rank, at.size, plan.block_bytes(at.rank));
    const std::string running = detail::operation_label(Op::name, planned.algorithm);
    if (detail::check_mode(comm)) detail::check_call(comm, plan, Op{}, running);
    const int tag = comm.next_tag();
    execute(comm, planned.steps, plan, running, tag);
  }
};

}  // namespace v0
}  // namespace plait

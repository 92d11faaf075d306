// The reductions' call shape in the one engine: reduce_scatter and
// all_reduce (operations that combine, core/operation.hpp) take the reduction
// as one more argument, which the layout's plan keeps (layout/fold_plans.hpp)
// and the executor's fold run applies (op/fold_run.hpp). The compile-time
// checks, the remembered schedule, check mode and the launches (blocking,
// nonblocking, persistent) are the ones every other operation uses; the call
// stamp adds the reduction and the element size, so ranks that reduce
// differently are told apart.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

#include "plait/core/call_site.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous_folds.hpp"
#include "plait/op/bundle.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/dispatch.hpp"
#include "plait/op/fold_run.hpp"
#include "plait/reduction/kernel.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// The order a reduction lets its contributions be combined in.
template <class Reduction>
constexpr op::fold_order fold_order_of() {
  if constexpr (is_ordered_v<Reduction>) {
    return op::fold_order::left;
  } else if constexpr (is_commutative_v<Reduction>) {
    return op::fold_order::any;
  } else {
    return op::fold_order::rank;
  }
}

/// A reduction's stamp: the algorithm, the reduction (ordered<...> named as
/// such) and the element size, under Op's kind.
inline call_stamp fold_stamp(call_kind kind, std::string_view algorithm, const reduction_kernel& kernel) {
  std::array<char, 160> text{};
  std::size_t size = 0;
  auto put = [&](std::string_view part) {
    for (char c : part) {
      if (size < text.size()) text[size++] = c;
    }
  };
  put(algorithm);
  put(" ");
  put(kernel.name);
  put("/");
  char digits[20]{};
  std::size_t count = 0;
  std::size_t n = kernel.element_bytes;
  do {
    digits[count++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0 && count < sizeof digits);
  while (count > 0) put(std::string_view(&digits[--count], 1));
  return call_stamp::of(kind, std::string_view(text.data(), size));
}

/// A reduction Op over Transport, run by Algorithm's schedule with Layout's
/// view of the buffers.
template <class Op, class Transport, class Algorithm, class Layout>
struct fold_collective {
  static_assert(check_policies<Op, Transport, Algorithm, Layout>());

  template <class Send, class Recv, class Reduction, class Launch>
  static void run(Transport& comm, Send&& send, Recv&& recv, const Reduction& reduction, Launch&& launch) {
    const call_site at{comm.rank(), comm.size(), requested_label<Op, Algorithm, false>()};
    auto plan = make_plan(Layout{}, Op{}, at, send, recv, reduction);
    // Block 0 is a largest block, the same size on every rank: automatic's choice agrees.
    const planned_schedule& planned =
        remembered_schedule<Algorithm, Op, Transport>(at.rank, at.size, plan.block_bytes(0));
    if (check_mode(comm)) collective<Op, Transport, Algorithm, Layout>::check(comm, planned, plan, send, recv);
    const operation_label& requested = requested_label<Op, Algorithm, false>();
    const call_stamp stamp = fold_stamp(Op::kind, planned.algorithm, plan.kernel());
    if (planned.algorithm == requested.algorithm()) {
      launch(comm, planned.steps, plan, requested.view(), stamp);
    } else {
      const operation_label running(requested.operation(), planned.algorithm);
      launch(comm, planned.steps, plan, running.view(), stamp);
    }
  }
};

/// The one error for a reduction a call's element type does not take, and
/// for arguments the reductions do not serve yet.
template <class Send, class Recv, class Reduction>
consteval bool check_fold_arguments() {
  if constexpr (bundled_call<Send, Recv>) {
    static_assert(dependent_false<Send>,
                  "plait: reductions take one buffer (or plait::in_place and one buffer); bundles of reductions "
                  "are not served yet: reduce each member");
    return false;
  } else {
    using element = typename element_of<Recv>::type;
    check_reduction<Reduction, std::remove_cv_t<element>>();
    return reduction_accepts<Reduction, std::remove_cv_t<element>>;
  }
}

/// Always false: its note spells the algorithm, the order the reduction
/// needs and the algorithms that can keep it.
template <class Algorithm, class Op, class WorksWith>
inline constexpr bool keeps_order_of = false;

/// The one error for an algorithm that cannot keep the order a reduction
/// needs (plait::ordered: the exact left fold; a reduction that does not
/// commute: rank order), naming those that can (from the registry).
template <class Algorithm, class Op>
consteval bool check_fold_algorithm() {
  if constexpr (algorithm<Algorithm> && !is_automatic<Algorithm> && !is_hierarchical<Algorithm> &&
                !schedules<Algorithm, Op> && Op::order != op::fold_order::any) {
    static_assert(keeps_order_of<Algorithm, Op, algorithms_that_work_with<Op>>,
                  "plait: this algorithm cannot keep the order this reduction needs (plait::ordered<...>: the exact "
                  "left fold over ranks; a reduction not declared commutative: rank order); the note below names "
                  "the algorithm, the order (op::fold_order::left or rank) and in works_with<...> those that can");
    return false;
  }
  return true;
}

/// A reduction Op's even form, launched with `launch`.
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class Reduction, class Launch>
void dispatch_fold(Comm& comm, Send&& send, Recv&& recv, const Reduction& reduction, Launch&& launch) {
  if constexpr (!check_fold_algorithm<Algorithm, Op>()) {
    // stopped at the static_assert that says why
  } else if constexpr (!check_call_shape<Comm, Launch, Send, Recv>()) {
    // stopped at the static_assert that says why
  } else if constexpr (!check_data_arguments<Send, Recv, Op::allows_in_place>()) {
    // stopped at the static_assert that says why
  } else if constexpr (check_fold_arguments<Send, Recv, Reduction>()) {
    fold_collective<Op, Comm, Algorithm, Layout>::run(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                      reduction, launch);
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

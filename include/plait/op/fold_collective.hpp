// The reductions' call shape in the one engine: reduce_scatter and
// all_reduce (operations that combine, core/operation.hpp) take the reduction
// as one more argument, which the layout's plan keeps (layout/fold_plans.hpp)
// and the executor's fold run applies (op/fold_run.hpp). The compile-time
// checks, the remembered schedule, check mode and the launches (blocking,
// nonblocking, persistent) are the ones every other operation uses; the call
// stamp adds the reduction and the element size, so ranks that reduce
// differently are told apart.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "plait/core/call_site.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/along_folds.hpp"
#include "plait/layout/contiguous_folds.hpp"
#include "plait/op/bundle.hpp"
#include "plait/op/check.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/dispatch.hpp"
#include "plait/op/fold_run.hpp"
#include "plait/op/launch.hpp"
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

/// A reduction's stamp: the algorithm, the layout (with its dimension), the
/// reduction (ordered<...> named as such) and the element type, under Op's kind.
template <class Layout>
call_stamp fold_stamp(call_kind kind, std::string_view algorithm, const reduction_kernel& kernel) {
  // The digest of a 64-byte all-reduce's stamp cost a tenth of its call
  // (180 instructions): the last one is kept per thread, keyed on where the
  // names lie (the algorithms' and reductions' names are static strings, so
  // the same address holds the same name).
  struct remembered {
    call_kind kind = call_kind::unknown;
    const char* algorithm = nullptr;
    std::size_t algorithm_size = 0;
    const char* reduction = nullptr;
    std::size_t reduction_size = 0;
    std::size_t element_bytes = 0;
    std::uint8_t element = 0;
    call_stamp stamp;
  };
  thread_local remembered last;
  if (last.kind == kind && last.algorithm == algorithm.data() && last.algorithm_size == algorithm.size() &&
      last.reduction == kernel.name.data() && last.reduction_size == kernel.name.size() &&
      last.element_bytes == kernel.element_bytes && last.element == kernel.element && last.reduction != nullptr) {
    return last.stamp;
  }
  stamp_digest digest;
  digest.add(algorithm).add(" ").add(Layout::name);
  if constexpr (requires { Layout::dimension; }) digest.add_number(Layout::dimension);
  digest.add(" ").add(kernel.name).add("/").add_number(kernel.element_bytes);
  const call_stamp stamp = digest.stamp(kind).with_element(kernel.element);
  last = {kind,
          algorithm.data(),
          algorithm.size(),
          kernel.name.data(),
          kernel.name.size(),
          kernel.element_bytes,
          kernel.element,
          stamp};
  return stamp;
}

/// Whether the floating-point environment flushes subnormals (FTZ or DAZ
/// set in MXCSR on x86-64; elsewhere plait cannot tell and says no).
PLAIT_DECL bool flushes_subnormals() noexcept;

/// A reduction Op over Transport, run by Algorithm's schedule with Layout's
/// view of the buffers.
template <class Op, class Transport, class Algorithm, class Layout>
struct fold_collective {
  static_assert(check_policies<Op, Transport, Algorithm, Layout>());

  /// Plans and launches one call: `make(at)` builds the fold plan.
  template <bool Uneven, class Make, class Send, class Recv, class Launch>
  static void run(Transport& comm, Make&& make, const Send& send, const Recv& recv, Launch&& launch) {
    const call_site at{comm.rank(), comm.size(), requested_label<Op, Algorithm, Uneven>()};
    auto plan = make(at);
    // automatic chooses by the largest block, the same on every rank.
    std::size_t largest = 0;
    for (int b = 0; b < at.size; ++b) largest = std::max(largest, plan.block_bytes(b));
    const planned_schedule& planned = remembered_schedule<Algorithm, Op, Transport>(at.rank, at.size, largest);
    if (check_mode(comm)) check(comm, planned, plan, send, recv, Uneven);
    const operation_label& requested = requested_label<Op, Algorithm, Uneven>();
    const call_stamp stamp =
        fold_stamp<Layout>(Uneven ? Op::v_kind : Op::kind, planned.algorithm, plan.members().front().kernel());
    if (planned.algorithm == requested.algorithm()) {
      launch(comm, planned.steps, plan, requested.view(), stamp);
    } else {
      launch(comm, planned.steps, plan, running_label(requested.operation(), planned.algorithm).view(), stamp);
    }
  }

  /// Check mode: every rank makes the same call, with the same reductions
  /// (their names join the algorithm's in the signature), and the schedules
  /// pass verify; an ordered floating-point reduction also needs
  /// flush-to-zero and denormals-are-zero off, which would change its bits.
  template <class Plan, class Send, class Recv>
  [[gnu::cold, gnu::noinline]] static void check(Transport& comm, const planned_schedule& planned, const Plan& plan,
                                                 const Send& send, const Recv& recv, bool uneven) {
    const operation_label running(uneven ? Op::v_name : Op::name, planned.algorithm);
    std::string algorithm(is_automatic<Algorithm> ? planned.algorithm : signed_algorithm_name<Algorithm>());
    for (const fold_member& m : plan.members()) algorithm.append(" ").append(m.kernel().name);
    call_signature mine = describe_call<Op, Layout>(algorithm, send, recv);
    if (uneven) mine.send = mine.recv = {};
    check_call(comm, plan, Op{}, running, mine);
    for (const fold_member& m : plan.members()) {
      if (m.kernel().ordered && m.kernel().floating && flushes_subnormals()) {
        fail(errc::invalid_argument,
             {m.kernel().name,
              " needs the same bits on every rank, but this thread flushes subnormals (FTZ or DAZ is set): "
              "clear them (compiled with -ffast-math or -Ofast? Build without)"},
             {comm.rank(), running.view()});
      }
    }
    if constexpr (!is_automatic<Algorithm> && schedules<Algorithm, Op>) {
      verify_schedules_once<Algorithm, Op>(comm.rank(), comm.size(), running);
    }
  }
};

/// The plan `make()` returns, one member of View's element type, with the
/// reduction's device launchers attached when Comm's copy engine combines
/// on its device (the CUDA NVLink transport's: the fold run then asks it
/// to run them). A reduction no device runs is a compile error there,
/// naming what can. Made here and returned by name, so that it is never
/// moved (each move cost a 64-byte all_reduce about 65 instructions).
template <class View, class Comm, class Reduction, std::invocable Make>
auto plan_for_engine(Comm& comm, const Reduction& reduction, Make&& make) {
  auto plan = std::forward<Make>(make)();
  if constexpr (folds_on_device_engine<copy_engine_of<Comm>>) {
    static_assert(!is_kernel_reduction_v<Reduction>,
                  "plait: a reduction carried as its host kernel (detail::kernel_reduction) folds on the host only; "
                  "a transport whose copy engine combines on its device needs the reduction itself");
    using element = std::remove_cv_t<typename element_of<View>::type>;
    plan.run_on_device(0, comm.copy_engine().template device_kernel<element>(reduction));
  }
  (void)comm;
  (void)reduction;
  return plan;
}

/// The fold plan of a bundle: each member's plan (by `make_member(I)`), its
/// blocks b end to end in block b.
template <class MakeMember, std::size_t... I>
auto bundle_fold_plan(MakeMember&& make_member, std::index_sequence<I...>) {
  return fold_plan_of<sizeof...(I)>({make_member(std::integral_constant<std::size_t, I>{}).members().front()...});
}

/// The one error for a reduction an element type does not take.
template <class View, class Reduction>
consteval bool check_fold_element() {
  using element = std::remove_cv_t<typename element_of<View>::type>;
  check_reduction<Reduction, element>();
  return reduction_accepts<Reduction, element>;
}

/// The member indices of a bundle argument (none for anything else, so that
/// check_fold_bundle can say what is wrong before any member is named).
template <class Send>
consteval auto bundle_members() {
  if constexpr (is_bundle<std::remove_cvref_t<Send>>) {
    return std::make_index_sequence<std::remove_cvref_t<Send>::size>{};
  } else {
    return std::index_sequence<>{};
  }
}

/// The checks of a bundle of reductions: both sides bundles of as many 1-D
/// members, every member taken by the reduction.
template <class Send, class Recv, class Reduction, std::size_t... I>
consteval bool check_fold_bundle(std::index_sequence<I...>) {
  using send_t = std::remove_cvref_t<Send>;
  using recv_t = std::remove_cvref_t<Recv>;
  if constexpr (!is_bundle<send_t> || !is_bundle<recv_t>) {
    static_assert(dependent_false<Send>,
                  "plait: a bundle of reductions takes a bundle on both sides (plait::in_place does not take one)");
    return false;
  } else if constexpr (send_t::size != recv_t::size) {
    static_assert(dependent_false<Send>, "plait: send and recv bundles must have the same number of members");
    return false;
  } else {
    using send_members = std::tuple<decltype(std::declval<send_t&>().template get<I>())...>;
    using recv_members = std::tuple<decltype(std::declval<recv_t&>().template get<I>())...>;
    return (check_data_arguments<std::tuple_element_t<I, send_members>, std::tuple_element_t<I, recv_members>,
                                 false>() &&
            ...) &&
           (check_fold_element<std::tuple_element_t<I, recv_members>, Reduction>() && ...);
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

/// A reduction Op, launched with `launch`: `args` are (reduction) for the
/// even form and (recv_counts, reduction) for the uneven one. One member
/// or a bundle (its members' blocks combined together, one kernel each).
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class Launch, class... Args>
void dispatch_fold(Comm& comm, Launch&& launch, Send&& send, Recv&& recv, const Args&... args) {
  static_assert(sizeof...(Args) == 1 || (sizeof...(Args) == 2 && Op::v_count_arrays == 1),
                "plait: a reduction takes its reduction after the buffers (reduce_scatter_v: its recv_counts, then "
                "the reduction)");
  constexpr bool uneven = sizeof...(Args) == 2;
  const auto& reduction = std::get<sizeof...(Args) - 1>(std::tie(args...));
  using reduction_t = std::remove_cvref_t<decltype(reduction)>;
  using engine = fold_collective<Op, Comm, Algorithm, Layout>;
  if constexpr (!check_fold_algorithm<Algorithm, Op>()) {
    // stopped at the static_assert that says why
  } else if constexpr (!check_call_shape<Comm, Launch, Send, Recv>()) {
    // stopped at the static_assert that says why
  } else if constexpr (bundled_call<Send, Recv>) {
    if constexpr (check_fold_bundle<Send, Recv, reduction_t>(bundle_members<Send>())) {
      constexpr auto members = bundle_members<Send>();
      const auto make = [&](const call_site& at) {
        return bundle_fold_plan(
            [&](auto i) {
              using member_view = decltype(recv.template get<i()>());
              return plan_for_engine<member_view>(comm, reduction, [&] {
                if constexpr (uneven) {
                  return make_v_plan(Layout{}, Op{}, at, send.template get<i()>(), recv.template get<i()>(),
                                     std::get<0>(std::tie(args...)), reduction);
                } else {
                  return make_plan(Layout{}, Op{}, at, send.template get<i()>(), recv.template get<i()>(), reduction);
                }
              });
            },
            members);
      };
      engine::template run<uneven>(comm, make, send.template get<0>(), recv.template get<0>(), launch);
      watch_sends(comm, launch, send);
    }
  } else if constexpr (!check_data_arguments<Send, Recv, Op::allows_in_place>()) {
    // stopped at the static_assert that says why
  } else if constexpr (check_fold_element<Recv, reduction_t>()) {
    const auto make = [&](const call_site& at) {
      return plan_for_engine<Recv>(comm, reduction, [&] {
        if constexpr (uneven) {
          return make_v_plan(Layout{}, Op{}, at, send, recv, std::get<0>(std::tie(args...)), reduction);
        } else {
          return make_plan(Layout{}, Op{}, at, send, recv, reduction);
        }
      });
    };
    engine::template run<uneven>(comm, make, send, recv, launch);
    watch_sends(comm, launch, send);
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/fold_collective.ipp"
#endif

// plait::collective<Op, Transport, Algorithm, Layout>: the composed policy type
// behind plait::all_gather and plait::all_to_all. It checks the combination at
// compile time, validates arguments before any byte moves, then runs the
// algorithm's schedule through the executor.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

#include "plait/algorithm/select.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/layout.hpp"
#include "plait/op/check.hpp"
#include "plait/op/execute.hpp"
#include "plait/op/stamp.hpp"

namespace plait {
inline namespace v0 {
namespace detail {
/// "all_gather<ring>": how errors name a call. Built in place, not on the
/// heap, and used only when a call raises an error: a collective builds its
/// requested name once per program and, under automatic, the chosen one per
/// call. A name longer than the buffer is cut short with "...".
/// Out of line: one copy of the formatting for every collective in a program.
class operation_label {
 public:
  [[gnu::noinline]] operation_label(std::string_view operation, std::string_view algorithm) noexcept
      : operation_(operation), algorithm_(algorithm) {
    compose(operation, algorithm);
  }
  operation_label(const operation_label&) = delete;
  operation_label& operator=(const operation_label&) = delete;

  [[nodiscard]] std::string_view view() const noexcept { return {text_, size_}; }
  /// The operation's and the algorithm's names as given (not cut short).
  [[nodiscard]] std::string_view operation() const noexcept { return operation_; }
  [[nodiscard]] std::string_view algorithm() const noexcept { return algorithm_; }
  operator std::string_view() const noexcept { return view(); }  // NOLINT: used where a name is expected

 private:
  static constexpr std::size_t capacity = 96;
  // The formatting, defined out of line. The constructor stays noinline and
  // in the class: g++ ignores noinline on an out-of-class constructor
  // definition and warns (-Wattributes) when a member's noinline declaration
  // is apart from its inline definition.
  void compose(std::string_view operation, std::string_view algorithm) noexcept;
  void append(std::string_view part) noexcept;
  std::string_view operation_;  // names with static storage (Op::name, Algorithm::name, a built-in's)
  std::string_view algorithm_;
  char text_[capacity];
  std::size_t size_ = 0;
  bool truncated_ = false;
};

/// The label of a call that automatic ran as `algorithm`, built once per
/// thread and (operation, algorithm) and remembered in a few entries:
/// formatting it on every call took about a tenth of a small call's own
/// work. Both names have static storage, so their addresses identify them.
/// The label is valid until the thread asks for eight others; a launch uses
/// it only while it runs.
inline const operation_label& running_label(std::string_view operation, std::string_view algorithm) {
  struct entry {
    std::string_view operation;
    std::string_view algorithm;
    std::optional<operation_label> label;
  };
  thread_local std::array<entry, 8> known;
  thread_local std::size_t next = 0;
  auto same = [](std::string_view a, std::string_view b) { return a.data() == b.data() && a.size() == b.size(); };
  for (entry& e : known) {
    if (e.label && same(e.operation, operation) && same(e.algorithm, algorithm)) return *e.label;
  }
  entry& e = known[next++ % known.size()];
  e.label.reset();
  e.label.emplace(operation, algorithm);
  e.operation = operation;
  e.algorithm = algorithm;
  return *e.label;
}

/// What a collective does with its planned schedule in a blocking call: take
/// the call's tag and run it now. (Nonblocking and persistent forms hand it
/// to the progress engine instead: op/nonblocking.hpp, op/persistent.hpp.)
struct run_now {
  template <class Comm, class Plan>
  void operator()(Comm& comm, const schedule& steps, const Plan& plan, std::string_view name, call_stamp stamp) const {
    execute(comm, steps, plan, name, take_tag(comm, stamp));
  }
};

/// This rank's schedule, remembered per thread for the last few (rank, size,
/// block bytes) seen: a schedule is a pure function of them and of the
/// compile-time policy, and building one allocates (a vector per step and per
/// transfer). Repeating a call, the steady state of an application, then
/// builds nothing. Not reentrant for the same policy on one thread, which no
/// collective needs (check mode and the executor do not call back here).
template <class Algorithm, class Op, class Transport>
const planned_schedule& remembered_schedule(int rank, int size, std::size_t block_bytes) {
  struct entry {
    int rank = -1;
    int size = 0;
    std::size_t block_bytes = 0;
    planned_schedule planned;
  };
  thread_local std::array<entry, 4> known;
  thread_local std::size_t next = 0;
  for (entry& e : known) {
    if (e.size == size && e.rank == rank && e.block_bytes == block_bytes) return e.planned;
  }
  planned_schedule planned = plan_schedule<Algorithm, Op, Transport>(rank, size, block_bytes);  // may throw
  entry& slot = known[next++ % known.size()];
  slot = {rank, size, block_bytes, std::move(planned)};
  return slot.planned;
}

/// The compile-time checks every form of every operation makes (even, v and
/// bundles; blocking, nonblocking and persistent), in one wording.
template <class Op, class Transport, class Algorithm, class Layout>
consteval bool check_policies() {
  static_assert(described_operation<Op>,
                "plait: Op is not an operation the collectives can run: it needs the block model (name, blocks, "
                "holds_initially, needs_finally) and its description (v_name, kind, v_kind, allows_in_place, "
                "v_count_arrays, contiguous_as and its parameters; see core/operation.hpp)");
  static_assert(check_transport<Transport>());
  static_assert(check_algorithm<Algorithm, Op>());
  static_assert(layout<Layout>,
                "plait: the Layout argument is not a layout: it lacks "
                "`using layout_concept = plait::layout_tag;` (use plait::contiguous, "
                "plait::along<D> or plait::redistribute<S, C>)");
  if constexpr (layout<Layout>) {
    static_assert(Layout::template serves<Op>,
                  "plait: this layout does not fit this operation: all_gather and reduce_scatter take "
                  "plait::contiguous or plait::along<D>; all_to_all takes plait::contiguous or "
                  "plait::redistribute<S, C>; all_reduce takes plait::contiguous");
  }
  return true;
}

/// Names Op's call kinds for the stamps' messages (an operation of one's
/// own; the built-ins' are named already). Initialised when the program
/// starts in every process whose code runs Op anywhere, so that a rank which
/// never ran it still names it when a peer's message carries its stamp.
template <class Op>
inline const bool call_kinds_named = (name_call_kind(Op::kind, &Op::name), name_call_kind(Op::v_kind, &Op::v_name),
                                      true);

/// "all_gather<ring>" or, for the uneven form, "all_gather_v<ring>": built
/// once per program (a small call's own work is a few thousand
/// instructions, and formatting its name took a tenth).
template <class Op, class Algorithm, bool Uneven>
const operation_label& requested_label() {
  (void)call_kinds_named<Op>;
  static const operation_label label(Uneven ? std::string_view(Op::v_name) : std::string_view(Op::name),
                                     algorithm_name<Algorithm>());
  return label;
}

/// Hands the planned schedule `steps` (planned's own, or a bundle's
/// expansion of it) to `launch` with the call's name and stamp: the
/// requested ones, or under automatic those of the algorithm it picked, so
/// that errors name what ran and ranks that named that algorithm agree.
/// Element is the call's element type (an element_pack for a bundle).
template <class Op, class Layout, class Algorithm, bool Uneven, class Element, class Transport, class Plan,
          class Launch>
void launch_planned(Transport& comm, const planned_schedule& planned, const schedule& steps, const Plan& plan,
                    Launch& launch) {
  constexpr call_kind kind = Uneven ? Op::v_kind : Op::kind;
  const operation_label& requested = requested_label<Op, Algorithm, Uneven>();
  if (planned.algorithm == requested.algorithm()) {
    static constexpr call_stamp stamp = collective_stamp<Op, Layout, Element>(algorithm_name<Algorithm>(), kind);
    launch(comm, steps, plan, requested.view(), stamp);
  } else {
    // automatic picks one algorithm per size: its stamp, remembered for the last one seen.
    thread_local std::string_view stamped_algorithm;
    thread_local call_stamp stamp{};
    if (stamped_algorithm.data() != planned.algorithm.data() || stamped_algorithm.size() != planned.algorithm.size()) {
      stamp = collective_stamp<Op, Layout, Element>(planned.algorithm, kind);
      stamped_algorithm = planned.algorithm;
    }
    launch(comm, steps, plan, running_label(requested.operation(), planned.algorithm).view(), stamp);
  }
}
}  // namespace detail

/// The collective operation Op over Transport, run by Algorithm's schedule with Layout's view of the buffers;
/// all_gather and all_to_all call run().
template <class Op, class Transport, class Algorithm, class Layout>
struct collective {
  static_assert(detail::check_policies<Op, Transport, Algorithm, Layout>());

  /// Runs the operation. `send` may be plait::in_place for an all-gather.
  /// `launch` gets the planned schedule (detail::run_now runs it at once).
  template <class Send, class Recv, class Launch = detail::run_now>
  static void run(Transport& comm, Send&& send, Recv&& recv, Launch&& launch = {}) {
    const detail::call_site at{comm.rank(), comm.size(), detail::requested_label<Op, Algorithm, false>()};
    // Unqualified on purpose: argument-dependent lookup (call_site lives in
    // plait::detail) finds make_plan overloads declared after this header,
    // such as along<D>'s and redistribute<S, C>'s; a qualified call would see
    // only those declared before it.
    auto plan = make_plan(Layout{}, Op{}, at, std::forward<Send>(send), std::forward<Recv>(recv));
    const detail::planned_schedule& planned =
        detail::remembered_schedule<Algorithm, Op, Transport>(at.rank, at.size, plan.block_bytes(at.rank));
    // make_plan took the views by reference (owning rvalues are deleted
    // overloads), so they are still the caller's here.
    if (detail::check_mode(comm)) check(comm, planned, plan, send, recv);
    detail::launch_planned<Op, Layout, Algorithm, false, typename detail::element_of<std::remove_cvref_t<Recv>>::type>(
        comm, planned, planned.steps, plan, launch);
  }

  /// Check mode: every rank must make the same call (check_call), and the
  /// schedules of a fixed algorithm policy must pass plait::verify for this
  /// group size. Under automatic the schedule is a built-in one.
  /// `form` names the call ("all_gather_v" for the uneven forms, which use
  /// this too; a bundle checks each member). The uneven forms' views differ
  /// between ranks by design, so they compare every block's size but not the
  /// views' shapes (`compare_shapes` false).
  template <class Plan, class Send, class Recv>
  [[gnu::cold, gnu::noinline]] static void check(Transport& comm, const detail::planned_schedule& planned,
                                                 const Plan& plan, const Send& send, const Recv& recv,
                                                 std::string_view form = Op::name, bool compare_shapes = true) {
    const detail::operation_label running(form, planned.algorithm);
    // automatic signs with its choice: ranks that run the same schedule agree however they named it.
    std::string_view algorithm = planned.algorithm;
    if constexpr (!detail::is_automatic<Algorithm>) algorithm = detail::signed_algorithm_name<Algorithm>();
    detail::call_signature mine = detail::describe_call<Op, Layout>(algorithm, send, recv);
    if (!compare_shapes) mine.send = mine.recv = {};
    detail::check_call(comm, plan, Op{}, running, mine);
    if constexpr (!detail::is_automatic<Algorithm> && schedules<Algorithm, Op>) {
      detail::verify_schedules_once<Algorithm, Op>(comm.rank(), comm.size(), running);
    }
  }
};

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/collective.ipp"
#endif

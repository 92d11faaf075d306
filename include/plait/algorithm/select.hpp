// Turning an algorithm policy into this rank's schedule for one call: the
// integration point between operations and algorithms. A fixed algorithm is
// checked at compile time (check_algorithm) and against the group size before
// any byte moves; automatic / automatic_with choose by (operation, P, bytes
// per block) and, with PLAIT_DEBUG=1 in the environment, log each distinct
// choice once per process to stderr.
//
// automatic must choose the same algorithm on every rank, so block_bytes must
// be the same on every rank: it is, because every operation's blocks have one
// size across ranks (the byte counts must match exactly, see DESIGN.md).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "plait/algorithm/algorithm_id.hpp"
#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/hierarchical.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/slot_table.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A schedule and the name of the algorithm that made it.
struct planned_schedule {
  schedule steps;
  std::string_view algorithm;
};

template <class>
inline constexpr bool dependent_false = false;

/// Always false: a static_assert on it fails with a note that spells its
/// arguments, the algorithm, the operation and the list of what works
/// instead (a static_assert's message cannot be computed in C++20).
template <class Algorithm, class Op, class WorksWith>
inline constexpr bool has_schedule_for = false;

/// What a diagnostic offers instead of an algorithm that cannot run Op: the
/// built-ins with a schedule for Op (from the registry), and automatic,
/// which chooses among them.
template <class Op>
using algorithms_that_work_with =
    std::conditional_t<built_in_algorithms_for<Op>::size == 0, works_with<>,
                       typename concat_algorithms<built_in_algorithms_for<Op>, works_with<automatic>>::type>;

/// Compile-time check that A can run Op; the message names the combination and
/// lists what works.
template <class A, class Op>
consteval bool check_algorithm() {
  static_assert(algorithm<A>,
                "plait: the Algorithm argument is not an algorithm: it lacks "
                "`using algorithm_concept = plait::algorithm_tag;`");
  if constexpr (is_hierarchical<A>) {
    static_assert(dependent_false<A>,
                  "plait: hierarchical<Inner, Outer> runs on a plait::two_level communicator, not on a single "
                  "transport: build `plait::two_level levels{intra, inter}` (or plait::mpi::node_levels(world)) and "
                  "pass it, or use a flat algorithm on this communicator");
  } else if constexpr (algorithm<A> && !is_automatic<A> && !schedules<A, Op>) {
    static_assert(has_schedule_for<A, Op, algorithms_that_work_with<Op>>,
                  "plait: this algorithm has no schedule for this operation (it lacks `static constexpr "
                  "plait::schedule plan(Op, int rank, int size)`); the note below names both and lists in "
                  "works_with<...> the algorithms that have one");
  }
  return true;
}

/// PLAIT_DEBUG=1 in the environment. Read at the first automatic choice of
/// each size, where it must not throw: a bad value reads as 0 here and is
/// reported when a communicator is created (core/environment.hpp).
PLAIT_DECL bool debug_logging() noexcept;

/// Logs an automatic choice to stderr when PLAIT_DEBUG=1.
PLAIT_DECL void log_choice(op::all_gather, int rank, int size, std::size_t block_bytes, const choice& picked,
                           const cost_model& m);
PLAIT_DECL void log_choice(op::all_to_all, int rank, int size, std::size_t block_bytes, const choice& picked,
                           const cost_model& m);

/// Automatic choices already made: a list that only grows, one node per
/// distinct (P, bytes per block) a process uses (a few, even in a sweep). A
/// list rather than std::map: the map's tree code costs every file that runs
/// an automatic collective about 1.4e9 compiler instructions more (compile
/// cost, docs/performance.md). Nodes live until the process ends.
struct remembered_choice {
  int size;
  std::size_t block_bytes;
  choice picked;
  const remembered_choice* next;
};

/// The choices one automatic policy made in this process. Each (policy,
/// operation, transport) has its own, a function-local static of
/// automatic_choice (constant-initialised: no guard on the call path).
/// Readers walk the list without the lock: a node is complete before it is
/// published (release) and never changes or goes; the lock only keeps two
/// first choices of one size from both adding a node. A lock taken on every
/// call cost a 64-byte all_to_all_v 3 % of its instructions.
struct choice_memory {
  std::mutex guard;
  std::atomic<const remembered_choice*> known{nullptr};
};

/// The choice remembered for (size, block_bytes) in `list`, or null.
PLAIT_DECL const remembered_choice* find_choice(const remembered_choice* list, int size, std::size_t block_bytes);

/// The run-time part of automatic_choice, for each built-in operation: not a
/// template, so a user's file compiles neither the cost model nor the
/// planners (see run_time_choice). `allowed` and `m` are the policy's.
PLAIT_DECL choice choose_once(choice_memory& memory, op::all_gather, int rank, int size, std::size_t block_bytes,
                              const cost_model& m, algorithm_set allowed);
PLAIT_DECL choice choose_once(choice_memory& memory, op::all_to_all, int rank, int size, std::size_t block_bytes,
                              const cost_model& m, algorithm_set allowed);

/// The operations with run-time entry points (run_time_plan, run_time_choice, choose_once).
template <class Op>
concept built_in_operation = std::same_as<Op, op::all_gather> || std::same_as<Op, op::all_to_all>;

/// The automatic policy A's choice, computed once per (P, bytes) and process:
/// the choice is a pure function of them, so every rank makes the same one.
template <class A, class Op, class Transport>
choice automatic_choice(int rank, int size, std::size_t block_bytes) {
  constexpr cost_model m = model_of<A, Transport>();
  if constexpr (built_in_operation<Op>) {
    constexpr algorithm_set allowed = allowed_set<A>();
    static choice_memory memory;
    return choose_once(memory, Op{}, rank, size, block_bytes, m, allowed);
  } else {
    return choose<Op, A>(size, block_bytes, m);  // no built-in algorithm schedules Op: this throws
  }
}

/// Blocks of at most this many bytes run through a transport's shared
/// slots under automatic (direct's schedule, one round per step) where the
/// rounds fit: measured faster there than any schedule through the channels
/// (docs/pmpi.md, *Measured*). 8 KiB, the largest block of two that fits a
/// 16 KiB round with its table: at P = 2 the 16 KiB collectives took 0.73-0.92x
/// the time they took through the channels (docs/algorithms.md).
inline constexpr std::size_t shared_slot_block_bytes = std::size_t{8} << 10;

/// The largest round (table included) of a slot run's schedule, under
/// automatic or not: 16 KiB, the buffers' size when the route was measured
/// against the channels. The shm buffers have since grown to 32 KiB for the
/// two-rank one-round all-reduce alone (op/slot_run.hpp,
/// one_round_fold_bytes); larger rounds of the other schedules (P - 1
/// blocks of an all-to-all or reduce-scatter from P = 3) are unmeasured and
/// keep the channels.
inline constexpr std::size_t slot_round_bytes = std::size_t{16} << 10;

/// The largest round a slot run on Transport sends outside the two-rank
/// one-round all-reduce: its buffer, capped at slot_round_bytes. Automatic's
/// rule and the slot run's own fit check both ask this.
template <class Transport>
constexpr std::size_t slot_round_limit() noexcept {
  return std::min<std::size_t>(Transport::shared_slot_bytes, slot_round_bytes);
}

/// Whether automatic runs Op through Transport's shared slots (a transport
/// that has them says `static constexpr std::size_t shared_slot_bytes`):
/// small blocks whose every round of direct's schedule fits a slot, where A
/// and restrict_automatic let direct run. Every rank decides alike: the
/// rounds of every rank of direct are as large as rank 0's, and block_bytes
/// is the largest block for the reductions and uneven forms.
template <class A, class Op, class Transport>
bool through_shared_slots(int size, std::size_t block_bytes) {
  if constexpr (requires { Transport::shared_slot_bytes; } && schedules<direct, Op>) {
    if (size < 2 || block_bytes > shared_slot_block_bytes) return false;
    constexpr auto direct_bit = algorithm_set{1} << static_cast<unsigned>(algorithm_id::direct);
    const algorithm_set restriction = automatic_restriction();
    if (restriction != 0 ? (restriction & direct_bit) == 0 : !allowed<A>(algorithm_id::direct)) return false;
    // direct's largest round: its distinct blocks after their table.
    const schedule s = direct::plan(Op{}, 0, size);
    for (const step& st : s.steps) {
      std::array<int, 64> seen{};  // distinct blocks: direct sends at most max_in_flight * 2 in a round
      std::size_t blocks = 0;
      for (const transfer& t : st.sends) {
        for (int b : t.blocks) {
          if (std::find(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(blocks), b) !=
              seen.begin() + static_cast<std::ptrdiff_t>(blocks)) {
            continue;
          }
          if (blocks == seen.size()) return false;
          seen[blocks++] = b;
        }
      }
      if (slot_round_size(blocks, block_bytes) > slot_round_limit<Transport>()) return false;
    }
    return true;
  } else {
    return false;
  }
}

/// This rank's schedule for one call of Op under policy A. Throws
/// errc::unsupported, before any byte moves, when A cannot run Op on `size`
/// ranks. The public entries static_assert check_algorithm<A, Op>, so a
/// user's call never reaches the last branch; it is well-formed so that the
/// compiled core can instantiate every (registered algorithm, operation)
/// pair from the registry without knowing which pairs have a schedule.
template <class A, class Op, class Transport>
planned_schedule plan_schedule(int rank, int size, std::size_t block_bytes) {
  static_assert(algorithm<A> && !is_hierarchical<A>);
  if constexpr (is_automatic<A>) {
    if (through_shared_slots<A, Op, Transport>(size, block_bytes))
      return {direct::plan(Op{}, rank, size), direct::name};
    const choice picked = automatic_choice<A, Op, Transport>(rank, size, block_bytes);
    if constexpr (built_in_operation<Op>) {
      return {run_time_plan(picked.id, Op{}, rank, size), to_string(picked.id)};
    } else {
      return {plan(picked.id, Op{}, rank, size), to_string(picked.id)};
    }
  } else if constexpr (schedules<A, Op>) {
    if (!accepts<A, Op>(size)) {
      fail(errc::unsupported, {algorithm_name<A>(), " cannot run ", Op::name, " on ", size, " ranks"},
           {rank, Op::name, -1, -1});
    }
    return {A::plan(Op{}, rank, size), algorithm_name<A>()};
  } else {
    fail(errc::unsupported, {algorithm_name<A>(), " has no ", Op::name, " schedule"}, {rank, Op::name, -1, -1});
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/algorithm/impl/select.ipp"
#endif

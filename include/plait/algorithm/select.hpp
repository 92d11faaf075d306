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

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "plait/algorithm/algorithm_id.hpp"
#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"

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

/// Compile-time check that A can run Op; the message names the combination and
/// lists what works.
template <class A, class Op>
consteval bool check_algorithm() {
  static_assert(algorithm<A>,
                "plait: the Algorithm argument is not an algorithm: it lacks "
                "`using algorithm_concept = plait::algorithm_tag;`");
  if constexpr (algorithm<A> && !is_automatic<A> && !schedules<A, Op>) {
    if constexpr (std::is_same_v<Op, op::all_to_all>) {
      if constexpr (std::is_same_v<A, tree>) {
        static_assert(dependent_false<A>,
                      "plait: tree has no all_to_all schedule; all_to_all works with ring, pairwise, bruck, direct, "
                      "automatic");
      } else if constexpr (std::is_same_v<A, neighbor_exchange>) {
        static_assert(dependent_false<A>,
                      "plait: neighbor_exchange has no all_to_all schedule; all_to_all works with ring, pairwise, "
                      "bruck, direct, automatic");
      } else if constexpr (std::is_same_v<A, recursive_doubling>) {
        static_assert(dependent_false<A>,
                      "plait: recursive_doubling has no all_to_all schedule; all_to_all works with ring, pairwise, "
                      "bruck, direct, automatic");
      } else {
        static_assert(dependent_false<A>,
                      "plait: this algorithm has no all_to_all schedule: it lacks `static constexpr plait::schedule "
                      "plan(plait::op::all_to_all, int rank, int size)`; all_to_all works with ring, pairwise, bruck, "
                      "direct, automatic");
      }
    } else if constexpr (std::is_same_v<Op, op::all_gather>) {
      static_assert(dependent_false<A>,
                    "plait: this algorithm has no all_gather schedule: it lacks `static constexpr plait::schedule "
                    "plan(plait::op::all_gather, int rank, int size)`; all_gather works with ring, tree, pairwise, "
                    "bruck, recursive_doubling, direct, neighbor_exchange, automatic");
    } else {
      static_assert(dependent_false<A>,
                    "plait: this algorithm has no schedule for this operation: it lacks `static constexpr "
                    "plait::schedule plan(Op, int rank, int size)`");
    }
  }
  return true;
}

/// PLAIT_DEBUG=1 in the environment.
inline bool debug_logging() {
  const char* flag = std::getenv("PLAIT_DEBUG");
  return flag != nullptr && std::string_view(flag) == "1";
}

/// Writes one automatic choice to stderr; `candidates` holds each algorithm's
/// predicted seconds in all_algorithm_ids order, negative where it cannot run.
/// Not a template and cold: it compiles once, away from the hot path.
[[gnu::cold, gnu::noinline]] inline void write_choice(int rank, std::string_view operation, int size,
                                                      std::size_t block_bytes, const choice& picked,
                                                      const std::array<double, all_algorithm_ids.size()>& candidates,
                                                      const cost_model& m) {
  std::ostringstream line;
  line << "plait: rank " << rank << ": automatic " << operation << " on " << size << " ranks, " << block_bytes
       << " bytes per block: " << picked << "; candidates";
  for (std::size_t i = 0; i < all_algorithm_ids.size(); ++i) {
    if (candidates[i] >= 0) line << ' ' << all_algorithm_ids[i] << ' ' << candidates[i];
  }
  line << "; model " << m << '\n';
  std::fputs(line.str().c_str(), stderr);
}

/// Logs an automatic choice to stderr when PLAIT_DEBUG=1.
template <class Op>
void log_choice(int rank, int size, std::size_t block_bytes, const choice& picked, const cost_model& m) {
  if (!debug_logging()) return;
  std::array<double, all_algorithm_ids.size()> candidates{};
  for (std::size_t i = 0; i < all_algorithm_ids.size(); ++i) {
    const algorithm_id id = all_algorithm_ids[i];
    candidates[i] = supports<Op>(id, size) ? explain<Op>(id, size, block_bytes, m).predicted_seconds : -1.0;
  }
  write_choice(rank, Op::name, size, block_bytes, picked, candidates, m);
}

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

/// The choice remembered for (size, block_bytes) in `list`, or null. The caller holds the lock.
inline const remembered_choice* find_choice(const remembered_choice* list, int size, std::size_t block_bytes) {
  for (; list != nullptr; list = list->next) {
    if (list->size == size && list->block_bytes == block_bytes) return list;
  }
  return nullptr;
}

/// The automatic policy A's choice, computed once per (P, bytes) and process:
/// the choice is a pure function of them, so every rank makes the same one.
template <class A, class Op, class Transport>
choice automatic_choice(int rank, int size, std::size_t block_bytes) {
  static std::mutex guard;
  static const remembered_choice* known = nullptr;
  {
    const std::scoped_lock lock(guard);
    if (const remembered_choice* found = find_choice(known, size, block_bytes)) return found->picked;
  }
  constexpr cost_model m = model_of<A, Transport>();
  const choice picked = explain<Op, A>(size, block_bytes, m);
  bool first = false;
  {
    const std::scoped_lock lock(guard);
    if (find_choice(known, size, block_bytes) == nullptr) {
      known = new remembered_choice{size, block_bytes, picked, known};
      first = true;
    }
  }
  if (first) log_choice<Op>(rank, size, block_bytes, picked, m);
  return picked;
}

/// This rank's schedule for one call of Op under policy A. Throws
/// errc::unsupported, before any byte moves, when A cannot run Op on `size` ranks.
template <class A, class Op, class Transport>
planned_schedule plan_schedule(int rank, int size, std::size_t block_bytes) {
  static_assert(check_algorithm<A, Op>());
  if constexpr (is_automatic<A>) {
    const choice picked = automatic_choice<A, Op, Transport>(rank, size, block_bytes);
    return {plan(picked.id, Op{}, rank, size), to_string(picked.id)};
  } else if constexpr (schedules<A, Op>) {
    if (!accepts<A, Op>(size)) {
      fail(errc::unsupported, {algorithm_name<A>(), " cannot run ", Op::name, " on ", size, " ranks"},
           {rank, Op::name, -1, -1});
    }
    return {A::plan(Op{}, rank, size), algorithm_name<A>()};
  } else {
    return {};  // unreachable: check_algorithm has failed to compile
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

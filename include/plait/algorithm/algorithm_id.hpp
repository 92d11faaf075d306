// plait::algorithm_id — run-time names for the built-in algorithms, so
// benchmarks, autotuners and configuration files can pick one at run time, and
// plait::plan(id, op, rank, size) to get its schedule.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "plait/algorithm/registry.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

#define PLAIT_ALGORITHM_ENUMERATOR(name) name,
/// Every built-in algorithm (automatic is a chooser, not an algorithm), in
/// the registry's order (algorithm/registry.hpp).
enum class algorithm_id { PLAIT_BUILT_IN_ALGORITHMS(PLAIT_ALGORITHM_ENUMERATOR) };
#undef PLAIT_ALGORITHM_ENUMERATOR

/// All ids, in declaration order (automatic breaks cost ties in this order).
inline constexpr auto all_algorithm_ids = []<class... As>(works_with<As...>) {
  std::array<algorithm_id, sizeof...(As)> ids{};
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<algorithm_id>(i);
  return ids;
}(built_in_algorithms{});

namespace detail {
/// Calls f with the tag type of the index-th algorithm of the list.
template <std::size_t Index = 0, class F, class First, class... Rest>
constexpr decltype(auto) visit_algorithm_at(std::size_t index, F&& f, works_with<First, Rest...>) {
  if constexpr (sizeof...(Rest) == 0) {
    return f(std::type_identity<First>{});
  } else {
    if (index == Index) return f(std::type_identity<First>{});
    return visit_algorithm_at<Index + 1>(index, std::forward<F>(f), works_with<Rest...>{});
  }
}
}  // namespace detail

/// Calls f(std::type_identity<A>{}) with the tag type A that `id` names.
template <class F>
constexpr decltype(auto) visit_algorithm(algorithm_id id, F&& f) {
  const auto index = static_cast<std::size_t>(id);
  if (index >= built_in_algorithms::size) {
    detail::fail(errc::invalid_argument, {"not a plait::algorithm_id: ", static_cast<int>(id)});
  }
  return detail::visit_algorithm_at(index, std::forward<F>(f), built_in_algorithms{});
}

/// The algorithm's name, the same as its tag type's: "ring", "recursive_doubling", ...
constexpr std::string_view to_string(algorithm_id id) {
  return visit_algorithm(id, []<class A>(std::type_identity<A>) { return A::name; });
}

/// Writes the algorithm's name.
PLAIT_DECL std::ostream& operator<<(std::ostream& out, algorithm_id id);

/// The id named `text` (as to_string writes it), or nullopt.
constexpr std::optional<algorithm_id> algorithm_from_string(std::string_view text) noexcept {
  for (algorithm_id id : all_algorithm_ids) {
    if (to_string(id) == text) return id;
  }
  return std::nullopt;
}

/// The id of a built-in tag type, nullopt for a user's algorithm.
template <class A>
inline constexpr std::optional<algorithm_id> algorithm_id_of = [] {
  for (algorithm_id id : all_algorithm_ids) {
    if (visit_algorithm(id, []<class B>(std::type_identity<B>) { return std::is_same_v<A, B>; }))
      return std::optional{id};
  }
  return std::optional<algorithm_id>{};
}();

/// Whether `id` has a schedule for Op at all (the design table: tree,
/// recursive_doubling and neighbor_exchange have no all-to-all).
template <class Op>
constexpr bool has_schedule(algorithm_id id) {
  return visit_algorithm(id, []<class A>(std::type_identity<A>) { return schedules<A, Op>; });
}

/// Whether `id` can run Op on `size` ranks (has a schedule and accepts the size).
template <class Op>
constexpr bool supports(algorithm_id id, int size) {
  return visit_algorithm(id, [size]<class A>(std::type_identity<A>) {
    if constexpr (schedules<A, Op>) {
      return size >= 1 && accepts<A, Op>(size);
    } else {
      return false;
    }
  });
}

/// This rank's schedule for Op under algorithm `id`. Throws
/// plait::error(errc::unsupported) when `id` has no schedule for Op or does not
/// accept `size`, and errc::invalid_argument for a rank outside [0, size).
template <class Op>
requires operation<Op>
constexpr schedule plan(algorithm_id id, Op, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) {
    detail::fail(errc::invalid_argument, {"rank ", rank, " is not in a group of ", size, " ranks"});
  }
  return visit_algorithm(id, [rank, size]<class A>(std::type_identity<A>) -> schedule {
    if constexpr (schedules<A, Op>) {
      if (!accepts<A, Op>(size)) {
        detail::fail(errc::unsupported, {A::name, " cannot run ", Op::name, " on ", size, " ranks"},
                     {rank, Op::name, -1, -1});
      }
      return A::plan(Op{}, rank, size);
    } else {
      detail::fail(errc::unsupported, {A::name, " has no ", Op::name, " schedule"}, {rank, Op::name, -1, -1});
    }
  });
}

namespace detail {
/// plan(id, op, rank, size) for the run-time path (automatic's choice): not a
/// template and not constexpr, so a file that calls a collective does not
/// instantiate and optimise every algorithm's planner (in the compiled core,
/// only the core does). Same schedules and errors as plan.
PLAIT_DECL schedule run_time_plan(algorithm_id id, op::all_gather, int rank, int size);
PLAIT_DECL schedule run_time_plan(algorithm_id id, op::all_to_all, int rank, int size);
}  // namespace detail

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/algorithm/impl/algorithm_id.ipp"
#endif

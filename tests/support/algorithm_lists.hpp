// The algorithms a test runs an operation with, taken from the registry
// (plait/algorithm/registry.hpp): every built-in with a schedule for the
// operation, and automatic. A new built-in algorithm joins these tests by
// being registered, with no test file to edit.
#pragma once

#include <plait/plait.hpp>

namespace plait_test {

/// Catch2 TEMPLATE_LIST_TEST_CASE's list for Op: the built-ins that schedule it, then automatic.
template <class Op>
using algorithms_for = typename plait::detail::algorithms_that_work_with<Op>::tuple;
using all_gather_algorithms = algorithms_for<plait::op::all_gather>;
using all_to_all_algorithms = algorithms_for<plait::op::all_to_all>;

/// Whether Algorithm runs Op on `ranks` ranks (neighbor_exchange needs an
/// even P or 1; automatic runs everywhere, choosing only what accepts P).
template <class Algorithm, class Op = plait::op::all_gather>
constexpr bool runs_on(int ranks) {
  if constexpr (plait::detail::is_automatic<Algorithm>) {
    return true;
  } else if constexpr (plait::schedules<Algorithm, Op>) {
    return plait::accepts<Algorithm, Op>(ranks);
  } else {
    return false;
  }
}

/// Whether Algorithm (or automatic) has a schedule for Op at all.
template <class Algorithm, class Op>
inline constexpr bool has_schedule = plait::detail::is_automatic<Algorithm> || plait::schedules<Algorithm, Op>;

}  // namespace plait_test

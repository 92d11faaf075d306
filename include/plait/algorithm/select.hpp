// Turning an algorithm policy into this rank's schedule for one call: the
// integration point between operations and algorithms.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

struct automatic;  // defined in algorithm/automatic.hpp

namespace detail {

/// A schedule and the name of the algorithm that made it.
struct planned_schedule {
  schedule steps;
  std::string_view algorithm;
};

/// Compile-time check that A can run Op; the message names the combination.
template <class A, class Op>
consteval bool check_algorithm() {
  static_assert(algorithm<A>, "plait: the Algorithm argument is not an algorithm: it lacks "
                              "`using algorithm_concept = plait::algorithm_tag;`");
  static_assert(schedules<A, Op>, "plait: this algorithm has no schedule for this operation: it lacks "
                                  "`static constexpr plait::schedule plan(Op, int rank, int size)`");
  return true;
}

template <class A, class Op, class Transport>
planned_schedule plan_schedule(int rank, int size, std::size_t /*block_bytes*/) {
  if (!accepts<A, Op>(size)) {
    throw error(errc::unsupported,
                std::string(algorithm_name<A>()) + " cannot run " + std::string(Op::name) + " on " +
                    std::to_string(size) + " ranks",
                {rank, Op::name, -1, -1});
  }
  return {A::plan(Op{}, rank, size), algorithm_name<A>()};
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

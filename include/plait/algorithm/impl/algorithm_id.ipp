// Defines algorithm_id's stream output and the run-time planners (see plait/algorithm/algorithm_id.hpp).
#pragma once

#include <ostream>

#include "plait/algorithm/algorithm_id.hpp"

namespace plait {
inline namespace v0 {

PLAIT_DECL std::ostream& operator<<(std::ostream& out, algorithm_id id) { return out << to_string(id); }

namespace detail {
PLAIT_DECL schedule run_time_plan(algorithm_id id, op::all_gather, int rank, int size) {
  return plan(id, op::all_gather{}, rank, size);
}
PLAIT_DECL schedule run_time_plan(algorithm_id id, op::all_to_all, int rank, int size) {
  return plan(id, op::all_to_all{}, rank, size);
}
}  // namespace detail

}  // namespace v0
}  // namespace plait

// Defines the stream output of choice and the run-time choice (see plait/algorithm/automatic.hpp).
#pragma once

#include <cstddef>
#include <ostream>

#include "plait/algorithm/automatic.hpp"

namespace plait {
inline namespace v0 {

PLAIT_DECL std::ostream& operator<<(std::ostream& out, const choice& c) {
  return out << c.name() << " (predicted " << c.predicted_seconds << " s)";
}

namespace detail {
PLAIT_DECL choice run_time_choice(op::all_gather, int size, std::size_t bytes_per_block, const cost_model& m,
                                  algorithm_set allowed) {
  return choose_among<op::all_gather>(size, bytes_per_block, m, allowed);
}
PLAIT_DECL choice run_time_choice(op::all_to_all, int size, std::size_t bytes_per_block, const cost_model& m,
                                  algorithm_set allowed) {
  return choose_among<op::all_to_all>(size, bytes_per_block, m, allowed);
}
}  // namespace detail

}  // namespace v0
}  // namespace plait

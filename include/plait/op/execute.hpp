// execute(): one rank's schedule run to completion, the entry every blocking
// collective calls. It sits above both ways a run can go: alone
// (schedule_run, op/executor.hpp) or, while nonblocking or persistent
// collectives are in flight on the communicator, through its progress engine
// (execute_in_flight, op/in_flight.hpp), so neither of those includes the other;
// a lockstep schedule on a transport with shared slots goes through them
// (op/slot_run.hpp) when the call fits.
#pragma once

#include <string_view>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/block_plan.hpp"
#include "plait/op/abandon.hpp"
#include "plait/op/executor.hpp"
#include "plait/op/in_flight.hpp"
#include "plait/op/slot_run.hpp"

namespace plait {
inline namespace v0 {

/// Runs `steps` for this rank on `comm`, moving the blocks `plan` locates.
/// `operation` names the call in errors ("all_gather<ring>"); `tag` keeps its
/// messages apart from other calls. While nonblocking or persistent
/// collectives are in flight on `comm`, the run joins them in its progress
/// engine, so that waiting here moves them too. A lockstep schedule (every
/// rank runs it, in flight or not) runs through shared slots where the
/// transport has them and the call fits; their waits move the collectives in
/// flight.
template <transport Comm, block_plan Plan>
void execute(Comm& comm, const schedule& steps, const Plan& plan, std::string_view operation, int tag) {
  if constexpr (detail::has_shared_slots<Comm> && !detail::has_copy_engine<Comm>) {
    if (steps.lockstep && !steps.steps.empty() &&
        detail::abandoning_on_throw(
            comm, operation, [] { return -1; },
            [&] { return detail::run_in_slots(comm, steps, plan, operation, tag); })) {
      return;
    }
  }
  if constexpr (detail::has_progress_engine<Comm> && detail::tests_requests<Comm>) {
    if (auto* engine = comm.active_progress()) [[unlikely]] {
      detail::execute_in_flight(comm, *engine, steps, plan, operation, tag);
      return;
    }
  }
  detail::schedule_run<Comm, Plan>(comm, steps, plan, operation, tag).run();
}

}  // namespace v0
}  // namespace plait

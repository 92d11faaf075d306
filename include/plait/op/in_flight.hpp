// Collectives in flight: one rank's schedule run, handed to its
// communicator's progress engine (core/progress_engine.hpp) instead of being
// run to completion at once. Nonblocking requests and persistent collectives
// own one (in_flight_run); a blocking call made while others are in flight
// lends its own to the engine for the time of the call (execute_in_flight),
// so that it and they all keep moving.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/backoff.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/error.hpp"
#include "plait/core/progress_engine.hpp"
#include "plait/core/transport.hpp"
#include "plait/op/executor.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// Whether collectives of Comm can be in flight: the engine is in its core
/// and its transfers can be looked at without blocking.
template <class Comm>
inline constexpr bool can_be_in_flight = (has_progress_engine<Comm> && tests_requests<Comm>);

/// Comm's progress engine, ordered as the transport matches messages.
template <class Comm>
progress_engine& engine_of(Comm& comm) {
  return comm.collective_progress(!matches_by_tag<Comm>);
}

/// A schedule run the engine can move: over a schedule and plan it holds by
/// reference (Steps and PlanHolder are references) or owns (values).
template <class Comm, class Plan, class Steps, class PlanHolder>
class engine_run : public pending_collective {
 public:
  engine_run(Comm& comm, Steps steps, PlanHolder plan, std::string name, int tag)
      : pending_collective(&advance_one, &finish_one),
        comm_(comm),
        steps_(std::forward<Steps>(steps)),
        plan_(std::forward<PlanHolder>(plan)),
        name_(std::move(name)),
        run_(comm, steps_, plan_, name_, tag) {}

  /// Ready to run again under a new tag (persistent collectives).
  void restart(int tag) {
    run_.restart(tag);
    rearm();
  }
  [[nodiscard]] Comm& comm() const noexcept { return comm_; }
  /// The call's name, as its errors give it ("all_gather<ring>").
  [[nodiscard]] std::string_view name() const noexcept { return name_; }
  /// Runs the remaining steps in the transport's own waits.
  void run_blocking() { run_.advance(true); }
  /// schedule_run::advance, for a run moved by another collective that owns
  /// it rather than by the engine.
  bool advance(bool blocking) { return run_.advance(blocking); }

 private:
  static bool advance_one(pending_collective& c) {
    if constexpr (tests_requests<Comm>) {
      return static_cast<engine_run&>(c).run_.advance(false);
    } else {  // never queued (stream-ordered transports run at start): no look without blocking to offer
      static_cast<engine_run&>(c).run_.advance(true);
      return true;
    }
  }
  static void finish_one(pending_collective& c) { static_cast<engine_run&>(c).run_.advance(true); }

  Comm& comm_;
  Steps steps_;
  PlanHolder plan_;
  std::string name_;  // the run's error messages name it
  schedule_run<Comm, std::remove_cvref_t<PlanHolder>> run_;
};

/// A blocking call while collectives are in flight (execute's slow path): the
/// run goes into the engine, behind or beside them, and this call returns
/// once it is complete.
template <class Comm, class Plan>
void execute_in_flight(Comm& comm, progress_engine& engine, const schedule& steps, const Plan& plan,
                       std::string_view operation, int tag) {
  engine_run<Comm, Plan, const schedule&, const Plan&> run(comm, steps, plan, std::string(operation), tag);
  {
    auto held = engine.lock();
    engine.enqueue(run);
  }
  struct withdraw_on_exit {  // it lives on this stack frame: never left in the queue
    progress_engine& engine;
    pending_collective& run;
    ~withdraw_on_exit() {
      auto held = engine.lock();
      engine.withdraw(run);
    }
  } guard{engine, run};
  wait_in_engine(engine, run, comm.busy_poll());
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

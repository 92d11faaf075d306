// Defines what plait/op/in_flight.hpp declares out of line: the waits on a
// collective in flight.
#pragma once

#include <chrono>

#include "plait/core/backoff.hpp"
#include "plait/core/config.hpp"
#include "plait/core/progress_engine.hpp"
#include "plait/op/in_flight.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL void wait_in_engine(progress_engine& engine, pending_collective& c, std::chrono::nanoseconds busy_poll) {
  // Yields for long before it sleeps: MPI moves bytes only inside a poll,
  // and a sleeping waiter stalls the transfer it waits for.
  backoff waiting(200000, busy_poll);
  for (;;) {
    {
      auto held = engine.lock();
      if (!c.queued()) break;  // finished (maybe by the progress thread), or never started
      if (engine.alone(c) && !engine.thread_running()) {
        engine.finish_alone(c);
        break;
      }
      if (engine.turn()) waiting.reset();
      if (!c.queued()) break;
    }
    waiting.pause();
  }
  c.rethrow_failure();
}

PLAIT_DECL bool test_in_engine(progress_engine& engine, pending_collective& c) {
  {
    auto held = engine.lock();
    if (c.queued()) engine.turn();
    if (c.queued()) return false;
  }
  c.rethrow_failure();
  return true;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Defines what plait/core/backoff.hpp declares: the CPU counts and the
// waiting policy's pause().
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>

#include <sched.h>
#include <unistd.h>

#include "plait/core/backoff.hpp"
#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL int online_cpus() noexcept {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  return cpus < 1 ? 1 : static_cast<int>(std::min<long>(cpus, INT_MAX));
}

PLAIT_DECL int usable_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int allowed = CPU_COUNT(&set);
    if (allowed > 0) return std::min(allowed, online_cpus());
  }
  return online_cpus();
}

PLAIT_DECL void backoff::pause() noexcept {
  if (busy_ > std::chrono::nanoseconds::zero() && polls_ == 0) {
    // The clock every 16th poll only: a read costs about as much as a poll,
    // and a waiter that polls faster sees its message sooner.
    if (busy_polls_++ % busy_clock_polls != 0) {
      cpu_relax();
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (busy_since_ == std::chrono::steady_clock::time_point{}) busy_since_ = last_yield_ = now;
    if (now - busy_since_ < busy_) {
      if (now - last_yield_ >= busy_yield_) {
        sched_yield();
        last_yield_ = now;
      } else {
        cpu_relax();
      }
      return;
    }
  }
  ++polls_;
  if (polls_ < spin_polls) return;
  if (polls_ < spin_polls + yield_polls_) {
    sched_yield();
    return;
  }
  // Sleep, doubling up to a cap: long waits (a peer that is busy computing)
  // cost no CPU, and the cap bounds the extra latency.
  std::this_thread::sleep_for(sleep_);
  if (sleep_ < max_sleep) sleep_ *= 2;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Waiting without hogging a core: spin briefly, then yield, then sleep, so a
// group with more ranks than cores still makes progress. Where every rank has
// a core of its own, a waiter may first poll for a while (a busy phase), as
// MPI libraries' blocking calls do: a yield hands the core to any other
// runnable process, and on a busy node getting it back can take a scheduler
// slice (milliseconds) where the wait itself needed microseconds. The busy
// phase still yields once every 20 us: when another process occupies one core
// and the scheduler puts two ranks on the other, a waiter that never yields
// keeps its peer off the core for a whole slice (the measurement is in
// docs/performance.md, "Why the constants are what they are").
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>

#include <sched.h>
#include <unistd.h>

#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// The CPUs this node has online (not this process's affinity mask: MPI
/// launchers bind each rank to one core).
PLAIT_DECL int online_cpus() noexcept;

/// The CPUs this process may run on (its affinity mask, as `taskset` or a
/// cpuset leaves it), at most online_cpus(): what threads and forked children
/// of it share.
PLAIT_DECL int usable_cpus() noexcept;

/// A CPU hint that this thread is spinning (frees pipeline resources for a sibling hyperthread).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class backoff {
 public:
  static constexpr unsigned default_yield_polls = 2000;

  backoff() = default;
  /// `yield_polls`: how many polls yield before the waiter starts sleeping.
  /// Transports whose progress happens only inside the poll (MPI) keep
  /// yielding much longer: a sleeping poller stalls the transfer itself.
  /// `busy`: how long to poll first, yielding only every `busy_yield` (20 us
  /// by default; nanoseconds::max(): never) (zero: no busy phase); give it
  /// only when the node has a core for every rank.
  explicit backoff(unsigned yield_polls, std::chrono::nanoseconds busy = std::chrono::nanoseconds::zero(),
                   std::chrono::nanoseconds busy_yield = busy_yield_interval) noexcept
      : yield_polls_(yield_polls), busy_(busy), busy_yield_(busy_yield) {}

  /// Call once per unsuccessful poll.
  void pause() noexcept;
  /// Progress was made: the next wait starts from the beginning (busy phase included).
  void reset() noexcept {
    polls_ = 0;
    sleep_ = min_sleep;
    busy_since_ = {};
    busy_polls_ = 0;
  }
  /// True while the waiter spins (busy phase included): a poll then takes
  /// nanoseconds, so per-poll checks such as a clock read are done only now
  /// and then.
  [[nodiscard]] bool spinning() const noexcept { return polls_ < spin_polls; }
  /// True once the waiter has fallen back to sleeping: the slow checks
  /// (is a peer process still alive?) are cheap enough then.
  [[nodiscard]] bool sleeping() const noexcept { return polls_ >= spin_polls + yield_polls_; }

  /// How often the busy phase yields by default.
  static constexpr std::chrono::microseconds busy_yield_interval{20};

 private:
  static constexpr unsigned spin_polls = 64;
  static constexpr unsigned busy_clock_polls = 16;  // busy polls per clock read
  static constexpr std::chrono::microseconds min_sleep{20};
  static constexpr std::chrono::microseconds max_sleep{1000};
  unsigned yield_polls_ = default_yield_polls;
  std::chrono::nanoseconds busy_{};
  std::chrono::nanoseconds busy_yield_ = busy_yield_interval;
  std::chrono::steady_clock::time_point busy_since_{};
  std::chrono::steady_clock::time_point last_yield_{};
  unsigned polls_ = 0;
  unsigned busy_polls_ = 0;
  std::chrono::microseconds sleep_ = min_sleep;
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/backoff.ipp"
#endif

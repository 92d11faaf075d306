// Waiting without hogging a core: spin briefly, then yield, then sleep, so a
// group with more ranks than cores still makes progress.
#pragma once

#include <chrono>
#include <thread>

#include <sched.h>

namespace plait {
inline namespace v0 {
namespace detail {

class backoff {
 public:
  backoff() = default;
  /// `yield_polls`: how many polls yield before the waiter starts sleeping.
  /// Transports whose progress happens only inside the poll (MPI) keep
  /// yielding much longer: a sleeping poller stalls the transfer itself.
  explicit backoff(unsigned yield_polls) noexcept : yield_polls_(yield_polls) {}

  /// Call once per unsuccessful poll.
  void pause() noexcept {
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
  void reset() noexcept {
    polls_ = 0;
    sleep_ = min_sleep;
  }
  /// True once the waiter has fallen back to sleeping: the slow checks
  /// (is a peer process still alive?) are cheap enough then.
  [[nodiscard]] bool sleeping() const noexcept { return polls_ >= spin_polls + yield_polls_; }

 private:
  static constexpr unsigned spin_polls = 64;
  static constexpr unsigned default_yield_polls = 2000;
  static constexpr std::chrono::microseconds min_sleep{20};
  static constexpr std::chrono::microseconds max_sleep{1000};
  unsigned yield_polls_ = default_yield_polls;
  unsigned polls_ = 0;
  std::chrono::microseconds sleep_ = min_sleep;
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

// The pacing every transport's wait shares, written once: how a waiter
// pauses between polls (backoff: spin, yield, sleep), when it reads the clock
// against its deadline, and when it runs the checks too slow for every poll
// (is a peer process still alive?). The loop's body stays the transport's
// own: what one poll moves and what it checks.
//
//   wait_loop loop(until, busy_poll());
//   for (;;) {
//     if (poll_moved_something()) { if (all_done()) return; loop.moved(); continue; }
//     if (loop.expired()) throw timed_out();
//     if (loop.slow_check_due()) check_peers_alive();
//     loop.pause();
//   }
#pragma once

#include <chrono>

#include "plait/core/backoff.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A wait's pacing and deadline; see the file comment.
class wait_loop {
 public:
  /// Polls until `until`; `busy`: the busy phase (backoff), `yield_polls`:
  /// polls that yield before the waiter sleeps; `slow_every`: the slow checks
  /// run at every slow_every-th idle poll once the waiter sleeps.
  explicit wait_loop(deadline until, std::chrono::nanoseconds busy = std::chrono::nanoseconds::zero(),
                     unsigned yield_polls = backoff::default_yield_polls, unsigned slow_every = 64) noexcept
      : until_(until), pacing_(yield_polls, busy), slow_every_(slow_every) {}

  /// A poll moved something: the pacing starts over (busy phase included).
  void moved() noexcept { pacing_.reset(); }
  /// After a poll that moved nothing: whether the deadline has passed. While
  /// the waiter spins the clock is read every 16th poll (a read costs about
  /// a poll, and a deadline is seconds away), then at every poll.
  [[nodiscard]] bool expired() noexcept {
    if (pacing_.spinning() && ++spinning_polls_ % 16 != 0) return false;
    return clock::now() > until_;
  }
  /// After a poll that moved nothing: whether the slow checks are due (every
  /// slow_every-th such poll once the waiter sleeps between polls).
  [[nodiscard]] bool slow_check_due() noexcept { return pacing_.sleeping() && ++slow_polls_ % slow_every_ == 0; }
  /// Whether the waiter has fallen back to sleeping between polls.
  [[nodiscard]] bool sleeping() const noexcept { return pacing_.sleeping(); }
  /// Waits before the next poll.
  void pause() noexcept { pacing_.pause(); }
  /// The deadline.
  [[nodiscard]] deadline until() const noexcept { return until_; }

 private:
  deadline until_;
  backoff pacing_;
  unsigned slow_every_;
  unsigned spinning_polls_ = 0;
  unsigned slow_polls_ = 0;
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

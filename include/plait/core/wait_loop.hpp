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
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A wait's pacing and deadline; see the file comment.
class wait_loop {
 public:
  /// Polls until `until`; `busy`: the busy phase (backoff), `yield_polls`:
  /// polls that yield before the waiter sleeps; `slow_every`: the slow checks
  /// run at every slow_every-th idle poll once the waiter sleeps;
  /// `busy_yield`: how often the busy phase yields (nanoseconds::max(): never).
  explicit wait_loop(deadline until, std::chrono::nanoseconds busy = std::chrono::nanoseconds::zero(),
                     unsigned yield_polls = backoff::default_yield_polls, unsigned slow_every = 64,
                     std::chrono::nanoseconds busy_yield = backoff::busy_yield_interval) noexcept
      : until_(until), pacing_(yield_polls, busy, busy_yield), slow_every_(slow_every) {}

  /// A poll moved something: the pacing starts over (busy phase included).
  void moved() noexcept { pacing_.reset(); }
  /// After a poll that moved nothing: whether the deadline has passed. The
  /// clock is read at the first such poll (a wait that completes at its
  /// first poll reads it never), then, while the waiter spins, every 16th
  /// (a read costs about a poll, and a deadline is seconds away), then at
  /// every poll.
  [[nodiscard]] bool expired() noexcept {
    if (pacing_.spinning() && spinning_polls_++ % clock_polls != 0) return false;
    last_read_ = clock::now();
    if (started_ == clock::time_point{}) started_ = last_read_;
    return last_read_ > until_;
  }
  /// How long the wait has waited, as the clock reads of expired() saw it:
  /// from the first to the latest (what a timeout's message reports).
  [[nodiscard]] clock::duration waited() const noexcept { return last_read_ - started_; }
  /// After a poll that moved nothing: whether the slow checks are due (every
  /// slow_every-th such poll once the waiter sleeps between polls).
  [[nodiscard]] bool slow_check_due() noexcept { return pacing_.sleeping() && ++slow_polls_ % slow_every_ == 0; }
  /// Whether the waiter has fallen back to sleeping between polls.
  [[nodiscard]] bool sleeping() const noexcept { return pacing_.sleeping(); }
  /// Waits before the next poll.
  void pause() noexcept { pacing_.pause(); }
  /// The deadline.
  [[nodiscard]] deadline until() const noexcept { return until_; }
  /// After expired(): whether the wait goes on for `more` from now. It does
  /// once, where `worth_it()` says so (a rank to blame held at the other
  /// level of a two-level call, core/blame.hpp: the transports'
  /// wait_longer); the next expiry ends the wait. `worth_it` runs only then.
  template <class WorthIt>
  [[nodiscard]] bool extend_once(WorthIt&& worth_it, clock::duration more) {
    if (extended_ || !worth_it()) return false;
    until_ = after(more);
    extended_ = true;
    return true;
  }
  /// Whether extend_once moved the deadline.
  [[nodiscard]] bool extended() const noexcept { return extended_; }

 private:
  static constexpr unsigned clock_polls = 16;  // spinning polls per clock read
  deadline until_;
  backoff pacing_;
  unsigned slow_every_;
  unsigned spinning_polls_ = 0;
  unsigned slow_polls_ = 0;
  clock::time_point started_{};    // expired()'s first clock read
  clock::time_point last_read_{};  // and its latest
  bool extended_ = false;
};

/// For a wait made of looks whose deadline is its caller's (test_all): the
/// deadline it extended once it had passed, and to when (a rank to blame
/// held at the other level of a two-level call: core/blame.hpp).
class deadline_extension {
 public:
  /// Whether `until` is the deadline extended.
  [[nodiscard]] bool extended(deadline until) const noexcept { return from_ != deadline{} && until == from_; }
  /// `until`, or where it was extended to.
  [[nodiscard]] deadline effective(deadline until) const noexcept { return extended(until) ? to_ : until; }
  /// Extends `until` to `to`.
  void extend(deadline until, deadline to) noexcept {
    from_ = until;
    to_ = to;
  }

 private:
  deadline from_{};
  deadline to_{};
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

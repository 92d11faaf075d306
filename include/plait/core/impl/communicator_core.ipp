// Defines what plait/core/communicator_core.hpp declares: the settings'
// validation, the split child's inheritance and the failure paths (cold, out
// of line: message building stays out of the transports' hot calls).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "plait/core/communicator_core.hpp"
#include "plait/core/config.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"

namespace plait {
inline namespace v0 {

PLAIT_DECL communicator_core::communicator_core(int rank, int size) : rank_(rank), size_(size) {
  const detail::environment_settings settings = detail::read_environment({rank});
  timeout_ = settings.timeout;
  check_mode_ = settings.check;
}

PLAIT_DECL communicator_core communicator_core::child(int rank, int size) const {
  communicator_core c;
  c.rank_ = rank;
  c.size_ = size;
  c.parent_rank_ = rank_;
  c.tag_limit_ = tag_limit_;
  c.timeout_ = timeout_;
  c.busy_poll_ = busy_poll_;
  c.check_mode_ = check_mode_;
  return c;
}

PLAIT_DECL void communicator_core::set_timeout_seconds(double seconds, std::string_view operation) {
  // Zero would make every wait fail at once and a negative one is a bug in
  // the caller: both are refused here, once, for every transport.
  if (!(seconds > 0)) {
    // Written from the double: -hours::max() does not fit in nanoseconds.
    char text[32];
    std::snprintf(text, sizeof text, "%.3g s", std::isnan(seconds) ? 0.0 : seconds);
    detail::fail(errc::invalid_argument, {"timeout must be positive, got ", text}, where(operation));
  }
  // hours::max() does not fit in nanoseconds: stored as the largest value,
  // which every deadline made from it (detail::after) keeps at the clock's end.
  timeout_ = detail::saturated(std::chrono::duration<double>(seconds));
  if (timeout_ <= std::chrono::nanoseconds::zero()) timeout_ = std::chrono::nanoseconds(1);  // below 1 ns, not zero
}

PLAIT_DECL void communicator_core::set_busy_poll_seconds(double seconds, std::string_view operation) {
  if (!(seconds >= 0)) detail::fail(errc::invalid_argument, {"busy-poll time must not be negative"}, where(operation));
  busy_poll_ = seconds >= 3600
                   ? std::chrono::nanoseconds(std::chrono::hours(1))
                   : std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
}

PLAIT_DECL void communicator_core::poison(const error& first) noexcept {
  if (poisoned_) return;
  poisoned_ = true;
  poison_code_ = first.value();
  poison_peer_ = first.peer();
  try {
    poison_reason_ = first.what();
    poison_detail_ = first.detail();
    // The call that failed: the executor's note while a step waits, else
    // what the error says. Later errors name it (item 4 of issue 29: they
    // used to drop it).
    const std::string_view operation = !note_.operation.empty() ? note_.operation : std::string_view(first.operation());
    if (!operation.empty()) {
      poisoned_by_.assign(operation);
      if (!note_.operation.empty()) poisoned_by_.append(" #").append(std::to_string(note_.tag));
      const int step = !note_.operation.empty() ? note_.step : first.step();
      if (step >= 0) poisoned_by_.append(", step ").append(std::to_string(step));
    }
  } catch (...) {  // out of memory: the code alone still says what happened
    poison_reason_.clear();
    poisoned_by_.clear();
  }
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL void communicator_core::unusable(std::string_view operation) const {
  if (size_ <= 0) {
    detail::fail(errc::invalid_argument,
                 {"called on a null communicator (split with plait::no_group, default-constructed or moved from)"},
                 {-1, operation});
  }
  if (!poisoned_by_.empty()) {
    detail::fail(poison_code_,
                 {"communicator unusable since an earlier failure: poisoned by ", poisoned_by_, ": ", poison_detail_},
                 where(operation, poison_peer_));
  }
  detail::fail(poison_code_, {"communicator unusable since an earlier failure: ", poison_reason_},
               where(operation, poison_peer_));
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL void communicator_core::bad_peer(int peer, std::string_view operation) const {
  detail::fail(errc::invalid_argument, {"peer ", peer, " is outside [0, ", size_, ")"}, where(operation, peer));
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL void communicator_core::bad_tag(int tag, int peer,
                                                                        std::string_view operation) const {
  detail::fail(errc::invalid_argument, {"tag ", tag, " is outside [0, ", tag_limit_, "]"}, where(operation, peer));
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL void communicator_core::bad_color(int color) const {
  detail::fail(errc::invalid_argument, {"split color ", color, " is negative (use plait::no_group to join no group)"},
               where("split"));
}

}  // namespace v0
}  // namespace plait

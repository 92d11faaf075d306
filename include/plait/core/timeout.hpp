// Timeouts every transport shares: the default (PLAIT_TIMEOUT), overflow-safe
// deadlines, and how a duration reads in an error message.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "plait/core/config.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// PLAIT_TIMEOUT in seconds (fractions allowed) if set to a positive number,
/// else 300 s: no wait may block forever, but a slow job must not fail either.
PLAIT_DECL std::chrono::nanoseconds default_timeout();

/// `now + timeout` without overflowing when the timeout is huge.
inline deadline after(clock::duration timeout) {
  const auto now = clock::now();
  if (timeout >= clock::time_point::max() - now) return clock::time_point::max();
  return now + timeout;
}

/// "0.15 s", "300 s": a duration as an error message says it.
PLAIT_DECL std::string seconds_text(clock::duration d);

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/timeout.ipp"
#endif

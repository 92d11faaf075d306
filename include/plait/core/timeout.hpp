// Timeouts every transport shares: the default (PLAIT_TIMEOUT), overflow-safe
// deadlines, and how a duration reads in an error message.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// PLAIT_TIMEOUT in seconds (fractions allowed) if set to a positive number,
/// else 300 s: no wait may block forever, but a slow job must not fail either.
inline std::chrono::nanoseconds default_timeout() {
  if (const char* text = std::getenv("PLAIT_TIMEOUT")) {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end != text && std::isfinite(seconds) && seconds > 0 && seconds < 1e9) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
    }
  }
  return std::chrono::seconds(300);
}

/// `now + timeout` without overflowing when the timeout is huge.
inline deadline after(clock::duration timeout) {
  const auto now = clock::now();
  if (timeout >= clock::time_point::max() - now) return clock::time_point::max();
  return now + timeout;
}

/// "0.15 s", "300 s": a duration as an error message says it.
inline std::string seconds_text(clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", std::chrono::duration<double>(d).count());
  return text;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Defines what plait/core/timeout.hpp declares: the default timeout from the
// environment and durations as error messages write them.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "plait/core/config.hpp"
#include "plait/core/timeout.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL std::chrono::nanoseconds default_timeout() {
  if (const char* text = std::getenv("PLAIT_TIMEOUT")) {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end != text && std::isfinite(seconds) && seconds > 0 && seconds < 1e9) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
    }
  }
  return std::chrono::seconds(300);
}

PLAIT_DECL std::string seconds_text(clock::duration d) {
  if (d == clock::duration::max()) return "forever";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", std::chrono::duration<double>(d).count());
  return text;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Defines what plait/core/timeout.hpp declares: the default timeout from the
// environment and durations as error messages write them.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "plait/core/config.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/timeout.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL std::chrono::nanoseconds default_timeout() {
  return environment_seconds("PLAIT_TIMEOUT").value_or(std::chrono::seconds(300));
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

// Defines what plait/core/environment.hpp declares.
#pragma once

#include <cstdlib>
#include <cstring>

#include "plait/core/config.hpp"
#include "plait/core/environment.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL bool check_mode_from_environment() {
  const char* value = std::getenv("PLAIT_CHECK");
  return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

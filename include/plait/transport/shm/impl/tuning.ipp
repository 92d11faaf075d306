// Defines what plait/transport/shm/tuning.hpp declares: reading the
// single-copy threshold override from the environment.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>

#include "plait/core/config.hpp"
#include "plait/transport/shm/tuning.hpp"

namespace plait {
inline namespace v0 {
namespace shm::detail {

PLAIT_DECL std::optional<std::size_t> single_copy_bytes_from_environment() {
  if (const char* text = std::getenv("PLAIT_SHM_SINGLE_COPY_BYTES")) {
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0') return bytes == 0 ? SIZE_MAX : static_cast<std::size_t>(bytes);
  }
  return std::nullopt;
}

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

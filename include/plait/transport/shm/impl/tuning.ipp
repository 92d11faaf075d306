// Defines what plait/transport/shm/tuning.hpp declares: reading the
// single-copy threshold override from the environment.
#pragma once

#include <cstdint>
#include <optional>

#include "plait/core/config.hpp"
#include "plait/core/environment.hpp"
#include "plait/transport/shm/tuning.hpp"

namespace plait {
inline namespace v0 {
namespace shm::detail {

PLAIT_DECL std::optional<std::size_t> single_copy_bytes_from_environment() noexcept {
  try {
    const std::optional<std::size_t> bytes = plait::detail::environment_bytes("PLAIT_SHM_SINGLE_COPY_BYTES");
    if (bytes) return *bytes == 0 ? SIZE_MAX : *bytes;
  } catch (...) {  // reported by read_environment when the communicator was created
  }
  return std::nullopt;
}

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

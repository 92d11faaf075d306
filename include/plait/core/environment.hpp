// Switches every transport reads from the environment when a communicator is
// created (PLAIT_TIMEOUT is in core/timeout.hpp).
#pragma once

#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// PLAIT_CHECK set to anything but "" or "0": check mode for every
/// communicator created from now on. Read once per communicator, not per
/// call: getenv walks the whole environment (about 300 instructions, a fifth
/// of a small shm collective's own work).
PLAIT_DECL bool check_mode_from_environment();

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/environment.ipp"
#endif

// The NVLink protocol's faults as plait::error: what a failed step wrote
// into the device's error word, in words that name the rank, peer and call.
#pragma once

#include <cstdint>
#include <string>

#include "plait/core/call_stamp.hpp"
#include "plait/core/error.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/transport/nvlink/protocol.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink::detail {

/// The plait::error a fault of the device's error word stands for, at `at`
/// (the rank's context, the peer filled in), for a communicator whose waits
/// time out after `timeout`. Cold: only a failed step reaches it.
[[gnu::cold]] inline error fault_error(const fault& f, const error_context& at, clock::duration timeout) {
  const std::string direction = f.is_send != 0 ? "send " : "receive ";
  const std::string message = direction + std::to_string(f.bytes) + " bytes (" + std::to_string(f.done) + " done)";
  switch (static_cast<fault_code>(f.code)) {
    case fault_code::timeout:
      return error(errc::timeout, "timed out after " + plait::detail::seconds_text(timeout) + " waiting to " + message,
                   at);
    case fault_code::tag_mismatch:
      return error(errc::transport,
                   "message with tag " + std::to_string(f.found) + " arrived where tag " + std::to_string(f.expected) +
                       " was expected: the ranks called different operations or in a different order",
                   at);
    case fault_code::size_mismatch:
      return error(errc::size_mismatch,
                   "peer sent " + std::to_string(f.found) + " bytes where this rank expects " +
                       std::to_string(f.expected) + " (do the ranks agree on the sizes?)",
                   at);
    case fault_code::corrupt:
      return error(errc::transport,
                   "corrupt channel while trying to " + message + ": expected " + std::to_string(f.expected) +
                       ", the peer's flags or header say " + std::to_string(f.found),
                   at);
    case fault_code::peer_lost:
      return error(errc::peer_lost,
                   "the process of rank " + std::to_string(f.peer) +
                       " is gone (it ended, or its registered buffer cannot be read) while trying to " + message,
                   at);
    case fault_code::call_mismatch:
      return error(errc::size_mismatch,
                   "rank " + std::to_string(f.peer) + " sent a message of " +
                       plait::describe(call_stamp::from_bits(static_cast<std::uint32_t>(f.found))) +
                       " where this rank runs " +
                       plait::describe(call_stamp::from_bits(static_cast<std::uint32_t>(f.expected))) +
                       " under the same tag: the ranks called different collectives, or with different algorithms, "
                       "layouts or element types",
                   at);
    case fault_code::none: break;
  }
  return error(errc::transport, "unknown device error code " + std::to_string(f.code), at);
}

}  // namespace nvlink::detail
}  // namespace v0
}  // namespace plait

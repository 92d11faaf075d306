// Defines what plait/transport/nvlink/records.hpp declares: the records'
// checksum and their checks (host code only: protocol.hpp, whose functions
// change under nvcc, stays out of the compiled core).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include <unistd.h>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/transport/nvlink/records.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {
namespace detail {

PLAIT_DECL std::uint64_t record_digest(const void* record, std::size_t bytes) noexcept {
  std::uint64_t h = 1469598103934665603ULL;
  const auto* p = static_cast<const unsigned char*>(record);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

// `mine` was built and checked by this rank: a peer's record is compared
// with it field by field (the same magic, version, shape and area size).
PLAIT_DECL void check_area_record(const area_record& theirs, const area_record& mine, int peer, error_context at) {
  at.peer = peer;
  const area_record& r = theirs;
  auto bad = [&](const std::string& what) {
    return error(errc::transport, "rank " + std::to_string(peer) + " sent a bad staging-area record: " + what, at);
  };
  if (r.magic != mine.magic || r.checksum != r.digest()) throw bad("corrupt or foreign");
  if (r.version != mine.version) throw bad("protocol version " + std::to_string(r.version));
  if (r.rank != peer) throw bad("it names rank " + std::to_string(r.rank));
  if (r.ranks != mine.ranks) throw bad("group of " + std::to_string(r.ranks) + " ranks");
  if (r.slots != mine.slots || r.slot_bytes != mine.slot_bytes || r.channels != mine.channels) {
    throw error(errc::size_mismatch,
                "rank " + std::to_string(peer) + " uses " + std::to_string(r.slots) + " slots of " +
                    std::to_string(r.slot_bytes) + " bytes in " + std::to_string(r.channels) + " channels, this rank " +
                    std::to_string(mine.slots) + " of " + std::to_string(mine.slot_bytes) + " in " +
                    std::to_string(mine.channels) + " (pass the same nvlink::options everywhere)",
                at);
  }
  if (r.area_bytes != mine.area_bytes) throw bad("area of " + std::to_string(r.area_bytes) + " bytes");
  if (r.pid <= 0) throw bad("pid " + std::to_string(r.pid));
  if (r.host != mine.host) {
    throw error(errc::unsupported,
                "rank " + std::to_string(peer) +
                    " runs on another node; NVLink groups stay inside one node "
                    "(split the bootstrap by node first)",
                at);
  }
}

PLAIT_DECL const char* describe(registration_status status) noexcept {
  switch (status) {
    case registration_status::ok: return "registered";
    case registration_status::empty: return "empty (nothing to register)";
    case registration_status::null: return "a null buffer of nonzero size";
    case registration_status::overlap: return "it overlaps a buffer already registered with this communicator";
    case registration_status::not_device: return "it is not memory the device can use";
    case registration_status::too_many: return "too many live registrations (at most 16 per communicator)";
  }
  return "unknown status";
}

PLAIT_DECL bool buffer_record_intact(const buffer_record& r, int peer, std::uint32_t max_id) noexcept {
  if (r.magic != buffer_magic || r.checksum != r.digest() || r.rank != peer) return false;
  if (r.status > static_cast<std::uint32_t>(registration_status::too_many)) return false;
  return r.status != static_cast<std::uint32_t>(registration_status::ok) || (r.id < max_id && r.serial != 0);
}

PLAIT_DECL std::uint64_t host_hash() {
  std::array<char, 256> name{};
  gethostname(name.data(), name.size() - 1);
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : name) {
    if (c == '\0') break;
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return h;
}

}  // namespace detail
}  // namespace nvlink
}  // namespace v0
}  // namespace plait

// The NVLink transport's wire records: what ranks tell each other over the
// bootstrap communicator when they set up a group (area_record) and when they
// register a buffer (buffer_record). Both are fixed-size, trivially copyable
// and end in a checksum over everything before it; a receiver checks every
// field, never trusting a peer's record.
//
// area_record, 192 bytes, one per rank at construction and split:
//   magic "PLNV", protocol version, rank, device, pid, host-name hash,
//   ranks, slots, slot_bytes, channels, area bytes, the area's address in
//   its owner's process, the policy's 64-byte handle, FNV-1a checksum.
// buffer_record, 144 bytes, one per rank and register_buffer call:
//   magic "PLBR", rank, registration_status, registry id, serial, pid,
//   address, bytes, exported flag, device, offset in the exported
//   allocation, the policy's 64-byte handle, FNV-1a checksum.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {
namespace detail {

/// FNV-1a over the first `bytes` bytes of `record`: the records' checksum.
PLAIT_DECL std::uint64_t record_digest(const void* record, std::size_t bytes) noexcept;

/// What a rank tells its peers about its staging area.
struct area_record {
  std::uint32_t magic;
  std::uint32_t version;
  std::int32_t rank;
  std::int32_t device;
  std::int64_t pid;
  std::uint64_t host;  ///< hash of the host name: IPC works only inside one node
  std::uint32_t ranks;
  std::uint32_t slots;
  std::uint64_t slot_bytes;
  std::uint32_t channels;
  std::uint32_t reserved;
  std::uint64_t area_bytes;
  std::uint64_t address;  ///< valid in the owner's process (peers that are its threads use it)
  std::array<std::byte, 64> handle;
  std::uint64_t checksum;

  [[nodiscard]] std::uint64_t digest() const noexcept { return record_digest(this, offsetof(area_record, checksum)); }
};
static_assert(std::is_trivially_copyable_v<area_record>);

/// Throws plait::error (at `at`, naming `peer`) unless peer's record `theirs`
/// is intact and describes an area of the same shape as `mine`, on this node.
PLAIT_DECL void check_area_record(const area_record& theirs, const area_record& mine, int peer, error_context at);

/// Why a rank cannot register its buffer; every rank learns every rank's.
enum class registration_status : std::uint32_t { ok = 0, empty, null, overlap, not_device, too_many };

/// "empty (nothing to register)", ...: a status as error messages write it.
PLAIT_DECL const char* describe(registration_status status) noexcept;

/// What a rank tells its peers about a buffer it registers.
struct buffer_record {
  std::uint32_t magic;
  std::int32_t rank;
  std::uint32_t status;  ///< a registration_status
  std::uint32_t id;      ///< registry slot, < max_registrations when status is ok
  std::uint64_t serial;
  std::int64_t pid;
  std::uint64_t address;  ///< valid in the owner's process
  std::uint64_t bytes;
  std::uint32_t exported;  ///< buffer_export::ok
  std::int32_t device;     ///< the owner's device
  std::uint64_t offset;    ///< buffer_export::offset
  std::array<std::byte, 64> handle;
  std::uint64_t checksum;

  [[nodiscard]] std::uint64_t digest() const noexcept { return record_digest(this, offsetof(buffer_record, checksum)); }
};
static_assert(std::is_trivially_copyable_v<buffer_record>);
inline constexpr std::uint32_t buffer_magic = 0x52424c50;  // "PLBR"

/// True if peer's record `r` is intact: magic, checksum, rank, a known
/// status, and for an accepted buffer a registry id below `max_id` and a serial.
PLAIT_DECL bool buffer_record_intact(const buffer_record& r, int peer, std::uint32_t max_id) noexcept;

/// A hash of this host's name (records of ranks on other nodes are refused).
PLAIT_DECL std::uint64_t host_hash();

}  // namespace detail
}  // namespace nvlink
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/transport/nvlink/impl/records.ipp"
#endif

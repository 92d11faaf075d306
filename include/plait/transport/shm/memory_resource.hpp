// plait::shm::memory_resource — a std::pmr::memory_resource over a pool of
// shared memory that belongs to one rank of a shm communicator
// (comm.memory_resource()), and what a receiver keeps of the peers' pools.
//
// Unlike comm.allocate<T>(n), nothing here is collective: a rank allocates on
// its own. Its pool is a series of POSIX shared-memory segments, each created
// by this rank (O_EXCL, mode 0600) under the name
// "/plait-p<pid>-<32 hex digits of the pool's random key>-<segment id>";
// memory freed in a segment is reused (first fit, 64-byte granules), and a
// request that fits no segment creates a new one, at least twice the size of
// the last (1 MiB first). A send from pool memory publishes {pool key,
// segment id, offset} in its reference; a receiver in another process maps
// that segment by name the first time a message refers to it and keeps the
// mapping until its communicator ends. A receiver that is a thread of this
// process reads the bytes by address (same address space, nothing to map).
//
// Lifetime of the names: a segment's name exists from its creation until the
// communicator that owns the pool ends (or the pool does, whichever comes
// first). A peer maps a segment only while it reads a message from it, which
// completes before the send does, so every name a peer can need still exists;
// segments created after that are unlinked at once. Segments are kept (and
// reused) until the pool ends, when this rank unmaps them; peers unmap theirs
// when their communicator ends. When every peer is a thread of this process,
// no segment keeps a name at all. A process killed while a name exists leaves
// it behind; the next pool any process of this user creates removes names
// whose creator has ended.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <memory_resource>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

class communicator;

namespace detail {

/// The random key that, with its creator's pid, names a pool's segments.
struct pool_key {
  std::uint64_t high = 0;
  std::uint64_t low = 0;
};

/// The name of segment `id` of the pool `key` created by process `pid`.
PLAIT_DECL std::string pool_segment_name(std::int32_t pid, pool_key key, std::uint64_t id);

/// True when `name` (at most `capacity` characters, maybe unterminated) is a
/// name pool_segment_name makes.
PLAIT_DECL bool is_pool_segment_name(const char* name, std::size_t capacity) noexcept;

/// Removes pool segment names whose creating process has ended (see
/// remove_abandoned_parts: the same rules). Once per process.
PLAIT_DECL void remove_abandoned_pool_segments() noexcept;

/// Where bytes lie in a pool: segment id (0: not in the pool) and offset.
struct pool_location {
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
};

/// The peers' pool segments this rank has mapped, each on first sight.
class pool_mappings {
 public:
  pool_mappings() = default;
  pool_mappings(pool_mappings&& other) noexcept : mappings_(std::move(other.mappings_)) { other.mappings_.clear(); }
  pool_mappings& operator=(pool_mappings&& other) noexcept;
  pool_mappings(const pool_mappings&) = delete;
  pool_mappings& operator=(const pool_mappings&) = delete;
  ~pool_mappings() { unmap_all(); }

  /// Segment `id` of the pool `key` that process `pid` (rank `peer`) created,
  /// mapped here now if it is not yet; empty when it cannot be opened or is
  /// not this user's with mode 0600 (the caller then reads by address).
  /// Mapped read-write: a receiver may write a sender's copy there (isend_with_copy).
  std::span<std::byte> find_or_map(int peer, std::int32_t pid, pool_key key, std::uint64_t id) noexcept;

 private:
  struct mapping {
    int peer;
    std::int32_t pid;
    pool_key key;
    std::uint64_t id;
    std::byte* base;
    std::size_t bytes;
  };
  void unmap_all() noexcept;
  std::vector<mapping> mappings_;
};

}  // namespace detail

/// A std::pmr::memory_resource in shared memory that the peers of one shm
/// communicator map, from comm.memory_resource(): a collective's send
/// buffer allocated here is read by the receivers in place (one memcpy, no
/// kernel call), as with comm.allocate. Not collective: each rank allocates
/// from a pool of its own. Unsynchronized, like the communicator: one thread
/// at a time. Allocations are aligned to at least 64 bytes; memory is not
/// zeroed. A failure (shared memory exhausted, an impossible size) throws
/// plait::error with errc::transport. The pool lives as long as its
/// communicator or any plait::shm::allocator made from it, whichever is
/// longer (see the file comment for when names and mappings go).
class memory_resource final : public std::pmr::memory_resource {
 public:
  memory_resource(const memory_resource&) = delete;
  memory_resource& operator=(const memory_resource&) = delete;
  /// Unmaps every segment (and removes any name still there).
  ~memory_resource() override;

  /// The shared-memory segments the pool has created so far.
  [[nodiscard]] std::size_t segment_count() const noexcept { return segments_.size(); }
  /// Bytes handed out and not yet deallocated (each request rounded up to 64 bytes).
  [[nodiscard]] std::size_t bytes_in_use() const noexcept { return bytes_in_use_; }

 private:
  friend class communicator;

  struct segment {
    std::byte* base = nullptr;
    std::size_t bytes = 0;
    std::uint64_t id = 0;
    std::string name;                         // empty once removed
    std::map<std::size_t, std::size_t> free;  // offset -> length of each free run
  };

  /// `rank` names this rank in errors; `named`: some peer is another process.
  memory_resource(int rank, bool named);

  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  /// The segment holding all of `bytes` and where, or {0, 0}: the send path's lookup.
  [[nodiscard]] detail::pool_location find(const std::byte* data, std::size_t bytes) const noexcept;
  /// The communicator has ended: no peer maps a segment any more.
  void remove_names() noexcept;
  [[nodiscard]] detail::pool_key key() const noexcept { return key_; }

  segment& add_segment(std::size_t at_least);
  [[nodiscard]] segment* segment_of(const std::byte* p) const noexcept;

  int rank_;
  bool named_;
  std::int32_t pid_;
  detail::pool_key key_;
  std::size_t bytes_in_use_ = 0;
  std::vector<std::unique_ptr<segment>> segments_;  // in creation order: id = index + 1
  std::vector<segment*> by_address_;                // sorted by base
};

}  // namespace shm
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/transport/shm/impl/memory_resource.ipp"
#endif

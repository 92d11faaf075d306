// The NVLink transport's buffer registry: the buffers a rank registered
// for zero-copy (register_buffer) and the registry part of its staging area,
// which says where this rank reaches each peer's registered buffers (written
// by the host only while no step runs; protocol.hpp reads it).
//
// Registering is collective: every rank exports its buffer (buffer_export),
// all exchange buffer_records over the bootstrap, a refusal anywhere is a
// refusal everywhere before anything is mapped, then every rank imports the
// peers' buffers it can reach (buffer_import) and the ranks exchange who
// reaches whom. Lookups go through the live registrations only: there is no
// address-keyed cache that could go stale after a free.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "plait/core/error.hpp"
#include "plait/transport/nvlink/bootstrap.hpp"
#include "plait/transport/nvlink/protocol.hpp"
#include "plait/transport/nvlink/records.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {
namespace detail {

/// What a policy gives for a buffer it exports (register_buffer): a handle
/// peers in other processes open, and where the buffer starts inside the
/// allocation the handle names. ok false: other processes cannot map it.
struct buffer_export {
  bool ok = false;
  std::array<std::byte, 64> handle{};
  std::uint64_t offset = 0;
};

/// A peer's registered buffer as reached here: the registry entry (its
/// serial set by the communicator) and what release_buffer closes (or null).
/// ok false: this pair falls back to staging.
struct buffer_import {
  bool ok = false;
  registration_entry entry{};
  std::byte* mapping = nullptr;
};

/// One collective registration as this rank sees it.
struct registered_buffer {
  std::uint64_t serial = 0;              ///< this rank's (nonzero; unique per communicator)
  std::uint32_t id = max_registrations;  ///< our registry slot; max_registrations if empty
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  std::uint32_t readers = 0;         ///< ranks that read it straight from here (bit per rank)
  std::vector<std::uint32_t> ids;    ///< per peer: its slot we filled in our registry (max_registrations: none)
  std::vector<std::byte*> mappings;  ///< per peer: what release_buffer closes
};

/// A rank's live registrations over policy Ops, and its area's registry.
template <class Ops>
class buffer_registry {
 public:
  /// Where the registry lives: this rank's area of shape `layout`, written
  /// through `ops` (both outlive the registry).
  void attach(Ops& ops, const area_layout& layout, std::byte* area) noexcept {
    ops_ = &ops;
    layout_ = &layout;
    area_ = area;
  }

  /// The registry id + 1 of a live registration that holds [data, data +
  /// bytes) and that `peer` reads directly, or 0 (the send goes through staging).
  [[nodiscard]] std::uint32_t source_of(const std::byte* data, std::size_t bytes, int peer) const noexcept {
    for (const registered_buffer& r : live_) {
      if (r.id < max_registrations && (r.readers >> peer & 1U) != 0 && data >= r.data &&
          static_cast<std::size_t>(data - r.data) <= r.bytes &&
          r.bytes - static_cast<std::size_t>(data - r.data) >= bytes) {
        return r.id + 1;
      }
    }
    return 0;
  }

  /// The live registration of `serial`, or null.
  [[nodiscard]] const registered_buffer* find(std::uint64_t serial) const noexcept {
    for (const registered_buffer& r : live_) {
      if (r.serial == serial) return &r;
    }
    return nullptr;
  }

  /// The collective part of register_buffer over `boot` (this rank `at.rank`
  /// on `device`); returns the registration's serial. `on_failure(e)` runs
  /// before a failure that leaves the group inconsistent is rethrown (the
  /// communicator poisons itself); a refused registration is only thrown.
  template <class OnFailure>
  std::uint64_t add(bootstrap_link& boot, int device, std::span<const std::byte> bytes, error_context at,
                    OnFailure&& on_failure) {
    const int rank = at.rank;
    const int size = boot.size();
    auto about = [&](int peer) {
      error_context c = at;
      c.peer = peer;
      return c;
    };
    auto* data = const_cast<std::byte*>(bytes.data());
    const char* problem = nullptr;
    auto status = registration_status::ok;
    std::size_t live = 0;
    for (const registered_buffer& r : live_) live += r.id < max_registrations ? 1 : 0;
    if (bytes.empty()) {
      status = registration_status::empty;
    } else if (data == nullptr) {
      status = registration_status::null;
    } else if (std::any_of(live_.begin(), live_.end(), [&](const registered_buffer& r) {
                 return r.bytes != 0 && data < r.data + r.bytes && r.data < data + bytes.size();
               })) {
      status = registration_status::overlap;
    } else if ((problem = ops_->check_buffer(data)) != nullptr) {
      status = registration_status::not_device;
    } else if (live >= max_registrations) {
      status = registration_status::too_many;
    }
    const std::uint64_t serial = ++serial_counter_;
    std::uint32_t free_id = max_registrations;
    buffer_export ex;
    if (status == registration_status::ok) {
      free_id = 0;
      while (std::any_of(live_.begin(), live_.end(), [&](const registered_buffer& r) { return r.id == free_id; }))
        ++free_id;
      ex = ops_->export_buffer(data, bytes.size());
    }
    buffer_record mine{.magic = buffer_magic,
                       .rank = rank,
                       .status = static_cast<std::uint32_t>(status),
                       .id = free_id,
                       .serial = serial,
                       .pid = static_cast<std::int64_t>(getpid()),
                       .address = reinterpret_cast<std::uintptr_t>(data),
                       .bytes = bytes.size(),
                       .exported = ex.ok ? 1U : 0U,
                       .device = device,
                       .offset = ex.offset,
                       .handle = ex.handle,
                       .checksum = 0};
    mine.checksum = mine.digest();

    std::vector<buffer_record> all(static_cast<std::size_t>(size));
    try {
      boot.all_gather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
    } catch (const error& e) {
      on_failure(e);
      throw;
    }
    for (int peer = 0; peer < size; ++peer) {
      if (!buffer_record_intact(all[static_cast<std::size_t>(peer)], peer, max_registrations)) {
        const error e(errc::transport, "rank " + std::to_string(peer) + " sent a corrupt buffer registration",
                      about(peer));
        on_failure(e);
        throw e;
      }
    }
    // Refused anywhere: refused everywhere, with the first refusing rank named, before anything is mapped.
    for (int peer = 0; peer < size; ++peer) {
      const auto st = static_cast<registration_status>(all[static_cast<std::size_t>(peer)].status);
      if (st == registration_status::ok || st == registration_status::empty) continue;
      std::string why = "rank " + std::to_string(peer) + " cannot register its buffer of " +
                        std::to_string(all[static_cast<std::size_t>(peer)].bytes) + " bytes: " + describe(st);
      if (peer == rank && problem != nullptr) why += std::string(" (") + problem + ")";
      throw error(errc::invalid_argument, why, about(peer));
    }

    registered_buffer reg;
    reg.serial = serial;
    reg.id = mine.id;
    reg.data = status == registration_status::ok ? data : nullptr;
    reg.bytes = status == registration_status::ok ? bytes.size() : 0;
    reg.ids.assign(static_cast<std::size_t>(size), max_registrations);
    reg.mappings.assign(static_cast<std::size_t>(size), nullptr);
    std::uint32_t reached = 0;  // ranks whose buffer this rank reads directly
    try {
      for (int peer = 0; peer < size; ++peer) {
        const buffer_record& r = all[static_cast<std::size_t>(peer)];
        if (r.status != static_cast<std::uint32_t>(registration_status::ok)) continue;
        buffer_import in;
        if (peer == rank) {
          in.ok = true;
          in.entry = {reinterpret_cast<std::uintptr_t>(data), bytes.size(), 0, 0};
        } else {
          const bool same_process = r.pid == mine.pid;
          if (!same_process && r.exported == 0) continue;  // not mappable elsewhere: staging for this pair
          buffer_export theirs;
          theirs.ok = true;
          theirs.handle = r.handle;
          theirs.offset = r.offset;
          try {
            in = ops_->import_buffer(theirs, reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(r.address)),
                                     static_cast<std::size_t>(r.bytes), same_process, r.pid, r.device);
          } catch (const error&) {
            in.ok = false;  // e.g. IPC refused: this pair uses staging
          }
          if (!in.ok) continue;
        }
        in.entry.serial = r.serial;
        write_entry(peer, r.id, in.entry);
        reg.ids[static_cast<std::size_t>(peer)] = r.id;
        reg.mappings[static_cast<std::size_t>(peer)] = in.mapping;
        reached |= 1U << peer;
      }
      std::vector<std::uint32_t> reach(static_cast<std::size_t>(size));
      boot.all_gather(std::as_bytes(std::span(&reached, 1)), std::as_writable_bytes(std::span(reach)));
      for (int peer = 0; peer < size; ++peer) {
        if ((reach[static_cast<std::size_t>(peer)] >> rank & 1U) != 0) reg.readers |= 1U << peer;
      }
    } catch (const error& e) {
      drop(reg);
      on_failure(e);
      throw;
    }
    live_.push_back(std::move(reg));
    return serial;
  }

  /// The local part of unregistering: clears our registry entries of
  /// `serial` and closes its mappings (the caller makes it collective).
  void remove(std::uint64_t serial) noexcept {
    const auto it =
        std::find_if(live_.begin(), live_.end(), [&](const registered_buffer& r) { return r.serial == serial; });
    if (it == live_.end()) return;
    drop(*it);
    live_.erase(it);
  }

  /// Closes every mapping (teardown: the area goes away with the registry).
  void release_all() noexcept {
    for (registered_buffer& r : live_) {
      for (std::byte*& m : r.mappings) {
        if (m != nullptr) ops_->release_buffer(m);
        m = nullptr;
      }
    }
    live_.clear();
  }

 private:
  void write_entry(int owner, std::uint32_t id, const registration_entry& e) {
    ops_->write_area(reinterpret_cast<std::byte*>(layout_->entry(area_, owner, id)), &e, sizeof e);
  }

  /// Clears what `reg` put into our registry and closes its mappings.
  void drop(registered_buffer& reg) noexcept {
    static constexpr registration_entry zero_entry{};
    for (int peer = 0; peer < static_cast<int>(reg.ids.size()); ++peer) {
      const auto p = static_cast<std::size_t>(peer);
      if (reg.ids[p] < max_registrations) {
        try {
          ops_->write_area(reinterpret_cast<std::byte*>(layout_->entry(area_, peer, reg.ids[p])), &zero_entry,
                           sizeof zero_entry);
        } catch (...) {
        }
        reg.ids[p] = max_registrations;
      }
      if (reg.mappings[p] != nullptr) ops_->release_buffer(reg.mappings[p]);
      reg.mappings[p] = nullptr;
    }
  }

  Ops* ops_ = nullptr;
  const area_layout* layout_ = nullptr;
  std::byte* area_ = nullptr;
  std::vector<registered_buffer> live_;  // live handles only
  std::uint64_t serial_counter_ = 0;
};

}  // namespace detail
}  // namespace nvlink
}  // namespace v0
}  // namespace plait

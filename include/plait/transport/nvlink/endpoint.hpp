// What one rank of an NVLink group owns, behind the communicator's one
// pointer: the bootstrap link, the device-operations policy and its copy
// engine, the staging areas (its own and every peer's as mapped here), the
// transfers recorded for the next step and the buffer registry. open() sets
// the areas up, collectively; the destructor tears them down, collectively.
// The communicator's settings (rank, timeout, tags, poisoning) are
// plait::communicator_core's and live in the communicator itself: a
// registration handle that outlives a move reaches this object alone, and
// needs nothing else.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "plait/core/error.hpp"
#include "plait/core/receive_combine.hpp"
#include "plait/transport/nvlink/bootstrap.hpp"
#include "plait/transport/nvlink/protocol.hpp"
#include "plait/transport/nvlink/records.hpp"
#include "plait/transport/nvlink/registry.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {

/// Shape of the staging area (per rank: size() inbound channels of `slots`
/// chunks of `slot_bytes`). Every rank of a group must pass the same values.
struct options {
  std::uint32_t slots = 0;       ///< chunks in flight per peer and channel; 0: the policy's default
  std::uint64_t slot_bytes = 0;  ///< bytes per chunk (a multiple of 16); 0: the policy's default
  /// Parallel channels per pair (a message is split across them: several
  /// thread blocks per transfer on a GPU); 0: the policy's default. At most
  /// 16, and at most 128 / size(): more is reduced to that, the same way on every rank.
  std::uint32_t channels = 0;
};

namespace detail {

/// `at`, naming `peer`.
constexpr error_context with_peer(error_context at, int peer) noexcept {
  at.peer = peer;
  return at;
}

/// A transfer isend/irecv recorded for the next step.
struct posted_message {
  int peer;
  bool is_send;
  message what;
};

/// What one rank of a group owns over policy Ops (see the top of this file).
template <class Ops>
struct endpoint {
  using stream_type = typename Ops::stream_type;
  using engine_type = typename Ops::engine;

  std::unique_ptr<bootstrap_link> boot;
  Ops ops;
  engine_type engine;
  int device = 0;
  stream_type stream{};
  area_layout layout{};
  std::byte* area = nullptr;
  std::vector<std::byte*> peer_areas;
  std::vector<bool> mapped;  // peer area opened through an IPC handle (else a raw address)
  std::vector<posted_message> pending;
  /// The pending step's combining receives (irecv_combine): their operands,
  /// and the first one's description, whose reduction they all share.
  step_combines combines{};
  const receive_combine* step_combine = nullptr;
  /// Payload bytes posted to combine as they arrive.
  std::uint64_t combined_bytes = 0;
  std::uint64_t posted = 0;
  std::uint64_t zero_copy_bytes = 0;
  buffer_registry<Ops> registry;
  /// What registration handles hold: null once this endpoint is gone.
  std::shared_ptr<endpoint*> link = std::make_shared<endpoint*>(this);

  endpoint(std::unique_ptr<bootstrap_link> b, int dev, stream_type st)
      : boot(std::move(b)), ops(dev), engine(ops, &stream), device(dev), stream(st) {}
  endpoint(const endpoint&) = delete;
  endpoint& operator=(const endpoint&) = delete;

  /// The staging shape of a group of `size` asked for by `shape` (zeros:
  /// the policy's defaults). Throws plait::error at `at` for a group or shape
  /// out of range; channels are reduced so every lane of a step fits one launch.
  static geometry geometry_for(const options& shape, int size, const error_context& at) {
    if (size > max_ranks) {
      throw error(errc::unsupported,
                  "an NVLink group holds at most " + std::to_string(max_ranks) + " ranks, not " + std::to_string(size),
                  at);
    }
    geometry g{.ranks = static_cast<std::uint32_t>(size),
               .slots = shape.slots != 0 ? shape.slots : Ops::default_slots,
               .slot_bytes = shape.slot_bytes != 0 ? shape.slot_bytes : Ops::default_slot_bytes,
               .channels = shape.channels != 0 ? shape.channels : Ops::default_channels};
    if (g.slots > 1024 || g.slot_bytes % 16 != 0 || g.slot_bytes > (std::uint64_t{1} << 30) ||
        g.channels > max_channels) {
      throw error(errc::invalid_argument,
                  "staging shape " + std::to_string(g.slots) + " slots of " + std::to_string(g.slot_bytes) +
                      " bytes, " + std::to_string(g.channels) +
                      " channels: slots must be 1..1024, slot_bytes a multiple of 16 " + "up to 1 GiB, channels 1..16",
                  at);
    }
    // Every lane of a step must fit one launch: fewer channels for large groups.
    g.channels = std::min<std::uint32_t>(g.channels, static_cast<std::uint32_t>(max_lanes / (2 * size)));
    return g;
  }

  /// Collective: allocates this rank's area of shape `g`, exchanges the
  /// area records over the bootstrap, checks every peer's and maps its area.
  /// Throws plait::error at `at` (naming the peer) on any bad record or area.
  void open(const geometry& g, const error_context& at) {
    const int rank = boot->rank();
    const int size = boot->size();
    layout = area_layout::of(g);
    area = ops.allocate_area(layout.total);
    registry.attach(ops, layout, area);
    const area_header header{.magic = area_magic,
                             .version = protocol_version,
                             .rank = rank,
                             .ranks = g.ranks,
                             .slots = g.slots,
                             .channels = g.channels,
                             .slot_bytes = g.slot_bytes};
    ops.write_area(area, &header, sizeof header);

    area_record mine{.magic = area_magic,
                     .version = protocol_version,
                     .rank = rank,
                     .device = device,
                     .pid = static_cast<std::int64_t>(getpid()),
                     .host = host_hash(),
                     .ranks = g.ranks,
                     .slots = g.slots,
                     .slot_bytes = g.slot_bytes,
                     .channels = g.channels,
                     .reserved = 0,
                     .area_bytes = layout.total,
                     .address = reinterpret_cast<std::uintptr_t>(area),
                     .handle = ops.export_area(area, layout.total),
                     .checksum = 0};
    mine.checksum = mine.digest();

    std::vector<area_record> all(static_cast<std::size_t>(size));
    boot->all_gather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
    peer_areas.assign(static_cast<std::size_t>(size), nullptr);
    mapped.assign(static_cast<std::size_t>(size), false);
    for (int peer = 0; peer < size; ++peer) {
      const auto p = static_cast<std::size_t>(peer);
      if (peer == rank) {
        peer_areas[p] = area;
        continue;
      }
      const area_record& r = all[p];
      check_area_record(r, mine, peer, at);
      const bool same_process = r.pid == mine.pid;
      peer_areas[p] = ops.import_area(r.handle, r.area_bytes, same_process,
                                      reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(r.address)), r.device);
      mapped[p] = !same_process;
      if constexpr (requires { ops.watch_peer(peer, r.pid); }) {
        if (!same_process) ops.watch_peer(peer, r.pid);  // a policy that can tell a dead process
      }
      area_header theirs{};
      ops.read_area(&theirs, peer_areas[p], sizeof theirs);
      if (theirs.magic != area_magic || theirs.version != protocol_version || theirs.rank != peer ||
          theirs.ranks != g.ranks || theirs.slots != g.slots || theirs.slot_bytes != g.slot_bytes ||
          theirs.channels != g.channels) {
        throw error(errc::transport,
                    "the staging area mapped from rank " + std::to_string(peer) +
                        " does not carry that rank's header (stale or foreign handle)",
                    with_peer(at, peer));
      }
    }
    // Everyone has mapped everyone: names standing in for handles can go.
    boot->barrier();
    ops.unexport_area();
  }

  /// The collective part of a registration handle's destruction: nobody reads
  /// the buffers any more (streams synchronized, barrier), then everyone
  /// unmaps, then a barrier so the owner may free its buffer on return.
  void remove_registration(std::uint64_t serial) noexcept {
    if (registry.find(serial) == nullptr) return;
    try {
      ops.synchronize(stream);
    } catch (...) {
    }
    try {
      boot->barrier();
    } catch (...) {
    }
    registry.remove(serial);
    try {
      boot->barrier();
    } catch (...) {
    }
  }

  /// Collective teardown: no peer may still write into our area, and we
  /// must not write into theirs once they are gone. Poisoned ranks take
  /// part too (their peers may be healthy); errors cannot escape a
  /// destructor, and the bootstrap's timeout bounds the wait.
  ~endpoint() {
    try {
      ops.synchronize(stream);
    } catch (...) {
    }
    if (boot) {
      try {
        boot->barrier();
      } catch (...) {
      }
    }
    *link = nullptr;  // handles still alive become empty
    registry.release_all();
    for (std::size_t p = 0; p < peer_areas.size(); ++p) {
      if (peer_areas[p] != nullptr && peer_areas[p] != area) ops.release_import(peer_areas[p], layout.total, mapped[p]);
    }
    if (area != nullptr) ops.release_area(area, layout.total);
  }
};

}  // namespace detail
}  // namespace nvlink
}  // namespace v0
}  // namespace plait

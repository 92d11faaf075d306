// The NVLink P2P protocol, written once for every device-operations policy.
//
// Each rank owns one registered staging area (device memory on a GPU, shared
// memory in the host emulation). Peers map it: by CUDA IPC (or the shm name in
// the emulation) when they are other processes, by its raw address when they
// are threads of the same process. The area holds, for every peer p and each
// of `channels` channels (parallel streams of one pair, so that a message
// moves through several thread blocks at once on a GPU):
//   - an inbound channel of `slots` chunks of `slot_bytes`, written by p only;
//   - flags on their own cache lines: `head` (chunks p has written into our
//     inbound channel, written by p), `credit` (chunks of ours that p has
//     consumed from its inbound channel, written by p), and our own running
//     counts `sent` and `taken` towards p, which persist between launches.
// A sender writes a chunk's header and payload into the receiver's area and
// then publishes it with a release store of `head`; the receiver checks the
// header against the receive it expects (tag, call stamp, message size,
// offset, chunk size: nothing a peer wrote is trusted), copies the chunk out and hands the
// slot back with a release store of `credit` into the sender's area. So a
// message of any size streams through a fixed area, `slots` chunks in flight.
//
// Zero-copy: a send whose bytes lie in a buffer registered with the
// communicator (register_buffer) carries no payload. The sender writes one
// header per channel naming its registration (id, serial, offset) instead;
// the receiver looks the registration up in its own area's registry (the
// peer's buffer as mapped here, written by the host when the buffer was
// registered), checks bounds and serial, copies the whole part straight out
// of the peer's buffer and returns the slot. The sender's lane finishes only
// once every such slot has come back (the buffer has been read), so in stream
// order the user may overwrite the buffer after the collective.
//
// Combining receives (irecv_combine, a reduction's): a receive may fold its
// chunks into its destination as they arrive, out = arriving op held (or
// held op arriving), straight out of the slot or the peer's registered
// buffer, instead of copying them. Its other operand and side travel in the
// step's `combines`; the policy runs the combine (the emulation the fold's
// host function, CUDA the step kernel instantiated for the reduction).
//
// Channel k of a message carries its part k: bytes [lo, hi) of part_of().
// Every transfer of one wait_all forms a "step": one lane per (peer,
// direction, channel), each lane its part of the peer's messages in posting
// order. advance() moves
// one lane by at most one chunk and never blocks; the policies drive it: the
// host emulation round-robins all lanes on the calling thread, the CUDA
// policy runs each lane in its own thread block. Both report failures through
// the same fault record, which the communicator turns into plait::error.
//
// Not included by <plait/plait.hpp>: PLAIT_HOST_DEVICE changes these
// definitions under nvcc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plait/core/host_device.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {
namespace detail {

inline constexpr std::uint32_t area_magic = 0x564e4c50;  // "PLNV"
inline constexpr std::uint32_t protocol_version = 3;
/// Ranks in one NVLink group: a node's GPUs, several ranks per GPU allowed.
inline constexpr int max_ranks = 32;
/// Lanes of one step: a send and a receive lane per peer (self included) and
/// channel at most; a group uses at most max_lanes / (2 * ranks) channels.
inline constexpr int max_lanes = 256;
/// Channels per pair at most.
inline constexpr std::uint32_t max_channels = 16;
/// Messages flushed by one wait_all (kernel parameters are bounded).
inline constexpr int max_messages = 64;
/// Combining receives in one step at most: their operands travel in the
/// step's kernel parameters too.
inline constexpr int max_combining_receives = 16;
/// Live registered buffers per rank and communicator (register_buffer).
inline constexpr std::uint32_t max_registrations = 16;
/// Alignment of everything in an area: flags do not share cache lines, and
/// payloads take 16-byte vector copies.
inline constexpr std::size_t area_alignment = 128;

/// The shape of a staging area; every rank of a group uses the same one.
struct geometry {
  std::uint32_t ranks = 0;
  std::uint32_t slots = 0;
  std::uint64_t slot_bytes = 0;
  std::uint32_t channels = 1;
};

/// Flags of one peer inside a rank's area, each on its own line so that the
/// peer's writes and our own polling do not contend.
struct alignas(area_alignment) peer_flags {
  alignas(area_alignment) std::uint64_t head;    ///< written by the peer: chunks it put into our inbound channel
  alignas(area_alignment) std::uint64_t credit;  ///< written by the peer: chunks of ours it consumed
  alignas(area_alignment) std::uint64_t sent;    ///< ours: chunks we put into the peer's channel
  std::uint64_t taken;                           ///< ours: chunks we consumed from the peer's channel
};

/// Written by the sender with each chunk; checked by the receiver before use.
struct slot_header {
  std::uint32_t tag;
  std::uint32_t stamp;  ///< call_stamp::bits() of the sender's call under `tag` (0: unknown)
  std::uint32_t channel;
  std::uint32_t reserved;
  std::uint64_t message_bytes;
  std::uint64_t offset;
  std::uint64_t chunk_bytes;
  std::uint32_t source;         ///< 0: payload in the slot; else registration id + 1 (no payload)
  std::uint32_t serial;         ///< the registration's serial (low 32 bits), checked by the receiver
  std::uint64_t source_offset;  ///< where the chunk starts inside the sender's registered buffer
};

/// A registered buffer as this rank reaches it, in this rank's area at
/// (owner rank, registration id); written by the host only while no step runs.
struct registration_entry {
  std::uint64_t address;  ///< the buffer as mapped here (the emulation: in process `pid`)
  std::uint64_t bytes;
  std::uint64_t serial;  ///< 0: no live registration at this id
  std::int64_t pid;      ///< the emulation reads another process's memory (0: mapped here)
};

/// Identifies an area: read back by peers after mapping it.
struct area_header {
  std::uint32_t magic;
  std::uint32_t version;
  std::int32_t rank;
  std::uint32_t ranks;
  std::uint32_t slots;
  std::uint32_t channels;
  std::uint64_t slot_bytes;
};

PLAIT_HOST_DEVICE constexpr std::size_t align_up(std::size_t n) noexcept {
  return (n + area_alignment - 1) / area_alignment * area_alignment;
}

/// Where each part of an area lies (offsets from its start).
struct area_layout {
  geometry shape;
  std::size_t flags_offset = 0;
  std::size_t headers_offset = 0;
  std::size_t registry_offset = 0;
  std::size_t payload_offset = 0;
  std::size_t total = 0;

  static area_layout of(const geometry& g) noexcept {
    area_layout l;
    l.shape = g;
    const std::size_t channels = std::size_t{g.ranks} * g.channels;  // (peer, channel) pairs
    l.flags_offset = align_up(sizeof(area_header));
    l.headers_offset = l.flags_offset + channels * sizeof(peer_flags);
    l.registry_offset = align_up(l.headers_offset + channels * g.slots * sizeof(slot_header));
    l.payload_offset =
        align_up(l.registry_offset + std::size_t{g.ranks} * max_registrations * sizeof(registration_entry));
    l.total = l.payload_offset + channels * g.slots * static_cast<std::size_t>(g.slot_bytes);
    return l;
  }

  PLAIT_HOST_DEVICE std::size_t channel_index(int peer, std::uint32_t channel) const noexcept {
    return static_cast<std::size_t>(peer) * shape.channels + channel;
  }
  PLAIT_HOST_DEVICE peer_flags* flags(std::byte* area, int peer, std::uint32_t channel) const noexcept {
    return reinterpret_cast<peer_flags*>(area + flags_offset) + channel_index(peer, channel);
  }
  PLAIT_HOST_DEVICE slot_header* header(std::byte* area, int peer, std::uint32_t channel,
                                        std::uint64_t slot) const noexcept {
    return reinterpret_cast<slot_header*>(area + headers_offset) + channel_index(peer, channel) * shape.slots + slot;
  }
  PLAIT_HOST_DEVICE registration_entry* entry(std::byte* area, int owner, std::uint32_t id) const noexcept {
    return reinterpret_cast<registration_entry*>(area + registry_offset) +
           static_cast<std::size_t>(owner) * max_registrations + id;
  }
  PLAIT_HOST_DEVICE std::byte* payload(std::byte* area, int peer, std::uint32_t channel,
                                       std::uint64_t slot) const noexcept {
    return area + payload_offset + (channel_index(peer, channel) * shape.slots + slot) * shape.slot_bytes;
  }
};

/// One posted transfer. 24 bytes: max_messages of them travel as kernel
/// parameters, so the registration source shares a word with the size.
struct message {
  std::byte* data;
  std::uint64_t bytes : 56;  ///< below max_message_bytes (the communicator refuses more)
  /// Sends: 0 staged, else the registration id + 1 that holds data.
  /// Receives: 0 a copy, else the combining receive's index + 1 in step_combines.
  std::uint64_t source : 8;
  std::uint32_t tag;
  std::uint32_t stamp;  ///< call_stamp::bits() of this rank's call under `tag` (0: unknown)
};
static_assert(sizeof(message) == 24, "message travels in kernel parameters: keep it small");
static_assert(max_registrations < 255, "message::source holds a registration id + 1 in 8 bits");
/// The largest message one transfer moves (message::bytes has 56 bits).
inline constexpr std::uint64_t max_message_bytes = (std::uint64_t{1} << 56) - 1;

/// plait::stamps_conflict on call_stamp::bits() (call_stamp.hpp is host
/// code): the kind lies in the low byte, zero for a stamp nobody compares.
PLAIT_HOST_DEVICE constexpr bool stamp_bits_conflict(std::uint32_t a, std::uint32_t b) noexcept {
  return a != b && (a & 0xffu) != 0 && (b & 0xffu) != 0;
}

/// One channel of the messages to or from one peer, in posting order:
/// messages[first, first + count). Small: up to max_lanes travel as kernel parameters.
struct lane {
  std::int16_t peer;
  std::uint8_t is_send;
  std::uint8_t channel;
  std::uint8_t first;
  std::uint8_t count;
  std::uint16_t reserved;
};
static_assert(max_messages <= 255, "lane counts messages in 8 bits");

/// The step's combining receives: receive k's other operand (where its
/// message's first element lies; each chunk at offset o meets held[k] + o)
/// and its side.
struct step_combines {
  std::uint64_t held[max_combining_receives];
  std::uint32_t arriving_left;  ///< bit k: receive k's arriving partial is the left operand
  std::uint32_t count;          ///< combining receives in the step
};

/// The other operand of one chunk of a combining receive.
struct combine_operand {
  const std::byte* held;
  bool arriving_left;
};

/// Everything one step needs, passed by value (kernel parameters on a GPU).
struct step_args {
  area_layout layout;
  std::byte* self;                  ///< this rank's area
  std::byte* peer_area[max_ranks];  ///< each peer's area as mapped here (self at our own rank)
  std::int32_t rank;
  std::uint32_t lane_count;
  std::uint64_t timeout_ns;
  lane lanes[max_lanes];
  message messages[max_messages];
  step_combines combines;
};

/// What went wrong, for the error word.
/// call_mismatch: same tag, but the peer's message belongs to another call
/// (expected and found hold both call stamps' bits).
enum class fault_code : std::uint32_t {
  none = 0,
  timeout,
  tag_mismatch,
  size_mismatch,
  corrupt,
  peer_lost,
  call_mismatch
};

/// The first failure of a step. Copied into the communicator's error word,
/// raised on the host by the next call or synchronize().
struct fault {
  std::uint32_t code;  ///< a fault_code
  std::int32_t peer;
  std::uint32_t is_send;
  std::uint32_t reserved;
  std::uint64_t expected;  ///< what this rank expected (tag, size, offset, chunks in flight)
  std::uint64_t found;     ///< what the peer's flags or header said
  std::uint64_t done;      ///< bytes of the message moved before the failure
  std::uint64_t bytes;     ///< size of the message
};

/// A lane's position: its current message and bytes done, and its running chunk count.
struct cursor {
  std::uint32_t index = 0;
  std::uint32_t drain = 0;  ///< a send lane posted zero-copy chunks: wait for their credit before finishing
  std::uint64_t done = 0;
  std::uint64_t count = 0;
};

/// The message a lane is on (its last one while it drains). A lane has at least one.
PLAIT_HOST_DEVICE inline const message& current_message(const step_args& a, const lane& l, const cursor& c) noexcept {
  return a.messages[l.first + (c.index < l.count ? c.index : l.count - 1)];
}

enum class progress : std::uint32_t { moved, blocked, finished, failed };

/// Part of a message that one channel carries: [lo, hi), 16-byte aligned
/// boundaries so that every channel copies whole vectors where it can.
struct part {
  std::uint64_t lo;
  std::uint64_t hi;
};
PLAIT_HOST_DEVICE inline part part_of(std::uint64_t bytes, std::uint32_t channel, std::uint32_t channels) noexcept {
  const std::uint64_t share = ((bytes + channels - 1) / channels + 15) / 16 * 16;  // share * channels >= bytes
  const std::uint64_t lo = share * channel < bytes ? share * channel : bytes;
  const std::uint64_t hi = bytes - lo < share ? bytes : lo + share;
  return {lo, hi};
}

PLAIT_HOST_DEVICE inline std::uint64_t chunk_of(const area_layout& l, const part& p, std::uint64_t done) noexcept {
  const std::uint64_t left = p.hi - p.lo - done;
  return left < l.shape.slot_bytes ? left : l.shape.slot_bytes;
}

PLAIT_HOST_DEVICE inline void set_fault(fault& f, fault_code code, const lane& l, std::uint64_t expected,
                                        std::uint64_t found, const cursor& c, const message& m) noexcept {
  f.code = static_cast<std::uint32_t>(code);
  f.peer = l.peer;
  f.is_send = l.is_send;
  f.reserved = 0;
  f.expected = expected;
  f.found = found;
  f.done = c.done;
  f.bytes = m.bytes;
}

/// Loads the lane's running count from this rank's own flags: before its first advance().
template <class Ops>
PLAIT_HOST_DEVICE void start_lane(Ops& ops, const step_args& a, const lane& l, cursor& c) {
  peer_flags* own = a.layout.flags(a.self, l.peer, l.channel);
  c.index = 0;
  c.drain = 0;
  c.done = 0;
  c.count = ops.read(l.is_send != 0 ? &own->sent : &own->taken);
}

/// Moves lane `l` by at most one chunk. Never waits: `blocked` means the peer
/// has to act first (free a slot, publish a chunk, or read a registered buffer).
///
/// Ops (one per lane; on a GPU every thread of the lane's block calls each
/// function, and each returns the same value to all of them):
///   std::uint64_t load(const std::uint64_t* flag)       acquire load (system scope)
///   void store(std::uint64_t* flag, std::uint64_t v)    release store after all earlier copies
///   T read(const T* p) / void write(T* p, const T& v)    small plain values
///   void copy(std::byte* dst, const std::byte* src, std::uint64_t n)   through a staging slot
///   bool copy_from(std::byte* dst, const registration_entry& e, std::uint64_t offset, std::uint64_t n)
///       straight out of a peer's registered buffer; false if the peer is gone
///   void combine(std::byte* dst, const std::byte* src, const combine_operand& o, std::uint64_t n)
///   bool combine_from(std::byte* dst, const registration_entry& e, std::uint64_t offset,
///                     const combine_operand& o, std::uint64_t n)
///       as copy and copy_from, folding each element into dst with o instead (n whole elements)
template <class Ops>
PLAIT_HOST_DEVICE progress advance(Ops& ops, const step_args& a, const lane& l, cursor& c, fault& f) {
  const area_layout& layout = a.layout;
  const std::uint64_t slots = layout.shape.slots;
  peer_flags* own = layout.flags(a.self, l.peer, l.channel);
  if (c.index >= l.count) {
    if (c.drain == 0) return progress::finished;
    // Zero-copy chunks stay ours until the peer has read them: wait for every credit.
    const std::uint64_t credit = ops.load(&own->credit);
    if (c.count - credit > slots) {
      set_fault(f, fault_code::corrupt, l, c.count, credit, c, current_message(a, l, c));
      return progress::failed;
    }
    if (credit != c.count) return progress::blocked;
    c.drain = 0;
    return progress::finished;
  }
  const message& m = a.messages[l.first + c.index];
  std::byte* peer = a.peer_area[l.peer];
  const part mine = part_of(m.bytes, l.channel, layout.shape.channels);
  std::uint64_t chunk = chunk_of(layout, mine, c.done);
  const std::uint64_t offset = mine.lo + c.done;  // within the message

  if (l.is_send != 0) {
    const std::uint64_t credit = ops.load(&own->credit);
    const std::uint64_t in_flight = c.count - credit;  // wraps to a huge value if the peer claims too much
    if (in_flight > slots) {
      set_fault(f, fault_code::corrupt, l, c.count, credit, c, m);
      return progress::failed;
    }
    if (in_flight == slots) return progress::blocked;
    const std::uint64_t slot = c.count % slots;
    const auto source = static_cast<std::uint32_t>(m.source);
    if (source != 0) {
      // Zero-copy: one header for the whole part, naming where it lies in our registered buffer.
      const registration_entry e = ops.read(layout.entry(a.self, a.rank, source - 1));
      const auto base = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(m.data)) - e.address;
      if (source > max_registrations || e.serial == 0 || base > e.bytes || e.bytes - base < m.bytes) {
        set_fault(f, fault_code::corrupt, l, m.bytes, e.bytes, c, m);
        return progress::failed;
      }
      chunk = mine.hi - mine.lo - c.done;
      ops.write(layout.header(peer, a.rank, l.channel, slot),
                slot_header{.tag = m.tag,
                            .stamp = m.stamp,
                            .channel = l.channel,
                            .reserved = 0,
                            .message_bytes = m.bytes,
                            .offset = offset,
                            .chunk_bytes = chunk,
                            .source = source,
                            .serial = static_cast<std::uint32_t>(e.serial),
                            .source_offset = base + offset});
      c.drain = 1;
    } else {
      ops.write(layout.header(peer, a.rank, l.channel, slot), slot_header{.tag = m.tag,
                                                                          .stamp = m.stamp,
                                                                          .channel = l.channel,
                                                                          .reserved = 0,
                                                                          .message_bytes = m.bytes,
                                                                          .offset = offset,
                                                                          .chunk_bytes = chunk,
                                                                          .source = 0,
                                                                          .serial = 0,
                                                                          .source_offset = 0});
      ops.copy(layout.payload(peer, a.rank, l.channel, slot), m.data + offset, chunk);
    }
    ++c.count;
    ops.store(&layout.flags(peer, a.rank, l.channel)->head, c.count);
  } else {
    const std::uint64_t head = ops.load(&own->head);
    const std::uint64_t ready = head - c.count;
    if (ready > slots) {
      set_fault(f, fault_code::corrupt, l, c.count, head, c, m);
      return progress::failed;
    }
    if (ready == 0) return progress::blocked;
    const std::uint64_t slot = c.count % slots;
    const slot_header h = ops.read(layout.header(a.self, l.peer, l.channel, slot));
    if (h.tag != m.tag) {
      set_fault(f, fault_code::tag_mismatch, l, m.tag, h.tag, c, m);
      return progress::failed;
    }
    if (stamp_bits_conflict(h.stamp, m.stamp)) {  // one compare while the stamps agree
      set_fault(f, fault_code::call_mismatch, l, m.stamp, h.stamp, c, m);
      return progress::failed;
    }
    if (h.message_bytes != m.bytes) {
      set_fault(f, fault_code::size_mismatch, l, m.bytes, h.message_bytes, c, m);
      return progress::failed;
    }
    if (h.source != 0) chunk = mine.hi - mine.lo - c.done;  // a zero-copy header covers the rest of the part
    if (h.channel != l.channel || h.offset != offset || h.chunk_bytes != chunk) {
      set_fault(f, fault_code::corrupt, l, chunk, h.chunk_bytes, c, m);
      return progress::failed;
    }
    // A combining receive folds the chunk where it reads it: its operand lies at the same offset.
    const auto combining = static_cast<std::uint32_t>(m.source);
    if (combining > a.combines.count) {
      set_fault(f, fault_code::corrupt, l, a.combines.count, combining, c, m);
      return progress::failed;
    }
    const combine_operand operand =
        combining == 0
            ? combine_operand{nullptr, false}
            : combine_operand{
                  reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(a.combines.held[combining - 1])) +
                      offset,
                  ((a.combines.arriving_left >> (combining - 1)) & 1u) != 0};
    if (h.source != 0) {
      if (h.source > max_registrations) {
        set_fault(f, fault_code::corrupt, l, max_registrations, h.source, c, m);
        return progress::failed;
      }
      // Only what our own host mapped is used; the header only picks it and is bounds-checked.
      const registration_entry e = ops.read(layout.entry(a.self, l.peer, h.source - 1));
      if (e.serial == 0 || static_cast<std::uint32_t>(e.serial) != h.serial || h.source_offset > e.bytes ||
          e.bytes - h.source_offset < chunk) {
        set_fault(f, fault_code::corrupt, l, e.bytes, h.source_offset + chunk, c, m);
        return progress::failed;
      }
      const bool read = combining == 0 ? ops.copy_from(m.data + offset, e, h.source_offset, chunk)
                                       : ops.combine_from(m.data + offset, e, h.source_offset, operand, chunk);
      if (!read) {
        set_fault(f, fault_code::peer_lost, l, chunk, 0, c, m);
        return progress::failed;
      }
    } else if (combining == 0) {
      ops.copy(m.data + offset, layout.payload(a.self, l.peer, l.channel, slot), chunk);
    } else {
      ops.combine(m.data + offset, layout.payload(a.self, l.peer, l.channel, slot), operand, chunk);
    }
    ++c.count;
    ops.store(&layout.flags(peer, a.rank, l.channel)->credit, c.count);
  }

  c.done += chunk;
  if (c.done == mine.hi - mine.lo) {
    c.done = 0;
    if (++c.index == l.count) {
      ops.write(l.is_send != 0 ? &own->sent : &own->taken, c.count);
      return c.drain != 0 ? progress::moved : progress::finished;
    }
  }
  return progress::moved;
}

}  // namespace detail
}  // namespace nvlink
}  // namespace v0
}  // namespace plait

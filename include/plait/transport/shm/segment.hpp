// One POSIX shared-memory segment per group: its layout, creation, attachment
// and cleanup. Everything a peer can write is treated as untrusted: sizes and
// counters read from the segment are checked against what this rank expects
// before they are used.
//
// Layout (offsets derive from the geometry alone, never from the segment):
//   segment_header | rank_record[P] | shared_slots[P] | channel[P*P]
//   shared_slots (one rank's) = shared_slot_header | buffer[2][shared_slot_bytes]
//   channel (src -> dst) = channel_header | slot[slots] ; slot = slot_header | payload[slot_bytes]
//
// A slot's header names the message's tag (its call sequence), the stamp of
// its call and its size. A slot holds either a chunk of a message (kind
// chunk: the payload is the bytes) or, for single-copy transfers, a reference
// (kind reference: the payload starts with a reference_descriptor naming the
// sender's buffer, which the receiver copies from directly and then
// acknowledges in `state`; kind vector_reference: the same, for a message of
// several pieces, listed as vector_piece records after the descriptor).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace shm::detail {

inline constexpr std::uint64_t segment_magic = 0x706c616974736731ULL;  // "plaitsg1"
// 13: shared-slot buffers of 32 KiB; 12: wait records say "away"; 11:
// shared slots without read counters; 10: shared slots; 9: wait records; 8:
// vectored and pool references.
inline constexpr std::uint32_t segment_version = 13;
inline constexpr std::size_t cache_line = 64;

static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free &&
                  std::atomic_ref<std::uint32_t>::is_always_lock_free,
              "plait::shm needs lock-free 32- and 64-bit atomics to share them between processes");

template <class T>
std::atomic_ref<T> atomic(T& value) noexcept {
  return std::atomic_ref<T>(value);
}

struct alignas(cache_line) segment_header {
  std::uint64_t magic;  // stored last by the creator (release): the segment is initialised
  std::uint32_t version;
  std::uint32_t ranks;
  std::uint32_t slots;
  std::uint32_t slot_bytes;
  std::uint64_t total_bytes;
  std::int32_t creator_pid;                    // the process that created the segment (rank 0 of a join)
  std::uint32_t name_removed;                  // set (compare-exchange) by the one call that removes the name
  alignas(cache_line) std::uint32_t attached;  // ranks attached so far
  std::uint32_t failed_rank;                   // 0, or 1 + the first rank that failed
  alignas(cache_line) std::uint32_t barrier_count;
  alignas(cache_line) std::uint32_t barrier_generation;
};

/// Words of a rank_record's label: a call's name up to 47 characters.
inline constexpr std::size_t label_words = 6;

/// Per-rank record: liveness, and how a rank failed (read back by run_processes).
struct alignas(cache_line) rank_record {
  std::int32_t pid;   // the process that claimed the rank, 0 while unclaimed
  std::int32_t code;  // plait::errc of the failure, 0 if none
  std::int32_t step;
  std::int32_t peer;
  char operation[120];
  char detail[1024];
  // Why this rank failed, in one short sentence ("rank 0 never entered
  // all_gather<ring> #3 (its last call was #2); rank 2 timed out waiting for
  // rank 1, which waits for rank 0"): written by the rank itself, once,
  // before it marks the group failed; peers quote it in their peer_lost.
  char reason[480];
  std::int32_t blamed;  // 1 + the rank `reason` blames, 0: none (written with it)
  // The wait record (core/blame.hpp), written by this rank alone with relaxed
  // stores (a few per wait, none per poll) and read by a peer whose wait
  // timed out, without this rank's help. Its own cache line: peers read it
  // while this rank polls.
  alignas(cache_line) std::uint32_t entered;  // the last call (tag) this rank entered (communicator_core)
  std::uint32_t waiting;                      // 1 while in the wait described below (stored last, release)
  std::uint32_t wait_call;                    // that wait's collective call (tag), 0: a user transfer
  std::uint32_t wait_stamp;                   // call_stamp::bits() of its call
  std::int32_t wait_step;
  std::int32_t wait_peer;    // the rank it waits for
  std::uint32_t label_call;  // the call `label` names, 0: none (stored after the label, release)
  std::uint32_t polled_ms;   // steady clock (ms, mod 2^32) when its wait last published: a stopped rank's falls behind
  std::uint32_t away;        // two-level calls waiting at the other level (op/hierarchical.hpp), counted up and down
  std::uint64_t
      label[label_words];  // the call's name (label_words) ("all_gather<ring>"), 48 bytes, stored word by word
};

/// The steady clock in milliseconds, modulo 2^32: a wait record's time stamp
/// (rank_record::polled_ms; steady_clock is one clock for every process of
/// the machine).
inline std::uint32_t steady_ms() noexcept {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}

/// One rank's shared slots: two buffers it writes a round of a small
/// collective into (op/slot_run.hpp), used in turn so that round k+1 can be
/// written while peers still read round k, and the counter and records that
/// say what is there. Only the rank writes its header and its buffers; peers
/// read them.
struct alignas(cache_line) shared_slot_header {
  std::uint64_t posted;  // rounds posted so far (release, stored after the round's buffer and its record)
  struct round_record {
    std::uint32_t tag;    // the call (its tag) the round belongs to
    std::uint32_t fits;   // 1: the call's rounds fit this rank's buffers; 0: every rank takes the channels
    std::uint32_t stamp;  // call_stamp::bits() of the call, 0 when unknown
    std::uint32_t reserved;
    std::uint64_t bytes;  // bytes of the buffer the round uses (its table and blocks)
  } rounds[2];            // one per buffer: a peer may post round k+1 while this round is read
};

/// Bytes of each of a rank's two shared-slot buffers: the largest round a
/// small collective runs through them (its table of blocks included); a
/// larger one takes the chunk channels. 32 KiB: a two-rank all-reduce of up
/// to 32 KiB in all (with its table) then runs in one round
/// (op/slot_run.hpp, one_round_fold_bytes); every other round keeps to the
/// 16 KiB it was measured with (algorithm/select.hpp, slot_round_bytes).
inline constexpr std::size_t shared_slot_bytes = std::size_t{32} << 10;

struct alignas(cache_line) channel_header {
  std::uint64_t head;                      // slots written so far (by the sender)
  alignas(cache_line) std::uint64_t tail;  // slots consumed so far (by the receiver)
};

struct slot_header {
  std::uint32_t tag;   // the call sequence (plait::user_tag for point-to-point)
  std::uint32_t kind;  // slot_kind
  std::uint64_t message_bytes;
  std::uint64_t offset;
  std::uint64_t chunk_bytes;
  std::uint32_t stamp;  // call_stamp::bits() of the sender's call under `tag`, 0 when unknown
  std::uint32_t reserved;
};

/// What a slot carries.
enum class slot_kind : std::uint32_t {
  chunk = 0,             ///< chunk_bytes of the message at `offset`, in the payload
  reference = 1,         ///< the whole message stays in the sender's buffer; see reference_descriptor
  vector_reference = 2,  ///< a reference to chunk_bytes pieces, listed after the descriptor (vector_piece)
};

/// Where a single-copy message lives, at the start of a reference slot's
/// payload. The receiver moves `state` from posted to copying before it reads
/// the sender's buffer and to done (or refused, when the kernel does not let it
/// read another process's memory) before it releases the slot; a sender that
/// fails moves it from posted to withdrawn, so no receiver starts reading a
/// buffer its owner has given up. Everything but `state` and `copy_written`
/// is written once by the sender before it publishes the slot.
///
/// A reference may also ask the receiver to write the same bytes into a
/// second buffer of the sender's (`copy_*`: the sender's own shard of an
/// all-gather into its own result), so the bytes are read from memory once
/// for both copies. The receiver does it only where it can write that buffer
/// without the kernel (a thread of the same process, or a shared buffer), sets
/// `copy_written` to 1 before `done`, and otherwise leaves it 0: the sender
/// then makes the copy itself.
struct reference_descriptor {
  std::uint64_t address;       ///< the sender's buffer, in the sender's address space
  std::int32_t pid;            ///< the sender's process
  std::uint32_t state;         ///< reference_state
  std::uint64_t window;        ///< 0, or the shared buffer (window id) the message lies in ...
  std::uint64_t offset;        ///< ... at this offset of the sender's part: the receiver reads its own mapping
  std::uint64_t copy_address;  ///< 0, or the sender's second buffer (same length), in its address space
  std::uint64_t copy_window;   ///< 0, or the shared buffer that second buffer lies in ...
  std::uint64_t copy_offset;   ///< ... at this offset of the sender's part
  std::uint32_t copy_written;  ///< set by the receiver: 1 when it wrote the second buffer
  std::uint32_t in_pool;       ///< bit 0: `window`, bit 1: `copy_window` is a segment of the sender's pool
  std::uint64_t pool_high;     ///< the pool's key: with `pid` and the segment id, its name
  std::uint64_t pool_low;      ///< (memory_resource.hpp, pool_segment_name)
};

enum class reference_state : std::uint32_t { posted = 1, copying = 2, done = 3, refused = 4, withdrawn = 5 };

/// One piece of a vectored single-copy message (isendv), in the sender's
/// address space. A vector_reference slot lists its pieces, in message
/// order, after the reference_descriptor; the receiver checks that their
/// lengths add up to the message before it copies.
struct vector_piece {
  std::uint64_t address;
  std::uint64_t bytes;
};

/// Where a vector_reference slot's piece list starts in its payload.
inline constexpr std::size_t vector_pieces_offset =
    (sizeof(reference_descriptor) + alignof(vector_piece) - 1) / alignof(vector_piece) * alignof(vector_piece);

/// How many pieces one vector_reference fits in a payload of `slot_bytes`
/// (a message of more pieces goes through the slots in chunks).
constexpr std::size_t vector_pieces_per_slot(std::size_t slot_bytes) noexcept {
  return slot_bytes > vector_pieces_offset ? (slot_bytes - vector_pieces_offset) / sizeof(vector_piece) : 0;
}

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

/// The sizes every rank computes on its own; the segment must agree.
struct geometry {
  std::uint32_t ranks = 1;
  std::uint32_t slots = 4;
  std::uint32_t slot_bytes = 64 * 1024;

  [[nodiscard]] constexpr std::size_t slot_stride() const {
    return round_up(sizeof(slot_header) + slot_bytes, cache_line);
  }
  [[nodiscard]] constexpr std::size_t channel_bytes() const {
    return round_up(sizeof(channel_header), cache_line) + slots * slot_stride();
  }
  [[nodiscard]] constexpr std::size_t records_offset() const { return round_up(sizeof(segment_header), cache_line); }
  [[nodiscard]] constexpr std::size_t shared_slots_offset() const {
    return round_up(records_offset() + ranks * sizeof(rank_record), cache_line);
  }
  [[nodiscard]] static constexpr std::size_t shared_slots_stride() {
    return round_up(sizeof(shared_slot_header), cache_line) + 2 * shared_slot_bytes;
  }
  [[nodiscard]] constexpr std::size_t channels_offset() const {
    return round_up(shared_slots_offset() + ranks * shared_slots_stride(), 4096);
  }
  [[nodiscard]] constexpr std::size_t total_bytes() const {
    return channels_offset() + static_cast<std::size_t>(ranks) * ranks * channel_bytes();
  }
};

/// Largest group one segment serves: keeps P*P channels addressable and the
/// segment within reason.
inline constexpr int max_ranks = 1024;

/// What a segment header must say for this rank to use it; "" when it agrees.
/// The header is written by another process: nothing in it is trusted.
PLAIT_DECL std::string check_segment_header(const segment_header& h, const geometry& expected);

/// Why a slot cannot be the next chunk of the message a receiver expects.
enum class slot_problem { none, tag_mismatch, stamp_mismatch, size_mismatch, corrupt };

/// Checks the stamp of a slot header (a copy) against the receiver's own call
/// under the same tag: two known stamps that differ are two different calls.
inline slot_problem check_stamp(const slot_header& h, std::uint32_t expected_stamp) noexcept {
  return stamps_conflict(call_stamp::from_bits(h.stamp), call_stamp::from_bits(expected_stamp))
             ? slot_problem::stamp_mismatch
             : slot_problem::none;
}

/// Checks a slot header (a copy: the peer may change the original meanwhile)
/// against the receive in progress: `expected_tag`, `expected_bytes` in all,
/// `done` received so far. When it returns none, copying chunk_bytes to
/// offset `done` stays inside the receive buffer and inside the slot.
inline slot_problem check_slot(const slot_header& h, std::uint32_t expected_tag, std::uint64_t expected_bytes,
                               std::uint64_t done, std::uint64_t slot_bytes) noexcept {
  if (h.tag != expected_tag) return slot_problem::tag_mismatch;
  if (h.message_bytes != expected_bytes) return slot_problem::size_mismatch;
  if (done > expected_bytes || h.offset != done || h.chunk_bytes > slot_bytes ||
      h.chunk_bytes > expected_bytes - done || (h.chunk_bytes == 0 && expected_bytes != 0)) {
    return slot_problem::corrupt;
  }
  return slot_problem::none;
}

/// Checks a reference slot's header (a copy) against the receive in progress:
/// it must announce the whole message, untouched so far.
inline slot_problem check_reference(const slot_header& h, std::uint32_t expected_tag, std::uint64_t expected_bytes,
                                    std::uint64_t done) noexcept {
  if (h.tag != expected_tag) return slot_problem::tag_mismatch;
  if (h.message_bytes != expected_bytes) return slot_problem::size_mismatch;
  if (done != 0 || h.offset != 0 || h.chunk_bytes != 0 || expected_bytes == 0) return slot_problem::corrupt;
  return slot_problem::none;
}

/// Checks a vector_reference slot's header (a copy) like check_reference,
/// and that its piece count (chunk_bytes) fits a slot of `slot_bytes`.
inline slot_problem check_vector_reference(const slot_header& h, std::uint32_t expected_tag,
                                           std::uint64_t expected_bytes, std::uint64_t done,
                                           std::uint64_t slot_bytes) noexcept {
  if (h.tag != expected_tag) return slot_problem::tag_mismatch;
  if (h.message_bytes != expected_bytes) return slot_problem::size_mismatch;
  if (done != 0 || h.offset != 0 || h.chunk_bytes == 0 || h.chunk_bytes > vector_pieces_per_slot(slot_bytes) ||
      expected_bytes == 0) {
    return slot_problem::corrupt;
  }
  return slot_problem::none;
}

/// Whether the lengths of a vector_reference's pieces (a copy) add up to
/// exactly `expected_bytes`, without overflowing: only then may the receiver
/// copy them into its receive.
inline bool pieces_add_up(std::span<const vector_piece> pieces, std::uint64_t expected_bytes) noexcept {
  std::uint64_t total = 0;
  for (const vector_piece& piece : pieces) {
    if (piece.bytes > expected_bytes - total) return false;
    total += piece.bytes;
  }
  return total == expected_bytes;
}

/// Slots waiting in a channel whose writer reports `head` and reader `tail`, or
/// -1 when the counters cannot be true of a channel of `slots` slots.
inline std::int64_t pending_slots(std::uint64_t head, std::uint64_t tail, std::uint32_t slots) noexcept {
  if (head < tail || head - tail > slots) return -1;
  return static_cast<std::int64_t>(head - tail);
}

/// True when no process `pid` exists any more. A pid of 0 or less, this
/// process, and a process of another user (which kill(2) does not let us
/// probe) all count as alive: only a pid the kernel says is gone (ESRCH) is.
PLAIT_DECL bool process_ended(std::int32_t pid) noexcept;

/// A fresh segment name: "/plait-" and 128 random bits in hex.
PLAIT_DECL std::string random_name();

/// `what` `name`: strerror(errno), for a failed system call on a named object.
PLAIT_DECL std::string system_message(std::string_view what, const std::string& name);

/// The creator's pid when the shared-memory object open on `fd` (`bytes`
/// long) is an initialised segment of this version whose creator has ended;
/// otherwise 0. Reads the header alone, whatever group size it describes.
PLAIT_DECL std::int32_t ended_creator(int fd, std::size_t bytes) noexcept;

/// Maps `bytes` of the shared-memory object open on `fd` (read-write,
/// shared) and closes `fd` either way; throws naming `what` and `name`.
PLAIT_DECL std::byte* map_and_close(int fd, std::size_t bytes, std::string_view what, const std::string& name,
                                    const error_context& at);

/// A mapped segment. Owning one keeps the mapping alive. The name is removed
/// once every rank is attached (by any rank: remove_name), or by the creator on
/// a failure or when it goes away; a flag in the header lets exactly one call
/// remove it, so no rank can remove a later segment of the same name.
class segment {
 public:
  segment(const segment&) = delete;
  segment& operator=(const segment&) = delete;
  ~segment();

  /// Creates a fresh segment (O_EXCL, mode 0600) and initialises it. A
  /// segment of that name left by a group whose processes have all ended is
  /// removed first (remove_abandoned); any other existing one is an error.
  static std::shared_ptr<segment> create(const std::string& name, const geometry& shape, const error_context& at);

  /// Creates a segment whose name never outlives this call: for groups whose
  /// ranks all inherit the mapping (threads, forked children).
  static std::shared_ptr<segment> create_private(const geometry& shape, const error_context& at);

  /// Opens a segment another rank creates, waiting for it until `until`.
  /// Checks owner, mode, size and header against this rank's expectations.
  /// A segment whose creator has ended is not used: it waits for a new one
  /// (a new rank 0 reclaims the name) and names the dead creator on timeout.
  static std::shared_ptr<segment> open(const std::string& name, const geometry& shape, deadline until,
                                       const error_context& at);

  /// Removes the segment `name` if it was left by processes that have all
  /// ended (its creator and every rank that claimed a record), writing one
  /// line saying so to stderr. Throws `invalid_argument` naming the reason
  /// when it belongs to a live process, is not this user's with mode 0600, or
  /// cannot be judged (never initialised, another layout). Does nothing when
  /// the name is gone.
  static void remove_abandoned(const std::string& name, const error_context& at);

  /// Claims `rank`'s record for this process: exactly one process wins a
  /// rank. A rank already taken is `invalid_argument` naming the rank, the
  /// `group` and the holder, or `peer_lost` when the holder has ended (its
  /// attachment was counted: the group can no longer form). Either way the
  /// segment is left as it was.
  void claim(int rank, std::string_view group, const error_context& at) const;

  /// "" while every process that claimed a rank, and the creator, runs;
  /// otherwise which one has ended (for a group that is still forming).
  [[nodiscard]] std::string ended_member() const;

  /// Removes the name if no call has yet (any rank may call it; idempotent);
  /// the mapping stays valid.
  void remove_name() noexcept;

  /// The creator's remove_name (failure paths, destruction); others do nothing.
  void unlink() noexcept;

  [[nodiscard]] const geometry& shape() const noexcept { return shape_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] segment_header& header() const noexcept { return *reinterpret_cast<segment_header*>(base_); }
  [[nodiscard]] rank_record& record(int rank) const noexcept {
    return reinterpret_cast<rank_record*>(base_ + shape_.records_offset())[rank];
  }
  [[nodiscard]] shared_slot_header& shared_slots(int rank) const noexcept {
    return *reinterpret_cast<shared_slot_header*>(shared_slots_base(rank));
  }
  /// `rank`'s buffer for round `round` (the two alternate).
  [[nodiscard]] std::byte* shared_slot_buffer(int rank, std::uint64_t round) const noexcept {
    return shared_slots_base(rank) + round_up(sizeof(shared_slot_header), cache_line) +
           static_cast<std::size_t>(round % 2) * shared_slot_bytes;
  }
  [[nodiscard]] channel_header& channel(int source, int destination) const noexcept {
    return *reinterpret_cast<channel_header*>(channel_base(source, destination));
  }
  [[nodiscard]] slot_header& slot(int source, int destination, std::uint64_t index) const noexcept {
    return *reinterpret_cast<slot_header*>(slot_base(source, destination, index));
  }
  [[nodiscard]] std::byte* payload(int source, int destination, std::uint64_t index) const noexcept {
    return slot_base(source, destination, index) + sizeof(slot_header);
  }

  /// Notes that `rank` runs in this process (a thread of it). Process-local
  /// knowledge, never read from the segment: only such peers' buffers are
  /// copied with a plain memcpy; others go through the kernel, which checks
  /// every address a peer names.
  void mark_local(int rank) noexcept {
    if (rank >= 0 && static_cast<std::uint32_t>(rank) < shape_.ranks) {
      local_[static_cast<std::size_t>(rank)].store(true, std::memory_order_release);
    }
  }
  [[nodiscard]] bool is_local(int rank) const noexcept {
    return rank >= 0 && static_cast<std::uint32_t>(rank) < shape_.ranks &&
           local_[static_cast<std::size_t>(rank)].load(std::memory_order_acquire);
  }
  [[nodiscard]] reference_descriptor& reference(int source, int destination, std::uint64_t index) const noexcept {
    return *reinterpret_cast<reference_descriptor*>(payload(source, destination, index));
  }
  /// The piece list of a vector_reference slot.
  [[nodiscard]] vector_piece* vector_pieces(int source, int destination, std::uint64_t index) const noexcept {
    return reinterpret_cast<vector_piece*>(payload(source, destination, index) + vector_pieces_offset);
  }

  /// Marks `rank` as the group's first failure (later failures keep the first).
  /// Returns true when this call was the first.
  bool mark_failed(int rank) const noexcept {
    std::uint32_t expected = 0;
    return atomic(header().failed_rank).compare_exchange_strong(expected, static_cast<std::uint32_t>(rank) + 1);
  }
  /// The same, first writing `reason` into `rank`'s record (if it has none
  /// yet) for the peers that see the mark. Only `rank` itself, or the parent
  /// of a dead child, writes that record's reason.
  /// `blamed`: the rank the reason blames (peers name it as their error's peer), -1: none.
  bool mark_failed(int rank, std::string_view reason, int blamed = -1) const noexcept {
    if (rank >= 0 && static_cast<std::uint32_t>(rank) < shape_.ranks) {
      char* text = record(rank).reason;
      if (text[0] == '\0') {
        const std::size_t n =
            reason.size() < sizeof record(rank).reason ? reason.size() : sizeof record(rank).reason - 1;
        std::memcpy(text, reason.data(), n);
        text[n] = '\0';
        record(rank).blamed = blamed >= 0 ? blamed + 1 : 0;
      }
    }
    return mark_failed(rank);  // its release publishes the text
  }
  /// The first failed rank, or -1. Checked against the group size: the value comes from shared memory.
  [[nodiscard]] int failed_rank() const noexcept {
    const std::uint32_t value = atomic(header().failed_rank).load(std::memory_order_acquire);
    if (value == 0) return -1;
    return value <= shape_.ranks ? static_cast<int>(value) - 1 : static_cast<int>(shape_.ranks);
  }

 private:
  segment(std::string name, std::size_t bytes, bool owner) : name_(std::move(name)), bytes_(bytes), owner_(owner) {}

  void set_shape(const geometry& shape);

  void map(int fd, const error_context& at) { base_ = map_and_close(fd, bytes_, "shared-memory segment", name_, at); }
  [[nodiscard]] std::byte* shared_slots_base(int rank) const noexcept {
    return base_ + shape_.shared_slots_offset() + static_cast<std::size_t>(rank) * geometry::shared_slots_stride();
  }
  [[nodiscard]] std::byte* channel_base(int source, int destination) const noexcept {
    const auto index = static_cast<std::size_t>(source) * shape_.ranks + static_cast<std::size_t>(destination);
    return base_ + shape_.channels_offset() + index * shape_.channel_bytes();
  }
  [[nodiscard]] std::byte* slot_base(int source, int destination, std::uint64_t index) const noexcept {
    return channel_base(source, destination) + round_up(sizeof(channel_header), cache_line) +
           static_cast<std::size_t>(index % shape_.slots) * shape_.slot_stride();
  }

  std::string name_;
  std::size_t bytes_;
  bool owner_;
  std::atomic<bool> unlinked_{false};
  std::byte* base_ = nullptr;
  geometry shape_{};
  std::unique_ptr<std::atomic<bool>[]> local_;  // which ranks are threads of this process (see mark_local)
};

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/transport/shm/impl/segment.ipp"
#endif

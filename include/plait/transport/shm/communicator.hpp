// plait::shm::communicator — point-to-point and collectives over one shared
// memory segment, for ranks that are threads or processes on one node.
//
// Each ordered pair of ranks owns a channel of slots. Three ways through it:
//   - small messages (below single_copy_bytes()) are cut into slot-sized
//     chunks: the sender copies a chunk in and bumps one counter, the receiver
//     copies it out, so a message that fits a slot costs one flag;
//   - larger ones go by reference (single copy): the sender publishes where its
//     buffer is, the receiver copies straight from it (memcpy when the peer is
//     a thread of this process, process_vm_readv when it is another process)
//     and acknowledges; the send completes once the receiver has copied. If the
//     kernel refuses cross-process reads (EPERM, ENOSYS), the receiver says so
//     and that pair falls back to chunks for good;
//   - a vectored message (isendv / irecvv: several pieces) takes the same two
//     ways: chunks gathered into and scattered out of the slots, or a
//     reference whose slot lists the sender's pieces;
//   - a buffer from allocate<T>(n) (shared_buffer.hpp) is mapped by every rank:
//     a message from one is read in place with a memcpy, no kernel call, and
//     takes this path from window_single_copy_bytes on; so is one from this
//     rank's pool (memory_resource(), allocator.hpp), which a peer maps the
//     first time a message refers to it;
//   - a combining receive (irecv_combine, a reduction's) takes either way
//     but folds each arriving piece into its destination with the reduction
//     instead of copying it (core/receive_combine.hpp); a reduction's
//     message to another process goes in chunks up to 1 MiB, so that the
//     sender's copies and the receiver's folds run on two cores at once.
// Besides the channels, each rank has two shared-slot buffers in the segment
// that a lockstep schedule's blocking call uses a round at a time (every rank
// writes once, posts one flag and reads its peers in place: op/slot_run.hpp).
// Every slot header carries the message's tag and the stamp of its call
// (core/call_stamp.hpp): a receiver whose own call under that tag is another
// collective fails with size_mismatch instead of taking the bytes.
// Requests progress inside wait_all (all of this rank's pending transfers, not
// only the ones waited for), so a ring of sends never deadlocks.
//
// The definitions, one job per file (impl/): communicator.ipp (attaching,
// posting, waiting, barrier), group.ipp (join, split, allocate's windows),
// chunk_channel.ipp (moving chunks and checking slot headers),
// single_copy.ipp (the reference protocol and combining receives' reads),
// shared_slots.ipp (the shared-slot rounds), liveness.ipp (lost peers,
// timeouts and the group's failure record). Tuning constants: tuning.hpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/core/blocking_calls.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/communicator_core.hpp"
#include "plait/core/config.hpp"
#include "plait/core/cost_model.hpp"
#include "plait/core/error.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/wait_loop.hpp"
#include "plait/transport/shm/memory_resource.hpp"
#include "plait/transport/shm/pieces.hpp"
#include "plait/transport/shm/segment.hpp"
#include "plait/transport/shm/shared_buffer.hpp"
#include "plait/transport/shm/tuning.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

namespace detail {
using plait::detail::default_timeout;  // PLAIT_TIMEOUT, shared by every transport
using plait::detail::seconds_text;

/// A send or receive this rank has posted and not completed: where its bytes
/// are and how far it has got.
struct pending {
  const std::byte* out;  // a send's bytes (null for a receive) ...
  std::byte* in;         // ... or where a receive writes them
  std::size_t bytes;
  std::size_t done;  // bytes through the slots so far
  int tag;
  std::uint32_t stamp;            // call_stamp::bits() of this rank's call under `tag`
  bool started;                   // a first chunk or the reference is in a slot
  bool by_reference;              // a send published as a reference, waiting for the receiver's copy
  bool window_in_pool = false;    // `window` is a segment of this rank's memory_resource, not an allocate window
  bool copy_in_pool = false;      // `copy_window` likewise (both in padding: a deque node holds as many sends)
  std::uint64_t reference_slot;   // which slot holds its reference
  std::uint64_t window;           // a send from a shared buffer: its window id (0: none) ...
  std::uint64_t window_offset;    // ... and where in this rank's part
  std::byte* copy = nullptr;      // isend_with_copy: the sender's second buffer, left to the receiver
  std::uint64_t copy_window = 0;  // where the receiver writes it: a shared buffer (0: by address, a thread)
  std::uint64_t copy_offset = 0;
  // isendv / irecvv: the message's pieces, in order (null: `out` / `in` is one contiguous buffer)
  const std::span<const std::byte>* out_pieces = nullptr;
  const std::span<std::byte>* in_pieces = nullptr;
  std::size_t piece_count = 0;
  std::size_t nonempty_pieces = 0;           // of a vectored send: what its reference lists
  const receive_combine* combine = nullptr;  // irecv_combine: fold arrivals into `in` instead of copying them
};

/// This rank's side of the two channels to one peer.
struct peer_state {
  std::deque<pending> sends;
  std::deque<pending> recvs;
  std::uint64_t sends_posted = 0;
  std::uint64_t sends_done = 0;
  std::uint64_t recvs_posted = 0;
  std::uint64_t recvs_done = 0;
  std::uint64_t head = 0;            // slots this rank has written to the peer (it is the only writer)
  std::uint64_t tail = 0;            // slots this rank has consumed from the peer (likewise)
  bool single_copy_refused = false;  // the peer cannot read this process's memory: chunks only
};
}  // namespace detail

/// The shared-memory transport: ranks that are threads or processes of one node, over one POSIX segment (see the file
/// comment).
class communicator : public communicator_core, public blocking_calls<communicator> {
 public:
  /// Opts in to plait::transport.
  using transport_concept = transport_tag;
  /// Buffers are host memory.
  using memory_space = host_memory;
  /// What plait::automatic assumes about shm: the default parameters, a
  /// round trip more for a step whose message goes by single copy between
  /// processes (tuning.hpp), and 0.5 ns a byte more for a several-block
  /// message that folds, which is staged where a one-block message folds as
  /// it arrives. Measured at P = 2: an all-gather of 16 KiB blocks took 3.9
  /// us against 1.6 us for 8 KiB ones; an all-reduce by recursive doubling
  /// (one two-block exchange) 15, 23 and 47 us at 16, 32 and 64 KiB against
  /// ring's (two one-block steps) 4.4, 9.7 and 14-17, which the default
  /// model ranks the other way. One model serves every operation, so it
  /// charges that round trip to a reduction's messages too, which go in
  /// chunks up to 1 MiB since (process_fold_single_copy_bytes).
  static constexpr plait::cost_model cost_model() noexcept {
    plait::cost_model m;
    m.rendezvous_bytes = detail::process_single_copy_bytes;
    m.alpha_rendezvous = 3e-6;
    m.beta_staged = 5e-10;
    return m;
  }

  /// A posted send or receive; complete once wait_all returns.
  struct request {
    /// The peer rank.
    int peer = -1;
    /// True for a send, false for a receive.
    bool is_send = false;
    /// Its place among this rank's transfers with that peer.
    std::uint64_t sequence = 0;
  };

  /// A null communicator (what split gives a rank that passed plait::no_group).
  communicator() = default;
  /// Movable; the source becomes a null communicator.
  communicator(communicator&&) noexcept = default;
  /// Movable, as the constructor.
  communicator& operator=(communicator&&) noexcept = default;
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  /// A send still pending here (never waited for) is withdrawn, so no peer
  /// starts reading a buffer its owner may free next.
  ~communicator();

  /// Attaches `rank` to a mapped segment (used by run_threads, run_processes, join, split).
  /// The busy-poll time starts at 100 ms when this process may run on a CPU
  /// for every rank of the group (its affinity mask), else at zero (ranks
  /// that outnumber the cores must yield to each other); split children
  /// inherit it (set_busy_poll, core/communicator_core.hpp).
  communicator(std::shared_ptr<detail::segment> seg, int rank, std::chrono::nanoseconds timeout);

  /// Joins group `name` as `rank` of `size`, for processes started by anyone.
  /// Rank 0 creates the segment (O_EXCL, mode 0600); the others check its owner
  /// and mode. Returns once every rank has attached; the name is then removed.
  /// An absent rank makes every present one throw errc::timeout.
  static communicator join(std::string_view name, int rank, int size,
                           std::chrono::nanoseconds timeout = detail::default_timeout());

  /// False for a null communicator.
  explicit operator bool() const noexcept { return segment_ != nullptr; }

  /// This rank's pool of shared memory, a std::pmr::memory_resource that the
  /// peers read in place (memory_resource.hpp; plait::shm::allocator<T> draws
  /// from it). Not collective: created on first use, by this rank alone.
  /// Throws for a null communicator.
  [[nodiscard]] shm::memory_resource& memory_resource() { return *shared_memory_resource(); }

  /// Payload bytes this rank received by reading a peer's shared buffer (from
  /// allocate or memory_resource) in place: how to tell that path was taken.
  [[nodiscard]] std::uint64_t bytes_read_in_place() const noexcept { return bytes_read_in_place_; }
  /// Bytes this rank wrote into a sender's own buffer while receiving its
  /// message (isend_with_copy's copy, done by the receiver): how to tell that
  /// path was taken.
  [[nodiscard]] std::uint64_t bytes_copied_for_senders() const noexcept { return bytes_copied_for_senders_; }

  /// Messages of at least this many bytes are copied once, straight from the
  /// sender's buffer; smaller ones through the slots. The default depends on
  /// the peer: 4 KiB to a thread of this process, 16 KiB to another process,
  /// 1 MiB for a reduction's message to another process (see
  /// detail::thread_single_copy_bytes, detail::process_fold_single_copy_bytes);
  /// this sets all three. 0: never.
  void set_single_copy_bytes(std::size_t bytes) noexcept {
    single_copy_bytes_ = process_single_copy_bytes_ = process_fold_single_copy_bytes_ = bytes == 0 ? SIZE_MAX : bytes;
  }
  /// The threshold to a peer that is a thread of this process ...
  [[nodiscard]] std::size_t single_copy_bytes() const noexcept { return single_copy_bytes_; }
  /// ... to a peer in another process ...
  [[nodiscard]] std::size_t process_single_copy_bytes() const noexcept { return process_single_copy_bytes_; }
  /// ... and for a reduction's message to a peer in another process.
  [[nodiscard]] std::size_t process_fold_single_copy_bytes() const noexcept { return process_fold_single_copy_bytes_; }
  /// Payload bytes this rank read out of another process's private memory
  /// with process_vm_readv (single copy of a contiguous message, plain or
  /// combined): how to tell that path was taken.
  [[nodiscard]] std::uint64_t bytes_read_from_processes() const noexcept { return bytes_read_from_processes_; }

  /// Posts a send of `bytes` to `peer`; `bytes` must stay untouched until the send completes.
  request isend(int peer, std::span<const std::byte> bytes, int tag = user_tag);
  /// Posts a receive of exactly bytes.size() bytes from `peer`.
  request irecv(int peer, std::span<std::byte> bytes, int tag = user_tag);
  /// isend, and `copy` (as long as `bytes`, not overlapping it) holds the same
  /// bytes once the send completes. The executor hands an all-gather's local
  /// copy of its own shard to the first send of that shard: where the
  /// receiver copies with a memcpy (a thread of this process, or `bytes` in a
  /// shared buffer) and can write `copy` the same way (a thread, or `copy` in a
  /// shared buffer), the receiver writes both while it reads the message, so
  /// the shard is read from memory once instead of twice (about 1.35x faster
  /// for a 2-process all-gather of allocate buffers at 16-64 MiB,
  /// docs/performance.md); from detail::copy_for_sender_bytes (256 KiB) on.
  /// Otherwise this rank copies within the call, after its first chunks have
  /// left (the peer waits for those, nobody for the copy).
  request isend_with_copy(int peer, std::span<const std::byte> bytes, std::span<std::byte> copy, int tag = user_tag);

  /// Where a send's bytes, and a copy of at least
  /// detail::copy_for_sender_bytes that isend_with_copy may leave to its
  /// receiver, lie in memory the peers map: an `allocate` window or a pool
  /// segment, and the offset in it (zero where they lie in neither). These
  /// are the lookups every isend makes; a send that repeats on the same
  /// buffers (a persistent collective's, from its second start) keeps them
  /// and passes them back instead.
  struct send_place {
    std::uint64_t window = 0;         ///< the bytes' window or pool segment, 0 if none
    std::uint64_t window_offset = 0;  ///< where in it they start
    bool window_in_pool = false;      ///< a pool segment, not an `allocate` window
    std::uint64_t copy_window = 0;    ///< the same for the copy
    std::uint64_t copy_offset = 0;    ///< where in it the copy starts
    bool copy_in_pool = false;        ///< the copy's is a pool segment
  };
  /// The lookups of a send of `bytes` with `copy` (empty: none).
  [[nodiscard]] send_place locate_send(std::span<const std::byte> bytes, std::span<const std::byte> copy) const;
  /// isend_with_copy with its lookups given: `at` is locate_send(bytes,
  /// copy) of these spans, taken while the same buffers were allocated.
  request isend_with_copy(int peer, std::span<const std::byte> bytes, std::span<std::byte> copy, int tag,
                          const send_place& at);
  /// How many sends looked up where their bytes lie (locate_send): a
  /// persistent collective's starts after its first add none.
  [[nodiscard]] std::uint64_t send_lookups() const noexcept { return send_lookups_; }

  /// Posts a send of the concatenation of `pieces`: the receiver sees one
  /// message of their total length (it may post a plain irecv or an irecvv
  /// with other piece boundaries). The list and the bytes stay untouched
  /// until the send completes. Chunks are gathered from the pieces into the
  /// slots; a single copy lists them in its slot (up to
  /// detail::vector_pieces_per_slot, else chunks) and the receiver copies
  /// each. Never read in place from a shared buffer nor carrying a copy.
  request isendv(int peer, std::span<const std::span<const std::byte>> pieces, int tag = user_tag);
  /// Posts a receive of one message into the concatenation of `pieces` (its
  /// length must equal their total); the list stays valid until completion.
  request irecvv(int peer, std::span<const std::span<std::byte>> pieces, int tag = user_tag);
  /// Posts a receive that combines its message into `into` as it arrives
  /// (core/receive_combine.hpp): a chunk straight out of its slot, a
  /// reference from the peer's memory where this rank reads it with plain
  /// loads (a thread's buffer, a shared buffer, a pool segment), else in
  /// pieces of at most 1 MiB read with process_vm_readv into a buffer that
  /// stays in cache. `how` and its operand stay valid until completion;
  /// combines_on_receive(how.granule) must hold.
  request irecv_combine(int peer, std::span<std::byte> into, const receive_combine& how, int tag = user_tag);
  /// Whether irecv_combine can combine elements of `granule` bytes: every
  /// chunk and piece is then a whole number of them.
  [[nodiscard]] bool combines_on_receive(std::size_t granule) const noexcept {
    return segment_ && granule != 0 && granule <= detail::combine_piece_bytes &&
           segment_->shape().slot_bytes % granule == 0;
  }
  /// Payload bytes this rank combined as they arrived (irecv_combine): how
  /// to tell a reduction skipped its staging copy.
  [[nodiscard]] std::uint64_t bytes_combined_on_receive() const noexcept { return bytes_combined_on_receive_; }

  /// Payload bytes this rank posted with isendv: how to tell the executor
  /// sent a message from several buffers without packing it.
  [[nodiscard]] std::uint64_t bytes_sent_vectored() const noexcept { return bytes_sent_vectored_; }
  /// Payload bytes this rank received by single copy into or out of a
  /// vectored message (its own irecvv, or a peer's isendv reference).
  [[nodiscard]] std::uint64_t bytes_copied_vectored() const noexcept { return bytes_copied_vectored_; }

  /// Completes every request, or throws plait::error (timeout, peer_lost,
  /// size_mismatch, transport). After such a failure the communicator is
  /// poisoned and the group marked failed, with the reason its peers quote;
  /// no pending receive writes into user memory after the throw (this rank
  /// does all copying itself, inside this call).
  void wait_all(std::span<request> requests, deadline until);
  /// wait_all with the deadline now + timeout().
  void wait_all(std::span<request> requests) { wait_all(requests, deadline_from_now()); }
  /// One look without blocking: moves every pending transfer as far as the
  /// channels allow, then true if all of `requests` are complete (as after
  /// wait_all). Fails as wait_all does, and with errc::timeout once `until`
  /// has passed with some still pending.
  bool test_all(std::span<request> requests, deadline until);
  /// This rank's wait record says it is at the other level of a two-level
  /// call (`true`, counted: calls in flight may nest) or back (`false`). A
  /// peer that times out waiting for it then waits one timeout more, for the
  /// other level's own timeout to name the rank to blame (core/blame.hpp).
  void note_other_level(bool away) noexcept {
    auto count = detail::atomic(segment_->record(rank()).away);
    if (away) {
      count.fetch_add(1, std::memory_order_relaxed);
    } else {
      count.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  /// The rank's own code threw in a collective call (op/abandon.hpp), or
  /// it leaves a two-level call whose other level failed
  /// (op/abandon_levels.hpp): drops the pending transfers and poisons the
  /// communicator with `why`, and the group's failure record (blaming
  /// why.peer()) makes the peers' waits end with it.
  void abandon_call(const error& why) noexcept {
    if (!poisoned()) poison_group(why);
  }
  // wait(request), send and recv: blocking_calls (core/blocking_calls.hpp).

  /// Blocks until every rank has called barrier (bounded by the timeout).
  void barrier();

  // ---- shared slots (impl/shared_slots.ipp) -----------------------------
  // A round of a small collective in which every rank writes what it sends
  // into its own shared buffer, posts it with one flag, and reads its peers'
  // buffers in place once their flags say the round is there: one flag per
  // rank and round instead of a message per peer (op/slot_run.hpp runs a
  // schedule's steps as rounds). Each rank has two buffers, used in turn:
  // a peer that posts round k has read round k - 1, so a buffer is free again
  // once its rank has seen every peer's next post, without a barrier or a
  // counter of its own. Every rank of the group takes part in every round,
  // in the same order: the caller guarantees it (a schedule whose steps
  // every rank runs, each round read before the next is posted).

  /// Bytes of one round's buffer (its table of blocks included).
  static constexpr std::size_t shared_slot_bytes = detail::shared_slot_bytes;
  /// Starts this rank's next round of call `tag`, for errors `operation`
  /// (which must outlive the round) at `step`, in the buffer that every
  /// peer has read by now (the one of two rounds before).
  std::span<std::byte> begin_slot_round(int tag, std::string_view operation, int step);
  /// Posts the round: `bytes` of the buffer hold it, or `fits` false: this
  /// rank's call does not fit the buffers. Waits for every peer's post of
  /// the same round and returns whether every rank's fits (else no rank
  /// reads, and every rank runs the call through the channels). `payload`:
  /// the bytes the round's sends carry, counted in bytes_sent() when it runs.
  bool post_slot_round(std::size_t bytes, std::size_t payload, bool fits);
  /// What `peer` posted for the round (its size checked against the buffer).
  [[nodiscard]] std::span<const std::byte> peer_slot_round(int peer) const;
  /// Rounds this rank has run through the shared slots.
  [[nodiscard]] std::uint64_t slot_rounds() const noexcept { return slot_round_; }

  /// Splits the group: ranks passing the same color form a new group, ordered
  /// by (key, rank). Color plait::no_group gives a null communicator. Collective.
  communicator split(int color, int key);

  /// A buffer of n T (zero-initialised) in shared memory that every rank of
  /// the group maps: sent from, its bytes are read by the peers in place (one
  /// memcpy, no kernel call). Collective: every rank calls it, in the same
  /// order, each with its own n (0 allowed). If any rank cannot allocate, every
  /// rank throws plait::error naming it; nothing stays in /dev/shm either way.
  template <class T>
  [[nodiscard]] shared_buffer<T> allocate(std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "plait::shm::communicator::allocate<T> needs a trivially copyable, trivially destructible T: "
                  "its bytes are shared between processes");
    const std::size_t bytes = n <= SIZE_MAX / sizeof(T) ? n * sizeof(T) : SIZE_MAX;
    auto w = allocate_window(bytes, n <= SIZE_MAX / sizeof(T));
    T* data = reinterpret_cast<T*>(w->of(rank()).base);  // implicit-lifetime T in zero-filled pages
    return shared_buffer<T>(std::move(w), data, n);
  }

 private:
  using pending = detail::pending;
  using peer_state = detail::peer_state;
  template <class T>
  friend class allocator;  // holds the pool: shared_memory_resource

  /// The pool behind memory_resource(), created on first use (impl/group.ipp).
  std::shared_ptr<shm::memory_resource> shared_memory_resource();

  /// A split child: `settings` (inherited from the parent) at its place in `seg`.
  communicator(std::shared_ptr<detail::segment> seg, communicator_core settings);
  /// Records this rank in the segment (pid, attached count).
  void attach_to_segment();

  // ---- group management (impl/group.ipp) -------------------------------

  /// The collective part of allocate: this rank's part of `bytes`, every
  /// peer's part mapped, names removed. `fits` false: n * sizeof(T) overflowed
  /// (every rank still takes part, so all of them fail with the reason).
  std::shared_ptr<detail::window> allocate_window(std::size_t bytes, bool fits);

  /// Every rank's entry of `table` (size() equal slices, this rank's filled
  /// in) reaches every rank. Control traffic: not counted as payload.
  void exchange_table(std::span<std::byte> table, int tag);

  /// The window (shared buffer) of this communicator that holds all of
  /// `bytes` in this rank's part, as {id, offset}; {0, 0} when none does.
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> find_window(std::span<const std::byte> bytes) const;
  /// The live window `id` of this communicator, or null (never allocated here, or freed).
  [[nodiscard]] std::shared_ptr<detail::window> find_window(std::uint64_t id) const;

  void await_attached(deadline until, std::string_view operation);

  // ---- posting and progress (impl/communicator.ipp) --------------------

  /// Throws unless this communicator can move bytes: the core's checks, and
  /// a segment (a moved-from communicator has none).
  void check_usable(std::string_view operation) const {
    if (!segment_) [[unlikely]]
      null_communicator(operation);
    require_usable(operation);
  }
  [[noreturn, gnu::cold]] static void null_communicator(std::string_view operation);

  /// Poisons the core, records the failure in the segment for the peers,
  /// withdraws this rank's references and drops its pending transfers.
  void poison_group(const error& e) noexcept;

  [[nodiscard]] bool complete(const request& r) const {
    const auto& p = peers_[static_cast<std::size_t>(r.peer)];
    return r.is_send ? p.sends_done > r.sequence : p.recvs_done > r.sequence;
  }
  [[nodiscard]] int first_waiting(std::span<request> requests) const {
    const request* r = first_pending(requests);
    return r != nullptr ? r->peer : -1;
  }
  [[nodiscard]] const request* first_pending(std::span<request> requests) const {
    for (const request& r : requests) {
      if (!complete(r)) return &r;
    }
    return nullptr;
  }

  /// Whether send `m` to `peer` (in state `p`) goes as a reference (single copy).
  [[nodiscard]] bool goes_by_reference(const pending& m, const peer_state& p, int peer) const noexcept {
    if (single_copy_bytes_ == SIZE_MAX) return false;  // single copy turned off
    // From a shared buffer the receiver reads its own mapping: no kernel
    // permission involved, so a refused pair still may.
    if (m.window != 0) return m.bytes >= std::min(single_copy_bytes_, detail::window_single_copy_bytes);
    const std::size_t threshold = segment_->is_local(peer)     ? single_copy_bytes_
                                  : folded_on_arrival(m.stamp) ? process_fold_single_copy_bytes_
                                                               : process_single_copy_bytes_;
    return m.bytes >= threshold && !p.single_copy_refused;
  }

  /// Whether a message of the call stamped `stamp` is a reduction's, which
  /// its receiver folds (a built-in reduction: an operation of one's own
  /// has no kind the transport knows to fold).
  [[nodiscard]] static bool folded_on_arrival(std::uint32_t stamp) noexcept {
    const call_kind kind = call_stamp::from_bits(stamp).kind;
    return kind == call_kind::reduce_scatter || kind == call_kind::reduce_scatter_v || kind == call_kind::all_reduce;
  }

  /// Moves every pending transfer as far as the channels allow. True if any byte moved.
  bool progress();

  /// Whether vectored send `m` to `peer` may go by reference: its list fits a
  /// slot, and to another process its pieces are not so small that the
  /// kernel's per-piece cost exceeds the copies it saves.
  [[nodiscard]] bool vector_reference_fits(const pending& m, int peer) const noexcept {
    if (m.nonempty_pieces > detail::vector_pieces_per_slot(segment_->shape().slot_bytes)) return false;
    return segment_->is_local(peer) || m.bytes >= m.nonempty_pieces * detail::process_vector_piece_bytes;
  }

  // ---- the chunk channel (impl/chunk_channel.ipp) ----------------------

  bool progress_sends(int peer);
  bool progress_recvs(int peer);

  /// Throws unless `problem` is none: the slot `header` (a snapshot) is not what receive `m` expects.
  void check_header(int peer, const pending& m, const detail::slot_header& header, detail::slot_problem problem) const {
    if (problem != detail::slot_problem::none) [[unlikely]]
      header_failure(peer, m, header, problem);
  }
  /// check_header's throw. Cold and out of line (compile cost: message
  /// building is not inlined into the receive path). Its gnu::noinline is
  /// on the definition, like the other failure paths': g++ warns about an
  /// inline definition that follows a noinline declaration.
  [[noreturn, gnu::cold]] void header_failure(int peer, const pending& m, const detail::slot_header& header,
                                              detail::slot_problem problem) const;

  // ---- the single-copy reference protocol (impl/single_copy.ipp) -------

  /// Publishes send `m` as a reference in the next slot to `peer` (which is free).
  void post_reference(int peer, pending& m);

  /// Receives `m` from the reference in the current slot of `peer`'s channel.
  /// True when copied; false when this process may not read the peer's memory
  /// (the sender then sends the message again in chunks). Throws when the
  /// sender withdrew it or its buffer cannot be read.
  bool copy_reference(int peer, pending& m);
  /// copy_reference where the sender's message (`pieces` listed in its slot,
  /// 0: a plain reference) or this receive is vectored.
  bool copy_vector_reference(int peer, pending& m, std::size_t pieces);

  /// Where to write the copy a sender asked for with its reference (its
  /// address `address`, or `offset` in shared buffer `window_id`), or null
  /// when this rank cannot write it with plain stores (the sender then copies).
  std::byte* sender_copy(int peer, std::size_t bytes, std::uint64_t address, std::uint64_t window_id,
                         std::uint64_t offset) const noexcept;
  /// Where to write a sender's copy that lies in its pool: segment
  /// `segment_id` of `pool` (made by `pid`), mapped here; null when it cannot be.
  std::byte* pool_copy(int peer, std::int32_t pid, detail::pool_key pool, std::size_t bytes, std::uint64_t segment_id,
                       std::uint64_t offset) noexcept;
  /// Combines `bytes` arriving bytes at `offset` of combining receive `m`.
  void combine_arrival(const pending& m, const std::byte* arriving, std::size_t offset, std::size_t bytes);
  /// A combining receive of a reference from another process: reads pieces
  /// with process_vm_readv and combines each. 0 when done, else the errno
  /// that stopped it, with `read` bytes combined before it.
  int combine_from_process(std::int32_t pid, std::uint64_t address, pending& m, std::size_t& read);
  /// Copies `bytes` from src into dst and, unless `also` is null, into `also`.
  static void copy_for_both(std::byte* dst, std::byte* also, const std::byte* src, std::size_t bytes) noexcept;

  /// Withdraws every reference this rank has published and no receiver has
  /// started copying, and waits (bounded) for copies already under way, so no
  /// peer reads a buffer after the call that owned it has thrown.
  void withdraw_references() noexcept;

  // ---- shared slots (impl/shared_slots.ipp) -----------------------------

  /// Waits until every peer has posted `round`.
  void await_slot_peers(std::uint64_t round);
  void publish_slot_wait(int peer, bool label) noexcept;
  [[noreturn, gnu::cold]] void slot_round_timed_out(int peer, bool waited_longer);
  /// A conflict with `peer`'s stamp in this round: why this rank is the odd
  /// one, if more ranks posted the peer's stamp (detail::outvoted); else empty.
  [[nodiscard, gnu::cold]] std::string slot_round_outvoted(int peer) const;

  // ---- liveness (impl/liveness.ipp) ------------------------------------

  /// Throws peer_lost when any rank of the group has failed.
  void check_group(int peer) const {
    const int failed = segment_->failed_rank();
    if (failed >= 0) [[unlikely]]
      group_failed(peer, failed);
  }
  /// peer_lost naming the first rank that failed and, from its record, why.
  [[noreturn, gnu::cold]] void group_failed(int peer, int failed) const;
  /// Writes why this rank failed into its record, then marks the group failed
  /// (the first failure stays the group's).
  void record_group_failure(const error& e) noexcept;
  /// False when the process of a rank we still wait for no longer exists.
  [[nodiscard]] bool peers_alive(std::span<request> requests) const;
  [[nodiscard, gnu::cold]] error lost_process(std::span<request> requests) const;
  /// `waited_longer`: the wait went on for one timeout more (wait_longer).
  [[nodiscard, gnu::cold]] error timed_out(std::span<request> requests, bool waited_longer = false) const;
  /// Whether a wait whose deadline has passed goes on for one timeout more:
  /// the rank to blame is at the other level of a two-level call, whose own
  /// timeout names the rank to blame there and fails this level with it.
  [[nodiscard, gnu::cold]] bool wait_longer(std::span<request> requests) const;

  // ---- the wait record (impl/liveness.ipp; the rule: core/blame.hpp) --

  /// Publishes in this rank's record the wait for the first of `requests`
  /// still pending: its call, step and peer, then `waiting`. A few relaxed
  /// stores, at a wait's first idle poll and at its slow checks (the peer it
  /// waits for changes as transfers finish), never per poll. With `label`,
  /// the call's name too (48 bytes: once a wait has slept a while).
  void publish_wait(std::span<request> requests, bool label) noexcept;
  /// Marks the published wait over.
  void end_wait() noexcept;
  /// Ends the record a test_all look published, if any: the wait it
  /// describes may complete elsewhere (wait_all at its first poll, which
  /// publishes nothing), and a stale record would show this rank waiting in
  /// a call it has left.
  void end_looked_wait() noexcept {
    if (test_published_) end_wait();
    test_published_ = false;
  }
  /// Every rank's wait record as it reads now; this rank's from `requests`.
  [[nodiscard]] std::vector<plait::detail::wait_record> wait_records(std::span<request> requests) const;
  /// Where this rank's call `call` conflicts with `peer`'s (stamps `mine`
  /// and `theirs`): why this rank is the odd one, if more of the ranks
  /// waiting in the call run the peer's (detail::outvoted); else empty.
  [[nodiscard, gnu::cold]] std::string outvoted_in_call(int peer, std::uint32_t call, std::uint32_t mine,
                                                        std::uint32_t theirs) const;

  std::shared_ptr<detail::segment> segment_;
  std::vector<peer_state> peers_;
  mutable plait::detail::blame blame_;           // timed_out's finding, which record_group_failure words for the peers
  plait::detail::deadline_extension extension_;  // test_all's deadline that wait_longer extended
  std::uint64_t bytes_read_in_place_ = 0;
  std::uint64_t bytes_copied_for_senders_ = 0;
  std::uint64_t bytes_sent_vectored_ = 0;
  std::uint64_t bytes_copied_vectored_ = 0;
  std::uint64_t bytes_combined_on_receive_ = 0;
  std::uint64_t bytes_read_from_processes_ = 0;
  std::vector<std::byte> combine_piece_;    // a combining receive's piece read from another process
  mutable std::uint64_t send_lookups_ = 0;  // counted by the const locate_send
  unsigned test_looks_ = 0;                 // test_all calls, to look for lost peer processes now and then
  bool test_published_ = false;             // test_all published a wait record not yet ended
  std::size_t single_copy_bytes_ =
      detail::single_copy_bytes_from_environment().value_or(detail::thread_single_copy_bytes);
  std::size_t process_single_copy_bytes_ =
      detail::single_copy_bytes_from_environment().value_or(detail::process_single_copy_bytes);
  std::size_t process_fold_single_copy_bytes_ =
      detail::single_copy_bytes_from_environment().value_or(detail::process_fold_single_copy_bytes);
  std::vector<std::weak_ptr<detail::window>> windows_;  // buffers from allocate; owned by them
  std::uint64_t window_count_ = 0;
  std::uint64_t slot_round_ = 0;                // shared-slot rounds begun (every rank counts alike)
  int slot_tag_ = 0;                            // the round's call
  int slot_step_ = -1;                          // the round's step of that call
  std::uint32_t slot_stamp_ = 0;                // the call's stamp (bits)
  std::string_view slot_operation_;             // the round's call, for errors
  std::shared_ptr<shm::memory_resource> pool_;  // this rank's pool, once asked for; shared with its allocators
  detail::pool_mappings peer_pools_;            // peers' pool segments mapped here, each on first sight
};

}  // namespace shm
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/transport/shm/impl/chunk_channel.ipp"
#include "plait/transport/shm/impl/communicator.ipp"
#include "plait/transport/shm/impl/group.ipp"
#include "plait/transport/shm/impl/liveness.ipp"
#include "plait/transport/shm/impl/shared_slots.ipp"
#include "plait/transport/shm/impl/single_copy.ipp"
#endif

// plait::shm::communicator — point-to-point and collectives over one shared
// memory segment, for ranks that are threads or processes on one node.
//
// Each ordered pair of ranks owns a channel of slots. Two ways through it:
//   - small messages (below single_copy_bytes()) are cut into slot-sized
//     chunks: the sender copies a chunk in and bumps one counter, the receiver
//     copies it out, so a message that fits a slot costs one flag;
//   - larger ones go by reference (single copy): the sender publishes where its
//     buffer is, the receiver copies straight from it (memcpy when the peer is
//     a thread of this process, process_vm_readv when it is another process)
//     and acknowledges; the send completes once the receiver has copied. If the
//     kernel refuses cross-process reads (EPERM, ENOSYS), the receiver says so
//     and that pair falls back to chunks for good;
//   - a buffer from allocate<T>(n) (shared_buffer.hpp) is mapped by every rank:
//     a message from one is read in place with a memcpy, no kernel call, and
//     takes this path from window_single_copy_bytes on.
// Requests progress inside wait_all (all of this rank's pending transfers, not
// only the ones waited for), so a ring of sends never deadlocks.
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include "plait/core/backoff.hpp"
#include "plait/core/error.hpp"
#include "plait/core/stream_copy.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/transport/shm/segment.hpp"
#include "plait/transport/shm/shared_buffer.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

namespace detail {
using plait::detail::default_timeout;  // PLAIT_TIMEOUT, shared by every transport
using plait::detail::seconds_text;

/// Messages to a thread of this process of at least this many bytes go by
/// reference (one memcpy); below it the round trip costs more than two copies
/// through a cache-resident slot. Measured (2 ranks exchanging, quiet machine):
/// equal at 2 KiB, single copy 1.5x faster at 4 KiB and 2x from 16 KiB.
inline constexpr std::size_t thread_single_copy_bytes = std::size_t{4} << 10;
/// Between processes the copy is process_vm_readv, a system call that pins
/// the sender's pages: chunks win at 4 KiB (1.3 against 2.0 us), the two are
/// equal at 8 KiB, and single copy wins from 16 KiB (1.3x at 16 KiB, 1.6-2x at
/// 64 KiB - 1 MiB, 1.3x at 2 MiB).
inline constexpr std::size_t process_single_copy_bytes = std::size_t{16} << 10;

/// How long a wait polls without yielding when the group has a core per rank
/// (as MPI's blocking calls and plait::mpi do; see core/backoff.hpp). Measured
/// with 2 processes exchanging 512 KiB on the busy 2-core machine, five
/// interleaved rounds: 22-24 us polling against 24-75 us yielding at once.
inline constexpr std::chrono::milliseconds default_busy_poll{100};

/// PLAIT_SHM_SINGLE_COPY_BYTES, when set: one threshold for both (0 turns
/// single copy off; for measurements).
inline std::optional<std::size_t> single_copy_bytes_from_environment() {
  if (const char* text = std::getenv("PLAIT_SHM_SINGLE_COPY_BYTES")) {
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0') return bytes == 0 ? SIZE_MAX : static_cast<std::size_t>(bytes);
  }
  return std::nullopt;
}

/// A message that arrives in chunks (below the single-copy threshold, or
/// where process_vm_readv is refused) is copied out of the slots with
/// streaming stores from this size on: 4x plait::detail::stream_copy_bytes(),
/// 16 MiB by default. Measured (bench/cma-vs-copy, pipe:64K:4:rn against rr,
/// 2 ranks, two runs): 1.09-1.18x for 16-64 MiB messages, 0.83-1.02x for
/// 4-8 MiB ones. The slots themselves keep regular stores: the peer reads
/// them at once, from the cache.
inline std::size_t chunk_stream_bytes() noexcept {
  const std::size_t local = plait::detail::stream_copy_bytes().load(std::memory_order_relaxed);
  return local > SIZE_MAX / 4 ? SIZE_MAX : 4 * local;
}

/// From a shared buffer, single copy pays off much earlier: the receiver reads
/// with a plain memcpy, the only cost over chunks is the acknowledgement.
inline constexpr std::size_t window_single_copy_bytes = std::size_t{4} << 10;

}  // namespace detail

class communicator {
 public:
  using transport_concept = transport_tag;
  using memory_space = host_memory;

  /// A posted send or receive; complete once wait_all returns.
  struct request {
    int peer = -1;
    bool is_send = false;
    std::uint64_t sequence = 0;
  };

  /// A null communicator (what split gives a rank that passed plait::no_group).
  communicator() = default;
  communicator(communicator&&) noexcept = default;
  communicator& operator=(communicator&&) noexcept = default;
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  /// A send still pending here (never waited for) is withdrawn, so no peer
  /// starts reading a buffer its owner may free next.
  ~communicator() {
    if (segment_) withdraw_references();
  }

  /// Attaches `rank` to a mapped segment (used by run_threads, run_processes, join, split).
  communicator(std::shared_ptr<detail::segment> seg, int rank, std::chrono::nanoseconds timeout)
      : segment_(std::move(seg)),
        rank_(rank),
        size_(static_cast<int>(segment_->shape().ranks)),
        timeout_(timeout),
        busy_poll_(size_ <= plait::detail::usable_cpus() ? detail::default_busy_poll : std::chrono::nanoseconds{}),
        peers_(static_cast<std::size_t>(size_)) {
    segment_->mark_local(rank_);
    auto& record = segment_->record(rank_);
    detail::atomic(record.pid).store(static_cast<std::int32_t>(getpid()), std::memory_order_relaxed);
    detail::atomic(segment_->header().attached).fetch_add(1, std::memory_order_acq_rel);
  }

  /// Joins group `name` as `rank` of `size`, for processes started by anyone.
  /// Rank 0 creates the segment (O_EXCL, mode 0600); the others check its owner
  /// and mode. Returns once every rank has attached; the name is then removed.
  /// An absent rank makes every present one throw errc::timeout.
  static communicator join(std::string_view name, int rank, int size,
                           std::chrono::nanoseconds timeout = detail::default_timeout()) {
    const error_context at{rank, "join", -1, -1};
    if (size < 1 || size > detail::max_ranks) {
      throw error(errc::invalid_argument,
                  "group size " + std::to_string(size) + " is outside [1, " + std::to_string(detail::max_ranks) + "]",
                  at);
    }
    if (rank < 0 || rank >= size) {
      throw error(errc::invalid_argument,
                  "rank " + std::to_string(rank) + " is outside [0, " + std::to_string(size) + ")", at);
    }
    if (name.empty() || name.size() > 200 ||
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789._-") != std::string_view::npos) {
      throw error(errc::invalid_argument,
                  "group name \"" + std::string(name) + "\" must be 1-200 characters of letters, digits, '.', '_', '-'",
                  at);
    }
    const std::string path = "/plait-" + std::string(name);
    const detail::geometry shape{static_cast<std::uint32_t>(size)};
    const deadline until = clock::now() + timeout;
    auto seg = rank == 0 ? detail::segment::create(path, shape, at) : detail::segment::open(path, shape, until, at);
    communicator comm(std::move(seg), rank, timeout);
    comm.await_attached(until, "join");
    return comm;
  }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  explicit operator bool() const noexcept { return segment_ != nullptr; }

  void set_timeout(std::chrono::nanoseconds timeout) { timeout_ = timeout; }
  template <class Rep, class Period>
  void set_timeout(std::chrono::duration<Rep, Period> timeout) {
    timeout_ = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout);
  }
  [[nodiscard]] std::chrono::nanoseconds timeout() const noexcept { return timeout_; }
  /// How long a wait polls (yielding only every 20 us, core/backoff.hpp) before
  /// it backs off: 100 ms when this process may run on a CPU for every rank of
  /// the group (its affinity mask), else zero (ranks that outnumber the cores
  /// must yield to each other).
  /// Split children inherit it.
  void set_busy_poll(std::chrono::nanoseconds busy) {
    if (busy < std::chrono::nanoseconds::zero())
      throw error(errc::invalid_argument, "negative busy-poll time", {rank_, "set_busy_poll"});
    busy_poll_ = busy;
  }
  [[nodiscard]] std::chrono::nanoseconds busy_poll() const noexcept { return busy_poll_; }
  [[nodiscard]] std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }
  /// Payload bytes this rank received by reading a peer's shared buffer (from
  /// allocate) in place: how to tell that path was taken.
  [[nodiscard]] std::uint64_t bytes_read_in_place() const noexcept { return bytes_read_in_place_; }

  /// Messages of at least this many bytes are copied once, straight from the
  /// sender's buffer; smaller ones through the slots. The default depends on
  /// the peer: 4 KiB to a thread of this process, 16 KiB to another process
  /// (see detail::thread_single_copy_bytes); this sets both. 0: never.
  void set_single_copy_bytes(std::size_t bytes) noexcept {
    single_copy_bytes_ = process_single_copy_bytes_ = bytes == 0 ? SIZE_MAX : bytes;
  }
  /// The threshold to a peer that is a thread of this process ...
  [[nodiscard]] std::size_t single_copy_bytes() const noexcept { return single_copy_bytes_; }
  /// ... and to a peer in another process.
  [[nodiscard]] std::size_t process_single_copy_bytes() const noexcept { return process_single_copy_bytes_; }
  /// Control messages (check-mode signatures, split's tables) are not payload.
  void discount_control_bytes(std::uint64_t bytes) noexcept { bytes_sent_ -= std::min(bytes, bytes_sent_); }

  /// Check mode: collectives first verify that every rank makes the same call
  /// (also on with PLAIT_CHECK=1).
  void set_check_mode(bool on) noexcept { check_mode_ = on; }
  [[nodiscard]] bool check_mode() const noexcept { return check_mode_; }

  /// A fresh tag for one collective call; every rank draws the same sequence.
  int next_tag() {
    check_usable("collective");
    tag_counter_ = tag_counter_ % max_tag + 1;
    return tag_counter_;
  }

  request isend(int peer, std::span<const std::byte> bytes, int tag = user_tag) {
    check_usable("isend");
    check_peer(peer, "isend");
    auto& state = peers_[static_cast<std::size_t>(peer)];
    const auto [window, offset] = find_window(bytes);
    state.sends.push_back({bytes.data(), nullptr, bytes.size(), 0, tag, false, false, 0, window, offset});
    bytes_sent_ += bytes.size();
    request r{peer, true, state.sends_posted++};
    progress_sends(peer);  // small messages leave at once
    return r;
  }

  request irecv(int peer, std::span<std::byte> bytes, int tag = user_tag) {
    check_usable("irecv");
    check_peer(peer, "irecv");
    auto& state = peers_[static_cast<std::size_t>(peer)];
    state.recvs.push_back({nullptr, bytes.data(), bytes.size(), 0, tag, false, false, 0, 0, 0});
    return {peer, false, state.recvs_posted++};
  }

  /// Completes every request, or throws plait::error (timeout, peer_lost,
  /// size_mismatch, transport). After a timeout or peer loss the communicator
  /// is poisoned; no pending receive writes into user memory after the throw
  /// (this rank does all copying itself, inside this call).
  void wait_all(std::span<request> requests, deadline until) {
    check_usable("wait_all");
    try {
      plait::detail::backoff wait(plait::detail::backoff::default_yield_polls, busy_poll_);
      unsigned slow_checks = 0;
      for (;;) {
        const bool moved = progress();
        if (std::all_of(requests.begin(), requests.end(), [this](const request& r) { return complete(r); })) return;
        if (moved) {
          wait.reset();
          continue;
        }
        check_group(first_waiting(requests));
        if (clock::now() > until) throw timed_out(requests);
        if (wait.sleeping() && ++slow_checks % 64 == 0 && !peers_alive(requests)) {
          // A process that ended cannot write any more: whatever it sent is in
          // the channel now, so one more pass decides whether we can finish.
          progress();
          if (!std::all_of(requests.begin(), requests.end(), [this](const request& r) { return complete(r); })) {
            throw lost_process(requests);
          }
        }
        wait.pause();
      }
    } catch (const error& e) {
      if (e.value() == errc::timeout || e.value() == errc::peer_lost || e.value() == errc::transport ||
          e.value() == errc::size_mismatch) {
        poison(e);
      }
      throw;
    }
  }
  void wait_all(std::span<request> requests) { wait_all(requests, clock::now() + timeout_); }
  void wait(request r) { wait_all(std::span<request>(&r, 1)); }

  void send(int peer, std::span<const std::byte> bytes, int tag = user_tag) { wait(isend(peer, bytes, tag)); }
  void recv(int peer, std::span<std::byte> bytes, int tag = user_tag) { wait(irecv(peer, bytes, tag)); }

  /// Blocks until every rank has called barrier (bounded by the timeout).
  void barrier() {
    check_usable("barrier");
    auto& h = segment_->header();
    const std::uint32_t generation = detail::atomic(h.barrier_generation).load(std::memory_order_acquire);
    if (detail::atomic(h.barrier_count).fetch_add(1, std::memory_order_acq_rel) + 1 ==
        static_cast<std::uint32_t>(size_)) {
      detail::atomic(h.barrier_count).store(0, std::memory_order_relaxed);
      detail::atomic(h.barrier_generation).fetch_add(1, std::memory_order_release);
      return;
    }
    const deadline until = clock::now() + timeout_;
    plait::detail::backoff wait(plait::detail::backoff::default_yield_polls, busy_poll_);
    while (detail::atomic(h.barrier_generation).load(std::memory_order_acquire) == generation) {
      try {
        check_group(-1);
        if (clock::now() > until) {
          throw error(errc::timeout, "barrier timed out after " + detail::seconds_text(timeout_), {rank_, "barrier"});
        }
      } catch (const error& e) {
        poison(e);
        throw;
      }
      wait.pause();
    }
  }

  /// Splits the group: ranks passing the same color form a new group, ordered
  /// by (key, rank). Color plait::no_group gives a null communicator. Collective.
  communicator split(int color, int key) {
    check_usable("split");
    if (color < 0 && color != no_group) {
      throw error(errc::invalid_argument, "split color " + std::to_string(color) + " is negative (use plait::no_group)",
                  {rank_, "split"});
    }
    const int tag = next_tag();
    // Everyone learns everyone's (color, key).
    std::vector<std::int64_t> table(2 * static_cast<std::size_t>(size_));
    table[2 * static_cast<std::size_t>(rank_)] = color;
    table[2 * static_cast<std::size_t>(rank_) + 1] = key;
    exchange_table(std::as_writable_bytes(std::span(table)), tag);
    if (color == no_group) return communicator{};
    std::vector<int> members;
    for (int r = 0; r < size_; ++r) {
      if (table[2 * static_cast<std::size_t>(r)] == color) members.push_back(r);
    }
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
      return table[2 * static_cast<std::size_t>(a) + 1] < table[2 * static_cast<std::size_t>(b) + 1];
    });
    const int new_rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
    const detail::geometry shape{static_cast<std::uint32_t>(members.size())};
    const error_context at{rank_, "split", -1, -1};
    const deadline until = clock::now() + timeout_;
    std::array<char, 64> name{};
    std::shared_ptr<detail::segment> seg;
    if (new_rank == 0) {
      seg = detail::segment::create(detail::random_name(), shape, at);
      std::memcpy(name.data(), seg->name().data(), std::min(seg->name().size(), name.size() - 1));
      std::vector<request> requests;
      for (std::size_t i = 1; i < members.size(); ++i)
        requests.push_back(isend(members[i], std::as_bytes(std::span(name)), tag));
      wait_all(requests);
      discount_control_bytes(name.size() * (members.size() - 1));
    } else {
      recv(members[0], std::as_writable_bytes(std::span(name)), tag);
      name.back() = '\0';  // never trust a peer's string to be terminated
      seg = detail::segment::open(name.data(), shape, until, at);
    }
    communicator child(std::move(seg), new_rank, timeout_);
    child.busy_poll_ = busy_poll_;
    child.await_attached(until, "split");
    return child;
  }

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
    T* data = reinterpret_cast<T*>(w->of(rank_).base);  // implicit-lifetime T in zero-filled pages
    return shared_buffer<T>(std::move(w), data, n);
  }

 private:
  static constexpr int max_tag = (1 << 30) - 1;

  /// The collective part of allocate: this rank's part of `bytes`, every
  /// peer's part mapped, names removed. `fits` false: n * sizeof(T) overflowed
  /// (every rank still takes part, so all of them fail with the reason).
  std::shared_ptr<detail::window> allocate_window(std::size_t bytes, bool fits) {
    constexpr std::string_view operation = "allocate";
    check_usable(operation);
    const error_context at{rank_, operation};
    const int tag = next_tag();
    auto w = std::make_shared<detail::window>(++window_count_, size_);
    std::vector<detail::window_announcement> table(static_cast<std::size_t>(size_));
    detail::window_announcement& mine = table[static_cast<std::size_t>(rank_)];
    mine = {w->id(), bytes, 1, {}};
    std::string own_name;
    std::optional<error> own_failure;  // why this rank fails, if it does
    try {
      if (!fits) throw error(errc::invalid_argument, "the element count times sizeof(T) overflows", at);
      if (bytes != 0) own_name = w->create_part(rank_, bytes, at);
      std::memcpy(mine.name, own_name.data(), std::min(own_name.size(), sizeof(mine.name) - 1));
    } catch (const error& e) {
      mine.ok = 0;
      own_failure = e;
    }
    // The name goes once every rank has mapped the part, or on any failure.
    struct unlink_at_exit {
      const std::string& name;
      ~unlink_at_exit() {
        if (!name.empty()) shm_unlink(name.c_str());
      }
    } remove_name{own_name};

    exchange_table(std::as_writable_bytes(std::span(table)), tag);
    auto fail_if_any = [&](std::string_view what) {
      if (own_failure) throw *own_failure;
      for (int r = 0; r < size_; ++r) {
        if (table[static_cast<std::size_t>(r)].ok == 0) {
          throw error(errc::transport, "rank " + std::to_string(r) + " could not " + std::string(what),
                      {rank_, operation, -1, r});
        }
      }
    };
    fail_if_any("allocate its part");
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const detail::window_announcement& theirs = table[static_cast<std::size_t>(r)];
      try {
        if (theirs.id != w->id()) {
          throw error(errc::invalid_argument,
                      "rank " + std::to_string(r) + " is at its allocation " + std::to_string(theirs.id) +
                          " where this rank is at " + std::to_string(w->id()) +
                          " (allocate is collective: every rank calls it, in the same order)",
                      {rank_, operation, -1, r});
        }
        if (theirs.bytes == 0) continue;
        if (!detail::is_window_name(theirs.name, sizeof(theirs.name))) {
          throw error(errc::transport, "rank " + std::to_string(r) + " announced a malformed shared-buffer name",
                      {rank_, operation, -1, r});
        }
        w->open_part(r, std::string(theirs.name), static_cast<std::size_t>(theirs.bytes), {rank_, operation, -1, r});
      } catch (const error& e) {
        if (!own_failure) own_failure = e;
      }
    }
    // Second round: everyone has mapped everything (or says why not).
    for (auto& entry : table) entry.ok = 1;
    mine.ok = own_failure ? 0 : 1;
    exchange_table(std::as_writable_bytes(std::span(table)), tag);
    fail_if_any("map every rank's part");
    std::erase_if(windows_, [](const auto& weak) { return weak.expired(); });
    windows_.push_back(w);
    return w;
  }

  /// Every rank's entry of `table` (size() equal slices, this rank's filled
  /// in) reaches every rank. Control traffic: not counted as payload.
  void exchange_table(std::span<std::byte> table, int tag) {
    const std::size_t entry = table.size() / static_cast<std::size_t>(size_);
    const auto mine = table.subspan(static_cast<std::size_t>(rank_) * entry, entry);
    std::vector<request> requests;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      requests.push_back(irecv(peer, table.subspan(static_cast<std::size_t>(peer) * entry, entry), tag));
      requests.push_back(isend(peer, mine, tag));
    }
    wait_all(requests);
    discount_control_bytes(entry * static_cast<std::size_t>(size_ - 1));
  }

  /// The window (shared buffer) of this communicator that holds all of
  /// `bytes` in this rank's part, as {id, offset}; {0, 0} when none does.
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> find_window(std::span<const std::byte> bytes) const {
    if (bytes.empty()) return {0, 0};
    const auto* first = bytes.data();
    for (const auto& weak : windows_) {
      const auto w = weak.lock();
      if (!w) continue;
      const detail::window::part& part = w->of(rank_);
      // Compared as integers: the pointers may belong to different objects.
      const auto begin = reinterpret_cast<std::uintptr_t>(part.base);
      const auto at = reinterpret_cast<std::uintptr_t>(first);
      if (part.base != nullptr && at >= begin && at - begin <= part.bytes && bytes.size() <= part.bytes - (at - begin))
        return {w->id(), at - begin};
    }
    return {0, 0};
  }
  /// The live window `id` of this communicator, or null (never allocated here, or freed).
  [[nodiscard]] std::shared_ptr<detail::window> find_window(std::uint64_t id) const {
    for (const auto& weak : windows_) {
      if (auto w = weak.lock(); w && w->id() == id) return w;
    }
    return nullptr;
  }

  struct pending {
    const std::byte* out;
    std::byte* in;
    std::size_t bytes;
    std::size_t done;
    int tag;
    bool started;
    bool by_reference;             // a send published as a reference, waiting for the receiver's copy
    std::uint64_t reference_slot;  // which slot holds its reference
    std::uint64_t window;          // a send from a shared buffer: its window id (0: none) ...
    std::uint64_t window_offset;   // ... and where in this rank's part
  };
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

  /// Whether send `m` to `peer` (in state `p`) goes as a reference (single copy).
  [[nodiscard]] bool goes_by_reference(const pending& m, const peer_state& p, int peer) const noexcept {
    if (single_copy_bytes_ == SIZE_MAX) return false;  // single copy turned off
    // From a shared buffer the receiver reads its own mapping: no kernel
    // permission involved, so a refused pair still may.
    if (m.window != 0) return m.bytes >= std::min(single_copy_bytes_, detail::window_single_copy_bytes);
    const std::size_t threshold = segment_->is_local(peer) ? single_copy_bytes_ : process_single_copy_bytes_;
    return m.bytes >= threshold && !p.single_copy_refused;
  }

  void check_usable(std::string_view operation) const {
    if (!segment_ || poisoned_) [[unlikely]]
      unusable(operation);
  }
  /// check_usable's throw; cold and out of line, like the other failure
  /// paths (compile cost: message building stays out of isend/irecv).
  [[noreturn, gnu::cold, gnu::noinline]] void unusable(std::string_view operation) const {
    if (!segment_)
      throw error(errc::invalid_argument, "null communicator (from split with plait::no_group)", {-1, operation});
    plait::detail::fail(poisoned_code_, {"communicator is unusable after an earlier failure: ", poison_reason_},
                        {rank_, operation});
  }
  void check_peer(int peer, std::string_view operation) const {
    if (peer < 0 || peer >= size_) [[unlikely]]
      bad_peer(peer, operation);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bad_peer(int peer, std::string_view operation) const {
    plait::detail::fail(errc::invalid_argument, {"peer ", peer, " is outside [0, ", size_, ")"},
                        {rank_, operation, -1, peer});
  }
  void poison(const error& e) {
    poisoned_ = true;
    poisoned_code_ = e.value();
    poison_reason_ = e.what();
    withdraw_references();
    for (auto& p : peers_) {  // nothing may touch user memory after the throw
      p.sends.clear();
      p.recvs.clear();
    }
  }

  [[nodiscard]] bool complete(const request& r) const {
    const auto& p = peers_[static_cast<std::size_t>(r.peer)];
    return r.is_send ? p.sends_done > r.sequence : p.recvs_done > r.sequence;
  }
  [[nodiscard]] int first_waiting(std::span<request> requests) const {
    for (const request& r : requests) {
      if (!complete(r)) return r.peer;
    }
    return -1;
  }

  /// Moves every pending transfer as far as the channels allow. True if any byte moved.
  bool progress() {
    bool moved = false;
    for (int peer = 0; peer < size_; ++peer) {
      moved |= progress_sends(peer);
      moved |= progress_recvs(peer);
    }
    return moved;
  }

  bool progress_sends(int peer) {
    auto& p = peers_[static_cast<std::size_t>(peer)];
    auto& channel = segment_->channel(rank_, peer);
    const std::uint32_t slots = segment_->shape().slots;
    const std::size_t slot_bytes = segment_->shape().slot_bytes;
    bool moved = false;
    while (!p.sends.empty()) {
      const std::uint64_t tail = detail::atomic(channel.tail).load(std::memory_order_acquire);
      if (detail::pending_slots(p.head, tail, slots) < 0) {
        plait::detail::fail(errc::transport,
                            {"corrupt channel: peer reports ", tail, " slots consumed of ", p.head, " written"},
                            {rank_, "isend", -1, peer});
      }
      pending& m = p.sends.front();
      if (m.by_reference) {
        // The receiver releases the slot only after it has finished with our
        // buffer, so a tail past the slot means the copy is over.
        if (tail <= m.reference_slot) break;
        const auto state = static_cast<detail::reference_state>(
            detail::atomic(segment_->reference(rank_, peer, m.reference_slot).state).load(std::memory_order_acquire));
        m.by_reference = false;
        moved = true;
        if (state == detail::reference_state::done) {
          p.sends.pop_front();
          ++p.sends_done;
          continue;
        }
        if (state != detail::reference_state::refused) {
          plait::detail::fail(
              errc::transport,
              {"corrupt channel: peer released a single-copy slot in state ", static_cast<std::uint32_t>(state)},
              {rank_, "isend", -1, peer});
        }
        p.single_copy_refused = true;  // send this message (and later ones) in chunks
        continue;
      }
      if (p.head - tail == slots) break;  // channel full: the peer has to drain it first
      if (!m.started && goes_by_reference(m, p, peer)) {
        post_reference(peer, m);
        moved = true;
        break;  // later messages to this peer wait until the receiver has copied this one
      }
      const std::size_t chunk = std::min(slot_bytes, m.bytes - m.done);
      detail::slot_header& header = segment_->slot(rank_, peer, p.head);
      header = detail::slot_header{static_cast<std::uint32_t>(m.tag),
                                   static_cast<std::uint32_t>(detail::slot_kind::chunk), m.bytes, m.done, chunk};
      if (chunk != 0) std::memcpy(segment_->payload(rank_, peer, p.head), m.out + m.done, chunk);
      m.done += chunk;
      m.started = true;
      ++p.head;
      detail::atomic(channel.head).store(p.head, std::memory_order_release);
      moved = true;
      if (m.done == m.bytes) {
        p.sends.pop_front();
        ++p.sends_done;
      }
    }
    return moved;
  }

  bool progress_recvs(int peer) {
    auto& p = peers_[static_cast<std::size_t>(peer)];
    auto& channel = segment_->channel(peer, rank_);
    const std::uint32_t slots = segment_->shape().slots;
    const std::size_t slot_bytes = segment_->shape().slot_bytes;
    bool moved = false;
    while (!p.recvs.empty()) {
      const std::uint64_t head = detail::atomic(channel.head).load(std::memory_order_acquire);
      if (detail::pending_slots(head, p.tail, slots) < 0) {
        plait::detail::fail(errc::transport,
                            {"corrupt channel: peer reports ", head, " slots written, ", p.tail, " consumed"},
                            {rank_, "irecv", -1, peer});
      }
      if (head == p.tail) break;  // nothing new yet
      pending& m = p.recvs.front();
      // Copy the header out first: the peer could change it while we check it.
      const detail::slot_header header = segment_->slot(peer, rank_, p.tail);
      if (header.kind == static_cast<std::uint32_t>(detail::slot_kind::reference)) {
        check_header(peer, m, header,
                     detail::check_reference(header, static_cast<std::uint32_t>(m.tag), m.bytes, m.done));
        if (copy_reference(peer, m)) {
          m.done = m.bytes;
          p.recvs.pop_front();
          ++p.recvs_done;
        }
        ++p.tail;  // releases the slot, and tells the sender we are done with its buffer
        detail::atomic(channel.tail).store(p.tail, std::memory_order_release);
        moved = true;
        continue;
      }
      if (header.kind != static_cast<std::uint32_t>(detail::slot_kind::chunk)) {
        plait::detail::fail(errc::transport, {"corrupt message slot (kind ", header.kind, ")"},
                            {rank_, "irecv", -1, peer});
      }
      check_header(peer, m, header,
                   detail::check_slot(header, static_cast<std::uint32_t>(m.tag), m.bytes, m.done, slot_bytes));
      const bool stream = m.bytes >= detail::chunk_stream_bytes();
      if (header.chunk_bytes != 0) {
        if (stream) {
          plait::detail::stream_copy(m.in + m.done, segment_->payload(peer, rank_, p.tail), header.chunk_bytes);
        } else {
          std::memcpy(m.in + m.done, segment_->payload(peer, rank_, p.tail), header.chunk_bytes);
        }
      }
      m.done += header.chunk_bytes;
      m.started = true;
      ++p.tail;
      detail::atomic(channel.tail).store(p.tail, std::memory_order_release);
      moved = true;
      if (m.done == m.bytes) {
        if (stream) plait::detail::stream_fence();  // the result is complete before the request is
        p.recvs.pop_front();
        ++p.recvs_done;
      }
    }
    return moved;
  }

  /// Throws unless `problem` is none: the slot `header` (a snapshot) is not what receive `m` expects.
  void check_header(int peer, const pending& m, const detail::slot_header& header, detail::slot_problem problem) const {
    if (problem != detail::slot_problem::none) [[unlikely]]
      header_failure(peer, m, header, problem);
  }
  /// check_header's throw. Cold and out of line (compile cost: message
  /// building is not inlined into the receive path).
  [[noreturn, gnu::cold, gnu::noinline]] void header_failure(int peer, const pending& m,
                                                             const detail::slot_header& header,
                                                             detail::slot_problem problem) const {
    const error_context at{rank_, "irecv", -1, peer};
    switch (problem) {
      case detail::slot_problem::tag_mismatch:
        plait::detail::fail(errc::transport,
                            {"message with tag ", header.tag, " arrived where tag ", m.tag,
                             " was expected: the ranks called different operations or in a different order"},
                            at);
      case detail::slot_problem::size_mismatch:
        plait::detail::fail(errc::size_mismatch,
                            {"peer sent ", header.message_bytes, " bytes where this rank expects ", m.bytes,
                             " (do the ranks agree on the sizes?)"},
                            at);
      case detail::slot_problem::none:
      case detail::slot_problem::corrupt: break;
    }
    plait::detail::fail(errc::transport,
                        {"corrupt message slot (offset ", header.offset, ", ", header.chunk_bytes, " bytes)"}, at);
  }

  /// Publishes send `m` as a reference in the next slot to `peer` (which is free).
  void post_reference(int peer, pending& m) {
    auto& p = peers_[static_cast<std::size_t>(peer)];
    detail::reference_descriptor& ref = segment_->reference(rank_, peer, p.head);
    ref.address = reinterpret_cast<std::uintptr_t>(m.out);
    ref.pid = static_cast<std::int32_t>(getpid());
    ref.window = m.window;
    ref.offset = m.window_offset;
    detail::atomic(ref.state).store(static_cast<std::uint32_t>(detail::reference_state::posted),
                                    std::memory_order_relaxed);
    segment_->slot(rank_, peer, p.head) = detail::slot_header{
        static_cast<std::uint32_t>(m.tag), static_cast<std::uint32_t>(detail::slot_kind::reference), m.bytes, 0, 0};
    m.started = true;
    m.by_reference = true;
    m.reference_slot = p.head;
    ++p.head;
    detail::atomic(segment_->channel(rank_, peer).head)
        .store(p.head, std::memory_order_release);  // publishes all of it
  }

  /// Receives `m` from the reference in the current slot of `peer`'s channel.
  /// True when copied; false when this process may not read the peer's memory
  /// (the sender then sends the message again in chunks). Throws when the
  /// sender withdrew it or its buffer cannot be read.
  bool copy_reference(int peer, pending& m) {
    auto& p = peers_[static_cast<std::size_t>(peer)];
    detail::reference_descriptor& shared = segment_->reference(peer, rank_, p.tail);
    const std::uint64_t address = shared.address;  // read once: the value used is the value checked
    const std::int32_t pid = shared.pid;
    const std::uint64_t window_id = shared.window;
    const std::uint64_t offset = shared.offset;
    auto state = detail::atomic(shared.state);
    auto finish = [&](detail::reference_state s) {
      state.store(static_cast<std::uint32_t>(s), std::memory_order_release);
    };
    auto expected = static_cast<std::uint32_t>(detail::reference_state::posted);
    if (!state.compare_exchange_strong(expected, static_cast<std::uint32_t>(detail::reference_state::copying),
                                       std::memory_order_acq_rel)) {
      if (expected == static_cast<std::uint32_t>(detail::reference_state::withdrawn)) {
        plait::detail::fail(errc::peer_lost,
                            {"the sender withdrew its message (it failed before this rank could copy it)"},
                            {rank_, "irecv", -1, peer});
      }
      plait::detail::fail(errc::transport, {"corrupt single-copy slot (state ", expected, ")"},
                          {rank_, "irecv", -1, peer});
    }
    if (window_id != 0) {
      if (const auto w = find_window(window_id)) {
        const detail::window::part& part = w->of(peer);
        if (!detail::window_read_fits(offset, m.bytes, part.bytes)) {
          finish(detail::reference_state::refused);
          plait::detail::fail(errc::transport,
                              {"corrupt single-copy slot (", m.bytes, " bytes at offset ", offset, " of a ", part.bytes,
                               "-byte shared buffer)"},
                              {rank_, "irecv", -1, peer});
        }
        plait::detail::copy_bytes(m.in, part.base + offset, m.bytes);  // streams when large
        bytes_read_in_place_ += m.bytes;
        finish(detail::reference_state::done);
        return true;
      }
      // This rank has freed its handle on that buffer: read by address below.
    }
    if (segment_->is_local(peer)) {
      // A thread of this process (known here, not read from the segment): its
      // buffer is in our address space, and stays valid until we say done.
      plait::detail::copy_bytes(m.in, reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(address)),
                                m.bytes);
      finish(detail::reference_state::done);
      return true;
    }
    // Another process: the kernel checks the pid and every address it names,
    // so a corrupt descriptor fails here instead of reading our own memory.
    if (pid <= 0) {
      finish(detail::reference_state::refused);
      plait::detail::fail(errc::transport, {"corrupt single-copy slot (pid ", pid, ")"}, {rank_, "irecv", -1, peer});
    }
    std::size_t copied = 0;
    while (copied < m.bytes) {
      iovec local{m.in + copied, m.bytes - copied};
      iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address + copied)), m.bytes - copied};
      const ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
      if (n > 0) {
        copied += static_cast<std::size_t>(n);
        continue;
      }
      const int reason = n == 0 ? EFAULT : errno;
      if (reason == EINTR) continue;
      if (copied == 0 && (reason == EPERM || reason == ENOSYS || reason == EACCES)) {
        finish(detail::reference_state::refused);  // no cross-memory attach here: the sender falls back to chunks
        return false;
      }
      finish(detail::reference_state::refused);
      plait::detail::fail(reason == ESRCH ? errc::peer_lost : errc::transport,
                          {"cannot read the sender's buffer (process_vm_readv: ", std::strerror(reason), ")"},
                          {rank_, "irecv", -1, peer});
    }
    finish(detail::reference_state::done);
    return true;
  }

  /// Withdraws every reference this rank has published and no receiver has
  /// started copying, and waits (bounded) for copies already under way, so no
  /// peer reads a buffer after the call that owned it has thrown.
  void withdraw_references() noexcept {
    for (int peer = 0; peer < static_cast<int>(peers_.size()); ++peer) {
      auto& p = peers_[static_cast<std::size_t>(peer)];
      if (p.sends.empty() || !p.sends.front().by_reference) continue;
      auto state = detail::atomic(segment_->reference(rank_, peer, p.sends.front().reference_slot).state);
      auto expected = static_cast<std::uint32_t>(detail::reference_state::posted);
      if (state.compare_exchange_strong(expected, static_cast<std::uint32_t>(detail::reference_state::withdrawn),
                                        std::memory_order_acq_rel)) {
        continue;
      }
      // A copy is under way: it ends by itself (a bounded memcpy or syscall)
      // unless the reader dies, which the pid check notices.
      const deadline until = clock::now() + std::min<std::chrono::nanoseconds>(timeout_, std::chrono::seconds(10));
      plait::detail::backoff wait;
      while (state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(detail::reference_state::copying) &&
             clock::now() < until &&
             !process_gone(detail::atomic(segment_->record(peer).pid).load(std::memory_order_relaxed))) {
        wait.pause();
      }
    }
  }

  /// Throws peer_lost when any rank of the group has failed.
  void check_group(int peer) const {
    const int failed = segment_->failed_rank();
    if (failed >= 0) [[unlikely]]
      group_failed(peer, failed);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void group_failed(int peer, int failed) const {
    plait::detail::fail(errc::peer_lost, {"rank ", failed, " of the group failed"},
                        {rank_, {}, -1, peer >= 0 ? peer : failed});
  }
  [[nodiscard]] static bool process_gone(std::int32_t pid) noexcept {
    return pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
  }
  /// False when the process of a rank we still wait for no longer exists.
  [[nodiscard]] bool peers_alive(std::span<request> requests) const {
    for (const request& r : requests) {
      if (!complete(r) && process_gone(detail::atomic(segment_->record(r.peer).pid).load(std::memory_order_relaxed))) {
        return false;
      }
    }
    return true;
  }
  [[nodiscard, gnu::cold, gnu::noinline]] error lost_process(std::span<request> requests) const {
    for (const request& r : requests) {
      const std::int32_t pid = detail::atomic(segment_->record(r.peer).pid).load(std::memory_order_relaxed);
      if (!complete(r) && process_gone(pid)) {
        return error(errc::peer_lost,
                     plait::detail::concat({"process of rank ", r.peer, " (pid ", pid, ") ended first"}),
                     {rank_, {}, -1, r.peer});
      }
    }
    return error(errc::peer_lost, "a peer process ended first", {rank_});
  }
  [[nodiscard, gnu::cold, gnu::noinline]] error timed_out(std::span<request> requests) const {
    for (const request& r : requests) {
      if (complete(r)) continue;
      const auto& p = peers_[static_cast<std::size_t>(r.peer)];
      const pending& m = r.is_send ? p.sends.front() : p.recvs.front();
      return error(errc::timeout,
                   plait::detail::concat({"timed out after ", detail::seconds_text(timeout_), " waiting to ",
                                          r.is_send ? "send " : "receive ", m.bytes, " bytes (", m.done, " done)"}),
                   {rank_, {}, -1, r.peer});
    }
    return error(errc::timeout, "timed out", {rank_});
  }

  void await_attached(deadline until, std::string_view operation) {
    auto& h = segment_->header();
    plait::detail::backoff wait;
    for (;;) {
      const std::uint32_t attached = detail::atomic(h.attached).load(std::memory_order_acquire);
      if (attached >= static_cast<std::uint32_t>(size_)) break;
      if (clock::now() > until) {
        segment_->unlink();
        throw error(errc::timeout,
                    "only " + std::to_string(attached) + " of " + std::to_string(size_) + " ranks attached within " +
                        detail::seconds_text(timeout_),
                    {rank_, operation});
      }
      wait.pause();
    }
    segment_->unlink();  // everyone is in: the name is no longer needed
  }

  std::shared_ptr<detail::segment> segment_;
  int rank_ = -1;
  int size_ = 0;
  std::chrono::nanoseconds timeout_ = detail::default_timeout();
  std::chrono::nanoseconds busy_poll_{};
  std::vector<peer_state> peers_;
  std::uint64_t bytes_sent_ = 0;
  std::uint64_t bytes_read_in_place_ = 0;
  int tag_counter_ = 0;
  std::size_t single_copy_bytes_ =
      detail::single_copy_bytes_from_environment().value_or(detail::thread_single_copy_bytes);
  std::size_t process_single_copy_bytes_ =
      detail::single_copy_bytes_from_environment().value_or(detail::process_single_copy_bytes);
  std::vector<std::weak_ptr<detail::window>> windows_;  // buffers from allocate; owned by them
  std::uint64_t window_count_ = 0;
  bool poisoned_ = false;
  bool check_mode_ = false;
  errc poisoned_code_ = errc::transport;
  std::string poison_reason_;
};

}  // namespace shm
}  // namespace v0
}  // namespace plait

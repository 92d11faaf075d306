// plait::mpi::communicator: the MPI transport. Nonblocking point-to-point
// (MPI_Isend / MPI_Irecv, completed by polling MPI_Testall) on a private
// duplicate of the user's communicator, so plait's messages can never match
// the application's, and MPI errors come back as plait::error instead of
// aborting the job.
#pragma once

#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/backoff.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/transport/mpi/error.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {

namespace detail {

using plait::detail::after;  // timeouts are shared by every transport: core/timeout.hpp
using plait::detail::default_timeout;
using plait::detail::seconds_text;

/// The largest single MPI message plait posts by default: MPI counts are int,
/// so longer messages go as several chunks with the same tag (MPI's
/// non-overtaking rule keeps them in order). 1 GiB keeps each far from INT_MAX.
inline constexpr std::size_t default_chunk_bytes = std::size_t{1} << 30;

/// How long a wait polls MPI without giving up the core when the node has a
/// core for every rank: what MPI's own blocking calls do (they spin in the
/// progress engine). A yield hands the core to any other runnable process and
/// may not get it back for a scheduler slice, while MPI moves a rendezvous
/// message only while someone calls into it: on a busy node one yield turned
/// a 1 MiB all-gather from 60 us into 300-500 us.
inline constexpr std::chrono::milliseconds default_busy_poll{100};

/// A number that every process under one running kernel shares: FNV-1a of
/// the kernel's boot id (else of MPI's processor name), made non-negative for
/// MPI_Comm_split. Ranks with the same number share the machine's CPUs, also
/// across network and UTS namespaces (emulated hosts), where
/// MPI_COMM_TYPE_SHARED sees separate nodes.
inline int machine_color() noexcept {
  char text[MPI_MAX_PROCESSOR_NAME + 64] = {};
  int length = 0;
  const int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const ssize_t got = ::read(fd, text, 64);
    ::close(fd);
    length = got > 0 ? static_cast<int>(got) : 0;
  }
  if (length == 0 && MPI_Get_processor_name(text, &length) != MPI_SUCCESS) length = 0;
  std::uint32_t hash = 2166136261u;
  for (int i = 0; i < length; ++i) {
    hash ^= static_cast<unsigned char>(text[i]);
    hash *= 16777619u;
  }
  return static_cast<int>(hash & 0x7fffffffu);
}

/// Ranks the launcher says run on this node (Open MPI, MPICH/Hydra), 0 when
/// it does not say: a hint that covers ranks outside the communicator.
inline int launcher_local_ranks() noexcept {
  int most = 0;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* value = std::getenv(name); value != nullptr) {
      char* end = nullptr;
      const long n = std::strtol(value, &end, 10);
      if (end != value && *end == '\0' && n > most && n <= INT_MAX) most = static_cast<int>(n);
    }
  }
  return most;
}

}  // namespace detail

class communicator;

/// One posted send or receive, completed by communicator::wait_all. A request
/// destroyed while still pending (an exception unwound past it) cancels its
/// receive and waits for the cancel, so no message lands in a buffer the
/// caller may already have freed; a pending send is cancelled and released.
/// A message of one MPI chunk (up to chunk_bytes(), 1 GiB by default) keeps
/// its handle inline: posting allocates nothing.
class request {
 public:
  request() = default;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  /// Movable: the handles move, `other` is left empty.
  request(request&& other) noexcept { take(other); }
  /// Movable: a pending request here is abandoned first, then `other`'s handles move.
  request& operator=(request&& other) noexcept {
    if (this != &other) {
      abandon();
      take(other);
    }
    return *this;
  }
  ~request() { abandon(); }

  /// True until wait_all has completed it (or it was abandoned).
  [[nodiscard]] bool pending() const noexcept {
    const auto all = handles();
    return std::any_of(all.begin(), all.end(), [](MPI_Request h) { return h != MPI_REQUEST_NULL; });
  }
  /// The peer rank.
  [[nodiscard]] int peer() const noexcept { return peer_; }
  /// True for a receive, false for a send.
  [[nodiscard]] bool is_receive() const noexcept { return receive_; }
  /// The message's payload bytes.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  friend class communicator;

  /// The MPI handles, one per chunk in posting order: inline for one chunk,
  /// in `more_` for several.
  [[nodiscard]] std::span<MPI_Request> handles() noexcept {
    return chunks_ <= 1 ? std::span<MPI_Request>(&first_, chunks_) : std::span<MPI_Request>(more_);
  }
  [[nodiscard]] std::span<const MPI_Request> handles() const noexcept {
    return chunks_ <= 1 ? std::span<const MPI_Request>(&first_, chunks_) : std::span<const MPI_Request>(more_);
  }
  /// Room for `chunks` handles, all MPI_REQUEST_NULL.
  void reserve_handles(std::size_t chunks) {
    chunks_ = chunks;
    if (chunks > 1) more_.assign(chunks, MPI_REQUEST_NULL);
  }

  void take(request& other) noexcept {
    first_ = std::exchange(other.first_, MPI_REQUEST_NULL);
    more_ = std::move(other.more_);
    other.more_.clear();
    chunks_ = std::exchange(other.chunks_, 0);
    peer_ = other.peer_;
    bytes_ = other.bytes_;
    receive_ = other.receive_;
  }

  /// Ends a pending transfer without completing it. Receives: MPI_Cancel,
  /// then MPI_Wait, which the MPI standard makes local for a cancelled
  /// request. Sends: cancel and free, because some MPI libraries cannot cancel
  /// a send and waiting for it could block on a peer that never receives.
  void abandon() noexcept {
    if (chunks_ == 0) return;
    // A completed request (the usual case) has nothing to cancel: no MPI call.
    if (pending() && !mpi::detail::finalized()) {
      for (MPI_Request& handle : handles()) {
        if (handle == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&handle);
        if (receive_) {
          MPI_Wait(&handle, MPI_STATUS_IGNORE);
        } else {
          MPI_Request_free(&handle);
        }
      }
    }
    first_ = MPI_REQUEST_NULL;
    more_.clear();
    chunks_ = 0;
  }

  MPI_Request first_ = MPI_REQUEST_NULL;  // the handle when there is one chunk
  std::vector<MPI_Request> more_;         // every handle when there are several
  std::size_t chunks_ = 0;
  int peer_ = -1;
  std::size_t bytes_ = 0;
  bool receive_ = false;
};

/// A plait transport over MPI point-to-point, for any number of nodes.
///
/// Constructed from an MPI communicator it duplicates (MPI_Comm_dup, a
/// collective call): plait's messages live in their own context, and the
/// duplicate returns errors (MPI_ERRORS_RETURN) that plait raises as
/// plait::error{errc::transport} with MPI's error string. Movable, not
/// copyable; destroying it frees the duplicate, or does nothing once
/// MPI_Finalize has run. One thread at a time may use a communicator.
///
/// Waits poll MPI_Testall. While the node has a core for each of its ranks, a
/// wait first polls for busy_poll() (100 ms by default), yielding only every
/// 20 us, as MPI's own blocking calls spin; then, and from the start when the node's ranks
/// outnumber its cores, it backs off (spin, yield, sleep), so oversubscribed
/// ranks still progress. A wait past timeout() cancels or
/// completes what is pending, throws errc::timeout, and poisons the
/// communicator: every later call throws at once.
class communicator {
 public:
  /// Marks the communicator as a transport (the opt-in tag).
  using transport_concept = transport_tag;
  /// Buffers are host memory.
  using memory_space = host_memory;
  /// What isend and irecv return.
  using request = mpi::request;

  /// What plait::automatic assumes about MPI (algorithm/automatic.hpp; an
  /// automatic_with<Tuning> overrides it). A step costs more than in shared
  /// memory: every message above MPI's eager limit is a rendezvous (request,
  /// reply, completion) driven by polling, 10 us per step covers that within a
  /// node and on a fast network; posting a request costs about 1 us. Messages
  /// of one step progress together in MPI and share the link at little loss
  /// (contention 0.02, against 0.05 in shared memory). Bytes and packing at
  /// 10 GB/s. So automatic posts everything at once (direct) up to a few
  /// hundred KiB per block at small P, and moves each byte once in few steps
  /// (recursive doubling, ring, pairwise-like shifted exchange) beyond, as MPI
  /// libraries' own tuned collectives do.
  static constexpr plait::cost_model cost_model() noexcept {
    return {.alpha = 10e-6, .alpha_message = 1e-6, .beta = 1e-10, .contention = 0.02, .beta_pack = 1e-10};
  }

  /// A null communicator, like MPI_COMM_NULL: `!comm`, size() 0, rank() -1.
  communicator() = default;

  /// Duplicates `comm` (collective over it). MPI_COMM_NULL gives a null communicator.
  explicit communicator(MPI_Comm comm)
      : timeout_(detail::default_timeout()), check_mode_(plait::detail::check_mode_from_environment()) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0 || detail::finalized()) {
      throw error(errc::invalid_argument, "plait::mpi::communicator needs MPI to be initialized and not finalized",
                  {-1, "mpi::communicator", -1, -1});
    }
    if (comm == MPI_COMM_NULL) return;
    MPI_Comm dup = MPI_COMM_NULL;
    detail::check(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup", {-1, "mpi::communicator", -1, -1});
    adopt(dup);
    busy_poll_ = oversubscribed() ? clock::duration::zero() : detail::default_busy_poll;
  }

  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  /// Movable: `other` becomes a null communicator.
  communicator(communicator&& other) noexcept { swap(other); }
  /// Movable: the communicator held here is freed, `other` becomes null.
  communicator& operator=(communicator&& other) noexcept {
    if (this != &other) {
      communicator gone(std::move(other));
      swap(gone);
    }
    return *this;
  }
  /// Frees the duplicate, except while a barrier that timed out may still be
  /// progressed by MPI: the standard lets MPI_Comm_free wait for pending
  /// operations, but Open MPI 4.1 crashes progressing a nonblocking
  /// collective whose communicator was freed (seen with the emulated two
  /// hosts). Such a barrier gets up to a second to finish; past that the
  /// duplicate is left to MPI rather than freed.
  ~communicator() {
    if (comm_ == MPI_COMM_NULL || detail::finalized()) return;
    if (abandoned_barrier_ != MPI_REQUEST_NULL) {
      const auto give_up = clock::now() + std::chrono::seconds(1);
      int done = 0;
      while (MPI_Test(&abandoned_barrier_, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0 &&
             clock::now() < give_up) {
        sched_yield();
      }
      if (done == 0) return;
    }
    MPI_Comm_free(&comm_);
  }

  /// False for a null communicator (split with plait::no_group, default, moved from).
  explicit operator bool() const noexcept { return comm_ != MPI_COMM_NULL; }

  /// This rank in [0, size()).
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// The number of ranks.
  [[nodiscard]] int size() const noexcept { return size_; }
  /// The private duplicate, for MPI calls plait does not wrap (the native
  /// baseline in benchmarks, MPI_Comm_split_type for the node-local group).
  [[nodiscard]] MPI_Comm native_handle() const noexcept { return comm_; }

  /// Posts a send of `bytes` to `peer`; `bytes` must stay untouched until completion.
  [[nodiscard]] request isend(int peer, std::span<const std::byte> bytes, int tag = user_tag) {
    return post(peer, tag, false, const_cast<std::byte*>(bytes.data()), bytes.size());
  }

  /// Posts a receive of exactly `bytes.size()` bytes from `peer`.
  [[nodiscard]] request irecv(int peer, std::span<std::byte> bytes, int tag = user_tag) {
    return post(peer, tag, true, bytes.data(), bytes.size());
  }

  /// Completes every request or throws: errc::timeout past `until` (after
  /// cancelling what is pending; the communicator is poisoned),
  /// errc::size_mismatch when a message's length differs from its receive,
  /// errc::transport for MPI errors.
  void wait_all(std::span<request> requests, deadline until) {
    usable("wait_all");
    handles_.clear();
    for (const request& r : requests) {
      const auto mine = r.handles();
      handles_.insert(handles_.end(), mine.begin(), mine.end());
    }
    if (handles_.empty()) return;
    if (statuses_.size() < handles_.size()) statuses_.resize(handles_.size());

    // The clock is read only once a poll finds transfers pending, and during
    // the busy phase only every clock_polls polls: a small message often
    // completes at the first poll, and reading the clock costs about as much
    // as polling an idle MPI. The deadline still holds to within those polls.
    clock::time_point started{};
    // MPI moves large messages only while someone calls into it (rendezvous
    // handshakes, pipelined fragments): after the busy phase (core/backoff.hpp)
    // keep polling, yielding the core, for about a second before falling back
    // to sleeps.
    plait::detail::backoff waiting(200000, busy_poll_, busy_yield);
    unsigned every = busy_poll_ > clock::duration::zero() ? clock_polls : 1;
    for (unsigned polls = 0;; ++polls) {
      int done = 0;
      const int code = MPI_Testall(static_cast<int>(handles_.size()), handles_.data(), &done, statuses_.data());
      if (code != MPI_SUCCESS) {
        store_handles(requests);
        failed(requests, code);
      }
      if (done != 0) break;
      if (polls % every != 0) continue;
      const auto now = clock::now();
      if (polls == 0) {
        started = now;
      } else if (every != 1 && now - started >= busy_poll_) {
        // Past the busy phase every pause yields or sleeps, which costs far
        // more than a clock read: one poll per pause from here on.
        every = 1;
      }
      if (now >= until) timed_out(requests, now - started);
      waiting.pause();
    }
    store_handles(requests);
    check_lengths(requests);
  }

  /// wait_all with the deadline now + timeout().
  void wait_all(std::span<request> requests) { wait_all(requests, detail::after(timeout_)); }

  /// Blocking send: isend + wait_all.
  void send(int peer, std::span<const std::byte> bytes, int tag = user_tag) {
    request r = isend(peer, bytes, tag);
    wait_all(std::span(&r, 1));
  }

  /// Blocking receive of exactly `bytes.size()` bytes: irecv + wait_all.
  void recv(int peer, std::span<std::byte> bytes, int tag = user_tag) {
    request r = irecv(peer, bytes, tag);
    wait_all(std::span(&r, 1));
  }

  /// A fresh tag for one collective call, the same on every rank that makes
  /// the same calls: 1, 2, ..., MPI_TAG_UB, 1, ... (never user_tag). A call
  /// completes on every rank before its tag comes round again, and between
  /// two ranks messages do not overtake, so reuse cannot mix two calls.
  [[nodiscard]] int next_tag() {
    usable("next_tag");
    tag_ = tag_ >= tag_ub_ ? 1 : tag_ + 1;
    return tag_;
  }

  /// The largest tag MPI accepts here (MPI_TAG_UB, at least 32767).
  [[nodiscard]] int tag_upper_bound() const noexcept { return tag_ub_; }

  /// MPI_Ibarrier, polled with the same timeout as every other wait. A
  /// barrier that times out cannot be cancelled or freed (MPI forbids both
  /// for collectives): its request is left to MPI and the communicator is
  /// poisoned.
  void barrier() {
    usable("barrier");
    MPI_Request handle = MPI_REQUEST_NULL;
    detail::check(MPI_Ibarrier(comm_, &handle), "MPI_Ibarrier", where("barrier"));
    const auto started = clock::now();
    const deadline until = detail::after(timeout_);
    plait::detail::backoff waiting(plait::detail::backoff::default_yield_polls, busy_poll_, busy_yield);
    for (;;) {
      int done = 0;
      const int code = MPI_Test(&handle, &done, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS) {
        poison(errc::transport, "an MPI error in barrier");
        detail::check(code, "MPI_Test", where("barrier"));
      }
      if (done != 0) return;
      if (clock::now() >= until) {
        abandoned_barrier_ = handle;  // MPI forbids cancelling or freeing it: the destructor waits a little
        poison(errc::timeout, "a timeout in barrier");
        throw error(errc::timeout,
                    "barrier not complete after " + detail::seconds_text(clock::now() - started) + " (timeout " +
                        detail::seconds_text(timeout_) + "): some rank has not entered it",
                    where("barrier"));
      }
      waiting.pause();
    }
  }

  /// MPI_Comm_split: ranks with the same color form a new communicator,
  /// ordered by key (then by rank here). Collective over this communicator.
  /// `plait::no_group` joins none and returns a null communicator. The child
  /// inherits timeout() and counts its own bytes_sent().
  [[nodiscard]] communicator split(int color, int key) const {
    usable("split");
    if (color < 0 && color != no_group) {
      throw error(errc::invalid_argument,
                  "split color " + std::to_string(color) + " is negative (use plait::no_group to join no group)",
                  where("split"));
    }
    MPI_Comm out = MPI_COMM_NULL;
    detail::check(MPI_Comm_split(comm_, color == no_group ? MPI_UNDEFINED : color, key, &out), "MPI_Comm_split",
                  where("split"));
    communicator child;
    child.timeout_ = timeout_;
    child.busy_poll_ = busy_poll_;  // the node is as full as it was for the parent
    child.check_mode_ = check_mode_;
    if (out != MPI_COMM_NULL) child.adopt(out);
    return child;
  }

  /// How long one wait may take before it throws errc::timeout.
  template <class Rep, class Period>
  void set_timeout(std::chrono::duration<Rep, Period> timeout) {
    if (timeout < std::chrono::duration<Rep, Period>::zero()) {
      throw error(errc::invalid_argument, "negative timeout", where("set_timeout"));
    }
    if (std::chrono::duration<double>(timeout) >= std::chrono::duration<double>(clock::duration::max())) {
      timeout_ = clock::duration::max();
    } else {
      timeout_ = std::chrono::duration_cast<clock::duration>(timeout);
    }
  }
  /// How long a wait may take before it throws errc::timeout.
  [[nodiscard]] clock::duration timeout() const noexcept { return timeout_; }

  /// How long each wait polls MPI before it starts yielding the core (then
  /// sleeping). Default: 100 ms when this machine has at least as many
  /// online CPUs as ranks (of this communicator under the same kernel or,
  /// where the launcher says, of the job on this node), else zero; zero gives the plain spin-yield-sleep backoff. A
  /// split child inherits it. Longer is faster on a node with a core per rank, ruinous on an oversubscribed one (a
  /// spinning rank holds the core a peer needs).
  template <class Rep, class Period>
  void set_busy_poll(std::chrono::duration<Rep, Period> busy) {
    if (busy < std::chrono::duration<Rep, Period>::zero()) {
      throw error(errc::invalid_argument, "negative busy-poll time", where("set_busy_poll"));
    }
    if (std::chrono::duration<double>(busy) >= std::chrono::duration<double>(std::chrono::hours(1))) {
      busy_poll_ = std::chrono::hours(1);  // waits are bounded by timeout() anyway
    } else {
      busy_poll_ = std::chrono::duration_cast<clock::duration>(busy);
    }
  }
  /// How long a wait polls before it yields (see set_busy_poll).
  [[nodiscard]] clock::duration busy_poll() const noexcept { return busy_poll_; }

  /// Payload bytes this rank has posted for sending through this object
  /// (not through its split children).
  [[nodiscard]] std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }

  /// Messages longer than this go as several MPI messages (default 1 GiB;
  /// at most INT_MAX, MPI's count limit). Both ends of a message must use the
  /// same value; tests lower it to exercise the split path cheaply.
  void set_chunk_bytes(std::size_t bytes) {
    if (bytes == 0 || bytes > static_cast<std::size_t>(INT_MAX)) {
      throw error(errc::invalid_argument, "chunk size must be in [1, INT_MAX] bytes", where("set_chunk_bytes"));
    }
    chunk_bytes_ = bytes;
  }
  /// The largest MPI message (see set_chunk_bytes).
  [[nodiscard]] std::size_t chunk_bytes() const noexcept { return chunk_bytes_; }

  /// Check mode (op/check.hpp): before moving data, every collective on this
  /// communicator exchanges a signature of the call, and ranks that disagree
  /// all throw errc::size_mismatch. Off by default; PLAIT_CHECK=1 in the
  /// environment when the communicator is created turns it on (a split child
  /// inherits it).
  void set_check_mode(bool on) noexcept { check_mode_ = on; }
  /// Whether check mode is on.
  [[nodiscard]] bool check_mode() const noexcept { return check_mode_; }
  /// check_mode() already covers PLAIT_CHECK: collectives do not read the
  /// environment per call.
  static constexpr bool check_mode_reads_environment = true;

  /// True after a timeout or MPI failure: every call but the accessors throws.
  [[nodiscard]] bool poisoned() const noexcept { return poisoned_; }

 private:
  /// The busy phase never yields, as MPI's own blocking calls spin without
  /// yielding: a rank that yields while another process is runnable on its
  /// core gets it back only after that process's slice. Measured with other
  /// builds running (load 5-8, P = 2, 1 MiB all-gather, medians of 21
  /// samples): Testall spinning 75 us, native MPI_Allgather 61 us, the same
  /// spin yielding every 20 us (the shm default) 10 ms. Ranks that outnumber
  /// the CPUs get no busy phase at all (busy_poll() zero).
  static constexpr std::chrono::nanoseconds busy_yield = std::chrono::nanoseconds::max();

  /// Polls of MPI_Testall between two reads of the clock while a wait is in
  /// its busy phase (about 1-2 us of polling).
  static constexpr unsigned clock_polls = 16;

  void swap(communicator& other) noexcept {
    using std::swap;
    swap(comm_, other.comm_);
    swap(rank_, other.rank_);
    swap(size_, other.size_);
    swap(tag_ub_, other.tag_ub_);
    swap(tag_, other.tag_);
    swap(timeout_, other.timeout_);
    swap(busy_poll_, other.busy_poll_);
    swap(bytes_sent_, other.bytes_sent_);
    swap(chunk_bytes_, other.chunk_bytes_);
    swap(poisoned_, other.poisoned_);
    swap(check_mode_, other.check_mode_);
    swap(poison_code_, other.poison_code_);
    swap(poison_reason_, other.poison_reason_);
    swap(handles_, other.handles_);
    swap(abandoned_barrier_, other.abandoned_barrier_);
    swap(statuses_, other.statuses_);
  }

  /// Takes ownership of `comm` (a fresh duplicate or split result).
  void adopt(MPI_Comm comm) {
    comm_ = comm;
    const error_context context{-1, "mpi::communicator", -1, -1};
    detail::check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", context);
    detail::check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank", context);
    detail::check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size", context);
    void* value = nullptr;
    int found = 0;
    detail::check(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &found), "MPI_Comm_get_attr", context);
    // The standard guarantees at least 32767; trust that if the attribute is absent.
    tag_ub_ = found != 0 && value != nullptr ? *static_cast<int*>(value) : 32767;
  }

  /// Whether this machine runs more ranks than it has online CPUs: the ranks
  /// of this communicator under the same kernel (MPI_Comm_split on
  /// machine_color(), collective) or the launcher's count of the job's ranks
  /// on this node, whichever is larger. An MPI failure here counts as
  /// oversubscribed: waits then only yield.
  [[nodiscard]] bool oversubscribed() const noexcept {
    MPI_Comm node = MPI_COMM_NULL;
    if (MPI_Comm_split(comm_, detail::machine_color(), 0, &node) != MPI_SUCCESS || node == MPI_COMM_NULL) {
      return true;
    }
    int node_size = 0;
    const int code = MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    if (code != MPI_SUCCESS) return true;
    return std::max(node_size, detail::launcher_local_ranks()) > plait::detail::online_cpus();
  }

  [[nodiscard]] error_context where(std::string_view operation, int peer = -1) const noexcept {
    return {rank_, operation, -1, peer};
  }

  void usable(std::string_view operation) const {
    if (comm_ == MPI_COMM_NULL) {
      throw error(errc::invalid_argument, "called on a null communicator", where(operation));
    }
    if (poisoned_) {
      throw error(poison_code_, "communicator unusable after " + poison_reason_, where(operation));
    }
  }

  void poison(errc code, std::string reason) noexcept {
    if (poisoned_) return;
    poisoned_ = true;
    poison_code_ = code;
    poison_reason_ = std::move(reason);
  }

  request post(int peer, int tag, bool receive, std::byte* data, std::size_t bytes) {
    const std::string_view operation = receive ? "irecv" : "isend";
    usable(operation);
    if (peer < 0 || peer >= size_) {
      throw error(errc::invalid_argument,
                  "peer " + std::to_string(peer) + " is outside [0, " + std::to_string(size_) + ")",
                  where(operation, peer));
    }
    if (tag < 0 || tag > tag_ub_) {
      throw error(errc::invalid_argument,
                  "tag " + std::to_string(tag) + " is outside [0, " + std::to_string(tag_ub_) + "]",
                  where(operation, peer));
    }
    request r;
    r.peer_ = peer;
    r.bytes_ = bytes;
    r.receive_ = receive;
    const std::size_t chunks = bytes == 0 ? 1 : (bytes + chunk_bytes_ - 1) / chunk_bytes_;
    r.reserve_handles(chunks);
    const std::span<MPI_Request> handles = r.handles();
    for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
      const std::size_t offset = chunk * chunk_bytes_;
      const int count = static_cast<int>(std::min(chunk_bytes_, bytes - offset));
      MPI_Request& handle = handles[chunk];
      // An empty span may have a null data(); MPI accepts any pointer with count 0.
      std::byte* at = data == nullptr ? nullptr : data + offset;
      const int code = receive ? MPI_Irecv(at, count, MPI_BYTE, peer, tag, comm_, &handle)
                               : MPI_Isend(at, count, MPI_BYTE, peer, tag, comm_, &handle);
      if (code != MPI_SUCCESS) {
        poison(errc::transport, "an MPI error in " + std::string(operation));
        detail::check(code, receive ? "MPI_Irecv" : "MPI_Isend", where(operation, peer));
      }
    }
    if (!receive) bytes_sent_ += bytes;
    return r;
  }

  /// Copies the handles MPI_Testall updated back into their requests.
  void store_handles(std::span<request> requests) noexcept {
    std::size_t next = 0;
    for (request& r : requests) {
      for (MPI_Request& handle : r.handles()) handle = handles_[next++];
    }
  }

  [[noreturn]] void failed(std::span<request> requests, int code) {
    int peer = -1;
    if (code == MPI_ERR_IN_STATUS) {
      std::size_t next = 0;
      for (const request& r : requests) {
        for (std::size_t i = 0; i < r.chunks_; ++i, ++next) {
          const int status_code = statuses_[next].MPI_ERROR;
          if (peer < 0 && status_code != MPI_SUCCESS && status_code != MPI_ERR_PENDING) {
            peer = r.peer_;
            code = status_code;
          }
        }
      }
    }
    for (request& r : requests) r.abandon();
    const errc kind = detail::classify(code);
    if (kind != errc::size_mismatch) poison(kind, "an MPI error in wait_all");
    throw error(kind, "MPI_Testall failed: " + detail::error_string(code), where("wait_all", peer));
  }

  [[noreturn]] void timed_out(std::span<request> requests, clock::duration waited) {
    std::string pending;
    int first_peer = -1;
    int count = 0;
    for (const request& r : requests) {
      if (!r.pending()) continue;
      if (first_peer < 0) first_peer = r.peer_;
      if (count < 8) {
        pending += count == 0 ? "" : ", ";
        pending += (r.receive_ ? "receive from " : "send to ") + std::to_string(r.peer_) + " (" +
                   std::to_string(r.bytes_) + " bytes)";
      }
      ++count;
    }
    if (count > 8) pending += ", ...";
    // Cancel before throwing: no receive may write into a user buffer after the throw.
    for (request& r : requests) r.abandon();
    poison(errc::timeout, "a timeout in wait_all");
    throw error(errc::timeout,
                std::to_string(count) + " transfer(s) still pending after " + detail::seconds_text(waited) +
                    " (timeout " + detail::seconds_text(timeout_) + "): " + pending,
                where("wait_all", first_peer));
  }

  /// A receive must get exactly the bytes it asked for; MPI reports a shorter
  /// message only through the status.
  void check_lengths(std::span<request> requests) const {
    std::size_t next = 0;
    for (const request& r : requests) {
      std::size_t received = 0;
      for (std::size_t i = 0; i < r.chunks_; ++i, ++next) {
        if (!r.receive_) continue;
        int count = 0;
        MPI_Get_count(&statuses_[next], MPI_BYTE, &count);
        received += count < 0 ? 0 : static_cast<std::size_t>(count);
      }
      if (r.receive_ && received != r.bytes_) {
        throw error(
            errc::size_mismatch,
            "received " + std::to_string(received) + " bytes where " + std::to_string(r.bytes_) + " were expected",
            where("wait_all", r.peer_));
      }
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = -1;
  int size_ = 0;
  int tag_ub_ = 32767;
  int tag_ = user_tag;
  clock::duration timeout_ = std::chrono::seconds(300);
  clock::duration busy_poll_ = clock::duration::zero();
  std::uint64_t bytes_sent_ = 0;
  std::size_t chunk_bytes_ = detail::default_chunk_bytes;
  bool poisoned_ = false;
  bool check_mode_ = false;
  errc poison_code_ = errc::transport;
  std::string poison_reason_;
  // Scratch for wait_all, kept to avoid an allocation per call.
  std::vector<MPI_Request> handles_;
  std::vector<MPI_Status> statuses_;
  MPI_Request abandoned_barrier_ = MPI_REQUEST_NULL;  // a barrier that timed out, still posted
};

static_assert(plait::detail::check_transport<communicator>());
static_assert(transport<communicator>);

}  // namespace mpi
}  // namespace v0
}  // namespace plait

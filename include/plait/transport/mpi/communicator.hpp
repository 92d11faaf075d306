// plait::mpi::communicator: the MPI transport. Nonblocking point-to-point
// (MPI_Isend / MPI_Irecv, completed by polling MPI_Testall) on a private
// duplicate of the user's communicator, so plait's messages can never match
// the application's, and MPI errors come back as plait::error instead of
// aborting the job. What every communicator shares (settings, tags,
// poisoning, checks, byte counts) comes from plait::communicator_core.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/core/backoff.hpp"
#include "plait/core/blame.hpp"
#include "plait/core/blocking_calls.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/communicator_core.hpp"
#include "plait/core/cost_model.hpp"
#include "plait/core/error.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/wait_loop.hpp"
#include "plait/transport/mpi/blame.hpp"
#include "plait/transport/mpi/control_sends.hpp"
#include "plait/transport/mpi/cost_model.hpp"
#include "plait/transport/mpi/error.hpp"
#include "plait/transport/mpi/node.hpp"
#include "plait/transport/mpi/request.hpp"
#include "plait/transport/mpi/setup.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {

namespace detail {
struct setup_access;
}  // namespace detail

/// A plait transport over MPI point-to-point, for any number of nodes.
///
/// Constructed from an MPI communicator it duplicates (MPI_Comm_dup, a
/// collective call): plait's messages live in their own context, and the
/// duplicate returns errors (MPI_ERRORS_RETURN) that plait raises as
/// plait::error{errc::transport} with MPI's error string. Movable, not
/// copyable. One thread at a time may use a communicator.
///
/// Waits poll MPI_Testall. While the node has a core for each of its ranks, a
/// wait first polls for busy_poll() (100 ms by default) without ever
/// yielding, as MPI's own blocking calls spin; after that, and from the start
/// when the node's ranks outnumber its cores (busy_poll() zero), it backs off:
/// a few spins, then yields for about 200000 polls (MPI moves data only while
/// someone calls into it), then sleeps of 20 us doubling to 1 ms. A wait past
/// timeout() cancels what is pending, throws errc::timeout, and poisons the
/// communicator: every later call throws at once.
///
/// Destroying it frees the duplicate, except once it is poisoned: then
/// messages of the failed call may still be in MPI, and the duplicate is
/// handed to MPI until MPI_Finalize, so MPI never gives its context to a
/// later communicator that would receive them (docs/mpi.md, "What a failure
/// leaves behind"). After MPI_Finalize it does nothing.
class communicator : public communicator_core, public blocking_calls<communicator> {
 public:
  /// Opts in to plait::transport.
  using transport_concept = transport_tag;
  /// Buffers are host memory.
  using memory_space = host_memory;
  /// One posted send or receive (mpi::request).
  using request = mpi::request;
  /// MPI matches a receive by source and tag: collectives in flight move at
  /// once, each under its own tag (core/progress_engine.hpp).
  static constexpr bool matches_by_tag = true;

  /// What plait::automatic assumes about MPI (transport/mpi/cost_model.hpp says why).
  static constexpr plait::cost_model cost_model() noexcept { return detail::mpi_cost_model; }

  /// A null communicator, like MPI_COMM_NULL: `!comm`, size() 0, rank() -1.
  communicator() = default;

  /// Duplicates `comm` (collective over it). MPI_COMM_NULL gives a null
  /// communicator. busy_poll() starts at 100 ms when this machine has at
  /// least as many online CPUs as ranks (of `comm` under the same kernel or,
  /// where the launcher says, of the job on this node), else at zero.
  /// Bounded by PLAIT_TIMEOUT (else 300 s): when some rank of `comm` does not
  /// construct one, the others throw errc::timeout, and `comm` keeps an
  /// unfinished exchange, so it must not be used for collectives again.
  explicit communicator(MPI_Comm comm) : communicator_core(-1, 0) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0 || detail::finalized()) {
      throw error(errc::invalid_argument, "plait::mpi::communicator needs MPI to be initialized and not finalized",
                  where("mpi::communicator"));
    }
    if (comm == MPI_COMM_NULL) return;
    int rank = -1;
    detail::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", where("mpi::communicator"));
    const error_context at{rank, "mpi::communicator"};
    // MPI_Comm_dup waits for every rank with no way out: agree first.
    (void)detail::agree(comm, detail::setup_call::communicator, {}, 0, timeout(), at).take();
    MPI_Comm dup = MPI_COMM_NULL;
    detail::check(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup", at);
    adopt(dup);
    // Ranks under this kernel: an all-gather of the machine's colour, where
    // an MPI_Comm_split on it would block.
    const int color = detail::machine_color();
    const std::vector<int> colors = agree(detail::setup_call::communicator, {}, "mpi::communicator", color);
    const auto here = static_cast<int>(std::count(colors.begin(), colors.end(), color));
    set_busy_poll(detail::oversubscribed(here) ? std::chrono::nanoseconds::zero()
                                               : std::chrono::nanoseconds(detail::default_busy_poll));
  }

  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  /// Movable: the duplicate and every setting move; the source becomes a null communicator.
  communicator(communicator&& other) noexcept { swap(other); }
  /// Movable: this one's duplicate is freed (or kept, if poisoned), then it takes the other's.
  communicator& operator=(communicator&& other) noexcept {
    if (this != &other) {
      communicator gone(std::move(other));
      swap(gone);
    }
    return *this;
  }
  ~communicator() {
    // Poisoned: a cancelled send may have gone out, a message sent to a
    // cancelled receive may yet arrive, a timed-out barrier stays posted.
    if (comm_ == MPI_COMM_NULL || detail::finalized() || poisoned()) return;
    MPI_Comm_free(&comm_);
  }

  /// False for a null communicator (split with plait::no_group, default, moved from).
  explicit operator bool() const noexcept { return comm_ != MPI_COMM_NULL; }

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

  /// Posts a send of the concatenation of `pieces` as one message (a receiver
  /// may post a plain irecv or an irecvv cut elsewhere): each MPI chunk is an
  /// MPI_Type_create_hindexed of its pieces on MPI_BOTTOM, so MPI gathers
  /// them without a packing copy of plait's. The list and the bytes stay
  /// untouched until completion.
  [[nodiscard]] request isendv(int peer, std::span<const std::span<const std::byte>> pieces, int tag = user_tag) {
    return post_vectored(peer, tag, pieces);
  }

  /// Posts a receive of one message scattered into the concatenation of `pieces`.
  [[nodiscard]] request irecvv(int peer, std::span<const std::span<std::byte>> pieces, int tag = user_tag) {
    return post_vectored(peer, tag, pieces);
  }

  /// Smaller messages are staged by the executor rather than sent with
  /// isendv: creating, committing and freeing a two-piece hindexed type costs
  /// about 100 ns a side (Open MPI 4.1, best of 200 runs), the packing and
  /// unpacking it saves as much at 16 KiB (70 ns to pack 16 KiB from the cache).
  static constexpr std::size_t vectored_min_bytes = std::size_t{16} << 10;

  /// Payload bytes this rank posted with isendv: how to tell the executor
  /// sent a message from several buffers without packing it.
  [[nodiscard]] std::uint64_t bytes_sent_vectored() const noexcept { return bytes_sent_vectored_; }

  /// Completes every request or throws: errc::timeout past `until` (after
  /// cancelling what is pending; the communicator is poisoned),
  /// errc::size_mismatch when a message's length differs from its receive,
  /// errc::transport for MPI errors.
  void wait_all(std::span<request> requests, deadline until) {
    require_usable("wait_all");
    if (any_unmatched(requests)) match_all(requests, until);
    if (!collect_handles(requests)) return;

    // The clock is read only once a poll finds transfers pending, and while
    // the waiter spins (its busy phase included) only every 16th poll
    // (core/wait_loop.hpp): a small message often completes at the first
    // poll, and reading the clock costs about as much as polling an idle
    // MPI. The deadline still holds to within those polls. It yields for long
    // before it sleeps: MPI moves bytes only inside a poll.
    plait::detail::wait_loop loop(until, busy_poll(), 200000, 64, busy_yield);
    unsigned idle_polls = 0;
    for (;;) {
      int done = 0;
      const int code = MPI_Testall(static_cast<int>(handles_.size()), handles_.data(), &done, statuses_.data());
      if (code != MPI_SUCCESS) {
        store_handles(requests);
        failed(requests, code);
      }
      if (done != 0) break;
      if (watch_notices_) check_notices("wait_all", requests);
      if (loop.expired() && !loop.extend_once([&] { return wait_longer(requests); }, timeout())) {
        timed_out(requests, loop.waited());
      }
      // A peer whose wait timed out asks what this rank waits for
      // (detail::blame_message): answered from here, at every poll once the
      // wait sleeps and every 1024th before, so the probe costs a spinning
      // wait nothing measurable.
      if ((loop.sleeping() || ++idle_polls % 1024 == 0) && serve_blame_queries(requests)) {
        store_handles(requests);
        verdict_received(requests);
      }
      loop.pause();
    }
    store_handles(requests);
    raise_mismatch(requests);
    raise_notice("wait_all", requests);
    check_lengths(requests);
  }

  /// wait_all with the deadline now + timeout().
  void wait_all(std::span<request> requests) { wait_all(requests, deadline_from_now()); }

  /// A two-level call waits at this level (`true`, counted: calls in flight
  /// may nest) or has moved on (`false`). Meanwhile a wait that times out
  /// and whose rank to blame does not answer waits one timeout more: that
  /// rank may be at its other level, where it answers no query of this
  /// one, and that level's own timeout names the rank to blame
  /// (core/blame.hpp).
  void note_level_step(bool waiting) noexcept {
    // Relaxed: a body may run on the progress thread, between a waiter's looks.
    std::atomic_ref<int>(level_steps_).fetch_add(waiting ? 1 : -1, std::memory_order_relaxed);
  }

  /// One MPI_Testall: true if every request is complete (as after
  /// wait_all), false while some are pending before `until`; fails as
  /// wait_all does, and with errc::timeout once `until` has passed.
  bool test_all(std::span<request> requests, deadline until) {
    require_usable("test_all");
    if (any_unmatched(requests)) {
      match_probed(requests);
      if (any_unmatched(requests)) {
        if (watch_notices_) check_notices("test_all", requests);
        if (++test_looks_ % 1024 == 0 && serve_blame_queries(requests)) verdict_received(requests);
        if (clock::now() >= extension_.effective(until)) {
          if (!extension_.extended(until) && wait_longer(requests)) {
            extension_.extend(until, deadline_from_now());
            return false;
          }
          collect_handles(requests);
          timed_out(requests, extension_.extended(until) ? 2 * timeout() : timeout());
        }
        return false;
      }
    }
    if (!collect_handles(requests)) return true;
    int done = 0;
    const int code = MPI_Testall(static_cast<int>(handles_.size()), handles_.data(), &done, statuses_.data());
    if (code != MPI_SUCCESS) {
      store_handles(requests);
      failed(requests, code);
    }
    if (done == 0) {
      // As wait_all, answer a peer's query now and then (a look is a poll).
      if (++test_looks_ % 1024 == 0 && serve_blame_queries(requests)) {
        store_handles(requests);
        verdict_received(requests);
      }
      const auto now = clock::now();
      if (now >= extension_.effective(until)) {
        if (!extension_.extended(until) && wait_longer(requests)) {
          extension_.extend(until, deadline_from_now());
          return false;
        }
        // How long it waited if `until` came from timeout(); saturated, as
        // timeout() may be the largest duration there is.
        const clock::duration late = now - until;
        timed_out(requests, timeout() > clock::duration::max() - late ? clock::duration::max() : timeout() + late);
      }
      return false;
    }
    store_handles(requests);
    raise_mismatch(requests);
    raise_notice("test_all", requests);
    check_lengths(requests);
    return true;
  }

  // wait(request), send and recv: blocking_calls (core/blocking_calls.hpp).

  /// communicator_core::next_tag, after reading any notice that a peer
  /// received a message of this rank's of a size it did not expect (an
  /// uneven form whose counts disagree, seen by the receiver's probe). A
  /// notice that comes while the call that sent the message still waits
  /// ends that call (raised when its wait completes); one that comes after
  /// it returned normally makes the next call throw errc::size_mismatch
  /// naming that peer. Only a rank that has sent an uneven form's message
  /// looks (one MPI_Iprobe a call).
  int next_tag(call_stamp stamp) {
    if (watch_notices_) [[unlikely]]
      check_notices("collective");
    return communicator_core::next_tag(stamp);
  }
  /// next_tag with no stamp.
  int next_tag() { return next_tag(call_stamp{}); }

  /// The largest tag plait uses for messages here: MPI_TAG_UB less two (at
  /// least 32765). MPI_TAG_UB carries the queries that name the rank to blame
  /// after a timeout, MPI_TAG_UB - 1 the size notices. next_tag() cycles
  /// through [1, tag_upper_bound()], and isend/irecv refuse larger tags.
  [[nodiscard]] int tag_upper_bound() const noexcept { return tag_limit(); }

  /// MPI_Ibarrier, polled with the same timeout as every other wait. A
  /// barrier that times out cannot be cancelled or freed (MPI forbids both
  /// for collectives): its request is left to MPI and the communicator is
  /// poisoned, so its duplicate is never freed under it.
  void barrier() {
    require_usable("barrier");
    MPI_Request handle = MPI_REQUEST_NULL;
    check_or_poison(MPI_Ibarrier(comm_, &handle), "MPI_Ibarrier", where("barrier"));
    plait::detail::wait_loop loop(deadline_from_now(), busy_poll(), plait::detail::backoff::default_yield_polls, 64,
                                  busy_yield);
    for (;;) {
      int done = 0;
      check_or_poison(MPI_Test(&handle, &done, MPI_STATUS_IGNORE), "MPI_Test", where("barrier"));
      if (done != 0) return;
      if (loop.expired()) {
        fail_and_poison(errc::timeout,
                        "barrier not complete after " + plait::detail::seconds_text(loop.waited()) + " (timeout " +
                            plait::detail::seconds_text(timeout()) + "): some rank has not entered it",
                        where("barrier"));
      }
      loop.pause();
    }
  }

  /// MPI_Comm_split: ranks with the same color form a new communicator,
  /// ordered by key (then by rank here). Collective over this communicator.
  /// `plait::no_group` joins none and returns a null communicator. The child
  /// inherits timeout(), busy_poll() (the node is as full as it was for the
  /// parent) and check_mode(), counts its own bytes_sent(), and its errors
  /// name this rank as the parent rank. A colour one rank rejects is
  /// invalid_argument naming that rank on every rank; a rank that does not
  /// call split leaves the others with errc::timeout after timeout(), and
  /// this communicator poisoned (its unfinished exchange stays in MPI).
  [[nodiscard]] communicator split(int color, int key) {
    require_usable("split");
    detail::setup_verdict mine;
    try {
      check_split_color(color);
    } catch (const error& e) {
      mine = detail::setup_verdict::of(e);
    }
    // MPI_Comm_split has no nonblocking form: agree first.
    (void)agree(detail::setup_call::split, mine, "split");
    MPI_Comm out = MPI_COMM_NULL;
    detail::check(MPI_Comm_split(comm_, color == no_group ? MPI_UNDEFINED : color, key, &out), "MPI_Comm_split",
                  where("split"));
    communicator part;
    static_cast<communicator_core&>(part) = child(-1, 0);
    if (out != MPI_COMM_NULL) part.adopt(out);
    return part;
  }

  /// Messages longer than this go as several MPI messages (default 1 GiB;
  /// at most INT_MAX, MPI's count limit). Both ends of a message must use the
  /// same value; tests lower it to exercise the split path cheaply.
  void set_chunk_bytes(std::size_t bytes) {
    if (bytes == 0 || bytes > static_cast<std::size_t>(INT_MAX)) {
      throw error(errc::invalid_argument, "chunk size must be in [1, INT_MAX] bytes", where("set_chunk_bytes"));
    }
    chunk_bytes_ = bytes;
  }
  /// The largest single MPI message (see set_chunk_bytes).
  [[nodiscard]] std::size_t chunk_bytes() const noexcept { return chunk_bytes_; }

  /// The rank's own code threw in a collective call (op/abandon.hpp), or
  /// it leaves a two-level call whose other level failed
  /// (op/abandon_levels.hpp): poisons the communicator with `why` and sends
  /// every peer the verdict that blames why.peer() (this rank where it names
  /// none here), so that their waits end with it. The call's requests cancel
  /// themselves when the run that owns them ends.
  void abandon_call(const error& why) noexcept {
    if (poisoned()) return;
    poison(why);
    if (size() < 2) return;
    const int blamed = why.peer() >= 0 && why.peer() < size() ? why.peer() : rank();
    try {
      send_verdict(blamed, "rank " + std::to_string(rank()) + " failed in " + why.operation() + ": " + why.detail());
    } catch (...) {  // out of memory: the peers' timeouts still end their waits
    }
  }

 private:
  /// The busy phase never yields, as MPI's own blocking calls spin without
  /// yielding: a rank that yields while another process is runnable on its
  /// core gets it back only after that process's slice. Measured with other
  /// builds running (load 5-8, P = 2, 1 MiB all-gather, medians of 21
  /// samples): Testall spinning 75 us, native MPI_Allgather 61 us, the same
  /// spin yielding every 20 us (the shm default) 10 ms. Ranks that outnumber
  /// the CPUs get no busy phase at all (busy_poll() zero).
  static constexpr std::chrono::nanoseconds busy_yield = std::chrono::nanoseconds::max();

  // node_levels and node_local_shm run their agreements on it.
  friend struct detail::setup_access;

  /// detail::agree on this communicator, bounded by timeout(): every rank's
  /// `value`, or the error every rank throws. An exchange that did not finish
  /// poisons the communicator: it stays pending in MPI, where a later
  /// collective would match it, and the duplicate is then never freed.
  std::vector<int> agree(detail::setup_call call, const detail::setup_verdict& mine, std::string_view operation,
                         int value = 0) {
    require_usable(operation);
    detail::setup_outcome outcome = detail::agree(comm_, call, mine, value, timeout(), where(operation));
    if (!outcome.complete) poison(*outcome.failure);
    return outcome.take();
  }

  void swap(communicator& other) noexcept {
    using std::swap;
    swap(static_cast<communicator_core&>(*this), static_cast<communicator_core&>(other));
    swap(comm_, other.comm_);
    swap(chunk_bytes_, other.chunk_bytes_);
    swap(bytes_sent_vectored_, other.bytes_sent_vectored_);
    swap(handles_, other.handles_);
    swap(statuses_, other.statuses_);
    swap(finished_, other.finished_);
    swap(test_looks_, other.test_looks_);
    swap(extension_, other.extension_);
    swap(level_steps_, other.level_steps_);
    swap(blame_tag_, other.blame_tag_);
    swap(blame_, other.blame_);
    swap(blame_from_, other.blame_from_);
    swap(notice_tag_, other.notice_tag_);
    swap(watch_notices_, other.watch_notices_);
    swap(blocked_, other.blocked_);
    swap(mismatch_, other.mismatch_);
    swap(notice_, other.notice_);
    swap(notice_tag_seen_, other.notice_tag_seen_);
    swap(control_, other.control_);
  }

  /// Takes ownership of `comm` (a fresh duplicate or split result).
  void adopt(MPI_Comm comm) {
    comm_ = comm;
    const error_context context = where("mpi::communicator");
    detail::check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", context);
    int rank = -1;
    int size = 0;
    detail::check(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank", context);
    detail::check(MPI_Comm_size(comm_, &size), "MPI_Comm_size", context);
    attach(rank, size);
    void* value = nullptr;
    int found = 0;
    detail::check(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &found), "MPI_Comm_get_attr", context);
    // The standard guarantees at least 32767; trust that if the attribute is absent.
    blame_tag_ = found != 0 && value != nullptr ? *static_cast<int*>(value) : 32767;
    // The two largest tags carry the blame exchange and size notices
    // (check_notices), never a collective's or a user's message.
    notice_tag_ = blame_tag_ - 1;
    set_tag_limit(blame_tag_ - 2);
  }

  /// Poisons the communicator with `message` and throws it. A collective
  /// call that fails here first also tells the other ranks (announce_failure),
  /// unless `announce` is false: a timeout tells them its own verdict, and a
  /// verdict received is not echoed.
  [[noreturn, gnu::cold]] void fail_and_poison(errc code, const std::string& message, const error_context& at,
                                               bool announce = true) {
    const error failure(code, message, at);
    const bool first = !poisoned();
    poison(failure);
    if (announce && first) announce_failure(message, at.peer);
    throw failure;
  }
  /// Nothing for MPI_SUCCESS; otherwise poisons and throws, as detail::check words it.
  void check_or_poison(int code, std::string_view call, const error_context& at) {
    if (code != MPI_SUCCESS) [[unlikely]]
      fail_and_poison(detail::classify(code), std::string(call) + " failed: " + detail::error_string(code), at);
  }

  request post(int peer, int tag, bool receive, std::byte* data, std::size_t bytes) {
    const std::string_view operation = receive ? "irecv" : "isend";
    require_usable(operation);
    check_peer(peer, operation);
    check_tag(tag, peer, operation);
    request r;
    r.peer_ = peer;
    r.bytes_ = bytes;
    r.receive_ = receive;
    r.tag_ = tag;
    const std::size_t chunks = bytes == 0 ? 1 : (bytes + chunk_bytes_ - 1) / chunk_bytes_;
    r.reserve_handles(chunks);
    if (!receive) {
      if (noticed_tag(tag)) watch_notices_ = true;
    } else if (probed_tag(tag)) {
      r.probed_ = true;  // posted chunk by chunk as each arrives (match_probed)
      r.data_ = data;
      return r;
    }
    const std::span<MPI_Request> handles = r.handles();
    for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
      const std::size_t offset = chunk * chunk_bytes_;
      const int count = static_cast<int>(std::min(chunk_bytes_, bytes - offset));
      MPI_Request& handle = handles[chunk];
      // An empty span may have a null data(); MPI accepts any pointer with count 0.
      std::byte* at = data == nullptr ? nullptr : data + offset;
      const int code = receive ? MPI_Irecv(at, count, MPI_BYTE, peer, tag, comm_, &handle)
                               : MPI_Isend(at, count, MPI_BYTE, peer, tag, comm_, &handle);
      check_or_poison(code, receive ? "MPI_Irecv" : "MPI_Isend", where(operation, peer));
    }
    if (!receive) count_sent(bytes);
    return r;
  }

  /// isendv / irecvv: chunks of chunk_bytes_ of the pieces' concatenation
  /// (the chunks a plain message of that length has, so either side may be
  /// plain), each one MPI message of an hindexed type over its pieces, or of
  /// bytes where it lies in one piece.
  template <class Byte>
  request post_vectored(int peer, int tag, std::span<const std::span<Byte>> pieces) {
    constexpr bool receive = !std::is_const_v<Byte>;
    const std::string_view operation = receive ? "irecvv" : "isendv";
    require_usable(operation);
    check_peer(peer, operation);
    check_tag(tag, peer, operation);
    std::size_t bytes = 0;
    for (const auto& piece : pieces) bytes += piece.size();
    request r;
    r.peer_ = peer;
    r.bytes_ = bytes;
    r.receive_ = receive;
    r.tag_ = tag;
    const std::size_t chunks = bytes == 0 ? 1 : (bytes + chunk_bytes_ - 1) / chunk_bytes_;
    r.reserve_handles(chunks);
    if constexpr (receive) {
      if (probed_tag(tag)) {
        r.probed_ = true;  // posted chunk by chunk as each arrives (match_probed)
        r.pieces_ = pieces;
        return r;
      }
    } else if (noticed_tag(tag)) {
      watch_notices_ = true;
    }
    const std::span<MPI_Request> handles = r.handles();
    for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
      vectored_part part = vectored_chunk(pieces, bytes, chunk, peer, operation);
      const int code = receive ? MPI_Irecv(part.buffer, part.count, part.type, peer, tag, comm_, &handles[chunk])
                               : MPI_Isend(part.buffer, part.count, part.type, peer, tag, comm_, &handles[chunk]);
      if (part.type != MPI_BYTE) MPI_Type_free(&part.type);  // MPI keeps it alive until the transfer completes
      check_or_poison(code, receive ? "MPI_Irecv" : "MPI_Isend", where(operation, peer));
    }
    if (!receive) {
      count_sent(bytes);
      bytes_sent_vectored_ += bytes;
    }
    return r;
  }

  /// Where one MPI message of a vectored transfer lies: `count` of `type`
  /// at `buffer`.
  struct vectored_part {
    void* buffer = nullptr;
    int count = 0;
    MPI_Datatype type = MPI_BYTE;
  };

  /// Chunk `chunk` of the concatenation of `pieces` (`bytes` in all): bytes
  /// where it lies in one piece, else a committed hindexed type of its parts
  /// on MPI_BOTTOM, which the caller frees once the transfer is posted.
  template <class Byte>
  vectored_part vectored_chunk(std::span<const std::span<Byte>> pieces, std::size_t bytes, std::size_t chunk, int peer,
                               std::string_view operation) {
    // One chunk spans at most every piece: room for its parts, on the stack for up to 16.
    plait::detail::small_array<int, 16> lengths(pieces.size());
    plait::detail::small_array<MPI_Aint, 16> displacements(pieces.size());
    std::size_t piece = 0;                  // where the chunk starts: a piece ...
    std::size_t at = chunk * chunk_bytes_;  // ... and an offset in it
    while (piece < pieces.size() && at >= pieces[piece].size() && at != 0) {
      at -= pieces[piece].size();
      ++piece;
    }
    std::size_t left = std::min(chunk_bytes_, bytes - chunk * chunk_bytes_);
    int parts = 0;
    std::byte* first = nullptr;
    while (left != 0) {
      if (at == pieces[piece].size()) {
        ++piece;
        at = 0;
        continue;
      }
      const std::size_t n = std::min(left, pieces[piece].size() - at);
      auto* start = const_cast<std::byte*>(pieces[piece].data() + at);
      if (parts == 0) first = start;
      check_or_poison(MPI_Get_address(start, &displacements[static_cast<std::size_t>(parts)]), "MPI_Get_address",
                      where(operation, peer));
      lengths[static_cast<std::size_t>(parts++)] = static_cast<int>(n);  // n <= chunk_bytes_ <= INT_MAX
      at += n;
      left -= n;
    }
    vectored_part part{first, parts == 0 ? 0 : lengths[0], MPI_BYTE};
    if (parts > 1) {
      check_or_poison(MPI_Type_create_hindexed(parts, lengths.data(), displacements.data(), MPI_BYTE, &part.type),
                      "MPI_Type_create_hindexed", where(operation, peer));
      check_or_poison(MPI_Type_commit(&part.type), "MPI_Type_commit", where(operation, peer));
      part.buffer = MPI_BOTTOM;
      part.count = 1;
    }
    return part;
  }

  // ---- probed receives (every collective's) and size notices -------------

  /// Whether receives under `tag` are probed before they are taken: every
  /// collective's (its tag has a stamp). A plain receive of a longer message
  /// is not safe: Open MPI 4.1's shared-memory transport gets a rendezvous
  /// message whole into a shorter receive buffer, past its end, instead of
  /// truncating it (the soak found it: a reduce_scatter<tree> of 388
  /// elements a block on one rank against 386 on the others overwrote the
  /// heap). A probe sees the size first. User point-to-point keeps plain
  /// receives, with MPI's own semantics.
  [[nodiscard]] bool probed_tag(int tag) const noexcept { return stamp_of(tag).known(); }
  /// Whether a sender under `tag` looks for size notices: the uneven forms',
  /// whose sizes come from each rank's own counts, so that only a receiver
  /// may see the disagreement. In the even forms each rank's sizes follow
  /// from its own buffers, and a rank whose sizes differ receives mismatched
  /// messages itself.
  [[nodiscard]] bool noticed_tag(int tag) const noexcept { return sizes_may_disagree(stamp_of(tag).kind); }

  static bool any_unmatched(std::span<const request> requests) noexcept {
    return std::any_of(requests.begin(), requests.end(), [](const request& r) { return r.unmatched(); });
  }

  /// Matches and posts (MPI_Imrecv) every chunk of the probed receives in
  /// `requests` that has arrived, in posting order per peer (MPI's order for
  /// one source and tag). A chunk of another size than expected is taken
  /// whole into scratch (nothing is truncated, nothing lands in the receive
  /// buffer), its sender is told (send_notice), and the receive counts as
  /// done: the rest of the wait still completes, so that ranks whose counts
  /// agree with this one's finish the call, and the wait then throws
  /// (raise_mismatch).
  void match_probed(std::span<request> requests) {
    blocked_.clear();
    for (request& r : requests) {
      if (!r.unmatched()) continue;
      if (std::find(blocked_.begin(), blocked_.end(), r.peer_) != blocked_.end()) continue;
      while (r.matched_ < r.chunks_) {
        int found = 0;
        MPI_Message message = MPI_MESSAGE_NULL;
        MPI_Status status;
        check_or_poison(MPI_Improbe(r.peer_, r.tag_, comm_, &found, &message, &status), "MPI_Improbe",
                        where("wait_all", r.peer_));
        if (found == 0) {
          blocked_.push_back(r.peer_);  // a later receive from it must wait for this one
          break;
        }
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        const std::size_t offset = r.matched_ * chunk_bytes_;
        const std::size_t expected = std::min(chunk_bytes_, r.bytes_ - offset);
        if (count < 0 || static_cast<std::size_t>(count) != expected) [[unlikely]] {
          size_disagrees(r, message, count, expected);
          break;
        }
        MPI_Request& handle = r.handles()[r.matched_];
        int code = MPI_SUCCESS;
        if (r.pieces_.empty()) {
          code = MPI_Imrecv(r.data_ == nullptr ? nullptr : r.data_ + offset, count, MPI_BYTE, &message, &handle);
        } else {
          vectored_part part = vectored_chunk(r.pieces_, r.bytes_, r.matched_, r.peer_, "irecvv");
          code = MPI_Imrecv(part.buffer, part.count, part.type, &message, &handle);
          if (part.type != MPI_BYTE) MPI_Type_free(&part.type);
        }
        check_or_poison(code, "MPI_Imrecv", where("wait_all", r.peer_));
        ++r.matched_;
      }
    }
  }

  /// Waits, polling match_probed, until every probed receive of `requests`
  /// is matched (their transfers then complete in wait_all's loop).
  void match_all(std::span<request> requests, deadline until) {
    plait::detail::wait_loop loop(until, busy_poll(), 200000, 64, busy_yield);
    unsigned idle_polls = 0;
    for (;;) {
      match_probed(requests);
      if (!any_unmatched(requests)) return;
      if (watch_notices_) check_notices("wait_all", requests);
      if (loop.expired()) {
        if (loop.extend_once([&] { return wait_longer(requests); }, timeout())) continue;
        collect_handles(requests);
        timed_out(requests, loop.waited());
      }
      // As in wait_all's loop: queries answered, and a verdict (a peer's
      // call failed: it will not send what this wait is waiting for) ends it.
      if ((loop.sleeping() || ++idle_polls % 1024 == 0) && serve_blame_queries(requests)) verdict_received(requests);
      loop.pause();
    }
  }

  /// What a probe found: a chunk from `peer` of `got` bytes where `expected`
  /// were due, in the call `stamp` (peer -1: none).
  struct size_mismatch_seen {
    int peer = -1;
    std::size_t got = 0;
    std::size_t expected = 0;
    call_stamp stamp;
  };

  /// A probed chunk from r's peer holds `count` bytes where `expected` were
  /// due: takes it whole into scratch (a sender of a large message waits for
  /// its receiver), tells the sender, and remembers the first such chunk
  /// for raise_mismatch. r counts as done; its later chunks stay in MPI.
  [[gnu::cold]] void size_disagrees(request& r, MPI_Message& message, int count, std::size_t expected) {
    const std::size_t got = count < 0 ? 0 : static_cast<std::size_t>(count);
    std::vector<std::byte> drain(got);
    MPI_Mrecv(drain.data(), static_cast<int>(got), MPI_BYTE, &message, MPI_STATUS_IGNORE);
    const call_stamp stamp = stamp_of(r.tag_);
    send_notice(r.peer_, r.tag_, stamp, expected, got);
    if (mismatch_.peer < 0) mismatch_ = {r.peer_, got, expected, stamp};
    r.matched_ = r.chunks_;
    r.probed_ = false;  // its unposted handles stay MPI_REQUEST_NULL: complete
  }

  /// Throws (and poisons) the size mismatch a probe saw during this wait, if any.
  void raise_mismatch(std::span<request> requests) {
    if (mismatch_.peer < 0) [[likely]]
      return;
    const size_mismatch_seen seen = std::exchange(mismatch_, {});
    for (request& r : requests) r.abandon();
    fail_and_poison(errc::size_mismatch,
                    "rank " + std::to_string(seen.peer) + " sent a message of " + std::to_string(seen.got) +
                        " bytes where this rank expects " + std::to_string(seen.expected) + " in " +
                        std::string(call_kind_name(seen.stamp.kind)) +
                        ": the ranks' counts disagree (the message was not taken; rank " + std::to_string(seen.peer) +
                        " is told, and throws too)",
                    where("wait_all", seen.peer));
  }

  /// Tells `peer` that its message of the call `stamp` under `tag` held `got`
  /// bytes where this rank expected `expected`, without waiting for it
  /// (detail::control_sends).
  void send_notice(int peer, int tag, call_stamp stamp, std::size_t expected, std::size_t got) {
    const std::array<std::int64_t, 4> notice{static_cast<std::int64_t>(stamp.bits()),
                                             static_cast<std::int64_t>(expected), static_cast<std::int64_t>(got), tag};
    (void)control_.post(notice.data(), sizeof notice, peer, notice_tag_, comm_);
  }

  /// Reads a size notice a peer sent (send_notice), if one came. One about a
  /// call of `requests` (the wait in progress, tags compared) is kept for
  /// raise_notice when the wait ends: this rank still completes the call,
  /// so that the ranks it exchanges with correctly are not left waiting. One
  /// about an earlier call throws now: the receiver has failed and is in no
  /// later call.
  void check_notices(std::string_view operation, std::span<const request> requests = {}) {
    if (!read_notice()) return;
    const bool current =
        std::any_of(requests.begin(), requests.end(), [this](const request& r) { return r.tag_ == notice_tag_seen_; });
    if (!current) raise_notice(operation, {});
  }

  /// Takes a size notice that has arrived into notice_, unless one is kept
  /// already; true when one is kept.
  bool read_notice() {
    if (notice_.peer >= 0) return true;
    int found = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, notice_tag_, comm_, &found, &status) != MPI_SUCCESS || found == 0) return false;
    std::array<std::int64_t, 4> notice{};
    MPI_Recv(notice.data(), static_cast<int>(sizeof notice), MPI_BYTE, status.MPI_SOURCE, notice_tag_, comm_,
             MPI_STATUS_IGNORE);
    notice_ = {status.MPI_SOURCE, static_cast<std::size_t>(notice[2]), static_cast<std::size_t>(notice[1]),
               call_stamp::from_bits(static_cast<std::uint32_t>(notice[0]))};
    notice_tag_seen_ = static_cast<int>(notice[3]);
    return true;
  }

  /// Throws (and poisons) the size notice check_notices kept, if any.
  void raise_notice(std::string_view operation, std::span<request> requests) {
    if (notice_.peer < 0) [[likely]]
      return;
    const size_mismatch_seen seen = std::exchange(notice_, {});
    for (request& r : requests) r.abandon();
    fail_and_poison(errc::size_mismatch,
                    "rank " + std::to_string(seen.peer) + " received a message of " + std::to_string(seen.got) +
                        " bytes from this rank where it expected " + std::to_string(seen.expected) + " in " +
                        std::string(call_kind_name(seen.stamp.kind)) + ": the ranks' counts disagree",
                    where(operation, seen.peer));
  }

  /// Copies the handles MPI_Testall updated back into their requests.
  /// Every MPI handle of `requests` into handles_ (statuses_ as large);
  /// false when there are none.
  bool collect_handles(std::span<request> requests) {
    handles_.clear();
    for (const request& r : requests) {
      const auto mine = r.handles();
      handles_.insert(handles_.end(), mine.begin(), mine.end());
    }
    if (statuses_.size() < handles_.size()) statuses_.resize(handles_.size());
    return !handles_.empty();
  }

  void store_handles(std::span<request> requests) noexcept {
    std::size_t next = 0;
    for (request& r : requests) {
      for (MPI_Request& handle : r.handles()) handle = handles_[next++];
    }
  }

  [[noreturn, gnu::cold]] void failed(std::span<request> requests, int code) {
    const detail::request_status failure = detail::failed_request(requests, statuses_.data(), code);
    const bool left_pending = detail::first_pending_peer(requests) >= 0;
    for (request& r : requests) r.abandon();
    const errc kind = detail::classify(failure.code);
    const std::string message = "MPI_Testall failed: " + detail::error_string(failure.code);
    // A truncated receive took its whole message (MPI dropped the tail): a
    // user's transfer leaves the communicator usable unless other transfers
    // had to be cancelled, whose messages may still arrive. A collective's
    // does not: its peers wait for messages this rank will not send.
    if (kind == errc::size_mismatch && !left_pending && current_wait().operation.empty()) {
      throw error(kind, message, where("wait_all", failure.peer));
    }
    fail_and_poison(kind, message, where("wait_all", failure.peer));
  }

  /// Whether a wait whose deadline has passed in a two-level call's step at
  /// this level goes on for one timeout more: the rank to blame did not
  /// answer, and may be at its other level, whose own timeout names the
  /// rank to blame there and fails this level with it (core/blame.hpp). A
  /// verdict that came meanwhile is left to timed_out.
  [[gnu::cold]] bool wait_longer(std::span<const request> requests) {
    if (std::atomic_ref<int>(level_steps_).load(std::memory_order_relaxed) <= 0) return false;
    const plait::detail::wait_record mine = own_record(requests);
    if (mine.call == 0) return false;
    const plait::detail::blame found = ask_peers(mine);
    return blame_.kind != detail::blame_message::verdict && found.rank >= 0 && found.silent;
  }

  [[noreturn, gnu::cold]] void timed_out(std::span<request> requests, clock::duration waited) {
    raise_mismatch(requests);            // the cause, where a probe saw one ...
    raise_notice("wait_all", requests);  // ... or a peer's probe did
    // MPI_Testall leaves every handle in place while any is pending, so a
    // transfer that finished would still look pending and could be blamed
    // (issue 27). MPI_Testsome completes exactly the finished ones; their
    // data has landed, so completing them writes nothing new. Its error, if
    // any, is moot: this wait fails with the timeout either way.
    if (!handles_.empty()) {
      int finished = 0;
      finished_.resize(handles_.size());
      MPI_Testsome(static_cast<int>(handles_.size()), handles_.data(), &finished, finished_.data(), statuses_.data());
      store_handles(requests);
    }
    const int first_peer = detail::first_pending_peer(requests);
    const std::string pending = detail::describe_pending(requests);
    plait::detail::wait_record mine = own_record(requests);
    mine.gave_up = true;  // what the others are told while this rank asks
    // Cancel before throwing: no receive may write into a user buffer after the throw.
    for (request& r : requests) r.abandon();
    std::string message = "timed out waiting for rank " + std::to_string(first_peer) + " after " +
                          plait::detail::seconds_text(waited) + " (timeout " + plait::detail::seconds_text(timeout()) +
                          "), " + pending;
    // In a collective, the rank to blame is at the end of the chain of waits
    // (core/blame.hpp): ask the others, then tell them.
    if (mine.call == 0) fail_and_poison(errc::timeout, message, where("wait_all", first_peer), false);
    // Another rank that timed out first may have named the rank already:
    // its verdict then stands (this rank's own chain may lead to a rank that
    // has failed since, and answers no more).
    if (serve_blame_queries({}, &mine)) verdict_received({});
    const plait::detail::blame found = ask_peers(mine);
    if (blame_.kind == detail::blame_message::verdict) verdict_received({});
    if (found.rank < 0) fail_and_poison(errc::timeout, message, where("wait_all", first_peer), false);
    tell_peers(found);
    fail_and_poison(errc::timeout, message + found.chain + ": " + found.sentence, where("wait_all", found.rank), false);
  }

  // ---- naming the rank to blame (transport/mpi/blame.hpp) ---------------

  /// This rank's wait record while it waits for `requests`.
  [[nodiscard]] plait::detail::wait_record own_record(std::span<const request> requests) const {
    const plait::detail::wait_note& note = current_wait();
    const bool collective = !note.operation.empty();
    return {true,
            static_cast<std::uint32_t>(last_tag()),
            true,
            collective ? static_cast<std::uint32_t>(note.tag) : 0,
            collective ? stamp_of(note.tag).bits() : 0,
            collective ? note.step : -1,
            detail::first_pending_peer(requests),
            collective ? std::string(note.operation) : std::string(),
            false,
            false};
  }

  /// The next message of the exchange, if one has arrived: its sender, else -1.
  int next_blame_message(detail::blame_message& m) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, blame_tag_, comm_, &flag, &status) != MPI_SUCCESS || flag == 0) return -1;
    if (MPI_Recv(&m, static_cast<int>(sizeof m), MPI_BYTE, status.MPI_SOURCE, blame_tag_, comm_, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS) {
      return -1;
    }
    return status.MPI_SOURCE;
  }

  /// Sends `m` to `peer` without waiting for it (detail::control_sends).
  void send_blame_message(const detail::blame_message& m, int peer) {
    (void)control_.post(&m, sizeof m, peer, blame_tag_, comm_);
  }

  /// Answers `peer`'s query with `mine`.
  void answer(int peer, const plait::detail::wait_record& mine) {
    detail::blame_message m;
    m.kind = detail::blame_message::answer;
    m.entered = static_cast<std::int32_t>(mine.entered);
    m.waiting = mine.waiting ? 1 : 0;
    m.call = static_cast<std::int32_t>(mine.call);
    m.stamp = mine.stamp;
    m.step = mine.step;
    m.peer = mine.peer;
    m.gave_up = mine.gave_up ? 1 : 0;
    m.set_text(mine.operation);
    send_blame_message(m, peer);
  }

  /// Answers every query that has arrived with this rank's record (`mine`,
  /// else made from `requests`); true when a verdict came (kept in blame_).
  bool serve_blame_queries(std::span<const request> requests, const plait::detail::wait_record* mine = nullptr) {
    detail::blame_message m;
    for (int from = next_blame_message(m); from >= 0; from = next_blame_message(m)) {
      if (m.kind == detail::blame_message::query) {
        answer(from, mine != nullptr ? *mine : own_record(requests));
      } else if (m.kind == detail::blame_message::verdict) {
        keep_verdict(m, from);
        return true;
      }  // an answer to a query of ours that came too late: nothing to do
    }
    return false;
  }

  void keep_verdict(const detail::blame_message& m, int from) noexcept {
    blame_ = m;
    blame_from_ = from;
  }

  /// Another rank failed and named the rank to blame: this wait fails with
  /// peer_lost saying so, unless a wrong size of this rank's own, seen or
  /// noticed, caused it (that error is thrown instead). Where the verdict
  /// blames this rank (a mismatch its sender saw on this rank's message) or
  /// names none, the peer is the sender, the other party: a rank never names
  /// itself.
  [[noreturn, gnu::cold]] void verdict_received(std::span<request> requests) {
    // A wrong size this rank's probe saw is the cause, and its own error:
    // its sender, told, fails and announces it while this wait still runs
    // for its other transfers.
    raise_mismatch(requests);
    // A receiver that finds this rank's message of the wrong size sends its
    // notice, then its verdict. The notice, kept for the end of this wait or
    // landed after this poll looked (sent first, it is here when the verdict
    // is), is the cause, and this rank's own error.
    if (watch_notices_ && read_notice()) raise_notice("wait_all", requests);
    for (request& r : requests) r.abandon();
    const bool names_another = blame_.peer >= 0 && blame_.peer < size() && blame_.peer != rank();
    const int blamed = names_another ? blame_.peer : blame_from_;
    fail_and_poison(errc::peer_lost, "the group failed: " + blame_.text_value(), where("wait_all", blamed), false);
  }

  /// Asks every other rank what it waits for, collects the answers for
  /// detail::blame_answer_window (answering their queries meanwhile), and
  /// follows the chain; ranks that did not answer are the suspects.
  [[gnu::cold]] plait::detail::blame ask_peers(const plait::detail::wait_record& mine) {
    std::vector<plait::detail::wait_record> records(static_cast<std::size_t>(size()));
    for (auto& r : records) r.known = false;
    records[static_cast<std::size_t>(rank())] = mine;
    detail::blame_message query;
    query.call = static_cast<std::int32_t>(mine.call);
    for (int peer = 0; peer < size(); ++peer) {
      if (peer != rank()) send_blame_message(query, peer);
    }
    int answered = 0;
    const deadline end = plait::detail::after(detail::blame_answer_window);
    detail::blame_message m;
    while (answered < size() - 1 && clock::now() < end) {
      const int from = next_blame_message(m);
      if (from < 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      } else if (m.kind == detail::blame_message::answer && !records[static_cast<std::size_t>(from)].known) {
        records[static_cast<std::size_t>(from)] = detail::record_of(m);
        ++answered;
      } else if (m.kind == detail::blame_message::query) {
        answer(from, mine);  // it timed out too: it is owed our record as we are its
      } else if (m.kind == detail::blame_message::verdict) {
        keep_verdict(m, from);  // another rank named the rank to blame first
        return {};
      }
    }
    return plait::detail::find_guilty(records, rank());
  }

  /// Tells every other rank why the group failed (those still waiting fail with it).
  [[gnu::cold]] void tell_peers(const plait::detail::blame& found) {
    send_verdict(found.rank, plait::detail::group_reason(found, rank()));
  }

  /// A collective call that failed on this rank (a message of the wrong size,
  /// an MPI error) leaves its peers waiting for messages this rank will not
  /// send, and this rank, poisoned, answers no query: tell them now, naming
  /// the peer this rank's error names, so their waits end with the cause
  /// rather than a timeout that blames this rank (shm's group failure record
  /// does the same through the segment). Nothing outside a collective's wait:
  /// a user's own transfer concerns its peer alone.
  [[gnu::cold]] void announce_failure(const std::string& message, int peer) noexcept {
    const plait::detail::wait_note& note = current_wait();
    if (note.operation.empty() || size() < 2) return;
    try {
      std::string text = "rank " + std::to_string(rank()) + " failed in " + std::string(note.operation) + " #" +
                         std::to_string(note.tag);
      if (note.step >= 0) text += ", step " + std::to_string(note.step);
      if (peer >= 0 && peer != rank()) text += ", on a transfer with rank " + std::to_string(peer);
      send_verdict(peer != rank() ? peer : -1, text + ": " + message);
    } catch (...) {  // the error being thrown matters more than the announcement
    }
  }

  /// One verdict (`blamed`, why) to every other rank.
  void send_verdict(int blamed, std::string_view why) {
    detail::blame_message verdict;
    verdict.kind = detail::blame_message::verdict;
    verdict.peer = blamed;
    verdict.set_text(why);
    for (int peer = 0; peer < size(); ++peer) {
      if (peer != rank()) send_blame_message(verdict, peer);
    }
  }

  /// A receive must get exactly the bytes it asked for; MPI reports a shorter
  /// message only through the status.
  void check_lengths(std::span<const request> requests) {
    const detail::request_status wrong = detail::wrong_length(requests, statuses_.data());
    if (wrong.peer < 0) [[likely]]
      return;
    const std::string message = "received " + std::to_string(wrong.received) + " bytes where " +
                                std::to_string(wrong.expected) + " were expected";
    // In a collective the call is broken for the other ranks too (see failed()).
    if (!current_wait().operation.empty()) fail_and_poison(errc::size_mismatch, message, where("wait_all", wrong.peer));
    throw error(errc::size_mismatch, message, where("wait_all", wrong.peer));
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::size_t chunk_bytes_ = detail::default_chunk_bytes;
  std::uint64_t bytes_sent_vectored_ = 0;
  // Scratch for wait_all, kept to avoid an allocation per call.
  std::vector<MPI_Request> handles_;
  std::vector<MPI_Status> statuses_;
  std::vector<int> finished_;                    // MPI_Testsome's indices, on a timeout only
  unsigned test_looks_ = 0;                      // test_all calls without completion, to answer queries now and then
  plait::detail::deadline_extension extension_;  // test_all's deadline that wait_longer extended
  int level_steps_ = 0;                          // two-level calls waiting at this level (note_level_step)
  int blame_tag_ = 0;                            // MPI_TAG_UB: the blame exchange's messages (see tag_upper_bound)
  detail::blame_message blame_{};                // the verdict a wait received
  int blame_from_ = -1;                          // the rank that sent it
  int notice_tag_ = 32766;                       // MPI_TAG_UB - 1: size notices only
  bool watch_notices_ = false;                   // this rank has sent an uneven form's message: look for notices
  std::vector<int> blocked_;                     // match_probed's peers with a chunk not yet arrived
  size_mismatch_seen mismatch_;                  // the first wrong size a probe saw in the current wait
  size_mismatch_seen notice_;      // a peer's notice of a wrong size from this rank, kept until its wait ends
  int notice_tag_seen_ = 0;        // the tag notice_ is about
  detail::control_sends control_;  // blame messages and notices MPI has not sent yet
};

namespace detail {
/// The agreement before a blocking setup step of plait's own on a
/// communicator (node_levels, node_local_shm); not for users, who need none.
struct setup_access {
  static std::vector<int> agree(communicator& comm, setup_call call, const setup_verdict& mine,
                                std::string_view operation, int value = 0) {
    return comm.agree(call, mine, operation, value);
  }
};
}  // namespace detail

static_assert(plait::detail::check_transport<communicator>());
static_assert(transport<communicator>);

}  // namespace mpi
}  // namespace v0
}  // namespace plait

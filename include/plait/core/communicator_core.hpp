// plait::communicator_core: what every communicator shares, written once.
//
// A transport moves bytes; everything around the moving is the same for all
// of them and lives here: who this rank is, the timeout and busy-poll
// settings (validated once), the tag counter and its range, the call stamps
// that let a transport with a message header catch mismatched collectives,
// poisoning (one wording, one `usable()`), peer and split-colour checks,
// check mode (read from the environment once, when the communicator is
// created) and the payload byte count that leaves control traffic out.
//
// The shm, MPI and NVLink communicators derive from it (publicly: its
// accessors are theirs); a new transport may too, and then writes only
// isend/irecv/wait_all/barrier/split (docs/architecture.md, "Adding a
// transport"). No virtual function: the hot members are inline.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "plait/core/blame.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"
#include "plait/core/progress_engine.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {

/// The shared state and checks of a communicator. Derive from it publicly;
/// the derived transport calls `attach(rank, size)` once it knows its place
/// (a default-constructed core is a null communicator: size() 0, rank() -1).
class communicator_core {
 public:
  communicator_core() noexcept = default;
  /// This rank of a group of `size`, with the default settings: timeout from
  /// PLAIT_TIMEOUT (300 s), check mode from PLAIT_CHECK, both read now. Every
  /// PLAIT_* variable is checked here (detail::read_environment): a bad value
  /// is errc::invalid_argument naming it, when the communicator is created.
  communicator_core(int rank, int size);

  /// Movable: the settings, counters and stamps move with it.
  communicator_core(communicator_core&&) noexcept = default;
  /// Movable, as the constructor.
  communicator_core& operator=(communicator_core&&) noexcept = default;
  communicator_core(const communicator_core&) = delete;
  communicator_core& operator=(const communicator_core&) = delete;
  ~communicator_core() = default;

  /// This rank, -1 for a null communicator.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// The group's size, 0 for a null communicator.
  [[nodiscard]] int size() const noexcept { return size_; }
  /// This rank in the communicator this one was split from, or -1 (not a split child).
  [[nodiscard]] int parent_rank() const noexcept { return parent_rank_; }

  // ---- timeouts and waiting --------------------------------------------

  /// How long one wait may take before it throws errc::timeout. Must be
  /// positive (errc::invalid_argument otherwise); a huge value saturates
  /// (`hours::max()` is stored as nanoseconds::max(), and deadlines made from
  /// it saturate too: the wait is unbounded).
  template <class Rep, class Period>
  void set_timeout(std::chrono::duration<Rep, Period> timeout) {
    set_timeout_seconds(std::chrono::duration<double>(timeout).count(), "set_timeout");
  }
  /// How long one wait may take.
  [[nodiscard]] std::chrono::nanoseconds timeout() const noexcept { return timeout_; }
  /// now + timeout(), without overflow.
  [[nodiscard]] deadline deadline_from_now() const noexcept { return detail::after(timeout_); }

  /// How long a wait polls before it starts yielding the core, then sleeping
  /// (core/backoff.hpp). Not negative (errc::invalid_argument); at most an
  /// hour (waits are bounded by timeout() anyway). Each transport sets its
  /// default from the node's load; split children inherit it.
  template <class Rep, class Period>
  void set_busy_poll(std::chrono::duration<Rep, Period> busy) {
    set_busy_poll_seconds(std::chrono::duration<double>(busy).count(), "set_busy_poll");
  }
  /// How long a wait polls before it backs off.
  [[nodiscard]] std::chrono::nanoseconds busy_poll() const noexcept { return busy_poll_; }

  // ---- tags --------------------------------------------------------------

  /// A fresh tag for one collective call; every rank that makes the same
  /// calls draws the same sequence 1, 2, ..., tag_limit(), 1, ... (never
  /// plait::user_tag). Throws once the communicator is unusable.
  int next_tag() { return next_tag(call_stamp{}); }
  /// The same, recording what the call is: messages of this tag carry
  /// `stamp` on transports with a header (see call_stamp).
  int next_tag(call_stamp stamp) {
    require_usable("collective");
    tag_ = tag_ >= tag_limit_ ? 1 : tag_ + 1;
    stamps_[static_cast<std::size_t>(tag_) % stamps_.size()] = {tag_, stamp};
    // One relaxed store per call: what a peer's timeout reads to tell a rank
    // that never entered a call from one that is in it (core/blame.hpp).
    if (entered_.word != nullptr) {
      std::atomic_ref<std::uint32_t>(*entered_.word).store(static_cast<std::uint32_t>(tag_), std::memory_order_relaxed);
    }
    return tag_;
  }
  /// The tag of the last call next_tag gave (0: none yet).
  [[nodiscard]] int last_tag() const noexcept { return tag_; }
  /// The stamp recorded for `tag` by one of the last 16 calls, else unknown.
  [[nodiscard]] call_stamp stamp_of(int tag) const noexcept {
    const tagged& t = stamps_[static_cast<std::size_t>(tag < 0 ? 0 : tag) % stamps_.size()];
    return t.tag == tag ? t.stamp : call_stamp{};
  }
  /// The largest tag a collective may get (and isend/irecv accept).
  [[nodiscard]] int tag_limit() const noexcept { return tag_limit_; }

  // ---- the wait record (core/blame.hpp) ----------------------------------

  /// The collective step this rank is about to wait in: set by the executor
  /// around each step's wait (two stores), cleared after it. Transports
  /// publish it with their wait record, and poisoning names the call.
  void note_wait(std::string_view operation, int tag, int step) noexcept { note_ = {operation, tag, step}; }
  /// Ends the note: no collective step waits now.
  void clear_wait_note() noexcept { note_ = {}; }
  /// The note of the wait in progress (empty operation: none).
  [[nodiscard]] const detail::wait_note& current_wait() const noexcept { return note_; }

  // ---- check mode -------------------------------------------------------

  /// Check mode (op/check.hpp): collectives first verify that every rank
  /// makes the same call. Off by default; PLAIT_CHECK=1 when the
  /// communicator is created turns it on; split children inherit it.
  void set_check_mode(bool on) noexcept { check_mode_ = on; }
  /// Whether check mode is on for this communicator.
  [[nodiscard]] bool check_mode() const noexcept { return check_mode_; }
  /// check_mode() already covers PLAIT_CHECK: collectives never read the
  /// environment per call.
  static constexpr bool check_mode_reads_environment = true;

  // ---- accounting --------------------------------------------------------

  /// Payload bytes this rank has posted for sending through this object
  /// (not its split children, not control messages).
  [[nodiscard]] std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }
  /// Takes `bytes` that were counted as payload back out: control traffic
  /// (check-mode signatures, split tables, handle exchanges) sent through
  /// the ordinary path.
  void discount_control_bytes(std::uint64_t bytes) noexcept {
    bytes_sent_ -= bytes < bytes_sent_ ? bytes : bytes_sent_;
  }

  // ---- collectives in flight (core/progress_engine.hpp) ------------------

  /// The engine that moves this communicator's nonblocking and persistent
  /// collectives, created at the first one. `in_order`: the transport
  /// receives messages between two ranks in the order they were sent
  /// (decided by the transport type, so the same at every call).
  /// A communicator must not be moved while collectives are in flight: they
  /// refer to it.
  [[nodiscard]] detail::progress_engine& collective_progress(bool in_order) {
    if (!progress_) progress_ = std::make_unique<detail::progress_engine>(in_order);
    return *progress_;
  }
  /// The engine while it has collectives queued or a progress thread, else
  /// null: a blocking call then runs directly (one pointer test).
  [[nodiscard]] detail::progress_engine* active_progress() const noexcept {
    return progress_ && progress_->active() ? progress_.get() : nullptr;
  }

  // ---- state -------------------------------------------------------------

  /// False for a null communicator and after a timeout, a lost peer or a
  /// transport failure (poisoned): every call but the accessors then throws.
  [[nodiscard]] bool usable() const noexcept { return size_ > 0 && !poisoned_; }
  /// True after a failure that made the communicator unusable.
  [[nodiscard]] bool poisoned() const noexcept { return poisoned_; }
  /// The first failure's message, empty while usable.
  [[nodiscard]] const std::string& poison_reason() const noexcept { return poison_reason_; }

 protected:
  /// Gives a null core its place; the settings stay as they are.
  void attach(int rank, int size) noexcept {
    rank_ = rank;
    size_ = size;
  }
  /// Where next_tag publishes each call's tag (a word of shared memory the
  /// peers read), or null.
  void publish_entered_calls(std::uint32_t* word) noexcept {
    entered_.word = word;
    if (word != nullptr)
      std::atomic_ref<std::uint32_t>(*word).store(static_cast<std::uint32_t>(tag_), std::memory_order_relaxed);
  }
  /// MPI narrows the tag range to its MPI_TAG_UB.
  void set_tag_limit(int limit) noexcept { tag_limit_ = limit < 1 ? 1 : limit; }

  /// Settings a split child starts with: timeout, busy poll, check mode and
  /// the tag range; the child's own place is `rank` of `size`, its parent
  /// rank this rank.
  [[nodiscard]] communicator_core child(int rank, int size) const;

  /// Throws unless usable(): errc::invalid_argument for a null communicator,
  /// the first failure's code (and its message) once poisoned.
  void require_usable(std::string_view operation) const {
    if (!usable()) [[unlikely]]
      unusable(operation);
  }
  /// errc::invalid_argument unless 0 <= peer < size().
  void check_peer(int peer, std::string_view operation) const {
    if (peer < 0 || peer >= size_) [[unlikely]]
      bad_peer(peer, operation);
  }
  /// errc::invalid_argument unless 0 <= tag <= tag_limit().
  void check_tag(int tag, int peer, std::string_view operation) const {
    if (tag < 0 || tag > tag_limit_) [[unlikely]]
      bad_tag(tag, peer, operation);
  }
  /// errc::invalid_argument for a negative colour other than plait::no_group.
  void check_split_color(int color) const {
    if (color < 0 && color != no_group) [[unlikely]]
      bad_color(color);
  }

  /// Counts `bytes` posted for sending as payload.
  void count_sent(std::uint64_t bytes) noexcept { bytes_sent_ += bytes; }

  /// Marks the communicator unusable after `first` (kept: later failures do
  /// not overwrite it). Transports call this, then end their pending
  /// transfers, before they rethrow.
  void poison(const error& first) noexcept;

  /// Where an error of this rank happened: rank, parent rank, operation, step, peer.
  [[nodiscard]] error_context where(std::string_view operation, int peer = -1, int step = -1) const noexcept {
    return {rank_, operation, step, peer, parent_rank_};
  }

 private:
  struct tagged {
    int tag = -1;
    call_stamp stamp;
  };

  void set_timeout_seconds(double seconds, std::string_view operation);
  void set_busy_poll_seconds(double seconds, std::string_view operation);
  [[noreturn, gnu::cold]] void unusable(std::string_view operation) const;
  [[noreturn, gnu::cold]] void bad_peer(int peer, std::string_view operation) const;
  [[noreturn, gnu::cold]] void bad_tag(int tag, int peer, std::string_view operation) const;
  [[noreturn, gnu::cold]] void bad_color(int color) const;

  int rank_ = -1;
  int size_ = 0;
  int parent_rank_ = -1;
  int tag_ = user_tag;
  int tag_limit_ = (1 << 30) - 1;
  std::chrono::nanoseconds timeout_ = std::chrono::seconds(300);  // a null core reads no environment
  std::chrono::nanoseconds busy_poll_{};
  std::uint64_t bytes_sent_ = 0;
  bool check_mode_ = false;
  bool poisoned_ = false;
  errc poison_code_ = errc::transport;
  std::string poison_reason_;
  std::string poisoned_by_;  // "all_gather<ring> #12, step 1": the call that failed first, if known
  std::string poison_detail_;
  int poison_peer_ = -1;
  detail::wait_note note_{};
  // See publish_entered_calls; a moved-from core forgets it (it points
  // into the segment of the communicator it moved to).
  struct published_word {
    std::uint32_t* word = nullptr;
    published_word() noexcept = default;
    published_word(published_word&& other) noexcept : word(std::exchange(other.word, nullptr)) {}
    published_word& operator=(published_word&& other) noexcept {
      word = std::exchange(other.word, nullptr);
      return *this;
    }
    published_word(const published_word&) = delete;
    published_word& operator=(const published_word&) = delete;
    ~published_word() = default;
  };
  published_word entered_;
  std::array<tagged, 16> stamps_{};
  std::unique_ptr<detail::progress_engine> progress_;  // null until the first collective in flight
};

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/communicator_core.ipp"
#endif

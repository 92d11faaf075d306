// The progress engine: every collective in flight on one communicator, and
// the one loop that moves them. Nonblocking requests, persistent collectives
// and blocking calls made while others are pending all go through it, so a
// rank that waits on one collective also advances every other one of that
// communicator (a peer may need them to finish its own).
//
// Two ways to order the collectives, chosen by the transport:
//   - by tag (MPI: a message matches its receive by source and tag, in any
//     order relative to other tags): every pending collective advances at
//     each turn, and they may complete in any order;
//   - in order (shm, the loopback test transport: messages between two ranks
//     are received in the order they were sent, whatever their tag): one
//     collective's messages at a time, in the order the collectives started,
//     which is the same on every rank. A later one then starts moving once
//     the earlier ones have completed; waiting on it advances them first.
//
// The collectives themselves are type-erased: an op-layer object derives
// from pending_collective and gives two plain function pointers (no virtual
// call, and nothing here knows a transport or a plan).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>

#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// One collective in flight, as the progress engine sees it.
class pending_collective {
 public:
  /// Moves the collective as far as it can without blocking; true once it is
  /// complete. Throws plait::error on failure.
  using advance_fn = bool (*)(pending_collective&);
  /// Completes the collective, blocking in the transport's waits (used when it
  /// is the only one pending: no other collective needs the turns).
  using finish_fn = void (*)(pending_collective&);

  pending_collective(advance_fn advance, finish_fn finish) noexcept : advance_(advance), finish_(finish) {}
  pending_collective(const pending_collective&) = delete;
  pending_collective& operator=(const pending_collective&) = delete;
  ~pending_collective() = default;

  /// Complete, or failed: nothing of it is pending in the transport.
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  /// In the engine's queue (started, not yet finished).
  [[nodiscard]] bool queued() const noexcept { return queued_; }
  /// Rethrows the failure that finished it, if any.
  void rethrow_failure() const {
    if (failure_) std::rethrow_exception(failure_);
  }
  /// Ready to start again (a persistent collective's next start()).
  void rearm() noexcept {
    finished_ = false;
    failure_ = nullptr;
  }

 private:
  friend class progress_engine;
  advance_fn advance_;
  finish_fn finish_;
  pending_collective* prev_ = nullptr;
  pending_collective* next_ = nullptr;
  bool queued_ = false;
  bool finished_ = false;
  std::exception_ptr failure_;
};

/// The queue of one communicator's collectives in flight, and their progress
/// (see the file comment). Every member but active() is called with lock()
/// held, by whichever thread (the user's or the progress thread) advances.
class progress_engine {
 public:
  /// `in_order`: the transport receives messages between two ranks in the
  /// order they were sent, so one collective moves at a time.
  explicit progress_engine(bool in_order) noexcept : in_order_(in_order) {}
  progress_engine(const progress_engine&) = delete;
  progress_engine& operator=(const progress_engine&) = delete;
  /// Stops the progress thread, if one runs.
  ~progress_engine();

  /// True while collectives are queued or a progress thread runs: blocking
  /// calls then go through the engine too. Read without the lock.
  [[nodiscard]] bool active() const noexcept { return active_.load(std::memory_order_acquire); }
  /// One collective at a time (see the constructor).
  [[nodiscard]] bool in_order() const noexcept { return in_order_; }

  /// The lock every other member needs while a progress thread runs. Without
  /// one, only the communicator's own user moves its collectives (one thread
  /// at a time, as for any call on it; the thread is started and stopped by
  /// that user too), so the lock is an empty one and a start or a wait pays
  /// no mutex.
  [[nodiscard]] std::unique_lock<std::mutex> lock() {
    return thread_on_ ? std::unique_lock<std::mutex>(mutex_) : std::unique_lock<std::mutex>();
  }

  /// Appends `c` (not queued) to the queue: it starts moving at the next turn
  /// it gets.
  PLAIT_DECL void enqueue(pending_collective& c) noexcept;
  /// Takes `c` out of the queue (if there), finished or not: the caller
  /// guarantees nothing of it is pending in the transport.
  PLAIT_DECL void withdraw(pending_collective& c) noexcept;
  /// One turn: advances the queued collectives (all of them, or in order
  /// until one stays pending). Finished ones leave the queue; a failure is
  /// kept in the collective that raised it, for its owner to rethrow.
  /// True if any collective finished.
  PLAIT_DECL bool turn() noexcept;
  /// Whether `c` is the only queued collective.
  [[nodiscard]] bool alone(const pending_collective& c) const noexcept { return head_ == &c && c.next_ == nullptr; }
  /// Completes `c` in its own transport waits (it must be alone() and no
  /// progress thread may run); its failure is kept in it as turn() keeps it.
  PLAIT_DECL void finish_alone(pending_collective& c) noexcept;

  /// Starts the progress thread: it takes a turn whenever collectives are
  /// queued, waiting `idle` between empty looks. Idempotent.
  PLAIT_DECL void start_thread(std::chrono::nanoseconds idle);
  /// Stops and joins it (call without the lock). Idempotent.
  PLAIT_DECL void stop_thread() noexcept;
  /// Whether a progress thread runs.
  [[nodiscard]] bool thread_running() const noexcept { return thread_on_; }

 private:
  void finish(pending_collective& c, std::exception_ptr failure) noexcept;
  void update_active() noexcept { active_.store(head_ != nullptr || thread_on_, std::memory_order_release); }

  std::mutex mutex_;
  pending_collective* head_ = nullptr;
  pending_collective* tail_ = nullptr;
  bool in_order_;
  std::atomic<bool> active_{false};
  std::atomic<bool> stop_{false};
  // Written by the user's thread, under the mutex; thread_ is touched only by start/stop_thread.
  bool thread_on_ = false;
  std::thread thread_;
};

/// Waits until `c` is finished, taking turns of the engine (every other
/// collective in flight moves too); rethrows its failure. When `c` is the only
/// collective queued and no progress thread runs, it completes in the
/// transport's own blocking waits instead (no turns needed).
PLAIT_DECL void wait_in_engine(progress_engine& engine, pending_collective& c, std::chrono::nanoseconds busy_poll);

/// One look: a turn of the engine unless `c` is finished; true once it is
/// finished (rethrowing its failure).
PLAIT_DECL bool test_in_engine(progress_engine& engine, pending_collective& c);

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/progress_engine.ipp"
#endif

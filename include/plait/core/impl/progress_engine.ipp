// Defines what plait/core/progress_engine.hpp declares: the queue, one turn
// of progress and the progress thread.
#pragma once

#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "plait/core/backoff.hpp"
#include "plait/core/config.hpp"
#include "plait/core/progress_engine.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL progress_engine::~progress_engine() { stop_thread(); }

PLAIT_DECL void progress_engine::enqueue(pending_collective& c) noexcept {
  c.prev_ = tail_;
  c.next_ = nullptr;
  if (tail_ != nullptr) {
    tail_->next_ = &c;
  } else {
    head_ = &c;
  }
  tail_ = &c;
  c.queued_ = true;
  c.finished_ = false;
  c.failure_ = nullptr;
  update_active();
}

PLAIT_DECL void progress_engine::withdraw(pending_collective& c) noexcept {
  if (!c.queued_) return;
  (c.prev_ != nullptr ? c.prev_->next_ : head_) = c.next_;
  (c.next_ != nullptr ? c.next_->prev_ : tail_) = c.prev_;
  c.prev_ = c.next_ = nullptr;
  c.queued_ = false;
  update_active();
}

PLAIT_DECL void progress_engine::finish(pending_collective& c, std::exception_ptr failure) noexcept {
  withdraw(c);
  c.finished_ = true;
  c.failure_ = std::move(failure);
}

PLAIT_DECL bool progress_engine::turn() noexcept {
  bool finished_any = false;
  for (pending_collective* c = head_; c != nullptr;) {
    pending_collective* next = c->next_;
    bool complete = false;
    std::exception_ptr failure;
    try {
      complete = c->advance_(*c);
    } catch (...) {
      failure = std::current_exception();
    }
    if (complete || failure) {
      finish(*c, std::move(failure));
      finished_any = true;
    } else if (in_order_) {
      break;  // the next one starts once this one has completed
    }
    c = next;
  }
  return finished_any;
}

PLAIT_DECL void progress_engine::finish_alone(pending_collective& c) noexcept {
  std::exception_ptr failure;
  try {
    c.finish_(c);
  } catch (...) {
    failure = std::current_exception();
  }
  finish(c, std::move(failure));
}

PLAIT_DECL void progress_engine::start_thread(std::chrono::nanoseconds idle) {
  std::lock_guard<std::mutex> held(mutex_);
  if (thread_on_) return;
  stop_.store(false, std::memory_order_relaxed);
  thread_ = std::thread([this, idle] {
    // Yields between turns while collectives move (their peers may share
    // this core), sleeps `idle` while none is queued.
    backoff waiting(backoff::default_yield_polls);
    while (!stop_.load(std::memory_order_acquire)) {
      bool queued = false;
      bool moved = false;
      {
        std::lock_guard<std::mutex> turn_held(mutex_);
        moved = turn();
        queued = head_ != nullptr;
      }
      if (!queued) {
        std::this_thread::sleep_for(idle);
        waiting.reset();
      } else if (moved) {
        waiting.reset();
      } else {
        waiting.pause();
      }
    }
  });
  thread_on_ = true;
  update_active();
}

PLAIT_DECL void progress_engine::stop_thread() noexcept {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  thread_.join();
  std::lock_guard<std::mutex> held(mutex_);
  thread_on_ = false;
  update_active();
}

PLAIT_DECL void wait_in_engine(progress_engine& engine, pending_collective& c, std::chrono::nanoseconds busy_poll) {
  // Yields for long before it sleeps: MPI moves bytes only inside a poll,
  // and a sleeping waiter stalls the transfer it waits for.
  backoff waiting(200000, busy_poll);
  for (;;) {
    {
      auto held = engine.lock();
      if (!c.queued()) break;  // finished (maybe by the progress thread), or never started
      if (engine.alone(c) && !engine.thread_running()) {
        engine.finish_alone(c);
        break;
      }
      if (engine.turn()) waiting.reset();
      if (!c.queued()) break;
    }
    waiting.pause();
  }
  c.rethrow_failure();
}

PLAIT_DECL bool test_in_engine(progress_engine& engine, pending_collective& c) {
  {
    auto held = engine.lock();
    if (c.queued()) engine.turn();
    if (c.queued()) return false;
  }
  c.rethrow_failure();
  return true;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

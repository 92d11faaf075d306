// Collectives made of collectives: a hierarchical all-gather is an all-gather
// over one level, then another over the other, with host copies between. To
// give such a collective every form (blocking, nonblocking, persistent) from
// one body, the body is a C++20 coroutine that starts each step as a
// nonblocking collective on its level and co_awaits it (level_step). A
// staged_task runs the body: run() to the end, blocking in each step's
// wait() (the blocking form), or advance() as far as it goes without blocking
// (the progress engine's turn, for requests and persistent collectives).
// staged_run makes one a pending_collective of an engine of its own
// (staged_progress(levels), op/hierarchical_state.hpp, in order: one such
// collective at a time, so every rank starts the levels' collectives in the
// same order).
#pragma once

#include <coroutine>
#include <exception>
#include <utility>

#include "plait/core/call_stamp.hpp"
#include "plait/core/progress_engine.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A coroutine whose steps are collectives in flight; see the file comment.
class staged_task {
 public:
  struct promise_type {
    collective_request* awaiting = nullptr;  // the step it is suspended on, or null
    staged_task* nested = nullptr;           // the body it is suspended on (co_await body), or null
    std::exception_ptr failure;
    call_stamp within{};  // the call the body's steps belong to (set_within), or none

    staged_task get_return_object() noexcept {
      return staged_task(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }  // runs on the first advance() or run()
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { failure = std::current_exception(); }
  };

  staged_task() = default;
  staged_task(const staged_task&) = delete;
  staged_task& operator=(const staged_task&) = delete;
  staged_task(staged_task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  staged_task& operator=(staged_task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  /// Destroying the frame destroys the step in flight, which completes its
  /// transfers first (collective_request's destructor).
  ~staged_task() { reset(); }

  /// Whether there is a body to run (default-constructed: none).
  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

  /// The call this body's steps belong to: the collectives it starts carry
  /// `call` in their stamps (detail::within), so that ranks whose calls
  /// differ in what the steps' bytes do not show still disagree.
  void set_within(call_stamp call) noexcept {
    if (handle_) handle_.promise().within = call;
  }

  /// Runs as far as it goes without blocking; true once the body has
  /// returned. Rethrows the body's failure.
  bool advance() {
    while (!handle_.done()) {
      promise_type& p = handle_.promise();
      if (p.nested != nullptr) {
        p.nested->inherit(p.within);
        if (!p.nested->advance()) return false;  // its failure ends this body too
        p.nested = nullptr;
      }
      if (p.awaiting != nullptr) {
        bool complete = true;
        try {
          complete = p.awaiting->test();
        } catch (...) {  // NOLINT(bugprone-empty-catch): level_step's resume rethrows it, in the body's words
        }
        if (!complete) return false;
        p.awaiting = nullptr;
      }
      resume();
    }
    rethrow_failure();
    return true;
  }

  /// Runs the body to its end, blocking in each step's wait; rethrows its failure.
  void run() {
    while (!handle_.done()) {
      promise_type& p = handle_.promise();
      if (p.nested != nullptr) {
        p.nested->inherit(p.within);
        p.nested->run();
        p.nested = nullptr;
      }
      if (p.awaiting != nullptr) {
        try {
          p.awaiting->wait();
        } catch (...) {  // NOLINT(bugprone-empty-catch): level_step's resume rethrows it, in the body's words
        }
        p.awaiting = nullptr;
      }
      resume();
    }
    rethrow_failure();
  }

  /// `co_await body` in another body: runs `body` to its end first (its
  /// steps advance as the outer body's would).
  auto operator co_await() & noexcept {
    struct awaiter {
      staged_task* body;
      bool await_ready() noexcept { return false; }
      void await_suspend(std::coroutine_handle<promise_type> h) noexcept { h.promise().nested = body; }
      void await_resume() noexcept {}
    };
    return awaiter{this};
  }
  auto operator co_await() && noexcept { return operator co_await(); }

 private:
  explicit staged_task(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
  /// A nested body's steps belong to its caller's call unless it has its own.
  void inherit(call_stamp call) noexcept {
    if (handle_ && !handle_.promise().within.known()) handle_.promise().within = call;
  }
  /// Resumes the body with its call as the enclosing one (restored after:
  /// bodies nest, and a wait may advance another call's body).
  void resume() {
    struct restore {
      call_stamp previous;
      ~restore() { enclosing_call = previous; }
    } const scope{std::exchange(enclosing_call, handle_.promise().within)};
    handle_.resume();
  }
  void rethrow_failure() const {
    if (handle_.promise().failure) std::rethrow_exception(handle_.promise().failure);
  }
  void reset() noexcept {
    if (handle_) handle_.destroy();
    handle_ = {};
  }

  std::coroutine_handle<promise_type> handle_;
};

/// `co_await step{request, explain}` in a staged_task: suspends until the
/// step's collective completes; resumes by rethrowing its failure as
/// explain(error) says it (a level's error in the whole collective's words).
template <class Explain>
struct step_awaiter {
  collective_request request;
  Explain explain;

  bool await_ready() noexcept { return false; }
  void await_suspend(std::coroutine_handle<staged_task::promise_type> h) noexcept { h.promise().awaiting = &request; }
  void await_resume() {
    try {
      request.wait();  // complete by now: returns, or rethrows its failure
    } catch (const error& raised) {
      throw explain(raised);
    }
  }
};

/// A staged_task as a collective in an engine. `Make` builds the body
/// (called at every start: a persistent collective runs a fresh body each
/// time); the run owns what the body refers to through Make's captures.
/// `Leave` is called, noexcept, inside the handler of whatever exception
/// ends a body, before it goes on (op/abandon_levels.hpp).
template <class Make, class Leave>
class staged_run : public pending_collective {
 public:
  staged_run(Make make, Leave leave)
      : pending_collective(&advance_one, &finish_one), make_(std::move(make)), leave_(std::move(leave)) {}

  /// A fresh body for the next start (persistent start()).
  static void restart_one(pending_collective& c) {
    auto& self = static_cast<staged_run&>(c);
    self.task_ = self.make_();
    self.rearm();
  }
  static void destroy_one(pending_collective* c) noexcept { delete static_cast<staged_run*>(c); }

 private:
  static bool advance_one(pending_collective& c) {
    auto& self = static_cast<staged_run&>(c);
    try {
      if (!self.task_) self.task_ = self.make_();
      return self.task_.advance();
    } catch (...) {
      self.leave_();
      throw;
    }
  }
  static void finish_one(pending_collective& c) {
    auto& self = static_cast<staged_run&>(c);
    try {
      if (!self.task_) self.task_ = self.make_();
      self.task_.run();
    } catch (...) {
      self.leave_();
      throw;
    }
  }

  Make make_;
  Leave leave_;
  staged_task task_;
};

/// A handle over a new staged_run of `make` in `engine`, not queued yet;
/// `leave` as staged_run's.
template <class Make, class Leave>
in_flight_handle staged_handle(progress_engine& engine, int rank, std::chrono::nanoseconds busy_poll, Make make,
                               Leave leave) {
  using run_type = staged_run<Make, Leave>;
  in_flight_handle h;
  h.run = new run_type(std::move(make), std::move(leave));
  h.engine = &engine;
  h.rank = rank;
  h.busy_poll = busy_poll;
  h.restart = &run_type::restart_one;
  h.destroy = &run_type::destroy_one;
  return h;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

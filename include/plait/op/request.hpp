// plait::collective_request and plait::persistent_collective: the handles a
// nonblocking call (op/nonblocking.hpp) and a persistent one
// (op/persistent.hpp) return. Neither depends on the transport, the
// algorithm or the layout: requests of different collectives can share a
// container. Both own a run the communicator's progress engine moves
// (op/in_flight.hpp); test() and wait() give the engine turns, so every
// collective in flight on that communicator moves, not only this one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"
#include "plait/core/progress_engine.hpp"
#include "plait/core/region.hpp"
#include "plait/core/transport.hpp"
#include "plait/op/in_flight.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A run a request or persistent object owns: its schedule and plan are
/// copies (the per-thread schedule cache and the caller's plan do not
/// outlive the call), its views still refer to the user's memory.
template <class Comm, class Plan>
class owned_run : public engine_run<Comm, Plan, schedule, Plan> {
 public:
  owned_run(Comm& comm, const schedule& steps, const Plan& plan, std::string_view name, call_stamp stamp, int tag)
      : engine_run<Comm, Plan, schedule, Plan>(comm, schedule(steps), Plan(plan), std::string(name), tag),
        stamp_(stamp) {}

  /// Takes the next call's tag and starts over (persistent start()).
  static void restart_one(pending_collective& c) {
    auto& self = static_cast<owned_run&>(c);
    self.restart(take_tag(self.comm(), self.stamp_));
  }
  /// Runs it to completion at once, in the transport's own waits (a
  /// stream-ordered device transport: that enqueues it on the stream).
  static void run_now_one(pending_collective& c) {
    auto& self = static_cast<owned_run&>(c);
    self.restart(take_tag(self.comm(), self.stamp_));
    self.run_blocking();
  }
  static void destroy_one(pending_collective* c) noexcept { delete static_cast<owned_run*>(c); }

 private:
  call_stamp stamp_;
};

/// Check mode's watch over a collective's send buffers while it is in
/// flight: a digest of each send member, taken when the collective is posted
/// (a persistent one: at each start()) and compared when it completes
/// (wait(), or test() returning true). A send buffer changed in between sent
/// old bytes, new ones or a mix, depending on size, transport and timing;
/// the comparison turns that into an error naming the member. Only made in
/// check mode (op/launch.hpp, watch_sends): otherwise nothing is computed.
class send_watch {
 public:
  /// One region per send member in order (a bundle's, or the one send);
  /// an empty region is not watched (plait::in_place).
  send_watch(std::vector<region> members, bool bundled) noexcept : members_(std::move(members)), bundled_(bundled) {}
  /// Takes the digests: the collective is posted or started now.
  PLAIT_DECL void take();
  /// Once per post or start: errc::invalid_argument naming the first member
  /// whose digest differs, as rank `rank` in `operation`.
  PLAIT_DECL void compare(int rank, std::string_view operation);

 private:
  std::vector<region> members_;
  std::vector<std::uint64_t> digests_;
  bool bundled_ = false;
  bool armed_ = false;
};

/// What a request or persistent object holds, with no type but the engine's:
/// the run, its engine (null: stream-ordered, never queued) and how to
/// restart and destroy it.
struct in_flight_handle {
  using restart_fn = void (*)(pending_collective&);
  using destroy_fn = void (*)(pending_collective*) noexcept;

  pending_collective* run = nullptr;
  progress_engine* engine = nullptr;
  int rank = -1;               // errors name it
  std::string_view operation;  // and it: the run's own name, which lives as long as the run
  std::chrono::nanoseconds busy_poll{};
  restart_fn restart = nullptr;
  destroy_fn destroy = nullptr;
  send_watch* sends = nullptr;  // check mode only, owned (freed with the run)
};

/// Check mode, at completion: the send members must hold what they held when
/// the collective was posted or started (send_watch). Cold and out of line.
[[gnu::cold]] PLAIT_DECL void compare_sends(in_flight_handle& h);

/// A handle over `run` on `comm` (freed by `destroy`), in comm's engine
/// unless `stream_ordered` (never queued: starting it runs it at once).
template <class Comm>
in_flight_handle handle_for(Comm& comm, pending_collective* run, in_flight_handle::destroy_fn destroy,
                            bool stream_ordered = false) {
  in_flight_handle h;
  h.run = run;
  h.engine = stream_ordered ? nullptr : &engine_of(comm);
  h.rank = comm.rank();
  h.busy_poll = comm.busy_poll();
  h.destroy = destroy;
  return h;
}

/// Queues `h`'s run in its engine. `post_now`: and takes a turn, so its first
/// transfers are posted at once unless collectives started earlier must move
/// first (in-order transports).
inline void queue(const in_flight_handle& h, bool post_now) {
  auto held = h.engine->lock();
  h.engine->enqueue(*h.run);
  if (post_now) h.engine->turn();
}

/// A handle over a new owned_run of `plan` on `comm`, not queued yet.
/// `stream_ordered`: the transport completes collectives in stream order
/// (a device transport without test_all): starting one runs it at once.
template <class Comm, class Plan>
in_flight_handle own_run(Comm& comm, const schedule& steps, const Plan& plan, std::string_view name, call_stamp stamp,
                         int tag, bool stream_ordered) {
  using run_type = owned_run<Comm, Plan>;
  auto* run = new run_type(comm, steps, plan, name, stamp, tag);
  in_flight_handle h = handle_for(comm, run, &run_type::destroy_one, stream_ordered);
  h.operation = run->name();
  h.restart = stream_ordered ? &run_type::run_now_one : &run_type::restart_one;
  return h;
}

/// Completes `h`'s run if it is still in flight (errors dropped: the owner
/// is going away, and wait() is where they are reported), then frees it.
PLAIT_DECL void release(in_flight_handle& h) noexcept;

}  // namespace detail

/// A nonblocking collective in flight (plait::iall_gather and the other
/// i-forms). Movable, not copyable. Every rank must start the collectives of
/// a communicator in the same order; they may be waited for in any order.
/// The user's buffers must outlive the request, and are the collective's
/// until it completes: change a send buffer, or touch a recv buffer, only
/// once wait() has returned or test() has returned true (in check mode a
/// send buffer changed before then makes that wait() or test() throw
/// invalid_argument naming it). Destroying a pending request
/// completes it first, so no transfer touches a buffer after the request is
/// gone. A default-constructed request is complete.
class collective_request {
 public:
  /// A request that is already complete.
  collective_request() = default;
  /// Takes over `h` (used by the i-forms).
  explicit collective_request(detail::in_flight_handle h) noexcept : handle_(h) {}
  collective_request(const collective_request&) = delete;
  collective_request& operator=(const collective_request&) = delete;
  /// Movable: the source becomes a complete, empty request.
  collective_request(collective_request&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  /// Movable: a pending request here completes first.
  collective_request& operator=(collective_request&& other) noexcept {
    if (this != &other) {
      detail::release(handle_);
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  /// Completes a pending collective first (errors dropped: call wait() to see them).
  ~collective_request() { detail::release(handle_); }

  /// Moves every collective in flight on the communicator once; true when
  /// this one is complete (then at once, every time). Throws its failure as
  /// plait::error.
  bool test() {
    const bool done =
        handle_.run == nullptr || handle_.engine == nullptr || detail::test_in_engine(*handle_.engine, *handle_.run);
    if (done && handle_.sends != nullptr) detail::compare_sends(handle_);
    return done;
  }
  /// Whether the collective has finished (complete or failed), without
  /// moving anything: only the progress thread, or another request's test()
  /// or wait(), moves it meanwhile.
  [[nodiscard]] PLAIT_DECL bool complete() const;
  /// Moves the collectives in flight until this one is complete; throws its
  /// failure as plait::error (a timeout poisons the communicator, as in a
  /// blocking call).
  void wait() {
    if (handle_.run != nullptr && handle_.engine != nullptr)
      detail::wait_in_engine(*handle_.engine, *handle_.run, handle_.busy_poll);
    if (handle_.sends != nullptr) detail::compare_sends(handle_);
  }

 private:
  detail::in_flight_handle handle_;
};

/// A persistent collective (plait::all_gather_init, plait::all_to_all_init):
/// arguments validated, schedule and block plan built once; each start()
/// then moves the bytes of one collective. Movable, not copyable; the bound
/// buffers must outlive it. Each start() sends the contents the send buffers
/// have at that start(): change them only between a start's completion
/// (wait() returned, test() true) and the next start() (check mode: a change
/// while a start is active makes its wait() or test() throw invalid_argument).
class persistent_collective {
 public:
  /// An empty object: start() is invalid_argument, test() and wait() return at once.
  persistent_collective() = default;
  /// Takes over `h` (used by the *_init forms).
  explicit persistent_collective(detail::in_flight_handle h) noexcept : handle_(h) {}
  persistent_collective(const persistent_collective&) = delete;
  persistent_collective& operator=(const persistent_collective&) = delete;
  /// Movable: the source becomes empty.
  persistent_collective(persistent_collective&& other) noexcept
      : handle_(std::exchange(other.handle_, {})),
        started_(std::exchange(other.started_, false)),
        start_check_(std::exchange(other.start_check_, {})) {}
  /// Movable: an active collective here completes first.
  persistent_collective& operator=(persistent_collective&& other) noexcept {
    if (this != &other) {
      detail::release(handle_);
      handle_ = std::exchange(other.handle_, {});
      started_ = std::exchange(other.started_, false);
      start_check_ = std::exchange(other.start_check_, {});
    }
    return *this;
  }
  /// Completes an active collective first (errors dropped).
  ~persistent_collective() { detail::release(handle_); }

  /// Starts one collective on the bound buffers: takes the call's tag (every
  /// rank starts its persistent and other collectives in the same order) and
  /// queues it. errc::invalid_argument while the previous start is active
  /// (not yet complete through test() or wait()), or on an empty object.
  PLAIT_DECL void start();
  /// Moves every collective in flight on the communicator once; true when
  /// this start is complete, and at once before the first start().
  bool test() {
    const bool done = !started_ || handle_.engine == nullptr || detail::test_in_engine(*handle_.engine, *handle_.run);
    if (done && handle_.sends != nullptr) detail::compare_sends(handle_);
    return done;
  }
  /// Moves the collectives in flight until this start is complete (at once
  /// before the first start()); throws its failure as plait::error.
  void wait() {
    if (started_ && handle_.engine != nullptr) detail::wait_in_engine(*handle_.engine, *handle_.run, handle_.busy_poll);
    if (handle_.sends != nullptr) detail::compare_sends(handle_);
  }
  /// Started and not yet complete.
  [[nodiscard]] PLAIT_DECL bool active() const;

  /// What every start() runs first, before it takes a tag or moves a byte,
  /// and whose error it throws: the *_v_init forms in check mode set it to
  /// re-read the bound counts (op/forms.hpp). Not for use outside plait.
  void check_each_start(std::function<void()> check) { start_check_ = std::move(check); }

 private:
  detail::in_flight_handle handle_;
  bool started_ = false;
  std::function<void()> start_check_;
};

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/request.ipp"
#endif

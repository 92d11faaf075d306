// plait::progress_thread: a thread that moves a communicator's collectives in
// flight while the caller computes without calling test().
//
// Off by default, because it costs: while collectives are in flight the
// thread polls the transport without pause (yielding the core between turns,
// then sleeping up to 1 ms when nothing moves), so it takes a core from the
// computation it overlaps with unless the node has one to spare; while none
// is in flight it sleeps (`idle` between looks, 50 us by default). Every
// collective call on the communicator then takes the engine's lock, blocking
// calls included. While it runs, use the communicator only through plait's
// collectives and requests (point-to-point calls of the transport itself
// are not serialised with the thread).
#pragma once

#include <chrono>

#include "plait/core/progress_engine.hpp"
#include "plait/core/transport.hpp"
#include "plait/op/in_flight.hpp"

namespace plait {
inline namespace v0 {

/// Runs `comm`'s progress thread for its lifetime (one per communicator;
/// a second one on the same communicator shares the first's thread and
/// stops it when the first of them ends).
///   plait::progress_thread helper(comm);
///   auto r = plait::iall_gather(comm, shard, full);
///   compute();      // the bytes move meanwhile
///   r.wait();
class progress_thread {
 public:
  /// Starts `comm`'s progress thread; while no collective is queued it
  /// sleeps `idle` between looks.
  template <class Comm>
  explicit progress_thread(Comm& comm, std::chrono::nanoseconds idle = std::chrono::microseconds(50))
      : engine_(&detail::engine_of(comm)) {
    static_assert(detail::can_be_in_flight<Comm>,
                  "plait::progress_thread needs a transport whose collectives can be in flight "
                  "(plait::communicator_core and test_all)");
    engine_->start_thread(idle);
  }
  progress_thread(const progress_thread&) = delete;
  progress_thread& operator=(const progress_thread&) = delete;
  /// Stops and joins the thread; collectives still in flight stay queued and
  /// move again at the next test() or wait().
  ~progress_thread() { engine_->stop_thread(); }

 private:
  detail::progress_engine* engine_;
};

}  // namespace v0
}  // namespace plait

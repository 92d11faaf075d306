// Defines what plait/op/request.hpp declares out of line: releasing a run in
// flight and a persistent collective's start.
#pragma once

#include "plait/core/error.hpp"
#include "plait/op/in_flight.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL void release(in_flight_handle& h) noexcept {
  if (h.run == nullptr) return;
  if (h.engine != nullptr) {
    try {
      wait_in_engine(*h.engine, *h.run, h.busy_poll);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the owner is going away; wait() is where errors are reported
    }
    auto held = h.engine->lock();
    h.engine->withdraw(*h.run);  // finished by now; a no-op unless the wait itself failed
  }
  h.destroy(h.run);
  h = {};
}

}  // namespace detail

PLAIT_DECL void persistent_collective::start() {
  if (handle_.run == nullptr) {
    detail::fail(errc::invalid_argument,
                 {"start() on an empty persistent collective (default-constructed or moved from)"},
                 {handle_.rank, "persistent start", -1, -1});
  }
  if (start_check_) start_check_();  // check mode: the bound counts, before any byte moves
  if (handle_.engine == nullptr) {   // stream-ordered: runs (is enqueued on the stream) now
    started_ = true;
    handle_.restart(*handle_.run);
    return;
  }
  auto held = handle_.engine->lock();
  if (handle_.run->queued()) {
    detail::fail(errc::invalid_argument,
                 {"start() while the previous start is still active: complete it with wait() or test() first"},
                 {handle_.rank, "persistent start", -1, -1});
  }
  handle_.restart(*handle_.run);  // the call's tag; throws once the communicator is unusable
  handle_.engine->enqueue(*handle_.run);
  started_ = true;
}

PLAIT_DECL bool collective_request::complete() const {
  if (handle_.run == nullptr || handle_.engine == nullptr) return true;
  auto held = handle_.engine->lock();
  return !handle_.run->queued();
}

PLAIT_DECL bool persistent_collective::active() const {
  if (handle_.run == nullptr || handle_.engine == nullptr) return false;
  auto held = handle_.engine->lock();
  return handle_.run->queued();
}

}  // namespace v0
}  // namespace plait

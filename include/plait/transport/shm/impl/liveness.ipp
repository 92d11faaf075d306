// Defines the liveness checks of plait/transport/shm/communicator.hpp: the
// group's failure record (who failed first and why, written by the failing
// rank, quoted by its peers), peers whose process ended, and the timeout's
// message naming the rank waited for.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <signal.h>
#include <unistd.h>

#include "plait/core/error.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/segment.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

[[gnu::noinline]] PLAIT_DECL void communicator::group_failed(int peer, int failed) const {
  std::string reason;
  if (failed < size()) {
    const detail::rank_record& record = segment_->record(failed);
    // Written before the failure was marked (and read after it, acquire); a
    // peer's text all the same: bounded, never trusted to be terminated.
    reason.assign(record.reason, strnlen(record.reason, sizeof record.reason));
  }
  if (reason.empty()) {
    plait::detail::fail(errc::peer_lost, {"rank ", failed, " of the group failed"},
                        where({}, peer >= 0 ? peer : failed));
  }
  plait::detail::fail(errc::peer_lost, {"the group failed: ", reason}, where({}, peer >= 0 ? peer : failed));
}

PLAIT_DECL void communicator::record_group_failure(const error& e) noexcept {
  try {
    const std::string reason = e.value() == errc::timeout && e.peer() >= 0
                                   ? plait::detail::concat({"rank ", rank(), " timed out waiting for rank ", e.peer()})
                                   : plait::detail::concat({"rank ", rank(), " failed: ", e.detail()});
    segment_->mark_failed(rank(), reason);
  } catch (...) {  // out of memory: the mark alone still ends the peers' waits
    segment_->mark_failed(rank());
  }
}

PLAIT_DECL bool communicator::peers_alive(std::span<request> requests) const {
  for (const request& r : requests) {
    if (!complete(r) &&
        detail::process_ended(detail::atomic(segment_->record(r.peer).pid).load(std::memory_order_relaxed))) {
      return false;
    }
  }
  return true;
}

[[gnu::noinline]] PLAIT_DECL error communicator::lost_process(std::span<request> requests) const {
  for (const request& r : requests) {
    const std::int32_t pid = detail::atomic(segment_->record(r.peer).pid).load(std::memory_order_relaxed);
    if (!complete(r) && detail::process_ended(pid)) {
      return error(errc::peer_lost, plait::detail::concat({"process of rank ", r.peer, " (pid ", pid, ") ended first"}),
                   where({}, r.peer));
    }
  }
  return error(errc::peer_lost, "a peer process ended first", where({}));
}

[[gnu::noinline]] PLAIT_DECL error communicator::timed_out(std::span<request> requests) const {
  for (const request& r : requests) {
    if (complete(r)) continue;
    const auto& p = peers_[static_cast<std::size_t>(r.peer)];
    const pending& m = r.is_send ? p.sends.front() : p.recvs.front();
    return error(
        errc::timeout,
        plait::detail::concat({"timed out after ", detail::seconds_text(timeout()), " waiting for rank ", r.peer,
                               r.is_send ? " to take " : " to send ", m.bytes, " bytes (", m.done, " done)"}),
        where({}, r.peer));
  }
  return error(errc::timeout, "timed out", where({}));
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

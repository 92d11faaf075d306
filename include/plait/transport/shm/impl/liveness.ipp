// Defines the liveness checks of plait/transport/shm/communicator.hpp: the
// group's failure record (who failed first and why, written by the failing
// rank, quoted by its peers), peers whose process ended, and the timeout's
// message naming the rank waited for.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "plait/core/blame.hpp"
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
  // The rank the failed one blamed (the end of its chain of waits) is the
  // peer to blame here too; read as untrusted, like the text. Where it
  // blamed this rank (a mismatch it saw on this rank's message, or this
  // rank late), the peer is the failed rank, the other party: a rank never
  // names itself.
  const std::int32_t blamed = failed < size() ? segment_->record(failed).blamed : 0;
  if (blamed > 0 && blamed <= size()) peer = blamed - 1 == rank() ? failed : blamed - 1;
  plait::detail::fail(errc::peer_lost, {"the group failed: ", reason}, where({}, peer >= 0 ? peer : failed));
}

PLAIT_DECL void communicator::record_group_failure(const error& e) noexcept {
  try {
    if (e.value() == errc::timeout && blame_.rank >= 0) {
      // The cause first (a long chain is what a full record cuts short).
      segment_->mark_failed(rank(), plait::detail::group_reason(blame_, rank()), blame_.rank);
      return;
    }
    // The peer the error names goes into the reason and the record's blamed
    // rank: a mismatch seen on a peer's message ("peer's message of call 4
    // is from ...") means nothing to the other ranks without it. An error
    // that names this rank (its own code threw: op/abandon.hpp; a timeout on
    // another level whose rank to blame is not on this one: its text names
    // it, op/abandon_levels.hpp) blames it and keeps its text.
    const std::string reason =
        e.value() == errc::timeout && e.peer() >= 0 && e.peer() != rank()
            ? plait::detail::concat({"rank ", rank(), " timed out waiting for rank ", e.peer()})
        : e.peer() >= 0 && e.peer() != rank()
            ? plait::detail::concat({"rank ", rank(), " failed on a transfer with rank ", e.peer(), ": ", e.detail()})
            : plait::detail::concat({"rank ", rank(), " failed: ", e.detail()});
    segment_->mark_failed(rank(), reason, e.peer());
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

[[gnu::noinline]] PLAIT_DECL bool communicator::wait_longer(std::span<request> requests) const {
  try {
    return plait::detail::find_guilty(wait_records(requests), rank()).away;
  } catch (...) {  // out of memory: time out as without records
    return false;
  }
}

[[gnu::noinline]] PLAIT_DECL error communicator::timed_out(std::span<request> requests, bool waited_longer) const {
  const request* pending_request = first_pending(requests);
  if (pending_request == nullptr) return error(errc::timeout, "timed out", where({}));
  const request& r = *pending_request;
  const auto& p = peers_[static_cast<std::size_t>(r.peer)];
  const pending& m = r.is_send ? p.sends.front() : p.recvs.front();
  // The rank to blame is at the end of the chain of waits, which in a ring
  // is seldom the rank this one waits for (core/blame.hpp).
  blame_ = {};
  try {
    blame_ = plait::detail::find_guilty(wait_records(requests), rank());
    // A rank in the call but in no wait may simply not have run since it
    // entered (a loaded machine): give it a few looks before blaming it,
    // as it publishes its record at its first idle poll.
    for (int look = 0; look < 5 && blame_.busy && segment_->failed_rank() < 0; ++look) {
      std::this_thread::sleep_for(plait::detail::stall_time / 5);
      blame_ = plait::detail::find_guilty(wait_records(requests), rank());
    }
  } catch (...) {  // out of memory: blame the peer waited for, as without records
    blame_ = {};
  }
  // Ranks that time out together each look: one that named the rank first
  // has marked the group failed, and then waits no more, so its record would
  // make it look busy. Its verdict stands (as on MPI): peer_lost naming it.
  check_group(r.peer);
  std::string waited = plait::detail::concat(
      {"timed out after ", detail::seconds_text(waited_longer ? 2 * timeout() : timeout()), " waiting for rank ",
       r.peer, r.is_send ? " to take " : " to send ", m.bytes, " bytes (", m.done, " done)"});
  if (blame_.rank < 0) return error(errc::timeout, waited, where({}, r.peer));
  return error(errc::timeout, plait::detail::concat({waited, blame_.chain, ": ", blame_.sentence}),
               where({}, blame_.rank));
}

PLAIT_DECL void communicator::publish_wait(std::span<request> requests, bool label) noexcept {
  const request* r = first_pending(requests);
  if (r == nullptr) return;
  const auto& p = peers_[static_cast<std::size_t>(r->peer)];
  const pending& m = r->is_send ? p.sends.front() : p.recvs.front();
  const plait::detail::wait_note& note = current_wait();
  // A collective's step when the executor's note names this tag; else a
  // transfer of the user's own.
  const bool collective = !note.operation.empty() && note.tag == m.tag;
  detail::rank_record& record = segment_->record(rank());
  detail::atomic(record.wait_call).store(collective ? static_cast<std::uint32_t>(m.tag) : 0, std::memory_order_relaxed);
  detail::atomic(record.wait_stamp).store(m.stamp, std::memory_order_relaxed);
  detail::atomic(record.wait_step).store(collective ? note.step : -1, std::memory_order_relaxed);
  detail::atomic(record.wait_peer).store(r->peer, std::memory_order_relaxed);
  detail::atomic(record.polled_ms).store(detail::steady_ms(), std::memory_order_relaxed);
  if (label && collective) {
    std::uint64_t words[detail::label_words] = {};
    std::memcpy(words, note.operation.data(), std::min(note.operation.size(), sizeof words - 1));
    for (std::size_t i = 0; i < detail::label_words; ++i) {
      detail::atomic(record.label[i]).store(words[i], std::memory_order_relaxed);
    }
    detail::atomic(record.label_call).store(static_cast<std::uint32_t>(m.tag), std::memory_order_release);
  }
  detail::atomic(record.waiting).store(1, std::memory_order_release);
}

PLAIT_DECL void communicator::end_wait() noexcept {
  detail::atomic(segment_->record(rank()).waiting).store(0, std::memory_order_release);
}

[[gnu::noinline]] PLAIT_DECL std::string communicator::outvoted_in_call(int peer, std::uint32_t call,
                                                                        std::uint32_t mine,
                                                                        std::uint32_t theirs) const {
  try {
    std::vector<std::uint32_t> stamps(static_cast<std::size_t>(size()), 0);
    for (int q = 0; q < size(); ++q) {
      detail::rank_record& record = segment_->record(q);
      // A peer's words, only compared; a record being rewritten reads as another call or none.
      if (detail::atomic(record.waiting).load(std::memory_order_acquire) != 0 &&
          detail::atomic(record.wait_call).load(std::memory_order_relaxed) == call) {
        stamps[static_cast<std::size_t>(q)] = detail::atomic(record.wait_stamp).load(std::memory_order_relaxed);
      }
    }
    stamps[static_cast<std::size_t>(rank())] = mine;
    stamps[static_cast<std::size_t>(peer)] = theirs;
    return plait::detail::outvoted(stamps, rank(), peer);
  } catch (...) {  // out of memory: blame the peer, as without records
    return {};
  }
}

[[gnu::noinline]] PLAIT_DECL std::vector<plait::detail::wait_record> communicator::wait_records(
    std::span<request> requests) const {
  std::vector<plait::detail::wait_record> records(static_cast<std::size_t>(size()));
  for (int peer = 0; peer < size(); ++peer) {
    plait::detail::wait_record& out = records[static_cast<std::size_t>(peer)];
    detail::rank_record& record = segment_->record(peer);
    // A peer's words: every value is only compared or printed, never used as an index.
    out.entered = detail::atomic(record.entered).load(std::memory_order_relaxed);
    out.waiting = detail::atomic(record.waiting).load(std::memory_order_acquire) != 0;
    out.call = detail::atomic(record.wait_call).load(std::memory_order_relaxed);
    out.stamp = detail::atomic(record.wait_stamp).load(std::memory_order_relaxed);
    out.step = detail::atomic(record.wait_step).load(std::memory_order_relaxed);
    out.peer = detail::atomic(record.wait_peer).load(std::memory_order_relaxed);
    // Modulo 2^32 ms: the difference is right across a wrap.
    const std::uint32_t idle_ms =
        detail::steady_ms() - detail::atomic(record.polled_ms).load(std::memory_order_relaxed);
    out.stalled = out.waiting && peer != rank() && idle_ms > plait::detail::stall_time.count();
    out.away = !out.waiting && detail::atomic(record.away).load(std::memory_order_relaxed) != 0;
    if (out.waiting && out.call != 0 && detail::atomic(record.label_call).load(std::memory_order_acquire) == out.call) {
      char text[detail::label_words * sizeof(std::uint64_t) + 1] = {};
      for (std::size_t i = 0; i < detail::label_words; ++i) {
        const std::uint64_t word = detail::atomic(record.label[i]).load(std::memory_order_relaxed);
        std::memcpy(text + i * sizeof word, &word, sizeof word);
      }
      out.operation.assign(text, strnlen(text, sizeof text));
    }
  }
  // This rank's own, from what it knows (its record may lag a wait behind).
  plait::detail::wait_record& mine = records[static_cast<std::size_t>(rank())];
  const request* r = first_pending(requests);
  const plait::detail::wait_note& note = current_wait();
  if (r != nullptr) {
    const auto& p = peers_[static_cast<std::size_t>(r->peer)];
    const pending& m = r->is_send ? p.sends.front() : p.recvs.front();
    const bool collective = !note.operation.empty() && note.tag == m.tag;
    mine = {true,    static_cast<std::uint32_t>(last_tag()),
            true,    collective ? static_cast<std::uint32_t>(m.tag) : 0,
            m.stamp, collective ? note.step : -1,
            r->peer, collective ? std::string(note.operation) : std::string(),
            false,  // it gives up now: no peer has yet seen it cancel anything
            false,   false};
  }
  return records;
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

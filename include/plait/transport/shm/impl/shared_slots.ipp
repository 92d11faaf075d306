// Defines the shared-slot rounds of plait/transport/shm/communicator.hpp: a
// rank's two buffers and the flag that posts a round. Waits follow wait_all's
// rules: the wait record for blame, the group's failure record, lost peer
// processes and the timeout, and they move the collectives in flight on this
// communicator meanwhile (a peer may wait in one of those for this rank
// before it joins the round).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include "plait/core/blame.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/progress_engine.hpp"
#include "plait/core/wait_loop.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/segment.hpp"

namespace plait {
inline namespace v0 {
namespace shm {
namespace detail {
/// Polls of a shared-slot wait before it becomes a full wait (about 2-4 us).
inline constexpr unsigned slot_spin_polls = 256;
/// Bytes of each peer's round prefetched once its post is seen: its table
/// and the first blocks, which the run would otherwise fetch one miss after
/// another (the table, then the blocks it locates). More measured slower at
/// 4 KiB all-reduces (docs/algorithms.md).
inline constexpr std::size_t slot_prefetch_bytes = 1024;
}  // namespace detail

PLAIT_DECL std::span<std::byte> communicator::begin_slot_round(int tag, std::string_view operation, int step) {
  check_usable(operation);
  ++slot_round_;
  slot_tag_ = tag;
  slot_step_ = step;
  slot_operation_ = operation;
  slot_stamp_ = stamp_of(tag).bits();
  // The buffer last held round slot_round_ - 2, and every peer has read it:
  // this rank saw every peer post round slot_round_ - 1 in its last round,
  // and a rank posts a round only after it has read the one before.
  return {segment_->shared_slot_buffer(rank(), slot_round_), detail::shared_slot_bytes};
}

PLAIT_DECL bool communicator::post_slot_round(std::size_t bytes, std::size_t payload, bool fits) {
  detail::shared_slot_header& mine = segment_->shared_slots(rank());
  auto& record = mine.rounds[slot_round_ % 2];
  detail::atomic(record.tag).store(static_cast<std::uint32_t>(slot_tag_), std::memory_order_relaxed);
  detail::atomic(record.fits).store(fits ? 1U : 0U, std::memory_order_relaxed);
  detail::atomic(record.stamp).store(slot_stamp_, std::memory_order_relaxed);
  detail::atomic(record.bytes).store(fits ? bytes : 0, std::memory_order_relaxed);
  detail::atomic(mine.posted).store(slot_round_, std::memory_order_release);
  await_slot_peers(slot_round_);
  bool all_fit = true;
  for (int peer = 0; peer < size(); ++peer) {
    const auto& theirs = segment_->shared_slots(peer).rounds[slot_round_ % 2];
    // A peer's words: compared, never trusted as sizes (peer_slot_round checks those).
    const std::uint32_t tag = detail::atomic(theirs.tag).load(std::memory_order_relaxed);
    if (tag != static_cast<std::uint32_t>(slot_tag_)) [[unlikely]] {
      const error e(errc::size_mismatch,
                    plait::detail::concat({"rank ", peer, " posted its shared slots for call #", tag, ", not #",
                                           slot_tag_, ": the ranks are in different collectives"}),
                    where(slot_operation_, peer, slot_step_));
      poison_group(e);
      throw e;
    }
    const call_stamp stamp = call_stamp::from_bits(detail::atomic(theirs.stamp).load(std::memory_order_relaxed));
    if (stamps_conflict(stamp, call_stamp::from_bits(slot_stamp_))) [[unlikely]] {
      // Every rank has posted this round: its stamps say which side is odd.
      const std::string odd = slot_round_outvoted(peer);
      const error e(errc::size_mismatch,
                    plait::detail::concat({"rank ", peer, "'s shared slot of call ", slot_tag_, " is from ",
                                           plait::describe(stamp), " where this rank runs ",
                                           plait::describe(call_stamp::from_bits(slot_stamp_)),
                                           ": the ranks called different collectives, or with different algorithms, "
                                           "layouts or element types",
                                           odd.empty() ? "" : "; ", odd}),
                    where(slot_operation_, odd.empty() ? peer : rank(), slot_step_));
      poison_group(e);
      throw e;
    }
    all_fit = all_fit && detail::atomic(theirs.fits).load(std::memory_order_relaxed) == 1;
    if (peer != rank()) {
      const std::uint64_t bytes = std::min<std::uint64_t>(detail::atomic(theirs.bytes).load(std::memory_order_relaxed),
                                                          detail::slot_prefetch_bytes);
      const std::byte* buffer = segment_->shared_slot_buffer(peer, slot_round_);
      for (std::uint64_t at = 0; at < bytes; at += detail::cache_line) __builtin_prefetch(buffer + at);
    }
  }
  if (all_fit) count_sent(payload);
  return all_fit;
}

PLAIT_DECL std::span<const std::byte> communicator::peer_slot_round(int peer) const {
  const auto& theirs = segment_->shared_slots(peer).rounds[slot_round_ % 2];
  const std::uint64_t bytes = detail::atomic(theirs.bytes).load(std::memory_order_relaxed);
  if (bytes > detail::shared_slot_bytes) [[unlikely]] {
    throw error(errc::transport,
                plait::detail::concat({"rank ", peer, "'s shared slot claims ", bytes, " bytes, more than its ",
                                       detail::shared_slot_bytes}),
                where(slot_operation_, peer, slot_step_));
  }
  return {segment_->shared_slot_buffer(peer, slot_round_), static_cast<std::size_t>(bytes)};
}

PLAIT_DECL void communicator::await_slot_peers(std::uint64_t round) {
  const auto reached = [&](int peer) {
    return detail::atomic(segment_->shared_slots(peer).posted).load(std::memory_order_acquire) >= round;
  };
  int peer = 0;
  // A round's peers arrive within a microsecond or two when they run: spin
  // on the flags first, before the wait's deadline, record and checks (three
  // clock reads and a dozen stores that would double a small call's cost).
  for (unsigned spin = 0; spin < detail::slot_spin_polls; ++spin) {
    while (peer < size() && (peer == rank() || reached(peer))) ++peer;
    if (peer == size()) return;
    plait::detail::cpu_relax();
  }
  bool published = false;
  try {
    plait::detail::wait_loop loop(deadline_from_now(), busy_poll());
    for (;;) {
      while (peer < size() && (peer == rank() || reached(peer))) ++peer;
      if (peer == size()) break;
      // A peer may be waiting in a collective in flight for this rank.
      if (plait::detail::progress_engine* engine = active_progress()) {
        auto held = engine->lock();
        if (engine->turn()) {
          loop.moved();
          continue;
        }
      }
      // The wait record, as wait_all publishes it (core/blame.hpp): at the
      // first idle poll, then with the slow checks.
      const bool slow = loop.slow_check_due();
      if (!published || slow) {
        publish_slot_wait(peer, !published);
        published = true;
      }
      check_group(peer);
      if (loop.expired() && !loop.extend_once([&] { return wait_longer({}); }, timeout())) {
        slot_round_timed_out(peer, loop.extended());
      }
      if (slow && detail::process_ended(detail::atomic(segment_->record(peer).pid).load(std::memory_order_relaxed)) &&
          !reached(peer)) {
        const std::int32_t pid = detail::atomic(segment_->record(peer).pid).load(std::memory_order_relaxed);
        throw error(errc::peer_lost, plait::detail::concat({"process of rank ", peer, " (pid ", pid, ") ended first"}),
                    where(slot_operation_, peer, slot_step_));
      }
      loop.pause();
    }
  } catch (const error& e) {
    if (published) end_wait();
    // A group failure read here names no call (check_group cannot know it):
    // this round's call goes in, as the executor puts its own into its
    // transfers' errors, so that the poison and every later error name it.
    const error located = e.within(where(slot_operation_, -1, slot_step_));
    if (e.value() == errc::timeout || e.value() == errc::peer_lost) poison_group(located);
    throw located;
  }
  if (published) end_wait();
}

PLAIT_DECL void communicator::publish_slot_wait(int peer, bool label) noexcept {
  detail::rank_record& record = segment_->record(rank());
  detail::atomic(record.wait_call).store(static_cast<std::uint32_t>(slot_tag_), std::memory_order_relaxed);
  detail::atomic(record.wait_stamp).store(0, std::memory_order_relaxed);
  detail::atomic(record.wait_step).store(slot_step_, std::memory_order_relaxed);
  detail::atomic(record.wait_peer).store(peer, std::memory_order_relaxed);
  detail::atomic(record.polled_ms).store(detail::steady_ms(), std::memory_order_relaxed);
  if (label) {
    std::uint64_t words[detail::label_words] = {};
    std::memcpy(words, slot_operation_.data(), std::min(slot_operation_.size(), sizeof words - 1));
    for (std::size_t i = 0; i < detail::label_words; ++i) {
      detail::atomic(record.label[i]).store(words[i], std::memory_order_relaxed);
    }
    detail::atomic(record.label_call).store(static_cast<std::uint32_t>(slot_tag_), std::memory_order_release);
  }
  detail::atomic(record.waiting).store(1, std::memory_order_release);
}

[[gnu::noinline]] PLAIT_DECL std::string communicator::slot_round_outvoted(int peer) const {
  try {
    std::vector<std::uint32_t> stamps(static_cast<std::size_t>(size()), 0);
    for (int q = 0; q < size(); ++q) {
      const auto& theirs = segment_->shared_slots(q).rounds[slot_round_ % 2];
      stamps[static_cast<std::size_t>(q)] =
          q == rank() ? slot_stamp_ : detail::atomic(theirs.stamp).load(std::memory_order_relaxed);
    }
    return plait::detail::outvoted(stamps, rank(), peer);
  } catch (...) {  // out of memory: blame the peer
    return {};
  }
}

[[gnu::noinline]] PLAIT_DECL void communicator::slot_round_timed_out(int peer, bool waited_longer) {
  // The rank to blame is at the end of the chain of waits (core/blame.hpp),
  // as for a timed-out transfer.
  blame_ = {};
  try {
    blame_ = plait::detail::find_guilty(wait_records({}), rank());
    for (int look = 0; look < 5 && blame_.busy && segment_->failed_rank() < 0; ++look) {
      std::this_thread::sleep_for(plait::detail::stall_time / 5);
      blame_ = plait::detail::find_guilty(wait_records({}), rank());
    }
  } catch (...) {  // out of memory: blame the peer waited for
    blame_ = {};
  }
  check_group(peer);
  const std::string waited =
      plait::detail::concat({"timed out after ", detail::seconds_text(waited_longer ? 2 * timeout() : timeout()),
                             " waiting for rank ", peer, " to post its shared slot"});
  if (blame_.rank < 0) throw error(errc::timeout, waited, where(slot_operation_, peer, slot_step_));
  throw error(errc::timeout, plait::detail::concat({waited, blame_.chain, ": ", blame_.sentence}),
              where(slot_operation_, blame_.rank, slot_step_));
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

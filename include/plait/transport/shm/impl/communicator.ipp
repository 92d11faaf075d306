// Defines the out-of-line parts of plait/transport/shm/communicator.hpp that
// every transfer goes through: attaching to the segment, posting sends and
// receives, waiting (progress of every pending transfer, liveness and
// timeout checks), barrier, and poisoning on failure. Group management,
// the chunk channel, single copy and liveness have their own files.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include <unistd.h>

#include "plait/core/backoff.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"
#include "plait/core/stream_copy.hpp"
#include "plait/core/wait_loop.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/segment.hpp"
#include "plait/transport/shm/tuning.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

PLAIT_DECL communicator::~communicator() {
  if (segment_) withdraw_references();
  if (pool_) pool_->remove_names();  // no peer maps a segment after this
}

PLAIT_DECL communicator::communicator(std::shared_ptr<detail::segment> seg, int rank, std::chrono::nanoseconds timeout)
    : communicator_core(rank, static_cast<int>(seg->shape().ranks)),
      segment_(std::move(seg)),
      peers_(static_cast<std::size_t>(size())) {
  set_timeout(timeout);
  if (size() <= plait::detail::usable_cpus()) set_busy_poll(detail::default_busy_poll);
  attach_to_segment();
}

PLAIT_DECL communicator::communicator(std::shared_ptr<detail::segment> seg, communicator_core settings)
    : communicator_core(std::move(settings)), segment_(std::move(seg)), peers_(static_cast<std::size_t>(size())) {
  attach_to_segment();
}

PLAIT_DECL void communicator::attach_to_segment() {
  segment_->mark_local(rank());
  auto& record = segment_->record(rank());
  detail::atomic(record.pid).store(static_cast<std::int32_t>(getpid()), std::memory_order_relaxed);
  publish_entered_calls(&record.entered);  // peers' timeouts read which call this rank last entered
  detail::atomic(segment_->header().attached).fetch_add(1, std::memory_order_acq_rel);
}

PLAIT_DECL communicator::request communicator::isend(int peer, std::span<const std::byte> bytes, int tag) {
  return isend_with_copy(peer, bytes, {}, tag);
}

PLAIT_DECL communicator::send_place communicator::locate_send(std::span<const std::byte> bytes,
                                                              std::span<const std::byte> copy) const {
  ++send_lookups_;
  send_place at;
  std::tie(at.window, at.window_offset) = find_window(bytes);
  if (at.window == 0 && pool_) {
    const detail::pool_location found = pool_->find(bytes.data(), bytes.size());
    at.window = found.segment;
    at.window_offset = found.offset;
    at.window_in_pool = found.segment != 0;
  }
  // Only copies this long may go to the receiver (isend_with_copy).
  if (copy.data() != nullptr && copy.size() >= detail::copy_for_sender_bytes) {
    std::tie(at.copy_window, at.copy_offset) = find_window(copy);
    if (at.copy_window == 0 && pool_) {
      const detail::pool_location found = pool_->find(copy.data(), copy.size());
      at.copy_window = found.segment;
      at.copy_offset = found.offset;
      at.copy_in_pool = found.segment != 0;
    }
  }
  return at;
}

PLAIT_DECL communicator::request communicator::isend_with_copy(int peer, std::span<const std::byte> bytes,
                                                               std::span<std::byte> copy, int tag) {
  return isend_with_copy(peer, bytes, copy, tag, locate_send(bytes, copy));
}

PLAIT_DECL communicator::request communicator::isend_with_copy(int peer, std::span<const std::byte> bytes,
                                                               std::span<std::byte> copy, int tag,
                                                               const send_place& at) {
  check_usable("isend");
  check_peer(peer, "isend");
  check_tag(tag, peer, "isend");
  auto& state = peers_[static_cast<std::size_t>(peer)];
  pending m{.out = bytes.data(),
            .in = nullptr,
            .bytes = bytes.size(),
            .done = 0,
            .tag = tag,
            .stamp = stamp_of(tag).bits(),
            .started = false,
            .by_reference = false,
            .reference_slot = 0,
            .window = at.window,
            .window_offset = at.window_offset};
  m.window_in_pool = at.window_in_pool;
  if (copy.data() != nullptr) {
    if (copy.size() != bytes.size()) [[unlikely]] {
      plait::detail::fail(errc::invalid_argument,
                          {"isend_with_copy: the copy is ", copy.size(), " bytes, the message ", bytes.size()},
                          where("isend", peer));
    }
    // The receiver can take the copy over only where it reads the message
    // and writes the copy with plain stores: not through process_vm_readv.
    const bool local = segment_->is_local(peer);
    if ((local || m.window != 0) && bytes.size() >= detail::copy_for_sender_bytes &&
        goes_by_reference(m, state, peer) && (local || at.copy_window != 0)) {
      m.copy = copy.data();
      m.copy_window = at.copy_window;
      m.copy_offset = at.copy_offset;
      m.copy_in_pool = at.copy_in_pool;
    }
  }
  const bool copy_here = copy.data() != nullptr && m.copy == nullptr;
  state.sends.push_back(m);
  count_sent(bytes.size());
  request r{peer, true, state.sends_posted++};
  progress_sends(peer);  // small messages leave at once
  // The copy that no receiver takes over, once the message has left: the
  // peer waits for the message, nobody waits for this copy.
  if (copy_here) plait::detail::copy_bytes(copy.data(), bytes.data(), bytes.size());
  return r;
}

PLAIT_DECL communicator::request communicator::isendv(int peer, std::span<const std::span<const std::byte>> pieces,
                                                      int tag) {
  check_usable("isendv");
  check_peer(peer, "isendv");
  check_tag(tag, peer, "isendv");
  std::size_t bytes = 0;
  std::size_t nonempty = 0;
  for (const std::span<const std::byte> piece : pieces) {
    bytes += piece.size();
    nonempty += piece.empty() ? 0 : 1;
  }
  auto& state = peers_[static_cast<std::size_t>(peer)];
  state.sends.push_back(pending{.out = nullptr,
                                .in = nullptr,
                                .bytes = bytes,
                                .done = 0,
                                .tag = tag,
                                .stamp = stamp_of(tag).bits(),
                                .started = false,
                                .by_reference = false,
                                .reference_slot = 0,
                                .window = 0,
                                .window_offset = 0,
                                .out_pieces = pieces.data(),
                                .piece_count = pieces.size(),
                                .nonempty_pieces = nonempty});
  count_sent(bytes);
  bytes_sent_vectored_ += bytes;
  request r{peer, true, state.sends_posted++};
  progress_sends(peer);  // small messages leave at once
  return r;
}

PLAIT_DECL communicator::request communicator::irecvv(int peer, std::span<const std::span<std::byte>> pieces, int tag) {
  check_usable("irecvv");
  check_peer(peer, "irecvv");
  check_tag(tag, peer, "irecvv");
  std::size_t bytes = 0;
  for (const std::span<std::byte> piece : pieces) bytes += piece.size();
  auto& state = peers_[static_cast<std::size_t>(peer)];
  state.recvs.push_back(pending{.out = nullptr,
                                .in = nullptr,
                                .bytes = bytes,
                                .done = 0,
                                .tag = tag,
                                .stamp = stamp_of(tag).bits(),
                                .started = false,
                                .by_reference = false,
                                .reference_slot = 0,
                                .window = 0,
                                .window_offset = 0,
                                .in_pieces = pieces.data(),
                                .piece_count = pieces.size()});
  return {peer, false, state.recvs_posted++};
}

PLAIT_DECL communicator::request communicator::irecv(int peer, std::span<std::byte> bytes, int tag) {
  check_usable("irecv");
  check_peer(peer, "irecv");
  check_tag(tag, peer, "irecv");
  auto& state = peers_[static_cast<std::size_t>(peer)];
  state.recvs.push_back(pending{.out = nullptr,
                                .in = bytes.data(),
                                .bytes = bytes.size(),
                                .done = 0,
                                .tag = tag,
                                .stamp = stamp_of(tag).bits(),
                                .started = false,
                                .by_reference = false,
                                .reference_slot = 0,
                                .window = 0,
                                .window_offset = 0});
  return {peer, false, state.recvs_posted++};
}

PLAIT_DECL communicator::request communicator::irecv_combine(int peer, std::span<std::byte> into,
                                                             const receive_combine& how, int tag) {
  if (!combines_on_receive(how.granule) || how.combine == nullptr) [[unlikely]] {
    check_usable("irecv_combine");
    plait::detail::fail(errc::invalid_argument,
                        {"irecv_combine: cannot combine elements of ", how.granule, " bytes in this group's pieces"},
                        where("irecv", peer));
  }
  const request r = irecv(peer, into, tag);
  peers_[static_cast<std::size_t>(peer)].recvs.back().combine = &how;
  return r;
}

PLAIT_DECL void communicator::wait_all(std::span<request> requests, deadline until) {
  check_usable("wait_all");
  // Ends the wait record published below, however the wait ends.
  struct published_wait {
    communicator* self = nullptr;
    published_wait() = default;
    published_wait(const published_wait&) = delete;
    published_wait& operator=(const published_wait&) = delete;
    ~published_wait() {
      if (self != nullptr) self->end_wait();
    }
  } published;
  try {
    plait::detail::wait_loop loop(until, busy_poll());
    bool labelled = false;
    for (;;) {
      const bool moved = progress();
      if (std::all_of(requests.begin(), requests.end(), [this](const request& r) { return complete(r); })) {
        end_looked_wait();
        return;
      }
      if (moved) {
        loop.moved();
        continue;
      }
      if (published.self == nullptr) {  // a wait that ends at its first polls publishes nothing
        publish_wait(requests, false);
        published.self = this;
      }
      check_group(first_waiting(requests));
      if (loop.expired() && !loop.extend_once([&] { return wait_longer(requests); }, timeout())) {
        throw timed_out(requests, loop.extended());
      }
      if (!loop.slow_check_due()) {
        loop.pause();
        continue;
      }
      publish_wait(requests, !labelled);
      labelled = true;
      if (!peers_alive(requests)) {
        // A process that ended cannot write any more: whatever it sent is in
        // the channel now, so one more pass decides whether we can finish.
        progress();
        if (!std::all_of(requests.begin(), requests.end(), [this](const request& r) { return complete(r); })) {
          throw lost_process(requests);
        }
      }
      loop.pause();
    }
  } catch (const error& e) {
    if (e.value() == errc::timeout || e.value() == errc::peer_lost || e.value() == errc::transport ||
        e.value() == errc::size_mismatch) {
      poison_group(e);
    }
    throw;
  }
}

PLAIT_DECL bool communicator::test_all(std::span<request> requests, deadline until) {
  check_usable("test_all");
  const auto all_complete = [&] {
    return std::all_of(requests.begin(), requests.end(), [this](const request& r) { return complete(r); });
  };
  try {
    progress();
    if (all_complete()) {
      end_looked_wait();
      return true;
    }
    // A wait made of looks publishes its record now and then, as wait_all
    // does at its first idle poll (a few stores, not at every look).
    if (test_looks_ % 64 == 0) {
      publish_wait(requests, true);
      test_published_ = true;
    }
    check_group(first_waiting(requests));
    // A peer process that died writes no failure record: look for it now and
    // then (a kill(pid, 0) per peer is too dear for every look).
    const bool look_for_lost = ++test_looks_ % 1024 == 0;
    if (look_for_lost && !peers_alive(requests)) {
      progress();
      if (all_complete()) {
        end_looked_wait();
        return true;
      }
      throw lost_process(requests);
    }
    // The caller's deadline, or where wait_longer extended it to.
    const bool extended = extension_.extended(until);
    if (clock::now() > extension_.effective(until)) {
      // As wait_all: a peer process that ended may have left its last bytes
      // in the channel; one more pass decides between lost and slow.
      progress();
      if (all_complete()) {
        end_looked_wait();
        return true;
      }
      if (!peers_alive(requests)) throw lost_process(requests);
      if (extended || !wait_longer(requests)) throw timed_out(requests, extended);
      extension_.extend(until, deadline_from_now());
    }
    return false;
  } catch (const error& e) {
    if (e.value() == errc::timeout || e.value() == errc::peer_lost || e.value() == errc::transport ||
        e.value() == errc::size_mismatch) {
      poison_group(e);
    }
    throw;
  }
}

PLAIT_DECL void communicator::barrier() {
  check_usable("barrier");
  auto& h = segment_->header();
  const std::uint32_t generation = detail::atomic(h.barrier_generation).load(std::memory_order_acquire);
  if (detail::atomic(h.barrier_count).fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<std::uint32_t>(size())) {
    detail::atomic(h.barrier_count).store(0, std::memory_order_relaxed);
    detail::atomic(h.barrier_generation).fetch_add(1, std::memory_order_release);
    return;
  }
  plait::detail::wait_loop loop(deadline_from_now(), busy_poll());
  while (detail::atomic(h.barrier_generation).load(std::memory_order_acquire) == generation) {
    try {
      check_group(-1);
      if (loop.expired()) {
        throw error(errc::timeout,
                    "barrier timed out after " + detail::seconds_text(timeout()) + " waiting for the other ranks",
                    where("barrier"));
      }
    } catch (const error& e) {
      poison_group(e);
      throw;
    }
    loop.pause();
  }
}

PLAIT_DECL void communicator::poison_group(const error& e) noexcept {
  poison(e);
  record_group_failure(e);
  withdraw_references();
  for (auto& p : peers_) {  // nothing may touch user memory after the throw
    p.sends.clear();
    p.recvs.clear();
  }
}

[[gnu::noinline]] PLAIT_DECL void communicator::null_communicator(std::string_view operation) {
  // A default-constructed core is a null one: its message is the core's.
  communicator{}.require_usable(operation);
  throw error(errc::invalid_argument, "null communicator", {-1, operation});  // not reached
}

PLAIT_DECL bool communicator::progress() {
  bool moved = false;
  for (int peer = 0; peer < size(); ++peer) {
    moved |= progress_sends(peer);
    moved |= progress_recvs(peer);
  }
  return moved;
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

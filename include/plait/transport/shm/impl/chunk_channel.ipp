// Defines the chunk channel of plait/transport/shm/communicator.hpp: moving
// pending sends into a peer's slots (chunks, or the reference of a single
// copy, whose completion is noticed here) and receives out of them, and the
// checks of every slot header a peer wrote (tag, call stamp, size, bounds).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "plait/core/call_stamp.hpp"
#include "plait/core/error.hpp"
#include "plait/core/stream_copy.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/pieces.hpp"
#include "plait/transport/shm/segment.hpp"
#include "plait/transport/shm/tuning.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

PLAIT_DECL bool communicator::progress_sends(int peer) {
  auto& p = peers_[static_cast<std::size_t>(peer)];
  auto& channel = segment_->channel(rank(), peer);
  const std::uint32_t slots = segment_->shape().slots;
  const std::size_t slot_bytes = segment_->shape().slot_bytes;
  bool moved = false;
  while (!p.sends.empty()) {
    const std::uint64_t tail = detail::atomic(channel.tail).load(std::memory_order_acquire);
    if (detail::pending_slots(p.head, tail, slots) < 0) {
      plait::detail::fail(errc::transport,
                          {"corrupt channel: peer reports ", tail, " slots consumed of ", p.head, " written"},
                          where("isend", peer));
    }
    pending& m = p.sends.front();
    if (m.by_reference) {
      // The receiver releases the slot only after it has finished with our
      // buffer, so a tail past the slot means the copy is over.
      if (tail <= m.reference_slot) break;
      const auto state = static_cast<detail::reference_state>(
          detail::atomic(segment_->reference(rank(), peer, m.reference_slot).state).load(std::memory_order_acquire));
      m.by_reference = false;
      moved = true;
      if (state == detail::reference_state::done) {
        // The receiver wrote copy_written before `done` (release; our load was acquire).
        if (m.copy != nullptr && detail::atomic(segment_->reference(rank(), peer, m.reference_slot).copy_written)
                                         .load(std::memory_order_relaxed) != 1) {
          plait::detail::copy_bytes(m.copy, m.out, m.bytes);  // it could not: copy it here
        }
        p.sends.pop_front();
        ++p.sends_done;
        continue;
      }
      if (state != detail::reference_state::refused) {
        plait::detail::fail(
            errc::transport,
            {"corrupt channel: peer released a single-copy slot in state ", static_cast<std::uint32_t>(state)},
            where("isend", peer));
      }
      p.single_copy_refused = true;  // send this message (and later ones) in chunks
      if (m.copy != nullptr) {
        plait::detail::copy_bytes(m.copy, m.out, m.bytes);
        m.copy = nullptr;
      }
      continue;
    }
    if (p.head - tail == slots) break;  // channel full: the peer has to drain it first
    if (!m.started && goes_by_reference(m, p, peer) && (m.out_pieces == nullptr || vector_reference_fits(m, peer))) {
      post_reference(peer, m);
      moved = true;
      break;  // later messages to this peer wait until the receiver has copied this one
    }
    const std::size_t chunk = std::min(slot_bytes, m.bytes - m.done);
    detail::slot_header& header = segment_->slot(rank(), peer, p.head);
    header = detail::slot_header{.tag = static_cast<std::uint32_t>(m.tag),
                                 .kind = static_cast<std::uint32_t>(detail::slot_kind::chunk),
                                 .message_bytes = m.bytes,
                                 .offset = m.done,
                                 .chunk_bytes = chunk,
                                 .stamp = m.stamp,
                                 .reserved = 0};
    if (chunk != 0 && m.out_pieces != nullptr) {
      detail::gather_pieces({m.out_pieces, m.piece_count}, m.done, segment_->payload(rank(), peer, p.head), chunk);
    } else if (chunk != 0) {
      std::memcpy(segment_->payload(rank(), peer, p.head), m.out + m.done, chunk);
    }
    m.done += chunk;
    m.started = true;
    ++p.head;
    detail::atomic(channel.head).store(p.head, std::memory_order_release);
    moved = true;
    if (m.done == m.bytes) {
      p.sends.pop_front();
      ++p.sends_done;
    }
  }
  return moved;
}

PLAIT_DECL bool communicator::progress_recvs(int peer) {
  auto& p = peers_[static_cast<std::size_t>(peer)];
  auto& channel = segment_->channel(peer, rank());
  const std::uint32_t slots = segment_->shape().slots;
  const std::size_t slot_bytes = segment_->shape().slot_bytes;
  bool moved = false;
  while (!p.recvs.empty()) {
    const std::uint64_t head = detail::atomic(channel.head).load(std::memory_order_acquire);
    if (detail::pending_slots(head, p.tail, slots) < 0) {
      plait::detail::fail(errc::transport,
                          {"corrupt channel: peer reports ", head, " slots written, ", p.tail, " consumed"},
                          where("irecv", peer));
    }
    if (head == p.tail) break;  // nothing new yet
    pending& m = p.recvs.front();
    // Copy the header out first: the peer could change it while we check it.
    const detail::slot_header header = segment_->slot(peer, rank(), p.tail);
    // Same call sequence, another call: refused before anything is copied.
    if (header.tag == static_cast<std::uint32_t>(m.tag))
      check_header(peer, m, header, detail::check_stamp(header, m.stamp));
    const bool vector_reference = header.kind == static_cast<std::uint32_t>(detail::slot_kind::vector_reference);
    if (vector_reference && m.combine != nullptr) [[unlikely]] {
      // A combining receive is the fold run's, and so is its peer's send: one buffer, never pieces.
      plait::detail::fail(errc::transport, {"a vectored message arrived where a reduction combines a partial"},
                          where("irecv", peer));
    }
    if (header.kind == static_cast<std::uint32_t>(detail::slot_kind::reference) || vector_reference) {
      check_header(
          peer, m, header,
          vector_reference
              ? detail::check_vector_reference(header, static_cast<std::uint32_t>(m.tag), m.bytes, m.done, slot_bytes)
              : detail::check_reference(header, static_cast<std::uint32_t>(m.tag), m.bytes, m.done));
      const bool copied = vector_reference || m.in_pieces != nullptr
                              ? copy_vector_reference(peer, m, vector_reference ? header.chunk_bytes : 0)
                              : copy_reference(peer, m);
      if (copied) {
        m.done = m.bytes;
        p.recvs.pop_front();
        ++p.recvs_done;
      }
      ++p.tail;  // releases the slot, and tells the sender we are done with its buffer
      detail::atomic(channel.tail).store(p.tail, std::memory_order_release);
      moved = true;
      continue;
    }
    if (header.kind != static_cast<std::uint32_t>(detail::slot_kind::chunk)) {
      plait::detail::fail(errc::transport, {"corrupt message slot (kind ", header.kind, ")"}, where("irecv", peer));
    }
    check_header(peer, m, header,
                 detail::check_slot(header, static_cast<std::uint32_t>(m.tag), m.bytes, m.done, slot_bytes));
    const bool stream = m.combine == nullptr && m.bytes >= detail::chunk_stream_bytes();
    if (header.chunk_bytes != 0 && m.combine != nullptr) {
      combine_arrival(m, segment_->payload(peer, rank(), p.tail), m.done, header.chunk_bytes);
    } else if (header.chunk_bytes != 0 && m.in_pieces != nullptr) {
      detail::scatter_pieces(segment_->payload(peer, rank(), p.tail), header.chunk_bytes, {m.in_pieces, m.piece_count},
                             m.done, stream);
    } else if (header.chunk_bytes != 0) {
      if (stream) {
        plait::detail::stream_copy(m.in + m.done, segment_->payload(peer, rank(), p.tail), header.chunk_bytes);
      } else {
        std::memcpy(m.in + m.done, segment_->payload(peer, rank(), p.tail), header.chunk_bytes);
      }
    }
    m.done += header.chunk_bytes;
    m.started = true;
    ++p.tail;
    detail::atomic(channel.tail).store(p.tail, std::memory_order_release);
    moved = true;
    if (m.done == m.bytes) {
      if (stream) plait::detail::stream_fence();  // the result is complete before the request is
      p.recvs.pop_front();
      ++p.recvs_done;
    }
  }
  return moved;
}

[[gnu::noinline]] PLAIT_DECL void communicator::header_failure(int peer, const pending& m,
                                                               const detail::slot_header& header,
                                                               detail::slot_problem problem) const {
  const error_context at = where("irecv", peer);
  switch (problem) {
    case detail::slot_problem::tag_mismatch:
      plait::detail::fail(errc::transport,
                          {"message with tag ", header.tag, " arrived where tag ", m.tag,
                           " was expected: the ranks called different operations or in a different order"},
                          at);
    case detail::slot_problem::stamp_mismatch: {
      // Blamed on the peer, unless the ranks waiting in the call side with it.
      const std::string odd = outvoted_in_call(peer, static_cast<std::uint32_t>(m.tag), m.stamp, header.stamp);
      const std::string sender = odd.empty() ? std::string("peer") : plait::detail::concat({"rank ", peer});
      plait::detail::fail(
          errc::size_mismatch,
          {sender, "'s message of call ", header.tag, " is from ", describe(call_stamp::from_bits(header.stamp)),
           " where this rank runs ", describe(call_stamp::from_bits(m.stamp)),
           ": the ranks called different collectives, or with different algorithms, layouts or element types",
           odd.empty() ? "" : "; ", odd},
          odd.empty() ? at : where("irecv", rank()));
    }
    case detail::slot_problem::size_mismatch:
      plait::detail::fail(errc::size_mismatch,
                          {"peer sent ", header.message_bytes, " bytes where this rank expects ", m.bytes,
                           " (do the ranks agree on the sizes?)"},
                          at);
    case detail::slot_problem::none:
    case detail::slot_problem::corrupt: break;
  }
  plait::detail::fail(errc::transport,
                      {"corrupt message slot (offset ", header.offset, ", ", header.chunk_bytes, " bytes)"}, at);
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

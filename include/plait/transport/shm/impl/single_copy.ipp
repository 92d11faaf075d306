// Defines the single-copy reference protocol of
// plait/transport/shm/communicator.hpp: a sender publishes where its buffer
// is, the receiver copies straight from it (memcpy from a thread of this
// process or from a shared buffer, process_vm_readv from another process),
// writes a sender's second copy where it can, and a failing sender withdraws
// what nobody has started copying.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>

#include <sys/uio.h>
#include <unistd.h>

#include "plait/core/backoff.hpp"
#include "plait/core/error.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/stream_copy.hpp"
#include "plait/core/timeout.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/pieces.hpp"
#include "plait/transport/shm/segment.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

PLAIT_DECL void communicator::post_reference(int peer, pending& m) {
  auto& p = peers_[static_cast<std::size_t>(peer)];
  detail::reference_descriptor& ref = segment_->reference(rank(), peer, p.head);
  ref.address = reinterpret_cast<std::uintptr_t>(m.out);
  ref.pid = static_cast<std::int32_t>(getpid());
  ref.window = m.window;
  ref.offset = m.window_offset;
  ref.copy_address = reinterpret_cast<std::uintptr_t>(m.copy);
  ref.copy_window = m.copy_window;
  ref.copy_offset = m.copy_offset;
  ref.in_pool = (m.window_in_pool ? 1U : 0U) | (m.copy_in_pool ? 2U : 0U);
  if (m.window_in_pool || m.copy_in_pool) {
    const detail::pool_key key = pool_->key();
    ref.pool_high = key.high;
    ref.pool_low = key.low;
  }
  detail::atomic(ref.copy_written).store(0, std::memory_order_relaxed);
  detail::atomic(ref.state).store(static_cast<std::uint32_t>(detail::reference_state::posted),
                                  std::memory_order_relaxed);
  // A vectored send lists its pieces after the descriptor (empty ones left
  // out); the caller checked that they fit the slot.
  std::uint64_t pieces = 0;
  if (m.out_pieces != nullptr) {
    detail::vector_piece* list = segment_->vector_pieces(rank(), peer, p.head);
    for (std::size_t i = 0; i < m.piece_count; ++i) {
      if (m.out_pieces[i].empty()) continue;
      list[pieces++] = {reinterpret_cast<std::uintptr_t>(m.out_pieces[i].data()), m.out_pieces[i].size()};
    }
  }
  segment_->slot(rank(), peer, p.head) = detail::slot_header{
      .tag = static_cast<std::uint32_t>(m.tag),
      .kind = static_cast<std::uint32_t>(m.out_pieces != nullptr ? detail::slot_kind::vector_reference
                                                                 : detail::slot_kind::reference),
      .message_bytes = m.bytes,
      .offset = 0,
      .chunk_bytes = pieces,
      .stamp = m.stamp,
      .reserved = 0};
  m.started = true;
  m.by_reference = true;
  m.reference_slot = p.head;
  ++p.head;
  detail::atomic(segment_->channel(rank(), peer).head).store(p.head, std::memory_order_release);  // publishes all of it
}

PLAIT_DECL bool communicator::copy_reference(int peer, pending& m) {
  auto& p = peers_[static_cast<std::size_t>(peer)];
  detail::reference_descriptor& shared = segment_->reference(peer, rank(), p.tail);
  const std::uint64_t address = shared.address;  // read once: the value used is the value checked
  const std::int32_t pid = shared.pid;
  const std::uint64_t window_id = shared.window;
  const std::uint64_t offset = shared.offset;
  const std::uint64_t copy_address = shared.copy_address;
  const std::uint64_t copy_window_id = shared.copy_window;
  const std::uint64_t copy_offset = shared.copy_offset;
  const bool in_pool = (shared.in_pool & 1U) != 0;
  const bool copy_in_pool = (shared.in_pool & 2U) != 0;
  const detail::pool_key pool{shared.pool_high, shared.pool_low};
  // The sender's second buffer: in its pool (mapped here, unless a thread's,
  // which is reached by address), or where sender_copy finds it.
  auto copy_destination = [&] {
    if (copy_in_pool && !segment_->is_local(peer))
      return pool_copy(peer, pid, pool, m.bytes, copy_window_id, copy_offset);
    return sender_copy(peer, m.bytes, copy_address, copy_in_pool ? 0 : copy_window_id, copy_offset);
  };
  auto state = detail::atomic(shared.state);
  auto finish = [&](detail::reference_state s) {
    state.store(static_cast<std::uint32_t>(s), std::memory_order_release);
  };
  auto expected = static_cast<std::uint32_t>(detail::reference_state::posted);
  if (!state.compare_exchange_strong(expected, static_cast<std::uint32_t>(detail::reference_state::copying),
                                     std::memory_order_acq_rel)) {
    if (expected == static_cast<std::uint32_t>(detail::reference_state::withdrawn)) {
      // A sender withdraws only after marking the group failed: who failed
      // first, and why, says more than the sender that withdrew (it may
      // have failed because of another rank).
      check_group(peer);
      plait::detail::fail(errc::peer_lost,
                          {"the sender withdrew its message (it failed before this rank could copy it)"},
                          where("irecv", peer));
    }
    plait::detail::fail(errc::transport, {"corrupt single-copy slot (state ", expected, ")"}, where("irecv", peer));
  }
  // A combine runs the user's reduction, which may throw: the sender's
  // buffer is not read after that, so say so, or a sender that withdraws
  // its references on the failure waits for a copy that has ended.
  struct release_on_throw {
    std::atomic_ref<std::uint32_t> state;
    int exceptions = std::uncaught_exceptions();
    explicit release_on_throw(std::atomic_ref<std::uint32_t> s) noexcept : state(s) {}
    release_on_throw(const release_on_throw&) = delete;
    release_on_throw& operator=(const release_on_throw&) = delete;
    ~release_on_throw() {
      auto copying = static_cast<std::uint32_t>(detail::reference_state::copying);
      if (std::uncaught_exceptions() > exceptions) {
        state.compare_exchange_strong(copying, static_cast<std::uint32_t>(detail::reference_state::done),
                                      std::memory_order_release, std::memory_order_relaxed);
      }
    }
  } const released_on_throw{state};
  // The sender's bytes in a mapping of this process's own: its allocate
  // window, or a segment of its pool, mapped here the first time one is named.
  std::shared_ptr<detail::window> w;  // held while reading
  std::span<const std::byte> mapped;
  if (window_id != 0 && !in_pool) {
    if ((w = find_window(window_id))) mapped = {w->of(peer).base, w->of(peer).bytes};
    // else this rank has freed its handle on that buffer: read by address below.
  } else if (window_id != 0 && !segment_->is_local(peer)) {
    mapped = peer_pools_.find_or_map(peer, pid, pool, window_id);  // empty: name gone or not ours; by address
  }
  if (w || !mapped.empty()) {
    if (!detail::window_read_fits(offset, m.bytes, mapped.size())) {
      finish(detail::reference_state::refused);
      plait::detail::fail(errc::transport,
                          {"corrupt single-copy slot (", m.bytes, " bytes at offset ", offset, " of a ", mapped.size(),
                           in_pool ? "-byte pool segment)" : "-byte shared buffer)"},
                          where("irecv", peer));
    }
    bytes_read_in_place_ += m.bytes;
    if (m.combine != nullptr) {  // straight out of the peer's buffer; a sender's copy is its own
      combine_arrival(m, mapped.data() + offset, 0, m.bytes);
      finish(detail::reference_state::done);
      return true;
    }
    std::byte* also = copy_destination();
    copy_for_both(m.in, also, mapped.data() + offset, m.bytes);
    if (also != nullptr) {
      bytes_copied_for_senders_ += m.bytes;
      detail::atomic(shared.copy_written).store(1, std::memory_order_relaxed);  // published by `done`
    }
    finish(detail::reference_state::done);
    return true;
  }
  if (segment_->is_local(peer)) {
    // A thread of this process (known here, not read from the segment): its
    // buffer is in our address space, and stays valid until we say done.
    if (m.combine != nullptr) {
      if (in_pool) bytes_read_in_place_ += m.bytes;
      combine_arrival(m, reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(address)), 0, m.bytes);
      finish(detail::reference_state::done);
      return true;
    }
    std::byte* also = copy_destination();
    copy_for_both(m.in, also, reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(address)), m.bytes);
    if (in_pool) bytes_read_in_place_ += m.bytes;  // a pool buffer of a thread: in place, nothing to map
    if (also != nullptr) {
      bytes_copied_for_senders_ += m.bytes;
      detail::atomic(shared.copy_written).store(1, std::memory_order_relaxed);
    }
    finish(detail::reference_state::done);
    return true;
  }
  // Another process: the kernel checks the pid and every address it names,
  // so a corrupt descriptor fails here instead of reading our own memory.
  if (pid <= 0) {
    finish(detail::reference_state::refused);
    plait::detail::fail(errc::transport, {"corrupt single-copy slot (pid ", pid, ")"}, where("irecv", peer));
  }
  std::size_t copied = 0;
  if (m.combine != nullptr) {
    const int reason = combine_from_process(pid, address, m, copied);
    if (reason == 0) {
      bytes_read_from_processes_ += m.bytes;
      finish(detail::reference_state::done);
      return true;
    }
    finish(detail::reference_state::refused);
    if (copied == 0 && (reason == EPERM || reason == ENOSYS || reason == EACCES)) return false;  // chunks from now on
    plait::detail::fail(reason == ESRCH ? errc::peer_lost : errc::transport,
                        {"cannot read the sender's buffer (process_vm_readv: ", std::strerror(reason), ")"},
                        where("irecv", peer));
  }
  while (copied < m.bytes) {
    iovec local{m.in + copied, m.bytes - copied};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address + copied)), m.bytes - copied};
    const ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n > 0) {
      copied += static_cast<std::size_t>(n);
      continue;
    }
    const int reason = n == 0 ? EFAULT : errno;
    if (reason == EINTR) continue;
    if (copied == 0 && (reason == EPERM || reason == ENOSYS || reason == EACCES)) {
      finish(detail::reference_state::refused);  // no cross-memory attach here: the sender falls back to chunks
      return false;
    }
    finish(detail::reference_state::refused);
    plait::detail::fail(reason == ESRCH ? errc::peer_lost : errc::transport,
                        {"cannot read the sender's buffer (process_vm_readv: ", std::strerror(reason), ")"},
                        where("irecv", peer));
  }
  bytes_read_from_processes_ += m.bytes;
  finish(detail::reference_state::done);
  return true;
}

PLAIT_DECL bool communicator::copy_vector_reference(int peer, pending& m, std::size_t pieces) {
  auto& p = peers_[static_cast<std::size_t>(peer)];
  detail::reference_descriptor& shared = segment_->reference(peer, rank(), p.tail);
  const std::uint64_t address = shared.address;  // read once: the value used is the value checked
  const std::int32_t pid = shared.pid;
  const std::uint64_t window_id = shared.window;
  const std::uint64_t offset = shared.offset;
  auto state = detail::atomic(shared.state);
  auto finish = [&](detail::reference_state s) {
    state.store(static_cast<std::uint32_t>(s), std::memory_order_release);
  };
  auto expected = static_cast<std::uint32_t>(detail::reference_state::posted);
  if (!state.compare_exchange_strong(expected, static_cast<std::uint32_t>(detail::reference_state::copying),
                                     std::memory_order_acq_rel)) {
    if (expected == static_cast<std::uint32_t>(detail::reference_state::withdrawn)) {
      // A sender withdraws only after marking the group failed: who failed
      // first, and why, says more than the sender that withdrew (it may
      // have failed because of another rank).
      check_group(peer);
      plait::detail::fail(errc::peer_lost,
                          {"the sender withdrew its message (it failed before this rank could copy it)"},
                          where("irecv", peer));
    }
    plait::detail::fail(errc::transport, {"corrupt single-copy slot (state ", expected, ")"}, where("irecv", peer));
  }
  // Where the bytes come from: the sender's piece list, copied out of the
  // slot once (the sender could change it) and checked against the length,
  // or its one buffer.
  plait::detail::small_array<detail::vector_piece, 16> from(pieces == 0 ? 1 : pieces);
  if (pieces == 0) {
    from[0] = {address, m.bytes};
  } else {
    const detail::vector_piece* list = segment_->vector_pieces(peer, rank(), p.tail);
    std::copy_n(list, pieces, from.data());
    if (!detail::pieces_add_up({from.data(), pieces}, m.bytes)) {
      finish(detail::reference_state::refused);
      plait::detail::fail(errc::transport,
                          {"corrupt single-copy slot (", pieces, " pieces that do not add up to ", m.bytes, " bytes)"},
                          where("irecv", peer));
    }
  }
  // Where they go: this receive's pieces, or its one buffer.
  const std::span<std::byte> whole(m.in, m.bytes);
  const std::span<const std::span<std::byte>> to =
      m.in_pieces != nullptr ? std::span<const std::span<std::byte>>(m.in_pieces, m.piece_count)
                             : std::span<const std::span<std::byte>>(&whole, 1);
  bytes_copied_vectored_ += m.bytes;
  if (pieces == 0 && window_id != 0) {
    if (const auto w = find_window(window_id)) {
      const detail::window::part& part = w->of(peer);
      if (!detail::window_read_fits(offset, m.bytes, part.bytes)) {
        finish(detail::reference_state::refused);
        plait::detail::fail(errc::transport,
                            {"corrupt single-copy slot (", m.bytes, " bytes at offset ", offset, " of a ", part.bytes,
                             "-byte shared buffer)"},
                            where("irecv", peer));
      }
      from[0].address = reinterpret_cast<std::uintptr_t>(part.base + offset);
      detail::copy_pieces({from.data(), 1}, to);
      bytes_read_in_place_ += m.bytes;
      finish(detail::reference_state::done);  // copy_written stays 0: a sender's own copy is its own
      return true;
    }
    // This rank has freed its handle on that buffer: read by address below.
  }
  if (segment_->is_local(peer)) {  // a thread of this process (see copy_reference)
    detail::copy_pieces({from.data(), from.size()}, to);
    finish(detail::reference_state::done);
    return true;
  }
  if (pid <= 0) {
    finish(detail::reference_state::refused);
    plait::detail::fail(errc::transport, {"corrupt single-copy slot (pid ", pid, ")"}, where("irecv", peer));
  }
  std::size_t copied = 0;
  const int reason = detail::read_process_pieces(pid, {from.data(), from.size()}, to, copied);
  if (reason == 0) {
    finish(detail::reference_state::done);
    return true;
  }
  finish(detail::reference_state::refused);
  bytes_copied_vectored_ -= m.bytes;
  if (copied == 0 && (reason == EPERM || reason == ENOSYS || reason == EACCES)) return false;  // chunks from now on
  plait::detail::fail(reason == ESRCH ? errc::peer_lost : errc::transport,
                      {"cannot read the sender's buffer (process_vm_readv: ", std::strerror(reason), ")"},
                      where("irecv", peer));
}

PLAIT_DECL void communicator::combine_arrival(const pending& m, const std::byte* arriving, std::size_t offset,
                                              std::size_t bytes) {
  const receive_combine& how = *m.combine;
  const std::byte* held = how.held + offset;
  std::byte* out = m.in + offset;
  if (how.arriving_left) {
    how.combine(how.context, arriving, held, out, bytes);
  } else {
    how.combine(how.context, held, arriving, out, bytes);
  }
  bytes_combined_on_receive_ += bytes;
}

PLAIT_DECL int communicator::combine_from_process(std::int32_t pid, std::uint64_t address, pending& m,
                                                  std::size_t& read) {
  // Whole elements per piece, so each piece combines on its own.
  const std::size_t granule = m.combine->granule;
  const std::size_t piece = std::min(m.bytes, detail::combine_piece_bytes / granule * granule);
  if (combine_piece_.size() < piece) combine_piece_.resize(piece);
  read = 0;
  while (read < m.bytes) {
    const std::size_t n = std::min(piece, m.bytes - read);
    std::size_t got = 0;
    while (got < n) {
      iovec local{combine_piece_.data() + got, n - got};
      iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address + read + got)), n - got};
      const ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
      if (r > 0) {
        got += static_cast<std::size_t>(r);
        continue;
      }
      const int reason = r == 0 ? EFAULT : errno;
      if (reason != EINTR) return reason;
    }
    combine_arrival(m, combine_piece_.data(), read, n);
    read += n;
  }
  return 0;
}

[[gnu::noinline]] PLAIT_DECL std::byte* communicator::sender_copy(int peer, std::size_t bytes, std::uint64_t address,
                                                                  std::uint64_t window_id,
                                                                  std::uint64_t offset) const noexcept {
  if (window_id != 0) {
    const auto w = find_window(window_id);
    if (!w) return nullptr;  // freed here: the sender copies
    const detail::window::part& part = w->of(peer);
    // Out of bounds only if the descriptor is corrupt: then not written here
    // (the sender copies for itself) rather than anywhere else.
    return detail::window_read_fits(offset, bytes, part.bytes) ? part.base + offset : nullptr;
  }
  if (address != 0 && segment_->is_local(peer))
    return reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(address));
  return nullptr;
}

PLAIT_DECL std::byte* communicator::pool_copy(int peer, std::int32_t pid, detail::pool_key pool, std::size_t bytes,
                                              std::uint64_t segment_id, std::uint64_t offset) noexcept {
  const std::span<std::byte> part = peer_pools_.find_or_map(peer, pid, pool, segment_id);
  // Out of bounds only if the descriptor is corrupt: then the sender copies.
  return !part.empty() && detail::window_read_fits(offset, bytes, part.size()) ? part.data() + offset : nullptr;
}

[[gnu::noinline]] PLAIT_DECL void communicator::copy_for_both(std::byte* dst, std::byte* also, const std::byte* src,
                                                              std::size_t bytes) noexcept {
  if (also == nullptr) return plait::detail::copy_bytes(dst, src, bytes);  // streams when large
  // A piece at a time, so the second copy reads what the first has just
  // brought into the cache: 64 KiB pieces measured best (bench/cma-vs-copy,
  // shtee:16K-64K against 256K).
  constexpr std::size_t piece = std::size_t{64} << 10;
  const bool stream = bytes >= plait::detail::stream_copy_bytes().load(std::memory_order_relaxed);
  for (std::size_t done = 0; done < bytes; done += piece) {
    const std::size_t n = std::min(piece, bytes - done);
    if (stream) {
      plait::detail::stream_copy(dst + done, src + done, n);
      plait::detail::stream_copy(also + done, src + done, n);
    } else {
      std::memcpy(dst + done, src + done, n);
      std::memcpy(also + done, src + done, n);
    }
  }
  if (stream) plait::detail::stream_fence();
}

PLAIT_DECL void communicator::withdraw_references() noexcept {
  for (int peer = 0; peer < static_cast<int>(peers_.size()); ++peer) {
    auto& p = peers_[static_cast<std::size_t>(peer)];
    if (p.sends.empty() || !p.sends.front().by_reference) continue;
    auto state = detail::atomic(segment_->reference(rank(), peer, p.sends.front().reference_slot).state);
    auto expected = static_cast<std::uint32_t>(detail::reference_state::posted);
    if (state.compare_exchange_strong(expected, static_cast<std::uint32_t>(detail::reference_state::withdrawn),
                                      std::memory_order_acq_rel)) {
      continue;
    }
    // A copy is under way: it ends by itself (a bounded memcpy or syscall)
    // unless the reader dies, which the pid check notices.
    const deadline until =
        plait::detail::after(std::min<std::chrono::nanoseconds>(timeout(), std::chrono::seconds(10)));
    plait::detail::backoff wait;
    while (state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(detail::reference_state::copying) &&
           clock::now() < until &&
           !detail::process_ended(detail::atomic(segment_->record(peer).pid).load(std::memory_order_relaxed))) {
      wait.pause();
    }
  }
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

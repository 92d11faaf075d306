// Defines the vectored copies of plait/transport/shm/pieces.hpp.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>

#include <sys/uio.h>

#include "plait/core/stream_copy.hpp"
#include "plait/transport/shm/pieces.hpp"

namespace plait {
inline namespace v0 {
namespace shm::detail {

PLAIT_DECL void gather_pieces(std::span<const std::span<const std::byte>> pieces, std::size_t offset, std::byte* dst,
                              std::size_t bytes) noexcept {
  for (const std::span<const std::byte> piece : pieces) {
    if (bytes == 0) return;
    if (offset >= piece.size()) {
      offset -= piece.size();
      continue;
    }
    const std::size_t n = std::min(piece.size() - offset, bytes);
    std::memcpy(dst, piece.data() + offset, n);
    dst += n;
    bytes -= n;
    offset = 0;
  }
}

PLAIT_DECL void scatter_pieces(const std::byte* src, std::size_t bytes, std::span<const std::span<std::byte>> pieces,
                               std::size_t offset, bool stream) noexcept {
  for (const std::span<std::byte> piece : pieces) {
    if (bytes == 0) return;
    if (offset >= piece.size()) {
      offset -= piece.size();
      continue;
    }
    const std::size_t n = std::min(piece.size() - offset, bytes);
    if (stream) {
      plait::detail::stream_copy(piece.data() + offset, src, n);
    } else {
      std::memcpy(piece.data() + offset, src, n);
    }
    src += n;
    bytes -= n;
    offset = 0;
  }
}

PLAIT_DECL void copy_pieces(std::span<const vector_piece> from, std::span<const std::span<std::byte>> to) noexcept {
  std::size_t into = 0;  // the piece of `to` being filled ...
  std::size_t at = 0;    // ... and how much of it is
  for (const vector_piece& piece : from) {
    const auto* src = reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(piece.address));
    std::size_t left = piece.bytes;
    while (left != 0 && into < to.size()) {
      const std::size_t n = std::min(left, to[into].size() - at);
      plait::detail::copy_bytes(to[into].data() + at, src, n);
      src += n;
      left -= n;
      at += n;
      if (at == to[into].size()) {
        ++into;
        at = 0;
      }
    }
  }
}

PLAIT_DECL int read_process_pieces(pid_t pid, std::span<const vector_piece> from,
                                   std::span<const std::span<std::byte>> to, std::size_t& copied) noexcept {
  // A batch per call: IOV_MAX is at least 1024; 64 keeps the arrays on the stack.
  constexpr std::size_t batch = 64;
  iovec remote[batch];
  iovec local[batch];
  std::size_t from_index = 0, from_at = 0;  // where the next byte comes from ...
  std::size_t to_index = 0, to_at = 0;      // ... and where it goes
  copied = 0;
  for (;;) {
    while (from_index < from.size() && from_at == from[from_index].bytes) ++from_index, from_at = 0;
    while (to_index < to.size() && to_at == to[to_index].size()) ++to_index, to_at = 0;
    if (from_index == from.size() || to_index == to.size()) return 0;
    // The next batch: as many remote pieces as fit, then local ones covering the same bytes.
    std::size_t remote_count = 0;
    std::size_t remote_bytes = 0;
    for (std::size_t i = from_index; i < from.size() && remote_count < batch; ++i) {
      const std::size_t skip = i == from_index ? from_at : 0;
      if (from[i].bytes == skip) continue;
      remote[remote_count++] = {reinterpret_cast<void*>(static_cast<std::uintptr_t>(from[i].address + skip)),
                                static_cast<std::size_t>(from[i].bytes - skip)};
      remote_bytes += static_cast<std::size_t>(from[i].bytes - skip);
    }
    std::size_t local_count = 0;
    std::size_t local_bytes = 0;
    for (std::size_t i = to_index; i < to.size() && local_count < batch && local_bytes < remote_bytes; ++i) {
      const std::size_t skip = i == to_index ? to_at : 0;
      const std::size_t n = std::min(to[i].size() - skip, remote_bytes - local_bytes);
      if (n == 0) continue;
      local[local_count++] = {to[i].data() + skip, n};
      local_bytes += n;
    }
    const ssize_t n = process_vm_readv(pid, local, local_count, remote, remote_count, 0);
    if (n <= 0) {
      const int reason = n == 0 ? EFAULT : errno;
      if (reason == EINTR) continue;
      return reason;
    }
    copied += static_cast<std::size_t>(n);
    // Advance both cursors by what the kernel copied (it may stop early).
    for (auto left = static_cast<std::size_t>(n); left != 0;) {
      const std::size_t step = std::min<std::size_t>(left, from[from_index].bytes - from_at);
      from_at += step;
      left -= step;
      if (from_at == from[from_index].bytes) ++from_index, from_at = 0;
    }
    for (auto left = static_cast<std::size_t>(n); left != 0;) {
      const std::size_t step = std::min(left, to[to_index].size() - to_at);
      to_at += step;
      left -= step;
      if (to_at == to[to_index].size()) ++to_index, to_at = 0;
    }
  }
}

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

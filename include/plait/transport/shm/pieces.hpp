// The copies of vectored messages (isendv / irecvv): a message made of
// several contiguous pieces is gathered into the slots and scattered out of
// them a chunk at a time, and a single-copy receiver copies between the
// sender's piece list and its own (memcpy between threads,
// process_vm_readv with several iovecs between processes).
#pragma once

#include <sys/types.h>
#include <cstddef>
#include <cstdint>
#include <span>

#include "plait/core/config.hpp"
#include "plait/transport/shm/segment.hpp"

namespace plait {
inline namespace v0 {
namespace shm::detail {

/// Copies `bytes` bytes of the concatenation of `pieces`, starting `offset`
/// bytes into it, to `dst`. The pieces hold at least offset + bytes.
PLAIT_DECL void gather_pieces(std::span<const std::span<const std::byte>> pieces, std::size_t offset, std::byte* dst,
                              std::size_t bytes) noexcept;

/// Copies `bytes` bytes from `src` into the concatenation of `pieces`,
/// starting `offset` bytes into it (streaming stores when `stream`; the
/// caller fences). The pieces hold at least offset + bytes.
PLAIT_DECL void scatter_pieces(const std::byte* src, std::size_t bytes, std::span<const std::span<std::byte>> pieces,
                               std::size_t offset, bool stream) noexcept;

/// Copies the concatenation of `from` (addresses in this process) into that
/// of `to`, whose lengths add up to the same total (plait::detail::copy_bytes
/// per overlap: streaming for large pieces).
PLAIT_DECL void copy_pieces(std::span<const vector_piece> from, std::span<const std::span<std::byte>> to) noexcept;

/// Reads the concatenation of `from` (addresses in process `pid`) into that
/// of `to` (same total) with process_vm_readv, a batch of iovecs per call.
/// Returns 0, or the errno of the call that failed; `copied` says how far it got.
PLAIT_DECL int read_process_pieces(pid_t pid, std::span<const vector_piece> from,
                                   std::span<const std::span<std::byte>> to, std::size_t& copied) noexcept;

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/transport/shm/impl/pieces.ipp"
#endif

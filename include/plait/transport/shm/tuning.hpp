// The shm transport's tuning constants, each with the measurement that set
// it: where single copy starts paying off, how long waits poll, when chunks
// are copied out with streaming stores and when the receiver takes over a
// sender's second copy. docs/performance.md has the measurements in full.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "plait/core/config.hpp"
#include "plait/core/stream_copy.hpp"

namespace plait {
inline namespace v0 {
namespace shm::detail {

/// Messages to a thread of this process of at least this many bytes go by
/// reference (one memcpy); below it the round trip costs more than two copies
/// through a cache-resident slot. Measured (2 ranks exchanging, quiet machine):
/// equal at 2 KiB, single copy 1.5x faster at 4 KiB and 2x from 16 KiB.
inline constexpr std::size_t thread_single_copy_bytes = std::size_t{4} << 10;
/// Between processes the copy is process_vm_readv, a system call that pins
/// the sender's pages: chunks win at 4 KiB (1.3 against 2.0 us), the two are
/// equal at 8 KiB, and single copy wins from 16 KiB (1.3x at 16 KiB, 1.6-2x at
/// 64 KiB - 1 MiB, 1.3x at 2 MiB).
inline constexpr std::size_t process_single_copy_bytes = std::size_t{16} << 10;

/// A reduction's message to another process (a call that folds what
/// arrives: reduce_scatter, reduce_scatter_v, all_reduce) goes by reference
/// from this size, not process_single_copy_bytes. In chunks the sender
/// copies each into a slot while the receiver folds the one before, the
/// work split over both ranks' cores; by reference the receiver alone reads
/// with process_vm_readv and folds. Measured at P = 2 on a 2-vCPU EPYC VM
/// (user buffers, float sum, interleaved runs of both ways): chunks took
/// 0.44-0.99x the time from 32 KiB to 512 KiB in every setting (Open MPI's
/// launcher alone, beside a spinning process, in oneCCL's bench build);
/// from 1 MiB 0.59-0.97x in the first two, but in the third all_reduce
/// 0.84-1.07x and reduce_scatter 1.09-1.46x, so from there the message
/// keeps single copy (docs/performance.md).
inline constexpr std::size_t process_fold_single_copy_bytes = std::size_t{1} << 20;

/// How long a wait polls without yielding when the group has a core per rank
/// (as MPI's blocking calls and plait::mpi do; see core/backoff.hpp). Measured
/// with 2 processes exchanging 512 KiB on the busy 2-core machine, five
/// interleaved rounds: 22-24 us polling against 24-75 us yielding at once.
inline constexpr std::chrono::milliseconds default_busy_poll{100};

/// PLAIT_SHM_SINGLE_COPY_BYTES, when set: one threshold for both (0 turns
/// single copy off; for measurements). A bad value reads as unset here: it
/// was reported when the communicator was created (read_environment), and a
/// null communicator, which reads it too, must not throw.
PLAIT_DECL std::optional<std::size_t> single_copy_bytes_from_environment() noexcept;

/// A message that arrives in chunks (below the single-copy threshold, or
/// where process_vm_readv is refused) is copied out of the slots with
/// streaming stores from this size on: 4x plait::detail::stream_copy_bytes(),
/// 16 MiB by default. Measured (bench/cma-vs-copy, pipe:64K:4:rn against rr,
/// 2 ranks, two runs): 1.09-1.18x for 16-64 MiB messages, 0.83-1.02x for
/// 4-8 MiB ones. The slots themselves keep regular stores: the peer reads
/// them at once, from the cache.
inline std::size_t chunk_stream_bytes() noexcept {
  const std::size_t local = plait::detail::stream_copy_bytes().load(std::memory_order_relaxed);
  return local > SIZE_MAX / 4 ? SIZE_MAX : 4 * local;
}

/// isend_with_copy leaves its copy to the receiver from this size on. Below
/// it the shard is still in the cache when the sender copies it, so reading it
/// once saves nothing and the extra bookkeeping costs a little. Measured
/// (plait-bench, 2-process all-gather of allocate buffers, three interleaved
/// pairs of runs): 3-10 % slower for 32-64 KiB shards, even at 128 KiB, 0-7 %
/// faster at 256 KiB, 1.06-1.6x at 512 KiB - 1 MiB.
inline constexpr std::size_t copy_for_sender_bytes = std::size_t{256} << 10;

/// A vectored message to another process goes by reference only when its
/// pieces average at least this many bytes; else in chunks, gathered into
/// the slots. process_vm_readv pins pages per remote iovec, about 100 ns
/// each, where the staging it replaces costs two memcpys. Measured with
/// process_vm_readv on the calling process (best of 50 runs): a 64 KiB
/// message of 1 KiB pieces 8.7 us vectored against 5.1 us for one iovec
/// plus packing and unpacking, of 4 KiB pieces 3.8 against 5.0 us, 1 MiB of
/// 4 KiB pieces 76 against 104 us.
inline constexpr std::size_t process_vector_piece_bytes = std::size_t{2} << 10;

/// A combining receive (irecv_combine) of another process's buffer reads
/// pieces of this size with process_vm_readv and combines each while it is
/// in cache, instead of staging the whole message in memory and reading it
/// back. Measured on the combine path (scripts/bench-compare, 2 ranks, user
/// buffers, 6 ABBA rounds, 2-vCPU EPYC VM with 1 MiB of L2): against 64 KiB
/// pieces, 1 MiB took 0.88-0.92x the time of an all_reduce at 1-16 MiB and
/// 0.85-0.97x of a reduce_scatter from 256 KiB (64 KiB messages, one piece
/// either way: 1.00-1.02x); at 4-16 MiB, 4 MiB pieces took 1.09-1.16x the
/// time of 1 MiB ones (all_reduce; reduce_scatter 1.02-1.05x).
inline constexpr std::size_t combine_piece_bytes = std::size_t{1} << 20;

/// From a shared buffer, single copy pays off much earlier: the receiver reads
/// with a plain memcpy, the only cost over chunks is the acknowledgement.
/// Measured with inputs unchanged between calls, which leaves the sender's
/// lines in the receiver's cache; with inputs rewritten before each call
/// (plait-bench --rewrite-inputs) chunks were 1.2-1.4x faster for 32 KiB
/// messages and slower for 128 KiB ones (docs/performance.md, Reductions).
inline constexpr std::size_t window_single_copy_bytes = std::size_t{4} << 10;

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/transport/shm/impl/tuning.ipp"
#endif

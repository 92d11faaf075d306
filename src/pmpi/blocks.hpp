// The v calls' buffers: P blocks, block i being counts[i] elements of a
// datatype at displs[i] extents from the buffer. plait moves them as one
// byte range in rank order; these turn the application's layout into that
// range and back, in place when it already is one (contiguous type,
// displacements the prefix sums of the counts), else through a scratch
// buffer. Each rank does this for its own layout alone, so ranks whose
// displacements differ still all run plait.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <span>
#include <vector>

namespace plait_pmpi {

struct block_layout {
  std::vector<std::size_t> bytes;    ///< each block's bytes
  std::vector<std::size_t> offsets;  ///< each block's offset in the packed range
  std::size_t total = 0;
  bool in_order = false;  ///< the displacements are the prefix sums of the counts
  bool direct = false;    ///< the buffer already is the packed range (at its true_lb)
};

/// The packed form of P blocks of `type`, written over `into`, whose
/// vectors keep their storage: a 64-byte MPI_Alltoallv's four allocations
/// here, with their frees, were about a fifth of its instructions.
void blocks_of(const int* counts, const int* displs, MPI_Datatype type, int P, block_layout& into);

/// This thread's block layouts for a v call's two sides. A served call never
/// nests another on its thread (the library's own MPI calls go to PMPI_*).
struct v_call_blocks {
  block_layout send;
  block_layout recv;
};
v_call_blocks& blocks_of_this_thread() noexcept;

/// The blocks' bytes in rank order: the buffer itself if direct and not
/// `copy`, else packed into `scratch`.
std::span<const std::byte> gather_blocks(const void* buffer, const int* counts, const int* displs, MPI_Datatype type,
                                         const block_layout& layout, std::vector<std::byte>& scratch, bool copy);

/// Where to receive the packed blocks: the buffer itself if direct, else scratch.
std::span<std::byte> receive_blocks(void* buffer, MPI_Datatype type, const block_layout& layout,
                                    std::vector<std::byte>& scratch);

/// Puts received packed blocks in place (nothing to do if direct).
void scatter_blocks(std::span<const std::byte> packed, void* buffer, const int* counts, const int* displs,
                    MPI_Datatype type, const block_layout& layout);

}  // namespace plait_pmpi

// What the environment asks of the PMPI library: per intercepted function,
// serve it with plait, pass it to PMPI, or let the library decide (auto).
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>

namespace plait_pmpi {

/// The MPI functions the library intercepts, in report order.
enum class function : int {
  allgather,
  allgatherv,
  alltoall,
  alltoallv,
  reduce_scatter_block,
  reduce_scatter,
  allreduce,
};
inline constexpr int function_count = 7;

/// "MPI_Allgather", ...
const char* name(function f) noexcept;

enum class mode : int { off = 0, on = 1, automatic = 2 };

struct settings {
  std::array<mode, function_count> modes{};  ///< PLAIT_PMPI, then PLAIT_PMPI_<FUNCTION>
  bool report = false;                       ///< PLAIT_PMPI_REPORT=1: a table at MPI_Finalize
  /// PLAIT_PMPI_RANKS_PER_NODE=k: emulated nodes of k consecutive ranks of
  /// each communicator instead of MPI's shared-memory nodes, so that one
  /// machine exercises the levels between nodes (tests); 0: MPI's nodes.
  int ranks_per_node = 0;
  /// PLAIT_PMPI_ALGORITHM=ring[,bruck...]: the algorithms plait's automatic
  /// may pick in the library's calls (plait::restrict_automatic), as a set
  /// over plait's all_algorithm_ids; 0: automatic's own candidates.
  unsigned algorithms = 0;
  /// PLAIT_PMPI_VIEWS_FROM=bytes: the smallest receive payload (this
  /// rank's) whose datatypes with gaps move as strided views (box_views.hpp);
  /// smaller ones are packed, which costs less than a tensor plan there
  /// (docs/pmpi.md, "Measured"). Local: ranks need not agree.
  std::size_t views_from = 4096;
  /// PLAIT_PMPI_POOL=n: freed communicators' states kept per process for
  /// the next communicator of the same ranks (state.cpp), at most n, the
  /// oldest out first; 0 keeps none. Each holds its node's segment mapped
  /// and its MPI communicators. Local: a state is reused only where every
  /// rank still holds it, so ranks need not agree.
  std::size_t pool_size = 16;
};

/// The largest PLAIT_PMPI_POOL accepted: each pooled state keeps MPI
/// communicators, whose context ids MPI has a few thousand of.
inline constexpr std::size_t most_pooled_states = 1024;

/// Read once from the environment (first call), the same object afterwards.
const settings& current() noexcept;

/// Collective over `world` (called from MPI_Init): ranks launched with
/// different PLAIT_PMPI_* would decide differently and hang, so if any two
/// disagree every rank passes everything to PMPI and rank 0 says why.
/// Then applies the agreed algorithms to plait's automatic.
void agree(MPI_Comm world) noexcept;

}  // namespace plait_pmpi

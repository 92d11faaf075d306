// Counters behind PLAIT_PMPI_REPORT=1: per intercepted function, calls served
// by plait, calls passed to PMPI by reason, and payload bytes of each.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "config.hpp"

namespace plait_pmpi {

/// Why a call went to PMPI, in report order.
enum class reason : int {
  disabled,  ///< PLAIT_PMPI(_<FUNCTION>)=off, or ranks disagreed on the settings
  table,     ///< auto, and no row of the tuning table serves the call with plait
  intercommunicator,
  datatype,      ///< a reduction on a datatype the library does not map to a plait element type
  op,            ///< a user MPI_Op, or a predefined one on a type it does not take
  setup_failed,  ///< plait could not set up on this communicator (every rank alike)
  finalizing,    ///< called after the library's teardown in MPI_Finalize
};
inline constexpr int reason_count = 7;

const char* name(reason r) noexcept;

/// A call served by plait, moving `bytes` (this rank's receive buffer's payload).
void count_served(function f, std::uint64_t bytes, double seconds) noexcept;
/// A call passed to PMPI.
void count_passed(function f, reason why, std::uint64_t bytes) noexcept;

/// A served call whose buffers plait moved as strided views, unpacked (box_views.hpp).
void count_views() noexcept;

/// A communicator's state made: reused from the pool, or built (state.cpp).
void count_state(bool reused) noexcept;

/// Sums every rank's counters on rank 0 of `world` and prints the table
/// there, with the thread level MPI provided, if PLAIT_PMPI_REPORT=1
/// (collective over `world`, from MPI_Finalize).
void print_report(MPI_Comm world) noexcept;

}  // namespace plait_pmpi

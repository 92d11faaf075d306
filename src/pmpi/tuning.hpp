// The tuning table: where, per function, communicator shape and size, a
// tuning run measured plait faster than the MPI the library stands in for.
// PLAIT_PMPI=auto (the default) serves a call with plait only where a row
// says so. A plain text file (docs/pmpi.md, "The tuning table"), read by
// rank 0 of MPI_COMM_WORLD in MPI_Init and broadcast, so every rank decides
// from the same rows.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"

namespace plait_pmpi {

/// One row: calls of `f` on `ranks` ranks over `nodes` nodes (0: any) whose
/// agreed bytes lie in [from_bytes, to_bytes) use plait (or MPI).
struct tuning_row {
  function f = function::allgather;
  int ranks = 0;  ///< 0: any
  int nodes = 0;  ///< 0: any
  std::uint64_t from_bytes = 0;
  std::uint64_t to_bytes = UINT64_MAX;  ///< "-" in the file: no upper bound
  bool plait = false;
};

/// The rows in file order; the first that matches a call decides it.
struct tuning_table {
  std::vector<tuning_row> rows;
  /// Per function, whether some row serves it with plait, and the bytes
  /// its plait rows span, [lowest, highest) (set by parse_tuning_table): a
  /// call outside them passes after two compares rather than a scan.
  std::array<bool, function_count> serving{};
  std::array<std::uint64_t, function_count> lowest{};
  std::array<std::uint64_t, function_count> highest{};

  /// Whether some row could serve `f` with plait: if none does, every call
  /// of `f` passes at once (outright_pass).
  [[nodiscard]] bool may_serve(function f) const noexcept { return serving[static_cast<std::size_t>(f)]; }
  /// Whether some row serves `f` with plait at `agreed_bytes` for some
  /// shape: if none does, the call passes before it looks at its communicator.
  [[nodiscard]] bool may_serve(function f, std::uint64_t agreed_bytes) const noexcept;
  /// Whether a call of `f` with `agreed_bytes` on `ranks` ranks over `nodes` nodes uses plait.
  [[nodiscard]] bool serves(function f, int ranks, int nodes, std::uint64_t agreed_bytes) const noexcept;
};

/// Parses a table's text. Throws std::invalid_argument naming the line at fault.
tuning_table parse_tuning_table(std::string_view text);

/// The table in use: empty (serve nothing) until load_tuning_table has run.
const tuning_table& current_table() noexcept;

/// Collective over `world` (MPI_Init): rank 0 reads PLAIT_PMPI_TABLE, else
/// the file beside the library (default_table_path), and sends its text to
/// every rank; a missing file is an empty table, a malformed one too, with
/// one message from rank 0.
void load_tuning_table(MPI_Comm world) noexcept;

/// "<directory of libplait_pmpi.so>/plait_pmpi_tuning.txt".
std::string default_table_path();

}  // namespace plait_pmpi

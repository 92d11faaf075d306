#include "serve.hpp"

namespace plait_pmpi {

std::optional<reason> outright_pass(function f) noexcept {
  switch (current().modes[static_cast<std::size_t>(f)]) {
    case mode::off: return reason::disabled;
    case mode::automatic: return current_table().may_serve(f) ? std::nullopt : std::optional<reason>(reason::table);
    case mode::on: break;
  }
  return std::nullopt;
}

std::optional<reason> pass_reason(function /*f*/, MPI_Comm comm) noexcept {
  if (finalizing()) return reason::finalizing;
  // No thread level passes: MPI requires the collectives on one communicator
  // to be ordered, and what threads on different communicators share (the
  // report's counters, the state registry, the error class) is thread-safe,
  // so MPI_THREAD_MULTIPLE is served like the other levels (docs/pmpi.md).
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter != 0) return reason::intercommunicator;
  return std::nullopt;
}

bool decided_by_table(function f) noexcept { return current().modes[static_cast<std::size_t>(f)] == mode::automatic; }

std::optional<reason> table_reason(function f, const comm_state& state, std::uint64_t agreed_bytes) noexcept {
  const int nodes = state.levels->node_count();
  if (current_table().serves(f, state.world->size(), nodes, agreed_bytes)) return std::nullopt;
  return reason::table;
}

}  // namespace plait_pmpi

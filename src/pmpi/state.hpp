// plait's state for one MPI communicator: the duplicate plait talks over and
// the node levels built on it (shared memory inside a node, MPI across),
// cached on the communicator with an attribute keyval. Freed communicators'
// states are pooled and reused by the next communicator of the same ranks
// (state.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmpi_mpi.hpp"

namespace plait_pmpi {

struct comm_state {
  MPI_Comm comm = MPI_COMM_NULL;  ///< the application's communicator it is cached on
  std::optional<plait::mpi::communicator> world;
  std::optional<plait::mpi::node_levels> levels;  ///< refers to *world
  bool failed = false;                            ///< set-up failed on every rank alike: pass from now on
  std::vector<int> members;   ///< MPI_COMM_WORLD's rank of each rank of comm, in order (empty: not poolable)
  std::uint64_t pool_id = 0;  ///< the same on every rank that built it together; names it in the pool
};

/// The node's shared-memory group when the communicator lies on one node
/// (it then holds the whole communicator, in its rank order), else null.
inline plait::shm::communicator* node_group(comm_state& state) noexcept {
  return state.levels->node_count() == 1 ? &state.levels->intra() : nullptr;
}

/// Runs `call` with the communicator a served call runs on. On one node
/// (every rank of a single-machine job) that is the node's shared-memory
/// group itself, which holds the whole communicator in its rank order: the
/// node levels would add a second engine and a choice between routes to
/// every call for nothing (measured: a 64-byte MPI_Allgather at P = 2 took
/// 1.5 us through the levels and 0.6 us on the group; docs/pmpi.md).
/// Across nodes, the node levels.
template <class Call>
void on_levels(comm_state& state, Call&& call) {
  if (plait::shm::communicator* node = node_group(state)) {
    call(*node);
  } else {
    call(*state.levels);
  }
}

/// The state of `comm`, made on first use. Collective over `comm`: call it
/// only on a path every rank of `comm` takes for the same call (the serve
/// decision). Threads may call it on different communicators at once
/// (MPI_THREAD_MULTIPLE; each builds its own state, with no lock held).
/// Returns null when set-up failed (every rank alike) or the library is
/// finalizing.
comm_state* state_of(MPI_Comm comm) noexcept;

/// The state this thread last served `comm` on, if no state has been
/// dropped since (a freed communicator's handle may name another one
/// next), else null: local, a few loads. A communicator with one is an
/// intracommunicator that every rank serves on.
comm_state* known_state(MPI_Comm comm) noexcept;

/// Frees every communicator's state (MPI_Finalize, before PMPI_Finalize:
/// MPI never deletes MPI_COMM_WORLD's attributes) and the keyval; later calls
/// pass to PMPI.
void teardown() noexcept;

/// True once teardown() has run.
bool finalizing() noexcept;

}  // namespace plait_pmpi

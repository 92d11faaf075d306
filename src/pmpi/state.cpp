#include "state.hpp"

#include "config.hpp"

#include <chrono>
#include <cstdio>
#include <set>

namespace plait_pmpi {
namespace {

int keyval = MPI_KEYVAL_INVALID;
bool torn_down = false;
// Every live state, so teardown can reach the communicators the application
// never freed (MPI_COMM_WORLD's above all).
std::set<comm_state*>& live() {
  static std::set<comm_state*> states;
  return states;
}

// The delete callback (MPI_Comm_free, MPI_Comm_delete_attr, teardown): the
// plait communicators free their duplicates here, with PMPI.
int delete_state(MPI_Comm, int, void* value, void*) {
  auto* state = static_cast<comm_state*>(value);
  live().erase(state);
  try {
    state->levels.reset();
    state->world.reset();
  } catch (...) {
    // A destructor that fails leaves MPI resources behind; nothing to report
    // to at this point, and no exception may cross into MPI.
  }
  delete state;
  return MPI_SUCCESS;
}

// Builds the levels. All ranks of `comm` are here for the same call; a
// barrier first bounds plait's set-up timeout (PLAIT_TIMEOUT, 300 s) to
// set-up itself rather than to how late a legal program's rank arrives.
void build(comm_state& state) {
  if (PMPI_Barrier(state.comm) != MPI_SUCCESS) throw plait::error(plait::errc::transport, "barrier failed", {});
  state.world.emplace(state.comm);
  // MPI semantics: a rank may legally keep its peers waiting for as long as
  // it likes, so no timeout (and therefore no poisoning by one).
  state.world->set_timeout(std::chrono::hours::max());
  if (const int k = current().ranks_per_node; k > 0) {
    state.levels.emplace(*state.world, state.world->rank() / k);
  } else {
    state.levels.emplace(*state.world);
  }
}

}  // namespace

comm_state* state_of(MPI_Comm comm) noexcept {
  if (torn_down) return nullptr;
  if (keyval == MPI_KEYVAL_INVALID &&
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &keyval, nullptr) != MPI_SUCCESS) {
    return nullptr;
  }
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, keyval, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found != 0) {
    auto* state = static_cast<comm_state*>(value);
    return state->failed ? nullptr : state;
  }
  auto* state = new (std::nothrow) comm_state;
  if (state == nullptr) return nullptr;
  state->comm = comm;
  try {
    build(*state);
  } catch (const std::exception& e) {
    // plait's set-up agrees its verdict over every rank (transport/mpi/
    // setup.hpp), so all ranks fail here together and pass from now on.
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    std::fprintf(stderr, "plait_pmpi: rank %d: set-up on a communicator failed, its calls pass to MPI: %s\n", rank,
                 e.what());
    state->levels.reset();
    state->world.reset();
    state->failed = true;
  }
  live().insert(state);
  if (PMPI_Comm_set_attr(comm, keyval, state) != MPI_SUCCESS) {
    delete_state(comm, keyval, state, nullptr);
    return nullptr;
  }
  return state->failed ? nullptr : state;
}

void teardown() noexcept {
  if (torn_down) return;
  torn_down = true;
  if (keyval == MPI_KEYVAL_INVALID) return;
  while (!live().empty()) {
    comm_state* state = *live().begin();
    // Deleting the attribute runs delete_state, which erases it from live().
    if (PMPI_Comm_delete_attr(state->comm, keyval) != MPI_SUCCESS) delete_state(state->comm, keyval, state, nullptr);
  }
  PMPI_Comm_free_keyval(&keyval);
}

bool finalizing() noexcept { return torn_down; }

}  // namespace plait_pmpi

#include "state.hpp"

#include "config.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>

namespace plait_pmpi {
namespace {

// Under MPI_THREAD_MULTIPLE threads on different communicators reach these
// at once. The lock guards the keyval's creation and the live set, never a
// collective: a rank building one communicator's state while holding it
// could wait for a peer whose thread holds it building another's.
std::mutex registry;
std::atomic<int> keyval{MPI_KEYVAL_INVALID};
std::atomic<bool> torn_down{false};
// Every live state, so teardown can reach the communicators the application
// never freed (MPI_COMM_WORLD's above all). Under `registry`.
std::set<comm_state*>& live() {
  static std::set<comm_state*> states;
  return states;
}

// The delete callback (MPI_Comm_free, MPI_Comm_delete_attr, teardown): the
// plait communicators free their duplicates here, with PMPI.
int delete_state(MPI_Comm, int, void* value, void*) {
  auto* state = static_cast<comm_state*>(value);
  {
    const std::lock_guard<std::mutex> held(registry);
    live().erase(state);
  }
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

// The keyval, created at the first use on any thread; MPI_KEYVAL_INVALID if
// MPI refused.
int the_keyval() noexcept {
  const int known = keyval.load(std::memory_order_acquire);
  if (known != MPI_KEYVAL_INVALID) return known;
  const std::lock_guard<std::mutex> held(registry);
  int made = keyval.load(std::memory_order_relaxed);
  if (made == MPI_KEYVAL_INVALID &&
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &made, nullptr) == MPI_SUCCESS) {
    keyval.store(made, std::memory_order_release);
  }
  return made;
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
  if (torn_down.load(std::memory_order_acquire)) return nullptr;
  const int keyval = the_keyval();
  if (keyval == MPI_KEYVAL_INVALID) return nullptr;
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
  {
    const std::lock_guard<std::mutex> held(registry);
    live().insert(state);
  }
  if (PMPI_Comm_set_attr(comm, keyval, state) != MPI_SUCCESS) {
    delete_state(comm, keyval, state, nullptr);
    return nullptr;
  }
  return state->failed ? nullptr : state;
}

void teardown() noexcept {
  if (torn_down.exchange(true, std::memory_order_acq_rel)) return;
  int key = keyval.load(std::memory_order_acquire);
  if (key == MPI_KEYVAL_INVALID) return;
  for (;;) {
    comm_state* state = nullptr;
    {
      const std::lock_guard<std::mutex> held(registry);
      if (live().empty()) break;
      state = *live().begin();
    }
    // Deleting the attribute runs delete_state, which takes the lock and
    // erases it from live().
    if (PMPI_Comm_delete_attr(state->comm, key) != MPI_SUCCESS) delete_state(state->comm, key, state, nullptr);
  }
  PMPI_Comm_free_keyval(&key);
  keyval.store(MPI_KEYVAL_INVALID, std::memory_order_release);
}

bool finalizing() noexcept { return torn_down.load(std::memory_order_acquire); }

}  // namespace plait_pmpi

#include "state.hpp"

#include "config.hpp"

#include "report.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <random>
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
// Bumped whenever a communicator's state goes away (its delete callback):
// a thread's remembered state is trusted only while this is unchanged, since
// a freed communicator's handle may name a new communicator next.
std::atomic<std::uint64_t> states_dropped{0};

// The state this thread used last: a served call's lookup without the
// attribute lookup and its lock, which cost a small call about as much as
// the rest of the library's decision.
struct remembered_state {
  MPI_Comm comm = MPI_COMM_NULL;
  comm_state* state = nullptr;
  std::uint64_t dropped = 0;
};
thread_local remembered_state last_state;
// Every live state, so teardown can reach the communicators the application
// never freed (MPI_COMM_WORLD's above all). Under `registry`.
std::set<comm_state*>& live() {
  static std::set<comm_state*> states;
  return states;
}

// The pool: states of freed communicators, kept whole (the duplicate, the
// node levels, their shared-memory segment and MPI communicators) for the
// next communicator of the same ranks in the same order. Codes duplicate
// communicators by the hundred, and building a state costs an MPI_Comm_dup,
// three splits, a shared-memory segment created, mapped and attached by
// every rank of a node, and several agreements. At most PLAIT_PMPI_POOL
// states per process (settings::pool_size), oldest out first. Under `registry`.
std::deque<comm_state*>& pool() {
  static std::deque<comm_state*> states;
  return states;
}

// How many candidates a rank offers when a communicator's state is made.
constexpr std::size_t offered = 4;

void destroy(comm_state* state) noexcept {
  try {
    state->levels.reset();
    state->world.reset();
  } catch (...) {
    // A destructor that fails leaves MPI resources behind; nothing to report
    // to at this point, and no exception may cross into MPI.
  }
  delete state;
}

// Whether a state may serve another communicator: built, and nothing failed on it.
bool reusable(const comm_state& state) {
  return !state.failed && !state.members.empty() && state.world && state.levels && state.world->usable() &&
         state.levels->intra().usable() && (state.levels->node_count() == 1 || state.levels->inter().usable());
}

// The delete callback (MPI_Comm_free, MPI_Comm_delete_attr, teardown): the
// state goes to the pool, or (after teardown began, failed, or the pool
// full) the plait communicators free their duplicates here, with PMPI.
int delete_state(MPI_Comm, int, void* value, void*) {
  states_dropped.fetch_add(1, std::memory_order_acq_rel);
  auto* state = static_cast<comm_state*>(value);
  comm_state* evicted = nullptr;
  bool pooled = false;
  {
    const std::lock_guard<std::mutex> held(registry);
    live().erase(state);
    const std::size_t pool_limit = current().pool_size;
    if (pool_limit > 0 && !torn_down.load(std::memory_order_acquire) && reusable(*state)) {
      state->comm = MPI_COMM_NULL;
      pool().push_back(state);
      pooled = true;
      if (pool().size() > pool_limit) {
        evicted = pool().front();
        pool().pop_front();
      }
    }
  }
  if (!pooled) destroy(state);
  // Local: a peer that still pools its copy never finds this one's id again.
  if (evicted != nullptr) destroy(evicted);
  return MPI_SUCCESS;
}

// comm's ranks as MPI_COMM_WORLD's ranks, in comm's order: what a pooled
// state must match. Empty when some rank is not in MPI_COMM_WORLD (spawned
// processes): such states are not pooled.
std::vector<int> members_of(MPI_Comm comm) {
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Group world = MPI_GROUP_NULL;
  std::vector<int> out;
  if (PMPI_Comm_group(comm, &group) == MPI_SUCCESS && PMPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS) {
    int size = 0;
    PMPI_Group_size(group, &size);
    std::vector<int> ranks(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) ranks[static_cast<std::size_t>(r)] = r;
    out.resize(ranks.size());
    if (PMPI_Group_translate_ranks(group, size, ranks.data(), world, out.data()) != MPI_SUCCESS ||
        std::find(out.begin(), out.end(), MPI_UNDEFINED) != out.end()) {
      out.clear();
    }
  }
  if (group != MPI_GROUP_NULL) PMPI_Group_free(&group);
  if (world != MPI_GROUP_NULL) PMPI_Group_free(&world);
  return out;
}

// Up to `offered` pooled states of these members, taken out of the pool so
// that no other thread offers them for another communicator meanwhile.
std::vector<comm_state*> reserve(const std::vector<int>& members) {
  std::vector<comm_state*> taken;
  if (members.empty()) return taken;
  const std::lock_guard<std::mutex> held(registry);
  for (auto it = pool().begin(); it != pool().end() && taken.size() < offered;) {
    if ((*it)->members == members) {
      taken.push_back(*it);
      it = pool().erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

// Puts back what was reserved and not used.
void unreserve(const std::vector<comm_state*>& states) {
  const std::lock_guard<std::mutex> held(registry);
  for (comm_state* state : states) pool().push_back(state);
}

std::uint64_t fresh_id() {
  static std::mutex lock;
  static std::mt19937_64 bits{std::random_device{}()};
  const std::lock_guard<std::mutex> held(lock);
  std::uint64_t id = 0;
  while (id == 0) id = bits();
  return id;
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

// Builds the levels. All ranks of `comm` are here for the same call, and
// have met in the pool's agreement (state_of), which bounds plait's set-up
// timeout (PLAIT_TIMEOUT, 300 s) to set-up itself rather than to how late a
// legal program's rank arrives.
void build(comm_state& state) {
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

// The state for a communicator that has none: a pooled one if every rank
// holds the same, else a new one. The ranks agree (one PMPI_Allgather over
// comm, which every rank reaches for the same call): each offers the ids of
// the pooled states of comm's members it reserved, and rank 0 a fresh id;
// the smallest id every rank offered is reused, else every rank builds a
// state named by rank 0's fresh id. A state is only reused where every rank
// holds it, so threads making states for different communicators at once
// (each reserving its own candidates) never share one.
comm_state* made_for(MPI_Comm comm) {
  std::vector<int> members = members_of(comm);
  std::vector<comm_state*> candidates = reserve(members);
  int size = 0;
  PMPI_Comm_size(comm, &size);
  constexpr std::size_t slots = offered + 1;
  std::uint64_t mine[slots] = {};
  for (std::size_t i = 0; i < candidates.size(); ++i) mine[i] = candidates[i]->pool_id;
  mine[offered] = fresh_id();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size) * slots);
  if (PMPI_Allgather(mine, static_cast<int>(slots), MPI_UINT64_T, all.data(), static_cast<int>(slots), MPI_UINT64_T,
                     comm) != MPI_SUCCESS) {
    unreserve(candidates);
    return nullptr;
  }
  comm_state* chosen = nullptr;
  for (comm_state* c : candidates) {
    bool everywhere = true;
    for (int r = 0; r < size && everywhere; ++r) {
      const std::uint64_t* theirs = all.data() + static_cast<std::size_t>(r) * slots;
      everywhere = std::find(theirs, theirs + offered, c->pool_id) != theirs + offered;
    }
    if (everywhere && (chosen == nullptr || c->pool_id < chosen->pool_id)) chosen = c;
  }
  std::erase(candidates, chosen);
  unreserve(candidates);
  if (chosen != nullptr) {
    chosen->comm = comm;
    count_state(true);
    return chosen;
  }
  auto* state = new (std::nothrow) comm_state;
  if (state == nullptr) return nullptr;
  state->comm = comm;
  state->members = std::move(members);
  state->pool_id = all[offered];  // rank 0's fresh id
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
  count_state(false);
  return state;
}

}  // namespace

comm_state* known_state(MPI_Comm comm) noexcept {
  if (torn_down.load(std::memory_order_acquire)) return nullptr;
  const remembered_state& last = last_state;
  if (last.state == nullptr || last.comm != comm || last.dropped != states_dropped.load(std::memory_order_acquire)) {
    return nullptr;
  }
  return last.state->failed ? nullptr : last.state;
}

comm_state* state_of(MPI_Comm comm) noexcept {
  if (comm_state* known = known_state(comm)) return known;
  if (torn_down.load(std::memory_order_acquire)) return nullptr;
  // Read before the lookup: a state dropped meanwhile leaves this stale, and
  // the next call looks again.
  const std::uint64_t dropped = states_dropped.load(std::memory_order_acquire);
  const auto remember = [&](comm_state* state) -> comm_state* {
    if (state->failed) return nullptr;
    last_state = {comm, state, dropped};
    return state;
  };
  const int keyval = the_keyval();
  if (keyval == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, keyval, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found != 0) return remember(static_cast<comm_state*>(value));
  comm_state* state = nullptr;
  try {
    state = made_for(comm);
  } catch (...) {
    state = nullptr;  // memory: every rank that got this far agreed; one failing here alone would hang its peers
  }
  if (state == nullptr) return nullptr;
  {
    const std::lock_guard<std::mutex> held(registry);
    live().insert(state);
  }
  if (PMPI_Comm_set_attr(comm, keyval, state) != MPI_SUCCESS) {
    delete_state(comm, keyval, state, nullptr);
    return nullptr;
  }
  return remember(state);
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
  std::deque<comm_state*> pooled;
  {
    const std::lock_guard<std::mutex> held(registry);
    pooled.swap(pool());
  }
  for (comm_state* state : pooled) destroy(state);
}

bool finalizing() noexcept { return torn_down.load(std::memory_order_acquire); }

}  // namespace plait_pmpi

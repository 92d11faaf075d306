// Built against an installed plait: one ring all-gather over shm threads,
// checked element by element. Exit status 0 only if every rank got every shard.
#include <atomic>
#include <cstdio>
#include <vector>

#include <plait/plait.hpp>
#include <plait/version.hpp>

static_assert(PLAIT_VERSION >= 100, "plait's version macros are missing or wrong");

int main() {
  constexpr int ranks = 3;
  constexpr int n = 5;
  std::atomic<int> wrong{0};
  plait::shm::run_threads(ranks, [&](plait::shm::communicator& comm) {
    std::vector<int> mine(n, comm.rank() + 1);
    std::vector<int> all(n * comm.size(), -1);
    plait::all_gather<plait::ring>(comm, mine, all);
    for (int i = 0; i < n * comm.size(); ++i) {
      if (all[i] != i / n + 1) wrong.fetch_add(1);
    }
  });
  std::printf("plait %d consumer: %s\n", PLAIT_VERSION, wrong.load() == 0 ? "ok" : "WRONG");
  return wrong.load() == 0 ? 0 : 1;
}

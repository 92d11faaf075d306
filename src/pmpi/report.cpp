#include "report.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>

namespace plait_pmpi {
namespace {

constexpr const char* reason_names[reason_count] = {"disabled", "auto, table",  "intercommunicator", "datatype",
                                                    "op",       "setup failed", "finalizing"};

const char* thread_level_name(int level) noexcept {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "thread level unknown";
  }
}

// Counters: under MPI_THREAD_MULTIPLE threads calling on different
// communicators count at once. Relaxed atomics: each figure is a sum, read
// only in MPI_Finalize, after the program's other threads are done with MPI.
struct counters {
  std::atomic<std::uint64_t> served{0};
  std::atomic<std::uint64_t> served_bytes{0};
  std::atomic<double> served_seconds{0};
  std::atomic<std::uint64_t> passed[reason_count] = {};
  std::atomic<std::uint64_t> passed_bytes{0};
};
counters table[function_count];
// Communicators' states built and reused from the pool.
std::atomic<std::uint64_t> states_built{0};
std::atomic<std::uint64_t> states_reused{0};
// Served calls whose datatypes' gaps plait stepped over itself.
std::atomic<std::uint64_t> views{0};

}  // namespace

const char* name(reason r) noexcept { return reason_names[static_cast<int>(r)]; }

void count_served(function f, std::uint64_t bytes, double seconds) noexcept {
  counters& c = table[static_cast<int>(f)];
  c.served.fetch_add(1, std::memory_order_relaxed);
  c.served_bytes.fetch_add(bytes, std::memory_order_relaxed);
  c.served_seconds.fetch_add(seconds, std::memory_order_relaxed);
}

void count_passed(function f, reason why, std::uint64_t bytes) noexcept {
  counters& c = table[static_cast<int>(f)];
  c.passed[static_cast<int>(why)].fetch_add(1, std::memory_order_relaxed);
  c.passed_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void count_views() noexcept {
  if (current().report) views.fetch_add(1, std::memory_order_relaxed);
}

void count_state(bool reused) noexcept {
  (reused ? states_reused : states_built).fetch_add(1, std::memory_order_relaxed);
}

void print_report(MPI_Comm world) noexcept {
  if (!current().report) return;
  constexpr int per_function = 3 + reason_count;
  constexpr int cells = function_count * per_function + 3;  // then the states built and reused, the views
  std::uint64_t mine[cells];
  double seconds[function_count];
  for (int f = 0; f < function_count; ++f) {
    std::uint64_t* row = mine + f * per_function;
    row[0] = table[f].served.load(std::memory_order_relaxed);
    row[1] = table[f].served_bytes.load(std::memory_order_relaxed);
    row[2] = table[f].passed_bytes.load(std::memory_order_relaxed);
    for (int r = 0; r < reason_count; ++r) row[3 + r] = table[f].passed[r].load(std::memory_order_relaxed);
    seconds[f] = table[f].served_seconds.load(std::memory_order_relaxed);
  }
  mine[cells - 3] = states_built.load(std::memory_order_relaxed);
  mine[cells - 2] = states_reused.load(std::memory_order_relaxed);
  mine[cells - 1] = views.load(std::memory_order_relaxed);
  std::uint64_t sum[cells];
  double max_seconds[function_count];
  int rank = 0;
  int size = 1;
  PMPI_Comm_rank(world, &rank);
  PMPI_Comm_size(world, &size);
  int level = -1;
  PMPI_Query_thread(&level);  // the level provided, however MPI was initialised (Fortran's included)
  if (PMPI_Reduce(mine, sum, cells, MPI_UINT64_T, MPI_SUM, 0, world) != MPI_SUCCESS ||
      PMPI_Reduce(seconds, max_seconds, function_count, MPI_DOUBLE, MPI_MAX, 0, world) != MPI_SUCCESS || rank != 0) {
    return;
  }
  // One write of the whole report (a pipe takes up to 4 KiB at once): the
  // launcher forwards a rank's stdout and stderr separately, and the
  // program's own last lines landed inside the report's lines when it was
  // written a piece at a time.
  char text[4096];
  std::size_t used = 0;
  const auto add = [&](const char* format, auto... values) {
    if (used >= sizeof text) return;
    const int n = std::snprintf(text + used, sizeof text - used, format, values...);
    if (n > 0) used = std::min(sizeof text - 1, used + static_cast<std::size_t>(n));
  };
  add("plait_pmpi report (%d ranks, %s; calls and bytes summed over ranks, time: slowest rank)\n", size,
      thread_level_name(level));
  add("%-26s %10s %14s %10s %10s %14s  %s\n", "function", "served", "served bytes", "served s", "passed",
      "passed bytes", "passed because");
  for (int f = 0; f < function_count; ++f) {
    const std::uint64_t* row = sum + f * per_function;
    std::uint64_t passed = 0;
    for (int r = 0; r < reason_count; ++r) passed += row[3 + r];
    add("%-26s %10llu %14llu %10.3f %10llu %14llu ", name(static_cast<function>(f)),
        static_cast<unsigned long long>(row[0]), static_cast<unsigned long long>(row[1]), max_seconds[f],
        static_cast<unsigned long long>(passed), static_cast<unsigned long long>(row[2]));
    for (int r = 0; r < reason_count; ++r) {
      if (row[3 + r] != 0) add(" %s: %llu", name(static_cast<reason>(r)), static_cast<unsigned long long>(row[3 + r]));
    }
    add("%s", "\n");
  }
  add("communicator states: %llu built, %llu reused from the pool\n", static_cast<unsigned long long>(sum[cells - 3]),
      static_cast<unsigned long long>(sum[cells - 2]));
  add("datatypes with gaps: %llu served calls moved as strided views, unpacked\n",
      static_cast<unsigned long long>(sum[cells - 1]));
  std::fwrite(text, 1, used, stderr);
  std::fflush(stderr);
}

}  // namespace plait_pmpi

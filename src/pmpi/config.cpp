#include "config.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

// restrict_automatic and the algorithms' names; no MPI transport here, so not pmpi_mpi.hpp.
#include "plait/algorithm/automatic.hpp"

namespace plait_pmpi {
namespace {

constexpr const char* function_names[function_count] = {
    "MPI_Allgather",      "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Reduce_scatter_block",
    "MPI_Reduce_scatter", "MPI_Allreduce"};

// The per-function variable is the MPI name upper-cased after "MPI_".
std::string variable_of(function f) {
  std::string v = "PLAIT_PMPI_";
  for (const char* c = name(f) + 4; *c != '\0'; ++c) v += static_cast<char>(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
  return v;
}

// An unknown value is reported and read as off: a typo must not turn plait on.
mode parse(const char* variable, const char* value, mode fallback) {
  if (value == nullptr || *value == '\0') return fallback;
  if (std::strcmp(value, "on") == 0 || std::strcmp(value, "1") == 0) return mode::on;
  if (std::strcmp(value, "off") == 0 || std::strcmp(value, "0") == 0) return mode::off;
  if (std::strcmp(value, "auto") == 0) return mode::automatic;
  std::fprintf(stderr, "plait_pmpi: %s=%s is not on, off or auto; read as off\n", variable, value);
  return mode::off;
}

// A comma-separated list of plait's algorithm names; an unknown name is
// reported and the whole variable ignored (automatic's own choice).
unsigned parse_algorithms(const char* value) {
  if (value == nullptr || *value == '\0') return 0;
  unsigned set = 0;
  std::string_view rest = value;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    const auto id = plait::algorithm_from_string(name);
    if (!id) {
      std::fprintf(stderr, "plait_pmpi: PLAIT_PMPI_ALGORITHM=%s: '%.*s' is not one of plait's algorithms; ignored\n",
                   value, static_cast<int>(name.size()), name.data());
      return 0;
    }
    for (std::size_t i = 0; i < plait::all_algorithm_ids.size(); ++i) {
      if (plait::all_algorithm_ids[i] == *id) set |= 1U << i;
    }
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return set;
}

settings read_environment() {
  settings s;
  const mode all = parse("PLAIT_PMPI", std::getenv("PLAIT_PMPI"), mode::automatic);
  for (int i = 0; i < function_count; ++i) {
    const std::string variable = variable_of(static_cast<function>(i));
    s.modes[static_cast<std::size_t>(i)] = parse(variable.c_str(), std::getenv(variable.c_str()), all);
  }
  const char* report = std::getenv("PLAIT_PMPI_REPORT");
  s.report = report != nullptr && std::strcmp(report, "1") == 0;
  if (const char* k = std::getenv("PLAIT_PMPI_RANKS_PER_NODE"); k != nullptr && *k != '\0') {
    char* end = nullptr;
    const long v = std::strtol(k, &end, 10);
    if (*end != '\0' || v < 0 || v > 1 << 20) {
      std::fprintf(stderr, "plait_pmpi: PLAIT_PMPI_RANKS_PER_NODE=%s is not a rank count; ignored\n", k);
    } else {
      s.ranks_per_node = static_cast<int>(v);
    }
  }
  s.algorithms = parse_algorithms(std::getenv("PLAIT_PMPI_ALGORITHM"));
  if (const char* b = std::getenv("PLAIT_PMPI_VIEWS_FROM"); b != nullptr && *b != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(b, &end, 10);
    if (*end != '\0' || v < 0) {
      std::fprintf(stderr, "plait_pmpi: PLAIT_PMPI_VIEWS_FROM=%s is not a byte count; ignored\n", b);
    } else {
      s.views_from = static_cast<std::size_t>(v);
    }
  }
  if (const char* n = std::getenv("PLAIT_PMPI_POOL"); n != nullptr && *n != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(n, &end, 10);
    if (*end != '\0' || v < 0 || static_cast<unsigned long long>(v) > most_pooled_states) {
      std::fprintf(stderr, "plait_pmpi: PLAIT_PMPI_POOL=%s is not a state count from 0 to %zu; ignored\n", n,
                   most_pooled_states);
    } else {
      s.pool_size = static_cast<std::size_t>(v);
    }
  }
  return s;
}

settings& mutable_current() noexcept {
  static settings s = read_environment();
  return s;
}

}  // namespace

const char* name(function f) noexcept { return function_names[static_cast<int>(f)]; }

const settings& current() noexcept { return mutable_current(); }

void agree(MPI_Comm world) noexcept {
  settings& s = mutable_current();
  constexpr int n = function_count + 3;
  int mine[n];
  for (int i = 0; i < function_count; ++i) mine[i] = static_cast<int>(s.modes[static_cast<std::size_t>(i)]);
  mine[function_count] = s.ranks_per_node;
  mine[function_count + 1] = static_cast<int>(s.algorithms);
  mine[function_count + 2] = s.report ? 1 : 0;
  int low[n];
  int high[n];
  if (PMPI_Allreduce(mine, low, n, MPI_INT, MPI_MIN, world) != MPI_SUCCESS ||
      PMPI_Allreduce(mine, high, n, MPI_INT, MPI_MAX, world) != MPI_SUCCESS) {
    s.modes.fill(mode::off);
    return;
  }
  bool same = true;
  for (int i = 0; i <= function_count + 1; ++i) same = same && low[i] == high[i];
  if (!same) {
    int rank = 0;
    PMPI_Comm_rank(world, &rank);
    if (rank == 0)
      std::fprintf(stderr, "plait_pmpi: ranks see different PLAIT_PMPI_* settings; every call passes to MPI\n");
    s.modes.fill(mode::off);
  }
  s.report = high[function_count + 2] != 0;  // one rank asking is enough: the table is printed by rank 0
  // Only once every rank agrees: ranks restricting differently would choose different algorithms.
  plait::restrict_automatic(same ? s.algorithms : 0);
}

}  // namespace plait_pmpi

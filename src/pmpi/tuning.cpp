#include "tuning.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace plait_pmpi {
namespace {

tuning_table& mutable_table() noexcept {
  static tuning_table table;
  return table;
}

[[noreturn]] void bad_line(int line, const std::string& what) {
  throw std::invalid_argument("line " + std::to_string(line) + ": " + what);
}

// A count or "*" (any), for ranks and nodes.
int parse_shape(const std::string& word, int line, const char* field) {
  if (word == "*") return 0;
  char* end = nullptr;
  const long v = std::strtol(word.c_str(), &end, 10);
  if (*end != '\0' || v < 1 || v > 1 << 24) bad_line(line, std::string(field) + " '" + word + "' is not a count or *");
  return static_cast<int>(v);
}

std::uint64_t parse_bytes(const std::string& word, int line) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(word.c_str(), &end, 10);
  if (word.empty() || word[0] == '-' || *end != '\0') bad_line(line, "'" + word + "' is not a byte count");
  return v;
}

// The text of the table file rank 0 reads; empty if there is none.
std::string read_table_file(std::string& path) {
  const char* chosen = std::getenv("PLAIT_PMPI_TABLE");
  path = chosen != nullptr && *chosen != '\0' ? chosen : default_table_path();
  std::ifstream in(path);
  if (!in) {
    if (chosen != nullptr && *chosen != '\0')
      std::fprintf(stderr, "plait_pmpi: PLAIT_PMPI_TABLE=%s cannot be read; auto serves nothing\n", chosen);
    return {};
  }
  std::ostringstream text;
  text << in.rdbuf();
  // A table is a few hundred lines; anything near MPI's int counts is not one.
  constexpr std::size_t most = std::size_t{1} << 20;
  if (text.str().size() > most) {
    std::fprintf(stderr, "plait_pmpi: the tuning table %s is over 1 MiB; auto serves nothing\n", path.c_str());
    return {};
  }
  return text.str();
}

}  // namespace

bool tuning_table::may_serve(function f, std::uint64_t agreed_bytes) const noexcept {
  const auto i = static_cast<std::size_t>(f);
  if (!serving[i] || agreed_bytes < lowest[i] || agreed_bytes >= highest[i]) return false;
  for (const tuning_row& r : rows) {
    if (r.f == f && r.plait && agreed_bytes >= r.from_bytes && agreed_bytes < r.to_bytes) return true;
  }
  return false;
}

bool tuning_table::serves(function f, int ranks, int nodes, std::uint64_t agreed_bytes) const noexcept {
  for (const tuning_row& r : rows) {
    if (r.f != f || (r.ranks != 0 && r.ranks != ranks) || (r.nodes != 0 && r.nodes != nodes)) continue;
    if (agreed_bytes < r.from_bytes || agreed_bytes >= r.to_bytes) continue;
    return r.plait;
  }
  return false;
}

tuning_table parse_tuning_table(std::string_view text) {
  tuning_table table;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (const std::size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string function_name, ranks, nodes, from, to, use, extra;
    if (!(words >> function_name)) continue;  // blank or comment
    if (!(words >> ranks >> nodes >> from >> to >> use) || (words >> extra)) {
      bad_line(number, "expected six fields: function ranks nodes from_bytes to_bytes plait|mpi");
    }
    tuning_row row;
    bool known = false;
    for (int i = 0; i < function_count; ++i) {
      if (function_name == name(static_cast<function>(i))) {
        row.f = static_cast<function>(i);
        known = true;
      }
    }
    if (!known) bad_line(number, "'" + function_name + "' is not a function the library intercepts");
    row.ranks = parse_shape(ranks, number, "ranks");
    row.nodes = parse_shape(nodes, number, "nodes");
    row.from_bytes = parse_bytes(from, number);
    row.to_bytes = to == "-" ? UINT64_MAX : parse_bytes(to, number);
    if (row.to_bytes <= row.from_bytes) bad_line(number, "the byte range [" + from + ", " + to + ") is empty");
    if (use != "plait" && use != "mpi") bad_line(number, "'" + use + "' is neither plait nor mpi");
    row.plait = use == "plait";
    if (row.plait) {
      const auto i = static_cast<std::size_t>(row.f);
      table.lowest[i] = table.serving[i] ? std::min(table.lowest[i], row.from_bytes) : row.from_bytes;
      table.highest[i] = table.serving[i] ? std::max(table.highest[i], row.to_bytes) : row.to_bytes;
      table.serving[i] = true;
    }
    table.rows.push_back(row);
  }
  return table;
}

const tuning_table& current_table() noexcept { return mutable_table(); }

std::string default_table_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_table_path), &info) == 0 || info.dli_fname == nullptr) {
    return "plait_pmpi_tuning.txt";
  }
  std::string library = info.dli_fname;
  const std::size_t slash = library.rfind('/');
  return (slash == std::string::npos ? std::string(".") : library.substr(0, slash)) + "/plait_pmpi_tuning.txt";
}

void load_tuning_table(MPI_Comm world) noexcept {
  try {
    int rank = 0;
    PMPI_Comm_rank(world, &rank);
    std::string path;
    std::string text;
    if (rank == 0) text = read_table_file(path);
    // Every rank decides from rank 0's rows: ranks reading files of their
    // own could disagree and hang the job.
    unsigned long long length = text.size();
    if (PMPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, world) != MPI_SUCCESS) return;
    text.resize(length);
    if (length > 0 && PMPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, world) != MPI_SUCCESS) return;
    try {
      mutable_table() = parse_tuning_table(text);
    } catch (const std::invalid_argument& e) {
      if (rank == 0)
        std::fprintf(stderr, "plait_pmpi: the tuning table %s is malformed (%s); auto serves nothing\n", path.c_str(),
                     e.what());
      mutable_table() = {};
    }
  } catch (...) {
    mutable_table() = {};  // out of memory: serve nothing rather than fail MPI_Init
  }
}

}  // namespace plait_pmpi

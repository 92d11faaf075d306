// Test harness: run a body on P ranks as threads or as processes, and bring
// each rank's verdict back to the main thread, which does all the asserting
// (Catch2 v2 assertions are not thread-safe, and a forked child's are lost).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include <plait/plait.hpp>

namespace plait_test {

enum class mode { threads, processes };

inline const char* to_string(mode m) { return m == mode::threads ? "threads" : "processes"; }

/// A per-rank verdict area that survives fork: anonymous shared memory.
class verdicts {
 public:
  static constexpr std::size_t capacity = 2048;
  explicit verdicts(int ranks) : ranks_(static_cast<std::size_t>(ranks)) {
    bytes_ = ranks_ * capacity;
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap for verdicts failed");
    base_ = static_cast<char*>(p);
    for (std::size_t r = 0; r < ranks_; ++r) std::strcpy(base_ + r * capacity, "rank did not report");
  }
  verdicts(const verdicts&) = delete;
  verdicts& operator=(const verdicts&) = delete;
  ~verdicts() { munmap(base_, bytes_); }

  void set(int rank, std::string_view text) {
    char* slot = base_ + static_cast<std::size_t>(rank) * capacity;
    const std::size_t n = std::min(text.size(), capacity - 1);
    std::memcpy(slot, text.data(), n);
    slot[n] = '\0';
  }
  [[nodiscard]] std::vector<std::string> all() const {
    std::vector<std::string> out;
    for (std::size_t r = 0; r < ranks_; ++r) out.emplace_back(base_ + r * capacity);
    return out;
  }

 private:
  std::size_t ranks_;
  std::size_t bytes_ = 0;
  char* base_ = nullptr;
};

/// The pids of the rank processes this test process forked, for
/// leaked_objects: a name whose creator has ended counts as this test's leak
/// only when the creator was one of its own ranks. (Tests running alongside
/// leave names of their dead processes on purpose, e.g. a rank killed inside
/// allocate.) Shared anonymous memory mapped before the first fork, so a
/// child's note reaches this process.
class rank_processes {
 public:
  static constexpr std::size_t capacity = 1 << 14;
  static rank_processes& of_this_test() {
    static rank_processes* const all = [] {
      void* p = mmap(nullptr, sizeof(rank_processes), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::runtime_error("mmap for the rank pids failed");
      return new (p) rank_processes();
    }();
    return *all;
  }
  /// Called by a rank process (a no-op in the test process itself).
  void note_this_process() noexcept {
    const std::size_t at = count_.fetch_add(1);
    if (at < capacity) pids_[at] = getpid();
  }
  [[nodiscard]] bool forked(long pid) const noexcept {
    const std::size_t n = std::min<std::size_t>(count_.load(), capacity);
    for (std::size_t i = 0; i < n; ++i) {
      if (pids_[i] == pid) return true;
    }
    return false;
  }

 private:
  std::atomic<std::size_t> count_{0};
  pid_t pids_[capacity] = {};
};

/// For bodies given to plait::shm::run_processes directly (run_ranks does it):
/// marks this rank process as the test's own for leaked_objects.
inline void note_rank_process() { rank_processes::of_this_test().note_this_process(); }

/// Runs fn(comm) -> std::string on P ranks; returns one string per rank, empty
/// when that rank's checks passed. Exceptions from ranks propagate (rethrown
/// by run_threads / run_processes).
template <class Fn>
std::vector<std::string> run_ranks(mode m, int ranks, Fn&& fn) {
  verdicts results(ranks);
  rank_processes& pids = rank_processes::of_this_test();
  auto body = [&](plait::shm::communicator& comm) {
    if (m == mode::processes) pids.note_this_process();
    std::string verdict;
    try {
      verdict = fn(comm);
    } catch (...) {
      results.set(comm.rank(), "rank threw");
      throw;
    }
    results.set(comm.rank(), verdict);
  };
  if (m == mode::threads) {
    plait::shm::run_threads(ranks, body);
  } else {
    plait::shm::run_processes(ranks, body);
  }
  return results.all();
}

/// All verdicts joined, "" when every rank passed (for REQUIRE(... == "")).
inline std::string failures(const std::vector<std::string>& verdicts) {
  std::string out;
  for (std::size_t r = 0; r < verdicts.size(); ++r) {
    if (!verdicts[r].empty()) out += "rank " + std::to_string(r) + ": " + verdicts[r] + "\n";
  }
  return out;
}

/// A 12-byte element type (odd size, no padding).
struct triple {
  std::int32_t a, b, c;
  bool operator==(const triple&) const = default;
};

/// A 3-byte element type: no alignment, a size that is no power of two.
struct three_bytes {
  std::uint8_t a, b, c;
  bool operator==(const three_bytes&) const = default;
};

/// The value of element i of rank r's data, for any element type: distinct per
/// (rank, index, salt) so misplaced blocks are caught.
template <class T>
T make_value(int rank, std::size_t index, int salt = 0) {
  const std::uint64_t v = (static_cast<std::uint64_t>(rank) + 1) * 1000003ULL + index * 7919ULL +
                          static_cast<std::uint64_t>(salt) * 104729ULL;
  if constexpr (std::is_same_v<T, triple>) {
    return triple{static_cast<std::int32_t>(v), static_cast<std::int32_t>(v >> 7), static_cast<std::int32_t>(rank)};
  } else if constexpr (std::is_same_v<T, three_bytes>) {
    return three_bytes{static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8),
                       static_cast<std::uint8_t>(rank)};
  } else {
    return static_cast<T>(v);
  }
}

/// n bytes of a pattern that differs per seed: for point-to-point tests.
inline std::vector<std::byte> pattern(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((i * 131 + static_cast<std::size_t>(seed) * 7) & 0xFF);
  return v;
}

/// First mismatch between got and want, described; "" when equal.
template <class T>
std::string compare(const std::vector<T>& got, const std::vector<T>& want, std::string_view what) {
  if (got.size() != want.size()) {
    return std::string(what) + ": size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i])) return std::string(what) + ": first mismatch at element " + std::to_string(i);
  }
  return {};
}

/// The shared all-gather test body on any transport: n elements per rank,
/// gathered with Algorithm and checked against the serial reference.
template <class T, class Algorithm, class Comm>
std::string gather_and_check(Comm& comm, std::size_t n) {
  std::vector<T> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = make_value<T>(comm.rank(), i);
  std::vector<T> all(n * static_cast<std::size_t>(comm.size()));
  plait::all_gather<Algorithm>(comm, mine, all);
  std::vector<T> want;
  for (int r = 0; r < comm.size(); ++r) {
    for (std::size_t i = 0; i < n; ++i) want.push_back(make_value<T>(r, i));
  }
  return compare(all, want, "all_gather n=" + std::to_string(n));
}

/// The shared all-to-all test body on any transport: n elements per block;
/// element i of the block rank `from` sends to rank `to` is distinct per
/// (from, to, i), so a block delivered to the wrong rank is caught.
template <class T, class Algorithm, class Comm>
std::string exchange_and_check(Comm& comm, std::size_t n) {
  const auto ranks = static_cast<std::size_t>(comm.size());
  auto block_value = [](int from, int to, std::size_t i) { return make_value<T>(from, i, to + 1); };
  std::vector<T> send(n * ranks);
  for (std::size_t j = 0; j < ranks; ++j) {
    for (std::size_t i = 0; i < n; ++i) send[j * n + i] = block_value(comm.rank(), static_cast<int>(j), i);
  }
  std::vector<T> recv(n * ranks);
  plait::all_to_all<Algorithm>(comm, send, recv);
  std::vector<T> want;
  for (std::size_t j = 0; j < ranks; ++j) {
    for (std::size_t i = 0; i < n; ++i) want.push_back(block_value(static_cast<int>(j), comm.rank(), i));
  }
  return compare(recv, want, "all_to_all n=" + std::to_string(n));
}

/// Names of /dev/shm entries that plait created (none may remain after a test).
inline std::vector<std::string> plait_segments();

/// Objects named "<prefix><creator pid>-..." in /dev/shm that this test leaked:
/// the creator is this process or one of the rank processes it forked
/// (objects of tests running alongside are not counted, even when their
/// creator has ended).
inline std::vector<std::string> leaked_objects(std::string_view prefix);

}  // namespace plait_test

#include <filesystem>

inline std::vector<std::string> plait_test::plait_segments() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("plait-", 0) == 0) names.push_back(name);
  }
  return names;
}

#include <cstdlib>

inline std::vector<std::string> plait_test::leaked_objects(std::string_view prefix) {
  std::vector<std::string> leaked;
  for (const std::string& name : plait_segments()) {
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid == static_cast<long>(getpid()) || rank_processes::of_this_test().forked(pid)) {
      leaked.push_back(name);
    }
  }
  return leaked;
}

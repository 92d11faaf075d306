// Helpers for Catch2 tests that run on every rank of an mpirun. Every rank
// runs the same test cases in the same order; a check whose outcome decides
// whether a rank goes on to the next collective must be agreed on by all ranks
// first (PLAIT_REQUIRE_ALL), or the ranks would diverge and wait on each other
// until a timeout.
#pragma once

#include <mpi.h>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace plait_test {

/// This rank and the job's size in MPI_COMM_WORLD.
inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
inline int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// True on every rank when `ok` is true on every rank.
inline bool on_all_ranks(bool ok) {
  int mine = ok ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

/// A byte every test can recompute: the i-th byte that `source` sends with
/// `salt` (a test or message number).
inline std::byte pattern(int source, std::size_t i, int salt = 0) {
  const auto mixed = static_cast<std::uint64_t>(source) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull +
                     static_cast<std::uint64_t>(salt) * 0x94D049BB133111EBull;
  return static_cast<std::byte>((mixed >> 29) ^ (mixed >> 7));
}

inline std::vector<std::byte> pattern_bytes(int source, std::size_t n, int salt = 0) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = pattern(source, i, salt);
  return out;
}

/// Index of the first byte of `got` that differs from what `source` sent, or
/// -1: one comparison instead of a Catch2 assertion per byte.
inline long long first_mismatch(std::span<const std::byte> got, int source, int salt = 0) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != pattern(source, i, salt)) return static_cast<long long>(i);
  }
  return -1;
}

/// MPI_Allgatherv / MPI_Alltoallv displacements of blocks packed in rank order.
inline std::vector<int> packed_displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size());
  int at = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    d[i] = at;
    at += counts[i];
  }
  return d;
}

/// The sum of `counts`.
inline int total(const std::vector<int>& counts) {
  int t = 0;
  for (int c : counts) t += c;
  return t;
}

}  // namespace plait_test

/// REQUIRE that holds only if `condition` holds on every rank, so every rank
/// leaves the test case together. Evaluates `condition` once.
#define PLAIT_REQUIRE_ALL(condition)                          \
  do {                                                        \
    const bool plait_local_ok = static_cast<bool>(condition); \
    CHECK(plait_local_ok);                                    \
    REQUIRE(::plait_test::on_all_ranks(plait_local_ok));      \
  } while (false)

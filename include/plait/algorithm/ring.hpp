// plait::ring — each rank passes blocks to its right neighbour.
//
// all-gather, P-1 steps: in step k rank r sends block (r-k) mod P to r+1 and
// receives block (r-k-1) mod P from r-1. Every rank sends (P-1)·n bytes:
// bandwidth-optimal, latency (P-1)·alpha.
//
// all-to-all, P-1 steps (shifted exchange): in step k rank r sends block
// (r, r+k) to r+k and receives block (r-k, r) from r-k — the ring rotated by k,
// one partner each way per step for every P (pairwise instead swaps with
// r XOR k when P is a power of two). Every rank sends (P-1)·n bytes; latency
// (P-1)·alpha, bandwidth (P-1)·n·beta.
#pragma once

#include <string_view>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// Each rank passes blocks to its right neighbour: P-1 steps, bandwidth-optimal.
struct ring {
  /// Marks ring as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "ring";

  /// Rank `rank`'s all-gather schedule on `size` ranks.
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s;
    const int right = (rank + 1) % size;
    const int left = (rank + size - 1) % size;
    for (int k = 0; k + 1 < size; ++k) {
      s.next_step().send(right, {(rank - k + size) % size}).recv(left, {(rank - k - 1 + 2 * size) % size});
    }
    return s;
  }

  /// Rank `rank`'s all-to-all schedule on `size` ranks (shifted exchange).
  static constexpr schedule plan(op::all_to_all, int rank, int size) {
    schedule s;
    for (int k = 1; k < size; ++k) {
      const int to = (rank + k) % size;
      const int from = (rank - k + size) % size;
      s.next_step()
          .send(to, {op::all_to_all::block(rank, to, size)})
          .recv(from, {op::all_to_all::block(from, rank, size)});
    }
    return s;
  }
};

}  // namespace v0
}  // namespace plait

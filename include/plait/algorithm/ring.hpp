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
//
// reduce-scatter, P-1 steps: in step k rank r sends its partial of block
// (r-k-1) mod P to r+1 and folds the partial of block (r-k-2) mod P arriving
// from r-1 into its own contribution; it ends with block r combined. Block b's
// partial runs b+1, b+2, ... around the ring, so it wraps past rank P-1:
// commutative reductions only (fold_order::any). Every rank sends (P-1)·n
// bytes (n = one block, 1/P of the data) and combines (P-1)·n.
//
// all-reduce: that reduce-scatter, then the all-gather above of the combined
// blocks: 2(P-1) steps, 2(P-1)·n bytes sent per rank; each block is combined
// once, on one rank, so every rank holds the same bits.
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

  /// Rank `rank`'s reduce-scatter schedule on `size` ranks (commutative reductions).
  template <op::fold_order Order>
  requires(Order == op::fold_order::any) static constexpr schedule plan(op::reduce_scatter<Order>, int rank, int size) {
    schedule s;
    reduce_scatter_steps(s, rank, size);
    return s;
  }

  /// Rank `rank`'s all-reduce schedule on `size` ranks: reduce-scatter, then all-gather.
  template <op::fold_order Order>
  requires(Order == op::fold_order::any) static constexpr schedule plan(op::all_reduce<Order>, int rank, int size) {
    schedule s;
    reduce_scatter_steps(s, rank, size);
    for (const step& gather : plan(op::all_gather{}, rank, size).steps) s.steps.push_back(gather);
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

 private:
  static constexpr void reduce_scatter_steps(schedule& s, int rank, int size) {
    const int right = (rank + 1) % size;
    const int left = (rank + size - 1) % size;
    for (int k = 0; k + 1 < size; ++k) {
      s.next_step()
          .send(right, {(rank - k - 1 + 2 * size) % size})
          .recv(left, {(rank - k - 2 + 2 * size) % size}, fold::from_left);
    }
  }
};

}  // namespace v0
}  // namespace plait

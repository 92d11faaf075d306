// plait::chain — the reductions' pipelined chain: every block's partial runs
// through the ranks in order, 0 -> 1 -> ... -> P-1, each rank folding its own
// contribution in on the right, so every block is the exact left fold
// ((x0 op x1) op x2) ... op x(P-1) (every fold order, plait::ordered included).
//
// The blocks follow each other down the chain: at step t rank r sends its
// partial of block t-r to r+1 and receives block t-r+1 from r-1, so the
// chain is full after P-1 steps and every block is through after 2P-2.
// reduce-scatter: rank P-1 then sends each combined block b to rank b (a
// step after it completes it). all-reduce: rank P-1 sends each combined block
// to every other rank instead.
//
// Steps: the chain takes 2P-1 rounds end to end; rank 0 posts P of them,
// rank P-1 P (reduce-scatter) or P+1 (all-reduce), the others up to P+1.
// Bytes sent per rank r < P-1: P·n (n = one block, 1/P of the data); rank
// P-1 sends (P-1)·n (reduce-scatter) or (P-1)·P·n (all-reduce: P-1 copies
// of the whole result, the price of one root). For plait::ordered on large
// data at small P; direct is the other ordered choice.
#pragma once

#include <string_view>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// Blocks pipelined through the ranks in rank order: the exact left fold.
struct chain {
  /// Marks chain as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "chain";

  /// Rank `rank`'s reduce-scatter schedule on `size` ranks (every fold order).
  template <op::fold_order Order>
  static constexpr schedule plan(op::reduce_scatter<Order>, int rank, int size) {
    return chained(rank, size, false);
  }

  /// Rank `rank`'s all-reduce schedule on `size` ranks (every fold order).
  template <op::fold_order Order>
  static constexpr schedule plan(op::all_reduce<Order>, int rank, int size) {
    return chained(rank, size, true);
  }

 private:
  static constexpr schedule chained(int rank, int size, bool to_everyone) {
    schedule s;
    const int last = size - 1;
    for (int t = 0; t + 1 < 2 * size; ++t) {
      step current;
      const int passing = t - rank;  // the block this rank passes on at t
      if (rank < last && passing >= 0 && passing < size) current.send(rank + 1, {passing});
      const int arriving = t - rank + 1;  // the block rank - 1 passes on at t
      if (rank > 0 && arriving >= 0 && arriving < size) current.recv(rank - 1, {arriving}, fold::from_left);
      // Rank `last` completes block b at step b + last - 1 and sends it on at the next.
      const int done = t - last;
      if (done >= 0 && done < size) {
        if (rank == last) {
          for (int d = 0; d < last; ++d) {
            if (to_everyone || d == done) current.send(d, {done});
          }
        } else if (to_everyone || rank == done) {
          current.recv(last, {done});
        }
      }
      if (!current.sends.empty() || !current.recvs.empty()) s.steps.push_back(current);
    }
    return s;
  }
};

}  // namespace v0
}  // namespace plait

// plait::recursive_halving — partners at distance P/2, P/4, ..., 1 each keep
// half of what they still reduce and fold the partner's contribution to it
// (Thakur, Rabenseifner and Gropp 2005).
//
// reduce-scatter. For P a power of two: lg P steps; in step s rank r sends
// r XOR (P >> (s+1)) the half of its remaining blocks that the partner keeps
// and folds the arriving half into its own. Bytes sent per rank: (P-1)·n
// (n = one block), the same as ring in lg P steps instead of P-1; each block
// is combined (P-1) times in all, lg P times on the rank that ends with it.
//
// all-reduce (Rabenseifner): that reduce-scatter, then a recursive-doubling
// all-gather of the combined blocks back along the same pairs in reverse
// order: 2 lg P steps, 2(P-1)·n bytes sent per rank; each block is combined
// on one rank and its bits copied to the others.
//
// Any other P = p2 + rem (p2 the largest power of two below P): ranks 2i+1
// (i < rem) first hand all their contributions to 2i, the p2 remaining ranks
// run the power-of-two algorithm over groups of blocks (rank 2i stands for
// blocks 2i and 2i+1), and 2i finally sends 2i+1 its block (reduce-scatter)
// or the whole result (all-reduce): two more steps, and N = P·n more bytes
// sent by each extra rank (and, for the all-reduce, by its partner).
//
// Fold orders. Partners at distance P/2 first keep every half a contiguous
// run of blocks, but a partial then covers ranks r, r + P/2, ...: commutative
// reductions only. For associative ones kept in rank order the same exchange
// runs with the distances in the other order, 1, 2, ..., P/2: a partial then
// always covers an aligned run of consecutive ranks and the lower run goes on
// the left; the halves interleave (blocks whose low bits match the rank's).
// Never the exact left fold.
//
// Every message carries one block (a step sends a partner up to P/2 of
// them): the same bytes and steps, and neither staging nor packing.
#pragma once

#include <string_view>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// Recursive halving: reduce-scatter in lg P steps at ring's bytes; all-reduce
/// by Rabenseifner's reduce-scatter then all-gather (commutative and rank-order reductions).
struct recursive_halving {
  /// Marks recursive_halving as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "recursive_halving";
  /// Plain automatic leaves it out: measured on 2 oversubscribed cores at
  /// P = 4 and 8 its wins over ring and direct were within the noise
  /// (docs/algorithms.md, "Choosing"). An automatic_with<Tuning> whose
  /// allows() takes it in chooses it by the cost model.
  static constexpr bool automatic_candidate = false;

  /// Rank `rank`'s reduce-scatter schedule on `size` ranks (not plait::ordered).
  template <op::fold_order Order>
  requires(Order != op::fold_order::left) static constexpr schedule
      plan(op::reduce_scatter<Order>, int rank, int size) {
    return halving(rank, size, Order == op::fold_order::any, false);
  }

  /// Rank `rank`'s all-reduce schedule on `size` ranks (not plait::ordered).
  template <op::fold_order Order>
  requires(Order != op::fold_order::left) static constexpr schedule plan(op::all_reduce<Order>, int rank, int size) {
    return halving(rank, size, Order == op::fold_order::any, true);
  }

 private:
  /// The schedule of both operations: the fold-in of the extra ranks, the
  /// halving, for an all-reduce the doubling back, then the fold-out.
  /// `contiguous`: distances P/2 first (runs of blocks; commutative only),
  /// else 1 first (rank order kept).
  static constexpr schedule halving(int rank, int size, bool contiguous, bool all_reduce) {
    schedule s;
    int p2 = 1;
    while (p2 * 2 <= size) p2 *= 2;
    const int rem = size - p2;
    const std::vector<int> everything = matching(0, 0, p2, rem);
    if (rank < 2 * rem && rank % 2 == 1) {  // an extra rank: hands everything over, takes its result back
      exchange(s.next_step(), rank - 1, everything, {}, fold::none);
      exchange(s.next_step(), rank - 1, {}, all_reduce ? everything : std::vector<int>{rank}, fold::none);
      return s;
    }
    if (rank < 2 * rem) exchange(s.next_step(), rank + 1, {}, everything, fold::from_right);
    // Virtual rank v stands for ranks 2v, 2v+1 (v < rem) or v + rem: virtual
    // ranks in order cover real ranks in order.
    const int v = rank < 2 * rem ? rank / 2 : rank - rem;
    const auto real = [rem](int u) { return u < rem ? 2 * u : u + rem; };
    const auto distance = [contiguous, p2](int step) { return contiguous ? p2 >> (step + 1) : 1 << step; };
    int steps = 0;
    while ((1 << steps) < p2) ++steps;
    int settled = 0;  // the bits of v the blocks this rank still reduces agree on
    for (int t = 0; t < steps; ++t) {
      const int u = v ^ distance(t);
      settled |= distance(t);
      exchange(s.next_step(), real(u), matching(u, settled, p2, rem), matching(v, settled, p2, rem),
               u < v ? fold::from_left : fold::from_right);
    }
    if (all_reduce) {
      for (int t = steps - 1; t >= 0; --t) {  // the same pairs back: each swaps all it holds
        const int u = v ^ distance(t);
        exchange(s.next_step(), real(u), matching(v, settled, p2, rem), matching(u, settled, p2, rem), fold::none);
        settled &= ~distance(t);
      }
    }
    if (rank < 2 * rem) {
      exchange(s.next_step(), rank + 1, all_reduce ? everything : std::vector<int>{rank + 1}, {}, fold::none);
    }
    return s;
  }

  /// Sends `out` to `peer` and receives `in` from it, one message per block:
  /// the fold run gathers a message of several blocks through staging, which
  /// measured 2.5x slower than these messages at 1-4 MiB all-reduces (P = 4).
  static constexpr void exchange(step& st, int peer, const std::vector<int>& out, const std::vector<int>& in,
                                 fold arrival) {
    for (int b : out) st.send(peer, {b});
    for (int b : in) st.recv(peer, {b}, arrival);
  }

  /// The blocks of the virtual ranks that agree with `v` on the bits of
  /// `mask`, in increasing order (virtual rank u < rem holds blocks 2u, 2u+1).
  static constexpr std::vector<int> matching(int v, int mask, int p2, int rem) {
    std::vector<int> blocks;
    for (int u = 0; u < p2; ++u) {
      if (((u ^ v) & mask) != 0) continue;
      if (u < rem) {
        blocks.push_back(2 * u);
        blocks.push_back(2 * u + 1);
      } else {
        blocks.push_back(u + rem);
      }
    }
    return blocks;
  }
};

}  // namespace v0
}  // namespace plait

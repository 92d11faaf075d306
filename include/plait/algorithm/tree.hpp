// plait::tree — binomial gather to rank 0, then binomial broadcast from rank 0:
// the textbook gather + broadcast composition of an all-gather.
//
// all-gather, 2·ceil(lg P) steps on rank 0 (fewer on the others). Gather: in
// round m = 1, 2, 4, ... rank r with bit m set sends its subtree's blocks
// [r, r+m) to r-m and is done; the others receive [r+m, r+2m) from r+m.
// Broadcast: the same tree top-down; rank q (lowest set bit m) receives from
// q-m every block except the subtree [q, q+m) it already holds.
//
// Cost on the critical path (rank 0): latency 2·ceil(lg P)·alpha; rank 0
// receives (P-1)·n bytes and sends about (P·lg P - P + 1)·n bytes (each child
// gets nearly the whole result), so the bandwidth term is ~P·lg P·n·beta —
// lg P times ring's. Bytes on the wire in total: (P-1)·n (gather) plus
// ~(P·lg P / 2)·n (broadcast). Worth it only for tiny messages on links where
// a root is cheap to reach; automatic rarely picks it.
//
// all-reduce: binomial reduce to rank 0 (in round m rank r with bit m set
// sends its subtree's partial of all blocks to r-m; the others fold the
// partial of [r+m, r+2m) arriving from r+m on their right, so every partial
// covers consecutive ranks in order: commutative reductions and associative
// ones in rank order), then the binomial broadcast of the result from rank 0.
// 2·ceil(lg P) steps on rank 0; rank 0 receives and sends ceil(lg P)·N bytes
// for data of N bytes.
// reduce-scatter: the same reduce, then rank 0 sends block d to rank d
// (P-1 messages of n bytes from the root, one step).
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// Binomial gather to rank 0, then binomial broadcast: for tiny messages on high-latency links.
struct tree {
  /// Marks tree as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "tree";

  /// Rank `rank`'s all-reduce schedule on `size` ranks (not plait::ordered).
  template <op::fold_order Order>
  requires(Order != op::fold_order::left) static constexpr schedule plan(op::all_reduce<Order>, int rank, int size) {
    schedule s;
    reduce_to_root(s, rank, size);
    const std::vector<int> everything = range(0, size);
    int top = 1;
    while (top < size) top <<= 1;
    for (int mask = top >> 1; mask >= 1; mask >>= 1) {
      if (rank % (2 * mask) == 0) {
        if (rank + mask < size) s.next_step().send(rank + mask, everything);
      } else if (rank % (2 * mask) == mask) {
        s.next_step().recv(rank - mask, everything);
      }
    }
    return s;
  }

  /// Rank `rank`'s reduce-scatter schedule on `size` ranks (not plait::ordered).
  template <op::fold_order Order>
  requires(Order != op::fold_order::left) static constexpr schedule
      plan(op::reduce_scatter<Order>, int rank, int size) {
    schedule s;
    reduce_to_root(s, rank, size);
    if (size == 1) return s;
    if (rank == 0) {
      step& scatter = s.next_step();
      for (int d = 1; d < size; ++d) scatter.send(d, {d});
    } else {
      s.next_step().recv(0, {rank});
    }
    return s;
  }

  /// Rank `rank`'s all-gather schedule on `size` ranks.
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s;
    // Gather: a rank owns the subtree [rank, rank + lowbit(rank)) once its
    // children have reported, then hands it to its parent.
    for (int mask = 1; mask < size; mask <<= 1) {
      if ((rank & mask) != 0) {
        s.next_step().send(rank - mask, range(rank, std::min(rank + mask, size)));
        break;
      }
      if (rank + mask < size) {
        s.next_step().recv(rank + mask, range(rank + mask, std::min(rank + 2 * mask, size)));
      }
    }
    // Broadcast: a child already holds its own subtree, so it receives only
    // the complement (a rank never receives a block twice).
    int top = 1;
    while (top < size) top <<= 1;
    for (int mask = top >> 1; mask >= 1; mask >>= 1) {
      if (rank % (2 * mask) == 0) {
        if (rank + mask < size) {
          s.next_step().send(rank + mask, all_but(rank + mask, std::min(rank + 2 * mask, size), size));
        }
      } else if (rank % (2 * mask) == mask) {
        s.next_step().recv(rank - mask, all_but(rank, std::min(rank + mask, size), size));
      }
    }
    return s;
  }

 private:
  /// Binomial reduce of every block to rank 0, lower subtrees on the left.
  static constexpr void reduce_to_root(schedule& s, int rank, int size) {
    const std::vector<int> everything = range(0, size);
    for (int mask = 1; mask < size; mask <<= 1) {
      if ((rank & mask) != 0) {
        s.next_step().send(rank - mask, everything);
        break;
      }
      if (rank + mask < size) s.next_step().recv(rank + mask, everything, fold::from_right);
    }
  }
  static constexpr std::vector<int> range(int first, int last) {
    std::vector<int> blocks;
    for (int b = first; b < last; ++b) blocks.push_back(b);
    return blocks;
  }
  /// Blocks [0, size) without [first, last), in increasing order.
  static constexpr std::vector<int> all_but(int first, int last, int size) {
    std::vector<int> blocks;
    for (int b = 0; b < size; ++b) {
      if (b < first || b >= last) blocks.push_back(b);
    }
    return blocks;
  }
};

}  // namespace v0
}  // namespace plait

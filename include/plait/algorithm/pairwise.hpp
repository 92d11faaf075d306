// plait::pairwise — in each of P-1 steps every rank exchanges with one partner.
//
// The partner in step k is r XOR k when P is a power of two (both directions
// of a pair share the step), otherwise rank r sends to r+k and receives from
// r-k (shifted exchange). Each step moves one block each way; every rank sends
// (P-1)·n bytes in P-1 steps.
#pragma once

#include <string_view>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// P-1 steps, one partner each: r XOR k for P a power of two, else shifted exchange.
struct pairwise {
  /// Marks pairwise as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "pairwise";
  /// Every block goes straight from its source to its destination: no rank
  /// forwards a block it neither sent nor keeps, so an all_to_all_v needs no
  /// rank to know the sizes of other ranks' blocks (op/uneven.hpp; checked
  /// against the schedules by tests/test_schedules.cpp).
  static constexpr bool forwards_blocks = false;

  /// The ranks rank r sends to and receives from in step k (1 <= k < size).
  struct partners {
    /// The rank sent to.
    int to;
    /// The rank received from.
    int from;
  };
  /// Rank `rank`'s partners in step k of `size` ranks.
  static constexpr partners partner(int rank, int size, int k) {
    if ((size & (size - 1)) == 0) return {rank ^ k, rank ^ k};
    return {(rank + k) % size, (rank - k + size) % size};
  }

  /// all-gather: P-1 exchanges of the ranks' own shards.
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s;
    for (int k = 1; k < size; ++k) {
      const auto p = partner(rank, size, k);
      s.next_step().send(p.to, {rank}).recv(p.from, {p.from});
    }
    return s;
  }

  /// all-to-all: in step k, block (r, to) goes to `to`, block (from, r) comes from `from`.
  static constexpr schedule plan(op::all_to_all, int rank, int size) {
    schedule s;
    for (int k = 1; k < size; ++k) {
      const auto p = partner(rank, size, k);
      s.next_step()
          .send(p.to, {op::all_to_all::block(rank, p.to, size)})
          .recv(p.from, {op::all_to_all::block(p.from, rank, size)});
    }
    return s;
  }
};

}  // namespace v0
}  // namespace plait

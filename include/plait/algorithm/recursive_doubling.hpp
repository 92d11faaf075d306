// plait::recursive_doubling — ranks pair up at distance 1, 2, 4, ... and swap
// everything they have gathered so far.
//
// all-gather. For P a power of two: lg P steps; in step k rank r exchanges the
// 2^k blocks of its aligned group with r XOR 2^k. Bytes sent per rank:
// (P-1)·n; latency lg P·alpha, bandwidth (P-1)·n·beta.
// Any other P = p2 + rem (p2 the largest power of two below P): each extra rank
// p2+i first hands its block to rank i, the p2 ranks run the power-of-two
// exchange carrying the extras' blocks along, then rank i sends rank p2+i
// everything else. lg p2 + 2 steps on ranks below rem; the extra phase costs
// 2·alpha plus (P-1)·n·beta for the pairs involved, so the bandwidth term is
// ~2·(P-1)·n·beta on the critical path.
//
// all-reduce (commutative reductions, and associative ones in rank order: a
// partial always covers a run of consecutive ranks, and the lower run goes on
// the left, so both partners compute the same bits). For P a power of two:
// lg P steps; in step k rank r swaps all it holds with r XOR 2^k and folds.
// Bytes sent per rank: lg P·N for data of N bytes; latency lg P·alpha, the
// choice for small data. Any other P = p2 + rem: ranks 2i+1 (i < rem) first
// hand everything to 2i, the p2 remaining ranks run the exchange, then 2i
// sends 2i+1 the result: two more steps and 2N more bytes on those pairs.
#pragma once

#include <string_view>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// Pairs at distance 1, 2, 4, ... swap all they hold; any P (extras fold in first and out last).
struct recursive_doubling {
  /// Marks recursive_doubling as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "recursive_doubling";

  /// Rank `rank`'s all-reduce schedule on `size` ranks (not plait::ordered:
  /// its partials are combined pairwise, not folded one rank at a time).
  template <op::fold_order Order>
  requires(Order != op::fold_order::left) static constexpr schedule plan(op::all_reduce<Order>, int rank, int size) {
    schedule s;
    int p2 = 1;
    while (p2 * 2 <= size) p2 *= 2;
    const int rem = size - p2;
    const std::vector<int> everything = all_but(-1, size);
    if (rank < 2 * rem && rank % 2 == 1) {  // hands its data to rank - 1, then takes the result
      s.next_step().send(rank - 1, everything);
      s.next_step().recv(rank - 1, everything);
      return s;
    }
    if (rank < 2 * rem) s.next_step().recv(rank + 1, everything, fold::from_right);
    // Virtual rank v stands for ranks 2v, 2v+1 (v < rem) or v + rem: runs in rank order.
    const int virtual_rank = rank < 2 * rem ? rank / 2 : rank - rem;
    const auto real = [rem](int v) { return v < rem ? 2 * v : v + rem; };
    for (int mask = 1; mask < p2; mask <<= 1) {
      const int partner = virtual_rank ^ mask;
      s.next_step()
          .send(real(partner), everything)
          .recv(real(partner), everything, partner < virtual_rank ? fold::from_left : fold::from_right);
    }
    if (rank < 2 * rem) s.next_step().send(rank + 1, everything);
    return s;
  }

  /// Rank `rank`'s all-gather schedule on `size` ranks.
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s;
    int p2 = 1;
    while (p2 * 2 <= size) p2 *= 2;
    const int rem = size - p2;
    if (rank >= p2) {
      // An extra rank only hands over its shard and collects the result.
      s.next_step().send(rank - p2, {rank});
      s.next_step().recv(rank - p2, all_but(rank, size));
      return s;
    }
    if (rank < rem) s.next_step().recv(rank + p2, {rank + p2});
    for (int mask = 1; mask < p2; mask <<= 1) {
      const int partner = rank ^ mask;
      s.next_step()
          .send(partner, group(rank & ~(mask - 1), mask, p2, size))
          .recv(partner, group(partner & ~(mask - 1), mask, p2, size));
    }
    if (rank < rem) s.next_step().send(rank + p2, all_but(rank + p2, size));
    return s;
  }

 private:
  /// The blocks a group of `width` ranks starting at `first` holds: its own
  /// shards, then those of the extra ranks it stands in for.
  static constexpr std::vector<int> group(int first, int width, int p2, int size) {
    std::vector<int> blocks;
    for (int b = first; b < first + width; ++b) blocks.push_back(b);
    for (int b = first; b < first + width; ++b) {
      if (b + p2 < size) blocks.push_back(b + p2);
    }
    return blocks;
  }
  static constexpr std::vector<int> all_but(int skip, int size) {
    std::vector<int> blocks;
    for (int b = 0; b < size; ++b) {
      if (b != skip) blocks.push_back(b);
    }
    return blocks;
  }
};

}  // namespace v0
}  // namespace plait

// plait::neighbor_exchange — Chen et al.'s neighbour exchange all-gather: each
// rank only ever talks to its two ring neighbours, two blocks at a time.
//
// all-gather, even P only (and P = 1), P/2 steps. Ranks pair up (2i, 2i+1).
// Step 0: each pair swaps shards. Step i >= 1: every rank forwards the pair of
// blocks it received last to the neighbour it did not receive them from,
// alternating between its right and left neighbour, and receives a new pair
// from that neighbour. Bytes sent per rank: (P-1)·n — n in step 0, 2n after —
// so latency P/2·alpha (half of ring's), bandwidth (P-1)·n·beta.
// An odd P has no such pairing: accepts() is false and plan() throws
// errc::unsupported, and automatic never picks it then.
#pragma once

#include <string_view>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// Chen et al.'s neighbour-exchange all-gather: P/2 steps with the two ring neighbours, for even P.
struct neighbor_exchange {
  /// Marks neighbor_exchange as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "neighbor_exchange";

  /// True for P = 1 and even P; an odd P has no pairing.
  static constexpr bool accepts(op::all_gather, int size) { return size == 1 || (size >= 2 && size % 2 == 0); }

  /// Rank `rank`'s all-gather schedule on `size` ranks; throws errc::unsupported for odd size.
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    if (!accepts(op::all_gather{}, size)) {
      throw error(errc::unsupported, "neighbor_exchange all_gather needs an even number of ranks (or 1)");
    }
    schedule s;
    if (size == 1) return s;
    const bool even = rank % 2 == 0;
    const int right = (rank + 1) % size;
    const int left = (rank - 1 + size) % size;
    // neighbor[0] is the pair partner; the two directions alternate by step parity.
    const int neighbor[2] = {even ? right : left, even ? left : right};
    const int offset[2] = {even ? 2 : -2, even ? -2 : 2};
    int pair_from[2] = {even ? rank : left, even ? rank : left};

    s.next_step().send(neighbor[0], {rank}).recv(neighbor[0], {neighbor[0]});
    int send_from = even ? rank : left;  // first block of the pair sent next
    for (int i = 1; i < size / 2; ++i) {
      const int p = i % 2;
      pair_from[p] = (pair_from[p] + offset[p] + size) % size;
      s.next_step().send(neighbor[p], {send_from, send_from + 1}).recv(neighbor[p], {pair_from[p], pair_from[p] + 1});
      send_from = pair_from[p];
    }
    return s;
  }
};

}  // namespace v0
}  // namespace plait

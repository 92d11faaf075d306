// plait::bruck — Bruck et al.'s dissemination algorithms: ceil(lg P) steps for
// any P, each rank talking to the ranks at distance 2^k.
//
// all-gather, ceil(lg P) steps: before step k rank r holds blocks
// r, r+1, ..., r+2^k-1 (mod P); it sends the first min(2^k, P-2^k) of them to
// r-2^k and receives as many from r+2^k. Bytes sent per rank: (P-1)·n;
// latency ceil(lg P)·alpha, bandwidth (P-1)·n·beta. The classic "final
// rotation" is implicit: blocks carry their identity, so the executor places
// every received block at its final slot.
//
// all-to-all, ceil(lg P) steps: block (s, d) must travel (d-s) mod P to the
// right; in step k every block whose distance has bit k set moves 2^k further.
// Rank r sends to r+2^k the blocks it currently relays, a non-contiguous set
// of about P/2 blocks (packed by the executor), and receives as many from
// r-2^k. Blocks in transit live in executor scratch. Bytes sent per rank:
// about (P/2)·ceil(lg P)·n; latency ceil(lg P)·alpha. The short-message
// all-to-all: few steps for lg P times the bytes of pairwise.
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// Bruck's dissemination algorithms: ceil(lg P) steps for any P (all-gather and all-to-all).
struct bruck {
  /// Marks bruck as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "bruck";

  /// Rank `rank`'s all-gather schedule on `size` ranks.
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s;
    for (int dist = 1; dist < size; dist <<= 1) {
      const int count = std::min(dist, size - dist);
      const int from = (rank + dist) % size;
      std::vector<int> out;
      std::vector<int> in;
      for (int i = 0; i < count; ++i) {
        out.push_back((rank + i) % size);
        in.push_back((from + i) % size);
      }
      s.next_step().send((rank - dist + size) % size, std::move(out)).recv(from, std::move(in));
    }
    return s;
  }

  /// Rank `rank`'s all-to-all schedule on `size` ranks (relayed blocks are packed).
  static constexpr schedule plan(op::all_to_all, int rank, int size) {
    schedule s;
    for (int dist = 1; dist < size; dist <<= 1) {
      const int to = (rank + dist) % size;
      const int from = (rank - dist + size) % size;
      std::vector<int> out;
      std::vector<int> in;
      // A block at distance i has already moved (i mod dist) — the lower bits
      // of i — so the one rank r relays now started at r - (i mod dist).
      for (int i = dist; i < size; ++i) {
        if ((i & dist) == 0) continue;
        const int moved = i & (dist - 1);
        const int source_out = (rank - moved + size) % size;
        const int source_in = (from - moved + size) % size;
        out.push_back(op::all_to_all::block(source_out, (source_out + i) % size, size));
        in.push_back(op::all_to_all::block(source_in, (source_in + i) % size, size));
      }
      s.next_step().send(to, std::move(out)).recv(from, std::move(in));
    }
    return s;
  }
};

}  // namespace v0
}  // namespace plait

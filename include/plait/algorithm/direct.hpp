// plait::direct — every rank talks to every other rank directly.
//
// all-gather, 1 step: rank r posts its shard to all P-1 peers and P-1
// receives at once. Bytes sent per rank: (P-1)·n; latency alpha plus
// 2·(P-1) message overheads, bandwidth (P-1)·n·beta — if the transport really
// overlaps the messages. Good for small P and fast, fully connected links.
//
// all-to-all, throttled: posting P-1 sends and receives at once floods large
// groups (every rank hammers the same few peers, buffers pile up), so the
// exchange runs in ceil((P-1)/W) steps with at most W = direct::max_in_flight
// (8) peers each way per step; step j covers the offsets j·W+1 .. (j+1)·W:
// rank r sends block (r, r+k) to r+k and receives block (r-k, r) from r-k.
// Bytes sent per rank: (P-1)·n; latency ceil((P-1)/8)·alpha.
//
// reduce-scatter, 1 step: rank r sends its contribution to block d to rank d
// for every d != r, and folds the P-1 arriving contributions to block r with
// its own in rank order: x0, then x1, ... (its own at its place), so the
// result is the exact left fold ((x0 op x1) op x2) ... (every fold_order,
// plait::ordered included). Bytes sent per rank: (P-1)·n, n = one block.
//
// all-reduce: that reduce-scatter, then every rank sends its combined block
// to every other: 2 steps, 2(P-1)·n bytes sent per rank.
//
// Every rank runs as many steps (lockstep), so on a transport with shared
// slots (shm) a call whose steps fit them runs each step as one round: every
// rank writes what it sends into its own slot and reads its peers' in place
// (op/slot_run.hpp).
#pragma once

#include <algorithm>
#include <string_view>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// Every rank talks to every other rank at once (all-to-all throttled to max_in_flight peers per step).
struct direct {
  /// Marks direct as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "direct";
  /// Every block goes straight from its source to its destination: no rank
  /// forwards a block it neither sent nor keeps, so an all_to_all_v needs no
  /// rank to know the sizes of other ranks' blocks (op/uneven.hpp; checked
  /// against the schedules by tests/test_schedules.cpp).
  static constexpr bool forwards_blocks = false;

  /// The most peers an all-to-all step sends to (and receives from).
  static constexpr int max_in_flight = 8;

  /// Rank `rank`'s all-gather schedule on `size` ranks: one step.
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s{.steps = {}, .lockstep = true};
    if (size == 1) return s;
    step& only = s.next_step();
    for (int k = 1; k < size; ++k) {
      const int from = (rank - k + size) % size;
      only.send((rank + k) % size, {rank}).recv(from, {from});
    }
    return s;
  }

  /// Rank `rank`'s reduce-scatter schedule on `size` ranks (every fold order).
  template <op::fold_order Order>
  static constexpr schedule plan(op::reduce_scatter<Order>, int rank, int size) {
    schedule s{.steps = {}, .lockstep = true};
    if (size > 1) fold_step(s.next_step(), rank, size);
    return s;
  }

  /// Rank `rank`'s all-reduce schedule on `size` ranks (every fold order).
  template <op::fold_order Order>
  static constexpr schedule plan(op::all_reduce<Order>, int rank, int size) {
    schedule s{.steps = {}, .lockstep = true};
    if (size == 1) return s;
    fold_step(s.next_step(), rank, size);
    step& spread = s.next_step();
    for (int k = 1; k < size; ++k) {
      const int from = (rank - k + size) % size;
      spread.send((rank + k) % size, {rank}).recv(from, {from});
    }
    return s;
  }

  /// Rank `rank`'s all-to-all schedule on `size` ranks.
  static constexpr schedule plan(op::all_to_all, int rank, int size) {
    schedule s{.steps = {}, .lockstep = true};
    for (int first = 1; first < size; first += max_in_flight) {
      step& current = s.next_step();
      for (int k = first; k < std::min(first + max_in_flight, size); ++k) {
        const int to = (rank + k) % size;
        const int from = (rank - k + size) % size;
        current.send(to, {op::all_to_all::block(rank, to, size)}).recv(from, {op::all_to_all::block(from, rank, size)});
      }
    }
    return s;
  }

 private:
  /// Every rank's contribution to block d goes to rank d; rank `rank` folds
  /// those to its block in rank order, its own at its place.
  static constexpr void fold_step(step& only, int rank, int size) {
    for (int k = 1; k < size; ++k) only.send((rank + k) % size, {(rank + k) % size});
    for (int from = 0; from < size; ++from) {
      if (from == rank) {
        if (rank > 0) only.recv(own_contribution, {rank}, fold::from_right);
      } else {
        only.recv(from, {rank}, from == 0 ? fold::none : fold::from_right);
      }
    }
  }
};

}  // namespace v0
}  // namespace plait

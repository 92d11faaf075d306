// Schedules: what an algorithm is. A schedule lists, for one rank, the steps of
// a collective; each step posts some sends and receives, each a message of
// whole blocks exchanged with one peer. Schedules are plain constexpr data:
// they never see bytes or transports, so they can be checked symbolically
// (plait::verify) and run unchanged on every transport by the executor.
#pragma once

#include <concepts>
#include <string_view>
#include <vector>

#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// What a receive does with the blocks it brings. Operations that place
/// blocks (all_gather, all_to_all) only ever place; the reductions' schedules
/// say for each received partial on which side of the one held it goes, so
/// that every combine puts the lower ranks' partial on the left.
enum class fold : unsigned char {
  /// The block arrives as it is (replacing what is held, for a reduction).
  none,
  /// held = arriving op held: the arriving partial covers lower ranks.
  from_left,
  /// held = held op arriving: the arriving partial covers higher ranks.
  from_right,
};

/// The peer of a receive that brings nothing over the wire: it folds this
/// rank's own contribution to the blocks in at that point of the step
/// (direct and chain place it between the partials of lower and higher
/// ranks, which keeps the exact left fold).
inline constexpr int own_contribution = -2;

/// One message: the listed blocks, concatenated in this order, to or from `peer`.
struct transfer {
  /// The rank at the other end (own_contribution: see there).
  int peer = -1;
  /// Block numbers (Op's block model), in message order.
  std::vector<int> blocks;
  /// For a receive: how each block combines with what the rank holds.
  fold arrival = fold::none;

  /// Equal when peer and blocks are.
  constexpr bool operator==(const transfer&) const = default;
};

/// One step: every transfer is posted at once, then all complete before the
/// next step starts. A block received in a step may be sent from the next step on.
/// Between one pair of ranks, messages match in the order they are posted.
struct step {
  /// The messages this rank sends in the step.
  std::vector<transfer> sends;
  /// The messages this rank receives in the step.
  std::vector<transfer> recvs;

  // Out of line (noinline has no effect in constant evaluation): at -O2 the
  // vector growth would otherwise be inlined into every schedule builder, and
  // automatic compiles all of them (compile cost; a schedule is built once per call).
  /// Adds a send of `blocks` to `peer`; returns the step for chaining.
  [[gnu::noinline]] constexpr step& send(int peer, std::vector<int> blocks) {
    sends.push_back(transfer{peer, std::move(blocks), fold::none});
    return *this;
  }
  /// Adds a receive of `blocks` from `peer`; returns the step for chaining.
  /// A reduction's schedule says how they combine (`arrival`). Receives are
  /// combined in the order they are listed, once the whole step has arrived.
  [[gnu::noinline]] constexpr step& recv(int peer, std::vector<int> blocks, fold arrival = fold::none) {
    recvs.push_back(transfer{peer, std::move(blocks), arrival});
    return *this;
  }
  /// Equal when both transfer lists are.
  constexpr bool operator==(const step&) const = default;
};

/// One rank's whole part in one collective.
struct schedule {
  /// The steps, run in order.
  std::vector<step> steps;
  /// Every rank's schedule of this call has as many steps, and a step sends
  /// only blocks the rank started with or combined in the steps before: a
  /// transport with shared slots may then run each step as one round every
  /// rank joins (op/slot_run.hpp). Set by direct.
  bool lockstep = false;

  /// Appends an empty step and returns it for filling.
  [[gnu::noinline]] constexpr step& next_step() { return steps.emplace_back(); }
  /// Equal when the steps are (lockstep is a property of the algorithm, not of the moves).
  constexpr bool operator==(const schedule& other) const { return steps == other.steps; }
};

/// Opt-in tag: a type is an algorithm when it says `using algorithm_concept = plait::algorithm_tag;`.
struct algorithm_tag {};

template <class A>
concept algorithm = std::same_as<typename A::algorithm_concept, algorithm_tag>;

/// An algorithm that has a schedule for operation Op:
///   static constexpr plait::schedule plan(Op, int rank, int size);
template <class A, class Op>
concept schedules = algorithm<A> && operation<Op> && requires(int r) {
  { A::plan(Op{}, r, r) } -> std::same_as<schedule>;
};

/// Whether A can run Op on `size` ranks. Algorithms with a restriction (an odd
/// size for neighbor_exchange) say so with `static constexpr bool accepts(Op, int size)`.
template <class A, class Op>
constexpr bool accepts(int size) {
  if constexpr (requires {
                  { A::accepts(Op{}, size) } -> std::convertible_to<bool>;
                }) {
    return A::accepts(Op{}, size);
  } else {
    return size >= 1;
  }
}

/// The algorithm's display name: `A::name` if it has one.
template <class A>
constexpr std::string_view algorithm_name() {
  if constexpr (requires {
                  { A::name } -> std::convertible_to<std::string_view>;
                }) {
    return A::name;
  } else {
    return "user algorithm";
  }
}

}  // namespace v0
}  // namespace plait

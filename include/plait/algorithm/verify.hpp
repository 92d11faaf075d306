// plait::verify — a symbolic proof, for one group size, that an algorithm's
// schedules implement an operation under the executor's rules:
//   * peers are in range and never the rank itself;
//   * a send carries only blocks the rank holds at the start of that step
//     (held initially per the op's block model, or received in an earlier step);
//   * a rank never receives a block it already holds, and each block at most once;
//   * at the end every rank holds every block Op::needs_finally names;
//   * for each ordered pair (s, d) the k-th message s posts to d and the k-th
//     receive d posts from s exist together and list the same blocks (FIFO);
//   * no deadlock under rendezvous semantics: a message completes only when
//     both sides have posted it, a rank leaves a step when all its transfers
//     completed; if no rank can move and some are not done, it is a deadlock.
// For a reduction (Op::combines) the rules on holding blocks give way to
// what a combine needs: every rank starts with its own contribution to every
// block; a receive places, or folds the arriving partial on the side its fold
// says, or folds in the rank's own contribution (own_contribution); at the end
// every block a rank needs is combined from every rank's contribution exactly
// once, in rank order unless Op::order is any, as the exact left fold under
// fold_order::left, and the same way on every rank that needs it (so that
// every rank holds the same bits). verify follows each block symbolically as
// the expression of the combines that made it.
// Everything is constexpr (std::vector only), so a user algorithm can be
// checked with static_assert(plait::verify<my_algorithm, plait::op::all_gather>(8)),
// or with static_assert(plait::verify_or_explain<my_algorithm, plait::op::all_gather, 8>())
// to have a failure name the broken rule, rank, step, peer and block.
// Compilers bound constant evaluation (clang: -fconstexpr-steps, 1M by
// default), so keep static_asserts to small P and check larger P at run time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/config.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// What verify found wrong first (none when the schedules are correct).
enum class verify_fault {
  none,
  bad_size,             ///< size < 1
  unsupported,          ///< the algorithm does not accept this size (accepts() is false)
  bad_peer,             ///< a peer outside [0, size)
  self_transfer,        ///< a send or receive with the rank itself
  bad_block,            ///< a block outside [0, Op::blocks(size))
  duplicate_block,      ///< one message lists a block twice
  send_unheld,          ///< a send of a block the rank does not hold at that step
  recv_held,            ///< a receive of a block the rank already holds
  recv_twice,           ///< a block received twice
  missing_block,        ///< a block Op::needs_finally names never arrives
  unmatched,            ///< a send without its receive, or a receive without its send
  mismatched_blocks,    ///< a matched send and receive list different blocks
  deadlock,             ///< the ranks wait on each other forever
  wrong_contributions,  ///< a reduction's result lacks a rank's contribution or has one twice
  out_of_order,         ///< a reduction that must keep rank order combines out of it
  not_left_fold,        ///< an ordered reduction's result is not ((x0 op x1) op x2) ...
  divergent_result,     ///< ranks end with the same block combined in different ways
};

/// verify's finding with where it happened (-1 where it does not apply).
struct verify_result {
  /// What is wrong, none when nothing is.
  verify_fault fault = verify_fault::none;
  /// The rank whose schedule is at fault.
  int rank = -1;
  /// The step of that schedule.
  int step = -1;
  /// The peer of the faulty transfer.
  int peer = -1;
  /// The block concerned.
  int block = -1;

  /// True when the schedules are correct.
  constexpr explicit operator bool() const noexcept { return fault == verify_fault::none; }
};

namespace detail {

/// Where one transfer sits in its rank's schedule.
struct transfer_position {
  int step;
  int index;
};

/// One wait of a rank's step: the step `peer` must reach for the transfer to complete.
struct step_dependency {
  int peer;
  int peer_step;
};

template <class Op>
constexpr verify_result check_holdings(const schedule& plan, int rank, int size) {
  const int blocks = Op::blocks(size);
  std::vector<char> held(static_cast<std::size_t>(blocks), 0);
  std::vector<char> arriving(static_cast<std::size_t>(blocks), 0);
  std::vector<int> stamp(static_cast<std::size_t>(blocks), -1);  // last message that listed a block
  for (int b = 0; b < blocks; ++b) held[static_cast<std::size_t>(b)] = Op::holds_initially(rank, b, size) ? 1 : 0;
  int message = 0;
  for (int t = 0; t < static_cast<int>(plan.steps.size()); ++t) {
    const step& st = plan.steps[static_cast<std::size_t>(t)];
    auto check_message = [&](const transfer& x) -> verify_result {
      if (x.peer < 0 || x.peer >= size) return {verify_fault::bad_peer, rank, t, x.peer, -1};
      if (x.peer == rank) return {verify_fault::self_transfer, rank, t, x.peer, -1};
      for (int b : x.blocks) {
        if (b < 0 || b >= blocks) return {verify_fault::bad_block, rank, t, x.peer, b};
        auto& last = stamp[static_cast<std::size_t>(b)];
        if (last == message) return {verify_fault::duplicate_block, rank, t, x.peer, b};
        last = message;
      }
      ++message;
      return {};
    };
    for (const transfer& x : st.sends) {
      if (auto r = check_message(x); !r) return r;
      for (int b : x.blocks) {
        if (held[static_cast<std::size_t>(b)] == 0) return {verify_fault::send_unheld, rank, t, x.peer, b};
      }
    }
    for (const transfer& x : st.recvs) {
      if (auto r = check_message(x); !r) return r;
      for (int b : x.blocks) {
        const auto i = static_cast<std::size_t>(b);
        if (arriving[i] != 0) return {verify_fault::recv_twice, rank, t, x.peer, b};
        if (held[i] != 0) return {verify_fault::recv_held, rank, t, x.peer, b};
        arriving[i] = 1;
      }
    }
    // Received blocks become sendable only from the next step on.
    for (const transfer& x : st.recvs) {
      for (int b : x.blocks) held[static_cast<std::size_t>(b)] = 1;
    }
  }
  for (int b = 0; b < blocks; ++b) {
    if (Op::needs_finally(rank, b, size) && held[static_cast<std::size_t>(b)] == 0) {
      return {verify_fault::missing_block, rank, -1, -1, b};
    }
  }
  return {};
}

/// A reduction's per-rank rules that need no other rank: peers and blocks in
/// range, no block twice in a message, own contributions only received.
template <class Op>
constexpr verify_result check_fold_messages(const schedule& plan, int rank, int size) {
  const int blocks = Op::blocks(size);
  for (int t = 0; t < static_cast<int>(plan.steps.size()); ++t) {
    const step& st = plan.steps[static_cast<std::size_t>(t)];
    for (int side = 0; side < 2; ++side) {
      for (const transfer& x : side == 0 ? st.sends : st.recvs) {
        const bool own = side == 1 && x.peer == own_contribution;
        if (!own && (x.peer < 0 || x.peer >= size)) return {verify_fault::bad_peer, rank, t, x.peer, -1};
        if (x.peer == rank) return {verify_fault::self_transfer, rank, t, x.peer, -1};
        for (std::size_t i = 0; i < x.blocks.size(); ++i) {
          const int b = x.blocks[i];
          if (b < 0 || b >= blocks) return {verify_fault::bad_block, rank, t, x.peer, b};
          for (std::size_t j = 0; j < i; ++j) {
            if (x.blocks[j] == b) return {verify_fault::duplicate_block, rank, t, x.peer, b};
          }
        }
      }
    }
  }
  return {};
}

/// A combine expression in prefix form: a rank's contribution is its rank,
/// `combined` stands before its left and then its right operand. (Vectors,
/// not strings: g++ 12 cannot evaluate some std::string code in constant
/// expressions.)
using fold_expression = std::vector<int>;
inline constexpr int combined = -1;

/// `left` op `right`.
constexpr fold_expression combine_expressions(const fold_expression& left, const fold_expression& right) {
  fold_expression e;
  e.reserve(1 + left.size() + right.size());
  e.push_back(combined);
  e.insert(e.end(), left.begin(), left.end());
  e.insert(e.end(), right.begin(), right.end());
  return e;
}

/// ((x0 op x1) op x2) ...: the exact left fold over `size` ranks.
constexpr fold_expression left_fold_expression(int size) {
  fold_expression e(static_cast<std::size_t>(size > 0 ? size - 1 : 0), combined);
  for (int r = 0; r < size; ++r) e.push_back(r);
  return e;
}

/// Where a received message comes from: the sending rank and its step
/// (rank -1 for a rank's own contribution).
struct message_source {
  int rank = -1;
  int step = -1;
};

/// Follows every block of a reduction through the schedules (already
/// matched and free of deadlock): `source[d][t][i]` is the (rank, step) whose
/// send receive i of rank d's step t takes. Steps run in the order of the
/// rendezvous simulation; a send carries what its rank held when it entered
/// the step.
template <class Op>
constexpr verify_result check_folds(const std::vector<schedule>& plans,
                                    const std::vector<std::vector<std::vector<message_source>>>& source) {
  const int size = static_cast<int>(plans.size());
  const auto blocks = static_cast<std::size_t>(Op::blocks(size));
  using holding = std::vector<fold_expression>;  // per block: the expression held (empty: none)
  std::vector<holding> now(static_cast<std::size_t>(size), holding(blocks));
  std::vector<std::vector<holding>> entered(static_cast<std::size_t>(size));  // per rank, per step: at entry
  for (int r = 0; r < size; ++r) {
    for (std::size_t b = 0; b < blocks; ++b) {
      if (Op::holds_initially(r, static_cast<int>(b), size)) now[static_cast<std::size_t>(r)][b] = {r};
    }
    if (!plans[static_cast<std::size_t>(r)].steps.empty()) {
      entered[static_cast<std::size_t>(r)].push_back(now[static_cast<std::size_t>(r)]);
    }
  }
  std::vector<int> at(static_cast<std::size_t>(size), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < size; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      const schedule& plan = plans[ri];
      while (at[ri] < static_cast<int>(plan.steps.size())) {
        const int t = at[ri];
        const step& st = plan.steps[static_cast<std::size_t>(t)];
        bool ready = true;
        for (const message_source& from : source[ri][static_cast<std::size_t>(t)]) {
          if (from.rank >= 0 && static_cast<int>(entered[static_cast<std::size_t>(from.rank)].size()) <= from.step) {
            ready = false;
          }
        }
        if (!ready) break;
        for (const transfer& x : st.sends) {
          for (int b : x.blocks) {
            if (now[ri][static_cast<std::size_t>(b)].empty()) return {verify_fault::send_unheld, r, t, x.peer, b};
          }
        }
        for (std::size_t i = 0; i < st.recvs.size(); ++i) {
          const transfer& x = st.recvs[i];
          const message_source from = source[ri][static_cast<std::size_t>(t)][i];
          for (int b : x.blocks) {
            const auto bi = static_cast<std::size_t>(b);
            fold_expression arriving{r};
            if (x.peer != own_contribution) {
              arriving = entered[static_cast<std::size_t>(from.rank)][static_cast<std::size_t>(from.step)][bi];
            }
            fold_expression& held = now[ri][bi];
            if (x.arrival == fold::none) {
              held = arriving;
            } else if (held.empty()) {
              return {verify_fault::send_unheld, r, t, x.peer, b};  // nothing to fold into
            } else if (x.arrival == fold::from_left) {
              held = combine_expressions(arriving, held);
            } else {
              held = combine_expressions(held, arriving);
            }
          }
        }
        ++at[ri];
        if (at[ri] < static_cast<int>(plan.steps.size())) entered[ri].push_back(now[ri]);
        moved = true;
      }
    }
  }
  const fold_expression left_fold = left_fold_expression(size);
  for (std::size_t b = 0; b < blocks; ++b) {
    int first = -1;
    for (int r = 0; r < size; ++r) {
      if (!Op::needs_finally(r, static_cast<int>(b), size)) continue;
      const fold_expression& result = now[static_cast<std::size_t>(r)][b];
      std::vector<int> seen(static_cast<std::size_t>(size), 0);
      bool ascending = true;
      int leaves = 0;
      int previous = -1;
      for (int leaf : result) {
        if (leaf == combined) continue;
        if (leaf >= size || seen[static_cast<std::size_t>(leaf)]++ != 0) {
          return {verify_fault::wrong_contributions, r, -1, leaf, static_cast<int>(b)};
        }
        ascending = ascending && leaf > previous;
        previous = leaf;
        ++leaves;
      }
      if (leaves != size) {
        return {verify_fault::wrong_contributions, r, -1, -1, static_cast<int>(b)};
      }
      if (Op::order != op::fold_order::any && !ascending) {
        return {verify_fault::out_of_order, r, -1, -1, static_cast<int>(b)};
      }
      if (Op::order == op::fold_order::left && result != left_fold) {
        return {verify_fault::not_left_fold, r, -1, -1, static_cast<int>(b)};
      }
      if (first < 0) {
        first = r;
      } else if (result != now[static_cast<std::size_t>(first)][b]) {
        return {verify_fault::divergent_result, r, -1, first, static_cast<int>(b)};
      }
    }
  }
  return {};
}

/// Checks holdings, matching and progress for the given per-rank schedules.
template <class Op>
constexpr verify_result verify_plans(const std::vector<schedule>& plans) {
  const int size = static_cast<int>(plans.size());
  if (size < 1) return {verify_fault::bad_size};
  for (int r = 0; r < size; ++r) {
    if constexpr (combines_blocks<Op>) {
      if (auto res = check_fold_messages<Op>(plans[static_cast<std::size_t>(r)], r, size); !res) return res;
    } else {
      if (auto res = check_holdings<Op>(plans[static_cast<std::size_t>(r)], r, size); !res) return res;
    }
  }

  // Messages per ordered pair (s, d), in posting order: steps in order, and
  // within a step the order of the transfer lists.
  const auto pairs = static_cast<std::size_t>(size) * static_cast<std::size_t>(size);
  std::vector<std::vector<transfer_position>> sent(pairs);
  std::vector<std::vector<transfer_position>> received(pairs);
  auto pair_index = [size](int s, int d) {
    return static_cast<std::size_t>(s) * static_cast<std::size_t>(size) + static_cast<std::size_t>(d);
  };
  std::vector<int> first_step(static_cast<std::size_t>(size) + 1, 0);
  for (int r = 0; r < size; ++r) {
    const schedule& plan = plans[static_cast<std::size_t>(r)];
    first_step[static_cast<std::size_t>(r) + 1] =
        first_step[static_cast<std::size_t>(r)] + static_cast<int>(plan.steps.size());
    for (int t = 0; t < static_cast<int>(plan.steps.size()); ++t) {
      const step& st = plan.steps[static_cast<std::size_t>(t)];
      for (int i = 0; i < static_cast<int>(st.sends.size()); ++i) {
        sent[pair_index(r, st.sends[static_cast<std::size_t>(i)].peer)].push_back({t, i});
      }
      for (int i = 0; i < static_cast<int>(st.recvs.size()); ++i) {
        const int from = st.recvs[static_cast<std::size_t>(i)].peer;
        if (from != own_contribution) received[pair_index(from, r)].push_back({t, i});
      }
    }
  }

  std::vector<std::vector<step_dependency>> waits(static_cast<std::size_t>(first_step[static_cast<std::size_t>(size)]));
  // A reduction's receives by rank, step and index: whose send each takes.
  std::vector<std::vector<std::vector<message_source>>> source;
  if constexpr (combines_blocks<Op>) {
    source.resize(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) {
      for (const step& st : plans[static_cast<std::size_t>(r)].steps) {
        source[static_cast<std::size_t>(r)].emplace_back(st.recvs.size());
      }
    }
  }
  for (int s = 0; s < size; ++s) {
    for (int d = 0; d < size; ++d) {
      const auto& out = sent[pair_index(s, d)];
      const auto& in = received[pair_index(s, d)];
      const std::size_t common = out.size() < in.size() ? out.size() : in.size();
      for (std::size_t k = 0; k < common; ++k) {
        const transfer& x = plans[static_cast<std::size_t>(s)]
                                .steps[static_cast<std::size_t>(out[k].step)]
                                .sends[static_cast<std::size_t>(out[k].index)];
        const transfer& y = plans[static_cast<std::size_t>(d)]
                                .steps[static_cast<std::size_t>(in[k].step)]
                                .recvs[static_cast<std::size_t>(in[k].index)];
        if (x.blocks != y.blocks) {
          int block = -1;
          for (std::size_t j = 0; j < x.blocks.size() || j < y.blocks.size(); ++j) {
            if (j >= x.blocks.size() || j >= y.blocks.size() || x.blocks[j] != y.blocks[j]) {
              block = j < x.blocks.size() ? x.blocks[j] : y.blocks[j];
              break;
            }
          }
          return {verify_fault::mismatched_blocks, s, out[k].step, d, block};
        }
        if constexpr (combines_blocks<Op>) {
          source[static_cast<std::size_t>(d)][static_cast<std::size_t>(in[k].step)]
                [static_cast<std::size_t>(in[k].index)] = {s, out[k].step};
        }
        waits[static_cast<std::size_t>(first_step[static_cast<std::size_t>(s)] + out[k].step)].push_back(
            {d, in[k].step});
        waits[static_cast<std::size_t>(first_step[static_cast<std::size_t>(d)] + in[k].step)].push_back(
            {s, out[k].step});
      }
      if (out.size() > common) return {verify_fault::unmatched, s, out[common].step, d, -1};
      if (in.size() > common) return {verify_fault::unmatched, d, in[common].step, s, -1};
    }
  }

  // Rendezvous simulation: a rank at step t leaves it once every peer it waits
  // on has reached the step that posts the other side.
  std::vector<int> at(static_cast<std::size_t>(size), 0);
  auto steps_of = [&](int r) {
    return first_step[static_cast<std::size_t>(r) + 1] - first_step[static_cast<std::size_t>(r)];
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < size; ++r) {
      auto& t = at[static_cast<std::size_t>(r)];
      while (t < steps_of(r)) {
        bool ready = true;
        for (const step_dependency& w : waits[static_cast<std::size_t>(first_step[static_cast<std::size_t>(r)] + t)]) {
          if (at[static_cast<std::size_t>(w.peer)] < w.peer_step) {
            ready = false;
            break;
          }
        }
        if (!ready) break;
        ++t;
        moved = true;
      }
    }
  }
  for (int r = 0; r < size; ++r) {
    const int t = at[static_cast<std::size_t>(r)];
    if (t < steps_of(r)) {
      int peer = -1;
      for (const step_dependency& w : waits[static_cast<std::size_t>(first_step[static_cast<std::size_t>(r)] + t)]) {
        if (at[static_cast<std::size_t>(w.peer)] < w.peer_step) {
          peer = w.peer;
          break;
        }
      }
      return {verify_fault::deadlock, r, t, peer, -1};
    }
  }
  if constexpr (combines_blocks<Op>) return check_folds<Op>(plans, source);
  return {};
}

}  // namespace detail

/// Checks A's schedules for Op on `size` ranks and says what is wrong first.
template <class A, class Op>
requires schedules<A, Op>
constexpr verify_result verify_detailed(int size) {
  if (size < 1) return {verify_fault::bad_size};
  if (!accepts<A, Op>(size)) return {verify_fault::unsupported};
  std::vector<schedule> plans;
  plans.reserve(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) plans.push_back(A::plan(Op{}, r, size));
  return detail::verify_plans<Op>(plans);
}

/// True when A's schedules implement Op on `size` ranks (see the rules at the
/// top of this header). Usable in constant expressions.
template <class A, class Op>
requires schedules<A, Op>
constexpr bool verify(int size) { return static_cast<bool>(verify_detailed<A, Op>(size)); }

namespace detail {
/// One static_assert per rule of verify, so that a broken schedule stops the
/// compiler with the rule's name and, in this instantiation's template
/// arguments, the rank, step, peer and block where it broke (-1 where one does
/// not apply). Only the broken rule's assertion fires.
template <verify_fault Rule, int Rank, int Step, int Peer, int Block>
constexpr bool explain_verify_fault() {
  static_assert(Rule != verify_fault::bad_size, "plait: verify: rule bad_size: the group size must be at least 1");
  static_assert(Rule != verify_fault::unsupported,
                "plait: verify: rule unsupported: the algorithm's accepts(Op, size) rejects this group size");
  static_assert(Rule != verify_fault::bad_peer,
                "plait: verify: rule bad_peer: rank Rank in step Step names peer Peer, which is not a rank of the "
                "group (see Rank, Step, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::self_transfer,
                "plait: verify: rule self_transfer: rank Rank in step Step has a transfer with itself; the executor "
                "copies local blocks (see Rank, Step, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::bad_block,
                "plait: verify: rule bad_block: rank Rank in step Step names block Block, which does not exist "
                "(see Rank, Step, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::duplicate_block,
                "plait: verify: rule duplicate_block: rank Rank in step Step lists block Block twice in its message "
                "with Peer (see Rank, Step, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::send_unheld,
                "plait: verify: rule send_unheld: rank Rank in step Step sends block Block to Peer without holding it "
                "at the start of that step (see Rank, Step, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::recv_held,
                "plait: verify: rule recv_held: rank Rank in step Step receives block Block from Peer but already "
                "holds it (see Rank, Step, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::recv_twice,
                "plait: verify: rule recv_twice: rank Rank in step Step receives block Block (from Peer) a second "
                "time (see Rank, Step, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::missing_block,
                "plait: verify: rule missing_block: rank Rank never receives block Block (see Rank and Block in this "
                "instantiation)");
  static_assert(Rule != verify_fault::unmatched,
                "plait: verify: rule unmatched: a message of rank Rank in step Step with Peer has no matching "
                "counterpart on Peer (see Rank, Step, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::mismatched_blocks,
                "plait: verify: rule mismatched_blocks: the message rank Rank sends to Peer in step Step and Peer's "
                "receive list different blocks, first differing at block Block (see Rank, Step, Peer, Block in this "
                "instantiation)");
  static_assert(Rule != verify_fault::wrong_contributions,
                "plait: verify: rule wrong_contributions: rank Rank's block Block lacks a rank's contribution or "
                "has one (Peer's, if known) twice (see Rank, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::out_of_order,
                "plait: verify: rule out_of_order: rank Rank combines block Block out of rank order, which this "
                "reduction must keep (see Rank and Block in this instantiation)");
  static_assert(Rule != verify_fault::not_left_fold,
                "plait: verify: rule not_left_fold: rank Rank's block Block is not the left fold "
                "((x0 op x1) op x2) ... that an ordered reduction needs (see Rank and Block in this instantiation)");
  static_assert(Rule != verify_fault::divergent_result,
                "plait: verify: rule divergent_result: ranks Rank and Peer combine block Block in different ways, so "
                "their bits could differ (see Rank, Peer, Block in this instantiation)");
  static_assert(Rule != verify_fault::deadlock,
                "plait: verify: rule deadlock: rank Rank waits in step Step for Peer, which never posts the other "
                "side (see Rank, Step, Peer, Block in this instantiation)");
  return Rule == verify_fault::none;
}
}  // namespace detail

/// verify() that, when A's schedules for Op on Size ranks are wrong, stops the
/// compiler with the broken rule and where it broke, instead of a bare
/// "static assertion failed":
///   static_assert(plait::verify_or_explain<my_algorithm, plait::op::all_gather, 8>());
/// Size is a template argument because the rank, step, peer and block can
/// appear in a diagnostic only as constants of an instantiation.
template <class A, class Op, int Size>
requires schedules<A, Op>
constexpr bool verify_or_explain() {
  constexpr verify_result found = verify_detailed<A, Op>(Size);
  return detail::explain_verify_fault<found.fault, found.rank, found.step, found.peer, found.block>();
}

/// A fault's name, for messages.
constexpr std::string_view to_string(verify_fault fault) noexcept {
  switch (fault) {
    case verify_fault::none: return "none";
    case verify_fault::bad_size: return "bad_size";
    case verify_fault::unsupported: return "unsupported";
    case verify_fault::bad_peer: return "bad_peer";
    case verify_fault::self_transfer: return "self_transfer";
    case verify_fault::bad_block: return "bad_block";
    case verify_fault::duplicate_block: return "duplicate_block";
    case verify_fault::send_unheld: return "send_unheld";
    case verify_fault::recv_held: return "recv_held";
    case verify_fault::recv_twice: return "recv_twice";
    case verify_fault::missing_block: return "missing_block";
    case verify_fault::unmatched: return "unmatched";
    case verify_fault::mismatched_blocks: return "mismatched_blocks";
    case verify_fault::deadlock: return "deadlock";
    case verify_fault::wrong_contributions: return "wrong_contributions";
    case verify_fault::out_of_order: return "out_of_order";
    case verify_fault::not_left_fold: return "not_left_fold";
    case verify_fault::divergent_result: return "divergent_result";
  }
  return "unknown";
}

/// A sentence describing `result`; empty when it found nothing wrong.
PLAIT_DECL std::string describe(const verify_result& result);

/// What is wrong with A's schedules for Op on `size` ranks, in words; empty when they are correct.
template <class A, class Op>
requires schedules<A, Op> std::string verify_report(int size) { return describe(verify_detailed<A, Op>(size)); }

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/algorithm/impl/verify.ipp"
#endif

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
  bad_size,           ///< size < 1
  unsupported,        ///< the algorithm does not accept this size (accepts() is false)
  bad_peer,           ///< a peer outside [0, size)
  self_transfer,      ///< a send or receive with the rank itself
  bad_block,          ///< a block outside [0, Op::blocks(size))
  duplicate_block,    ///< one message lists a block twice
  send_unheld,        ///< a send of a block the rank does not hold at that step
  recv_held,          ///< a receive of a block the rank already holds
  recv_twice,         ///< a block received twice
  missing_block,      ///< a block Op::needs_finally names never arrives
  unmatched,          ///< a send without its receive, or a receive without its send
  mismatched_blocks,  ///< a matched send and receive list different blocks
  deadlock,           ///< the ranks wait on each other forever
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

/// Checks holdings, matching and progress for the given per-rank schedules.
template <class Op>
constexpr verify_result verify_plans(const std::vector<schedule>& plans) {
  const int size = static_cast<int>(plans.size());
  if (size < 1) return {verify_fault::bad_size};
  for (int r = 0; r < size; ++r) {
    if (auto res = check_holdings<Op>(plans[static_cast<std::size_t>(r)], r, size); !res) return res;
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
        received[pair_index(st.recvs[static_cast<std::size_t>(i)].peer, r)].push_back({t, i});
      }
    }
  }

  std::vector<std::vector<step_dependency>> waits(static_cast<std::size_t>(first_step[static_cast<std::size_t>(size)]));
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

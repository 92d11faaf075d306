// The slot run: a lockstep schedule (direct's) run through a transport's
// shared slots (the shm transport's), one round per step. In each round
// every rank writes the blocks its step sends into its own slot, once each
// however many peers they go to, with a table naming them, and posts the
// round with one flag; once every peer's flag is there it reads the blocks
// its step receives from the peers' slots in place, applying them as the
// executor would (placed, or combined in the order the schedule lists them,
// so a reduction keeps its fold order and every rank computes the same bits)
// before it posts its next round (which tells the peers that it has read this
// one). A small call then costs each rank one flag per round instead of a
// message per peer, posted and matched.
//
// A call whose rounds do not fit runs the schedule through the executor
// instead, on every rank: decided alike where every rank knows every block's
// size, else in the first round's flags. Blocking calls only (execute); a call in flight keeps its
// messages.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/algorithm/select.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/region.hpp"
#include "plait/core/slot_table.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/block_plan.hpp"
#include "plait/layout/fold_plans.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A transport whose ranks share slots they post rounds in (shm::communicator).
template <class Comm>
concept has_shared_slots = requires(Comm& comm, std::string_view name, std::size_t bytes) {
  { Comm::shared_slot_bytes } -> std::convertible_to<std::size_t>;
  { comm.begin_slot_round(0, name, 0) } -> std::same_as<std::span<std::byte>>;
  { comm.post_slot_round(bytes, bytes, true) } -> std::same_as<bool>;
  { comm.peer_slot_round(0) } -> std::same_as<std::span<const std::byte>>;
};

/// The distinct blocks a step sends, in order of first appearance.
inline void blocks_sent(const step& st, std::vector<int>& out) {
  out.clear();
  for (const transfer& t : st.sends) {
    for (int b : t.blocks) {
      if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    }
  }
}

/// Block `block`'s bytes in a peer's posted round. The slot is the peer's:
/// its table is checked against the slot's size and the block's expected size.
PLAIT_DECL const std::byte* find_in_slot(std::span<const std::byte> slot, int block, std::size_t expected, int peer,
                                         const error_context& at);

/// A thread's reusable buffers for its slot runs (a run never nests on a thread).
struct slot_scratch {
  std::vector<int> sent;                 // the blocks a step sends
  std::vector<std::byte> arena;          // a reduction's accumulators, block by block
  std::vector<std::size_t> acc_offset;   // of each block in arena
  std::vector<unsigned char> acc_held;   // 1: arena holds the block's accumulator
  std::vector<std::byte> own;            // a prepared own contribution folded in
  std::vector<std::size_t> block_sizes;  // a one-round fold's block bytes, asked of the plan once
  std::vector<const std::byte*> runs;    // a whole-run fold's data, rank by rank
  PLAIT_DECL static slot_scratch& of_this_thread() noexcept;
};

/// `p`, its origin hidden from the optimiser, so that a thread-local's
/// address stays in a register or on the stack instead of being computed
/// again where it is used.
template <class T>
T* kept_address(T* p) noexcept {
#if defined(__GNUC__)
  __asm__("" : "+r"(p));
#endif
  return p;
}

/// Bytes from which copy_into_slot copies with `rep movsb` (x86-64).
inline constexpr std::size_t string_copy_bytes = 2048;

// Sanitizers check memcpy's accesses, not an asm statement's.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PLAIT_SLOT_COPY_BY_MEMCPY 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PLAIT_SLOT_COPY_BY_MEMCPY 1
#endif
#endif

/// Copies `bytes` into this rank's slot. On x86-64 from 2 KiB with `rep
/// movsb`, whose fast-string stores can fill whole lines without reading
/// them first (lines the peers read in the round before last); glibc's
/// memcpy copies 2-4 KiB with a vector loop (AVX2). A two-rank all-reduce
/// of 2 KiB took 1.0 us against 1.2-1.8 (plait-bench, Intel VM, three
/// interleaved runs); at 4-16 KiB, and below 2 KiB, neither led.
inline void copy_into_slot(std::byte* to, const std::byte* from, std::size_t bytes) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PLAIT_SLOT_COPY_BY_MEMCPY)
  if (bytes >= string_copy_bytes) {
    __asm__ volatile("rep movsb" : "+D"(to), "+S"(from), "+c"(bytes) : : "memory");
    return;
  }
#endif
  std::memcpy(to, from, bytes);
}
#undef PLAIT_SLOT_COPY_BY_MEMCPY

/// The largest all-reduce (bytes in all) that takes one round on `ranks`
/// ranks, where its round fits a slot. Above 512 B every rank folding all P
/// blocks, out of the peers' whole rounds, reads (P - 1)(P - 2)/P times the
/// data more than direct's two rounds, and the second round's flag costs
/// less (bench/slot-floor, docs/algorithms.md). On two ranks one round reads
/// what two do, the peer's whole vector, with one flag less: any size that
/// fits. On an Intel VM (plait-bench, P = 2, three interleaved runs) one
/// round took 1.2 against 1.7-1.9 us at 3 KiB, 1.3-1.5 against 2.0-2.3 at
/// 4 KiB, 2.3-2.8 against 2.7-2.9 at 8 KiB, 3.2-3.3 against 3.6 at 12 KiB
/// and 4.1 against 4.3-4.4 at 16 KiB; on an AMD one (bench/slot-floor) it
/// led up to 2 KiB and neither led at 4-16 KiB.
constexpr std::size_t one_round_fold_bytes(int ranks) noexcept {
  return ranks == 2 ? std::numeric_limits<std::size_t>::max() : 512;
}

/// Where a slot run folds `block`: in its result where the plan allows
/// (Plan::result_as_is), else at `elsewhere` (the run's own scratch).
template <class Plan>
std::byte* slot_accumulator(const Plan& plan, int block, std::byte* elsewhere) {
  if constexpr (requires { plan.result_as_is(block); }) {
    if (std::byte* at = plan.result_as_is(block)) return at;
  }
  return elsewhere;
}

/// The one round's fold of a plan whose blocks are one run (its
/// as_whole_run()): every peer's table equals this rank's (the same blocks,
/// end to end after it), so each peer's data is one run as well, folded
/// in rank order with one combine per peer instead of one per block and
/// peer. False, having written nothing, where some peer's table differs:
/// the block-by-block fold then reads that peer (and names what is wrong).
template <class Comm, class Plan>
bool fold_whole_run(Comm& comm, const Plan& plan, const whole_run& whole, std::span<const std::byte> mine,
                    std::size_t data_at, int blocks, std::vector<const std::byte*>& runs) {
  const std::size_t table_bytes = sizeof(std::uint64_t) + static_cast<std::size_t>(blocks) * sizeof(slot_entry);
  const int me = comm.rank();
  runs.resize(static_cast<std::size_t>(blocks));
  for (int r = 0; r < blocks; ++r) {
    const std::span<const std::byte> theirs = r == me ? mine : comm.peer_slot_round(r);
    if (r != me &&
        (theirs.size() < data_at + whole.bytes || std::memcmp(theirs.data(), mine.data(), table_bytes) != 0)) {
      return false;
    }
    runs[static_cast<std::size_t>(r)] = theirs.data() + data_at;
  }
  if (whole.bytes == 0) return true;
  if (blocks == 1) {
    std::memcpy(whole.results, runs[0], whole.bytes);
  } else {
    plan.combine_part(runs[0], runs[1], whole.results, whole.bytes);
    for (std::size_t r = 2; r < runs.size(); ++r) plan.combine_part(whole.results, runs[r], whole.results, whole.bytes);
  }
  plan.finish_whole_run(whole.results, whole.bytes);
  return true;
}

/// An all-reduce (every block a result) in one round: every rank writes its
/// contributions to all P blocks, end to end after the round's table, and
/// folds every block from all P slots in rank order, x0 op x1 op ... (its
/// own at its place), which is what direct's two steps compute for block d
/// on rank d, so every rank gets those bits in half the rounds. False,
/// before any round, when its data is above one_round_fold_bytes() or its
/// round does not fit a slot (a decision every rank makes alike: an
/// all-reduce's blocks are cut alike on every rank).
template <class Comm, class Plan>
bool fold_all_in_one_round(Comm& comm, const schedule& steps, const Plan& plan, std::string_view operation, int tag,
                           slot_scratch& scratch) {
  host_folds host;  // shared slots are host memory: the host kernel folds
  const int blocks = plan.ranks();
  for (int b = 0; b < blocks; ++b) {
    if (!plan.has_result(b)) return false;  // a reduce-scatter: its one step is one round already
  }
  const std::size_t data_at = slot_data_offset(static_cast<std::size_t>(blocks));
  std::vector<std::size_t>& sizes = scratch.block_sizes;
  sizes.resize(static_cast<std::size_t>(blocks));
  std::size_t largest = 0;
  std::size_t total = 0;
  for (int b = 0; b < blocks; ++b) {
    const std::size_t bytes = plan.block_bytes(b);
    sizes[static_cast<std::size_t>(b)] = bytes;
    largest = std::max(largest, bytes);
    total += bytes;
  }
  const std::size_t used = data_at + total;
  if (used > Comm::shared_slot_bytes || total > one_round_fold_bytes(blocks)) return false;
  constexpr bool may_run_whole = requires { plan.as_whole_run(); };
  whole_run whole;
  if constexpr (may_run_whole) whole = plan.as_whole_run();
  std::span<std::byte> slot = comm.begin_slot_round(tag, operation, 0);
  auto* count = reinterpret_cast<std::uint64_t*>(slot.data());
  auto* table = reinterpret_cast<slot_entry*>(slot.data() + sizeof(std::uint64_t));
  *count = static_cast<std::uint64_t>(blocks);
  std::size_t at = data_at;
  for (int b = 0; b < blocks; ++b) {
    const std::size_t bytes = sizes[static_cast<std::size_t>(b)];
    table[b] = {static_cast<std::uint32_t>(b), 0, at, bytes};
    if (!whole.usable && bytes != 0) plan.read_contribution(b, slot.data() + at, host);
    at += bytes;
  }
  if (whole.usable && total != 0) copy_into_slot(slot.data() + data_at, whole.contributions, total);
  std::size_t payload = 0;  // what direct's sends carry, as bytes_sent() counts them on the channels
  for (const step& st : steps.steps) {
    for (const transfer& t : st.sends) {
      for (int b : t.blocks) payload += sizes[static_cast<std::size_t>(b)];
    }
  }
  if (!comm.post_slot_round(used, payload, true)) {
    throw error(errc::size_mismatch, "the ranks disagree on the all-reduce's size (a peer's call does not fit)",
                error_context{comm.rank(), operation, 0, -1});
  }
  if constexpr (may_run_whole) {
    if (whole.usable && fold_whole_run(comm, plan, whole, slot, data_at, blocks, scratch.runs)) return true;
  }
  if (scratch.arena.size() < largest) scratch.arena.resize(largest);
  const int me = comm.rank();
  for (int b = 0; b < blocks; ++b) {
    const std::size_t bytes = table[b].bytes;
    const auto contribution = [&](int r) -> const std::byte* {
      return r == me ? slot.data() + table[b].offset
                     : find_in_slot(comm.peer_slot_round(r), b, bytes, r, error_context{me, operation, 0, r});
    };
    // Folded where the result goes when the plan allows, so that writing
    // the result only finishes it.
    std::byte* acc = slot_accumulator(plan, b, scratch.arena.data());
    if (blocks == 1) {
      if (bytes != 0) std::memcpy(acc, contribution(0), bytes);
    } else {
      plan.combine(b, contribution(0), contribution(1), acc, host);
      for (int r = 2; r < blocks; ++r) plan.combine(b, acc, contribution(r), acc, host);
    }
    plan.write_result(b, acc, host);
  }
  return true;
}

/// Runs `steps` (lockstep) through `comm`'s shared slots. False, before any
/// byte of the call moved, when some rank's call does not fit its slot: then
/// every rank returns false, and the caller runs the schedule as usual.
template <class Comm, class Plan>
bool run_in_slots(Comm& comm, const schedule& steps, const Plan& plan, std::string_view operation, int tag) {
  constexpr bool folds = fold_plan<Plan>;
  [[maybe_unused]] host_folds host;  // shared slots are host memory: the host kernel folds
  // One thread-local lookup per call (in a shared library each is a call),
  // kept: g++ otherwise computed the address again at a dozen of the uses
  // below (rematerialised) rather than keep it in a register.
  slot_scratch& scratch = *kept_address(&slot_scratch::of_this_thread());
  std::vector<int>& sent = scratch.sent;
  std::vector<std::byte>& arena = scratch.arena;
  std::vector<std::size_t>& acc_offset = scratch.acc_offset;
  std::vector<unsigned char>& acc_held = scratch.acc_held;
  std::vector<std::byte>& own = scratch.own;
  if constexpr (folds) {
    if (fold_all_in_one_round(comm, steps, plan, operation, tag, scratch)) return true;
  }

  // Does every round fit? Where every rank knows every block's size, each
  // decides alike from the largest block any step moves (every rank of
  // direct writes as many blocks a round), and a call that does not fit
  // takes the channels at once. Where a rank knows only its own blocks
  // (all_to_all_v's plan), it says in the first round's flag whether its
  // own fit, and every rank reads every flag.
  constexpr bool agrees_in_round = requires { plan.own_counts(); };
  std::size_t largest = 0;
  if constexpr (!agrees_in_round) {
    for (const step& st : steps.steps) {
      for (const auto* list : {&st.sends, &st.recvs}) {
        for (const transfer& t : *list) {
          for (int b : t.blocks) largest = std::max(largest, plan.block_bytes(b));
        }
      }
    }
  }
  bool fits = true;
  for (const step& st : steps.steps) {
    blocks_sent(st, sent);
    std::size_t bytes = 0;
    if constexpr (agrees_in_round) {
      bytes = slot_data_offset(sent.size());
      for (int b : sent) bytes += slot_aligned(plan.block_bytes(b));
    } else {
      bytes = slot_round_size(sent.size(), largest);
    }
    fits = fits && bytes <= slot_round_limit<Comm>();
  }
  if constexpr (!agrees_in_round) {
    if (!fits) return false;  // every rank alike, before any round
  }

  int blocks = 0;
  if constexpr (folds) {
    blocks = plan.ranks();
    std::size_t total = 0;
    acc_offset.resize(static_cast<std::size_t>(blocks));
    acc_held.assign(static_cast<std::size_t>(blocks), 0);
    for (int b = 0; b < blocks; ++b) {
      acc_offset[static_cast<std::size_t>(b)] = total;
      total += slot_aligned(plan.block_bytes(b));
    }
    if (arena.size() < total + 1) arena.resize(total + 1);
  }
  // A reduction's accumulator of block b (it holds the block once
  // acc_held[b] says so; until then the own contribution stands for it).
  [[maybe_unused]] auto accumulator = [&](int b) {
    return slot_accumulator(plan, b, arena.data() + acc_offset[static_cast<std::size_t>(b)]);
  };
  // The own contribution to block b: where it lies when the plan allows,
  // else read (and prepared) into `own`.
  [[maybe_unused]] auto own_contribution_of = [&](int b) -> const std::byte* {
    if constexpr (folds) {
      if (const std::byte* as_is = plan.contribution_as_is(b)) return as_is;
      const std::size_t bytes = plan.block_bytes(b);
      if (own.size() < bytes) own.resize(bytes);
      plan.read_contribution(b, own.data(), host);
    }
    return own.data();
  };

  for (std::size_t s = 0; s < steps.steps.size(); ++s) {
    const step& st = steps.steps[s];
    const int step_index = static_cast<int>(s);
    std::span<std::byte> slot = comm.begin_slot_round(tag, operation, step_index);
    if constexpr (!folds && !requires { plan.send_location(0); }) {
      // Without send_location a plan's own shard is where prepare() puts it:
      // the local copies first (again, harmlessly, if the call takes the channels).
      if (s == 0 && fits) plan.prepare();
    }
    std::size_t used = 0;
    std::size_t payload = 0;
    if (fits) {
      blocks_sent(st, sent);
      auto* count = reinterpret_cast<std::uint64_t*>(slot.data());
      auto* table = reinterpret_cast<slot_entry*>(slot.data() + sizeof(std::uint64_t));
      *count = sent.size();
      used = slot_data_offset(sent.size());
      for (std::size_t i = 0; i < sent.size(); ++i) {
        const int b = sent[i];
        const std::size_t bytes = plan.block_bytes(b);
        table[i] = {static_cast<std::uint32_t>(b), 0, used, bytes};
        std::byte* to = slot.data() + used;
        if constexpr (folds) {
          if (acc_held[static_cast<std::size_t>(b)] != 0) {
            if (bytes != 0) copy_into_slot(to, accumulator(b), bytes);
          } else if (bytes != 0) {
            plan.read_contribution(b, to, host);
          }
        } else if (bytes != 0) {
          // The own shard where the plan says a send reads it (the send
          // buffer: prepare() has not copied it into place yet).
          if constexpr (requires { plan.send_location(b); }) {
            pack(plan.send_location(b), to);
          } else {
            pack(plan.location(b), to);
          }
        }
        used += slot_aligned(bytes);
      }
      for (const transfer& t : st.sends) {
        for (int b : t.blocks) payload += plan.block_bytes(b);
      }
    }
    if (!comm.post_slot_round(used, payload, fits)) {
      if constexpr (!agrees_in_round) {
        throw error(errc::size_mismatch, "the ranks disagree on the call's sizes (a peer's call does not fit)",
                    error_context{comm.rank(), operation, step_index, -1});
      }
      return false;  // only the first round can say so: each rank checked all of its own above
    }
    if constexpr (!folds && requires { plan.send_location(0); }) {
      if (s == 0) plan.prepare();  // the local copies, once the call runs here
    }
    for (const transfer& r : st.recvs) {
      std::span<const std::byte> theirs;
      if (r.peer != own_contribution) theirs = comm.peer_slot_round(r.peer);
      for (int b : r.blocks) {
        const std::size_t bytes = plan.block_bytes(b);
        if constexpr (folds) {
          std::byte* acc = accumulator(b);
          unsigned char& held = acc_held[static_cast<std::size_t>(b)];
          const std::byte* in =
              r.peer == own_contribution
                  ? own_contribution_of(b)
                  : find_in_slot(theirs, b, bytes, r.peer, error_context{comm.rank(), operation, step_index, r.peer});
          if (r.arrival == fold::none) {
            if (bytes != 0) std::memcpy(acc, in, bytes);
          } else {
            // The first arrival folds with the own contribution where it
            // lies, straight into the accumulator.
            const std::byte* partial = held != 0 ? acc : own_contribution_of(b);
            if (r.arrival == fold::from_right) {
              plan.combine(b, partial, in, acc, host);
            } else {
              plan.combine(b, in, partial, acc, host);
            }
          }
          held = 1;
        } else {
          const std::byte* in =
              find_in_slot(theirs, b, bytes, r.peer, error_context{comm.rank(), operation, step_index, r.peer});
          if (bytes != 0) unpack(in, plan.location(b));
        }
      }
    }
  }
  if constexpr (folds) {
    for (int b = 0; b < blocks; ++b) {
      if (!plan.has_result(b)) continue;
      std::byte* acc = accumulator(b);
      if (acc_held[static_cast<std::size_t>(b)] == 0) plan.read_contribution(b, acc, host);  // nothing arrived
      plan.write_result(b, acc, host);
    }
  }
  return true;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/slot_run.ipp"
#endif

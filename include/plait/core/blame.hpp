// Who is to blame when a wait times out, written once for every transport.
//
// In a ring (and any schedule where a rank forwards what it received) a rank
// that never calls stalls its successor, which stalls the next, and so on: the
// first rank to time out usually waits for a rank that is there. So each rank
// keeps a wait record (which call it last entered; the call, step and peer of
// the wait it is in), and a rank that times out follows the chain of waits from
// its own: past every rank waiting in the same call, to the rank that is not
// in it (never entered it, or waits in another call or transfer). The
// transports only publish and read records (shm: in the segment, readable
// without the peer's help; MPI: a short query after the timeout, answered from
// inside the peers' waits); find_guilty is the rule and the sentence.
//
// A chain stops at a level's edge: a rank of a two-level call that waits at
// its other level is in no wait of this one. Its record says so (shm: away),
// or it does not answer (MPI: silent, while the asker waits in a level step
// itself), and a rank that times out waiting for it waits one timeout more,
// for the other level's own timeout to name the rank to blame and to fail
// this level with it (op/abandon_levels.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// What the executor tells the transport about the wait it is about to make:
/// the collective's name, its call (tag) and the schedule step. The name is
/// valid only while the note is set (the executor clears it after the step).
struct wait_note {
  std::string_view operation;  ///< "all_gather<ring>", empty: no collective step is waiting
  int tag = 0;                 ///< the call's tag
  int step = -1;               ///< the schedule step
};

/// Sets `comm`'s wait note for one step's post and wait, and clears it
/// after (a transport without notes ignores it).
template <class Comm>
class noted_wait {
 public:
  noted_wait(Comm& comm, std::string_view operation, int tag, int step) noexcept : comm_(comm) {
    if constexpr (requires { comm.note_wait(operation, tag, step); }) comm.note_wait(operation, tag, step);
  }
  ~noted_wait() {
    if constexpr (requires { comm_.clear_wait_note(); }) comm_.clear_wait_note();
  }
  noted_wait(const noted_wait&) = delete;
  noted_wait& operator=(const noted_wait&) = delete;

 private:
  Comm& comm_;
};

/// What one rank was doing when another's wait timed out.
struct wait_record {
  bool known = true;          ///< false: no record (an MPI rank that did not answer the query)
  std::uint32_t entered = 0;  ///< the last collective call (tag) it entered, 0: none yet
  bool waiting = false;       ///< inside a wait now (the fields below describe it)
  std::uint32_t call = 0;     ///< the call (tag) of that wait, 0: not a collective (a user transfer)
  std::uint32_t stamp = 0;    ///< call_stamp::bits() of that call
  int step = -1;              ///< its schedule step, -1 if unknown
  int peer = -1;              ///< the rank it waits for
  std::string operation;      ///< the call's name ("all_gather<ring>") where known, else empty
  bool gave_up = false;       ///< that wait timed out: it no longer waits for its peer's message
  bool stalled = false;       ///< in that wait, but it has not polled for stall_time (stopped, or without a core)
  bool away = false;          ///< in no wait here: at the other level of a two-level call (op/hierarchical.hpp)
};

/// How long a waiting rank may go without polling before its record counts
/// as stalled (shm: its wait publishes a time stamp every few milliseconds
/// once it sleeps between polls).
inline constexpr std::chrono::milliseconds stall_time{100};

/// The end of a chain of waits.
struct blame {
  int rank = -1;         ///< the rank to blame; -1 when the chain closes on itself (every rank waits)
  int first_peer = -1;   ///< the rank the timed-out rank itself waits for
  std::string chain;     ///< ", which waits for rank 1, which waits for rank 0" (empty: the first peer)
  std::string sentence;  ///< "rank 0 never entered all_gather<ring> #12 (its last call was #11)"
  bool busy = false;     ///< the rank is in the call but in no wait: it may be about to wait (look again)
  bool stuck = false;    ///< the rank waits but has stopped polling, or came late (it holds up its call)
  bool away = false;     ///< the rank never entered the call: it is at the other level of a two-level call, whose
                         ///< own timeout names the rank to blame there (wait one timeout more for its verdict)
  bool silent = false;   ///< the rank did not answer (MPI): absent, or at the other level of a two-level call
};

/// Follows the waits from `self` (waiting in a collective call) through every
/// rank waiting in the same call (number and stamp) to the first rank that is
/// not: that rank is to blame, with what it does instead. A rank with no
/// record (`known` false) is blamed as not answering. When the chain closes
/// on itself, or ends at a rank that has finished the call, a waiting rank
/// that message is missing from is to blame: one that has stopped polling
/// (`stalled`), else one that still waits for a rank that gave up (it reached
/// the wait a timeout after its peer began waiting for it). `records` holds one record per rank. Returns rank -1 when
/// `self` waits in no collective call (a user's transfer) or no rank of a cycle is late. Cold: run once, after a
/// timeout. (Declared without PLAIT_DECL, as detail::concat is.)
[[gnu::cold]] blame find_guilty(std::span<const wait_record> records, int self);

/// What `self`'s peers are told when its timeout found `found` (rank >= 0):
/// the cause first, then the chain ("rank 0 never entered all_gather<ring>
/// #12 (its last call was #11); rank 2 timed out waiting for rank 1, which
/// waits for rank 0"): a record that cuts it short keeps the cause.
[[gnu::cold]] std::string group_reason(const blame& found, int self);

/// A pair of ranks whose calls conflict (a message's stamp differs from the
/// receiver's) cannot tell which of them is wrong; the other ranks of the
/// call can. `stamps[q]`: rank q's call_stamp::bits() in the call, 0 where
/// unknown. Where more ranks run `peer`'s call than `self`'s, `self` is the
/// odd one: returns why ("rank 0 and rank 3 run rank 1's call too: this
/// rank's is the odd one"); else empty (the peer is to blame, as the pair
/// alone would say, a tie included).
[[gnu::cold]] std::string outvoted(std::span<const std::uint32_t> stamps, int self, int peer);

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/blame.ipp"
#endif

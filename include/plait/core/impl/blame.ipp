// Defines what plait/core/blame.hpp declares: the wait-for chain's rule and
// its sentence.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plait/core/blame.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

[[gnu::cold, gnu::noinline]] PLAIT_DECL blame find_guilty(std::span<const wait_record> records, int self) {
  // "all_gather<ring> #12": a call as the sentence names it.
  const auto call_text = [](const wait_record& r) {
    std::string name = !r.operation.empty() ? r.operation
                       : r.stamp != 0       ? describe(call_stamp::from_bits(r.stamp))
                                            : std::string("a collective");
    return name + " #" + std::to_string(r.call);
  };
  const int size = static_cast<int>(records.size());
  if (self < 0 || self >= size) return {};
  const wait_record& mine = records[static_cast<std::size_t>(self)];
  // Only a collective's calls are numbered alike on every rank: a user's own
  // transfer blames the peer it waits for, as before.
  if (!mine.waiting || mine.call == 0) return {};
  const auto record_of = [&](int r) -> const wait_record& { return records[static_cast<std::size_t>(r)]; };
  // The waiting rank among `members` that the missing message is due to: one
  // that has stopped polling its wait (its record shows where it stopped),
  // else one that still waits for a rank that gave up (that rank cancelled
  // its receive when its wait timed out; the late sender has since moved on
  // to wait for it).
  const auto single_out = [&](std::span<const int> members, blame& found) {
    for (const int c : members) {
      const wait_record& w = record_of(c);
      if (c == self || !w.stalled) continue;
      found.rank = c;
      found.stuck = true;
      found.sentence = "rank " + std::to_string(c) + " is stuck in " + call_text(mine) + ": it waits there (step " +
                       std::to_string(w.step) + ") for rank " + std::to_string(w.peer) +
                       " but has not polled for over " + std::to_string(stall_time.count()) +
                       " ms (stopped, or without a core)";
      return true;
    }
    for (const int c : members) {
      const wait_record& w = record_of(c);
      if (w.gave_up || w.peer < 0 || w.peer >= size || !record_of(w.peer).gave_up) continue;
      found.rank = c;
      found.stuck = true;
      found.sentence = "rank " + std::to_string(c) + " is late in " + call_text(mine) + ": it waits there (step " +
                       std::to_string(w.step) + ") for rank " + std::to_string(w.peer) +
                       ", which had already timed out waiting";
      return true;
    }
    return false;
  };
  std::vector<bool> seen(records.size(), false);
  std::vector<int> path{self};  // the chain so far, in order
  seen[static_cast<std::size_t>(self)] = true;
  blame out;
  out.first_peer = mine.peer;
  int at = self;
  for (;;) {
    const int next = record_of(at).peer;
    if (next < 0 || next >= size) return {};
    const wait_record& r = record_of(next);
    const bool same_call = r.known && r.waiting && r.call == mine.call && r.stamp == mine.stamp;
    if (same_call && !seen[static_cast<std::size_t>(next)]) {
      // Present and stalled by someone else: follow it (a rank that is merely
      // behind its peers in the call is never blamed).
      out.chain += ", which waits for rank " + std::to_string(r.peer);
      seen[static_cast<std::size_t>(next)] = true;
      path.push_back(next);
      at = next;
      continue;
    }
    // No schedule waits in a circle, and a rank that finished the call sent
    // all it had to: a chain that closes on itself, or ends at such a rank,
    // means a waiting rank's record is stale or a message went missing.
    const bool finished = r.known && r.entered > mine.call;
    if (same_call || finished) {
      const auto members = same_call ? std::span<const int>(std::find(path.begin(), path.end(), next), path.end())
                                     : std::span<const int>(path);
      if (single_out(members, out)) return out;
      if (same_call) return {};  // every rank of the cycle waits alike: no one to single out
    }
    out.rank = next;
    const std::string who = "rank " + std::to_string(next);
    if (!r.known) {
      out.sentence = who + " did not answer: it is not in " + call_text(mine) + " nor in any wait";
      out.silent = true;
    } else if (r.entered > mine.call && !r.waiting) {
      out.sentence = who + " has left " + call_text(mine) + " behind: its last call was #" + std::to_string(r.entered) +
                     ", and it waits in none";
    } else if (r.entered < mine.call) {
      // Still in an earlier call: if a rank stuck there, or busy there in no
      // wait (delayed inside the call), holds it up, that rank is the cause
      // of both waits (a busy one is looked at again, as in one call).
      if (r.waiting && r.call != 0 && r.call < mine.call) {
        const blame earlier = find_guilty(records, next);
        if ((earlier.stuck || earlier.busy) && earlier.rank >= 0) {
          out.rank = earlier.rank;
          out.stuck = earlier.stuck;
          out.busy = earlier.busy;
          out.chain += ", which waits in " + call_text(r) + " for rank " + std::to_string(r.peer) + earlier.chain;
          out.sentence = earlier.sentence;
          return out;
        }
      }
      out.sentence = who + " never entered " + call_text(mine) +
                     (r.entered == 0 ? std::string(" (it has entered no call yet)")
                                     : " (its last call was #" + std::to_string(r.entered) + ")");
      if (r.waiting) {
        out.sentence += r.call == 0 ? "; it waits for rank " + std::to_string(r.peer) + " in a point-to-point transfer"
                                    : "; it waits in " + call_text(r) + " for rank " + std::to_string(r.peer);
      } else if (r.away) {
        out.sentence += "; it is at the other level of a two-level call";
        out.away = true;
      }
    } else if (r.waiting && r.call == 0) {
      out.sentence = who + " is in " + call_text(mine) + " but waits for rank " + std::to_string(r.peer) +
                     " in a point-to-point transfer";
    } else if (r.waiting) {
      out.sentence = who + " is in " + call_text(r) + ", waiting for rank " + std::to_string(r.peer) + ", not in " +
                     call_text(mine);
    } else {
      out.sentence = who + " entered " + call_text(mine) + " but has not waited in it since (busy, or stopped)";
      out.busy = true;
    }
    return out;
  }
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string group_reason(const blame& found, int self) {
  return found.sentence + "; rank " + std::to_string(self) + " timed out waiting for rank " +
         std::to_string(found.first_peer) + found.chain;
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string outvoted(std::span<const std::uint32_t> stamps, int self,
                                                             int peer) {
  const int size = static_cast<int>(stamps.size());
  if (self < 0 || self >= size || peer < 0 || peer >= size || self == peer) return {};
  const std::uint32_t mine = stamps[static_cast<std::size_t>(self)];
  const std::uint32_t theirs = stamps[static_cast<std::size_t>(peer)];
  if (mine == 0 || theirs == 0 || mine == theirs) return {};
  std::vector<int> with_peer;
  std::size_t with_me = 0;
  for (int q = 0; q < size; ++q) {
    if (q == self || q == peer) continue;
    const std::uint32_t stamp = stamps[static_cast<std::size_t>(q)];
    if (stamp == theirs) with_peer.push_back(q);
    if (stamp == mine) ++with_me;
  }
  if (with_peer.size() <= with_me) return {};
  std::string out;
  for (std::size_t i = 0; i < with_peer.size(); ++i) {
    out += (i == 0 ? "rank " : i + 1 == with_peer.size() ? " and rank " : ", rank ") + std::to_string(with_peer[i]);
  }
  return out + " run" + (with_peer.size() == 1 ? "s" : "") + " rank " + std::to_string(peer) +
         "'s call too: this rank's is the odd one";
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

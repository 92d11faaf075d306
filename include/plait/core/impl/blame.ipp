// Defines what plait/core/blame.hpp declares: the wait-for chain's rule and
// its sentence.
#pragma once

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
  std::vector<bool> seen(records.size(), false);
  seen[static_cast<std::size_t>(self)] = true;
  blame out;
  out.first_peer = mine.peer;
  int at = self;
  for (;;) {
    const int next = records[static_cast<std::size_t>(at)].peer;
    if (next < 0 || next >= size) return {};
    const wait_record& r = records[static_cast<std::size_t>(next)];
    const bool same_call = r.known && r.waiting && r.call == mine.call && r.stamp == mine.stamp;
    if (same_call && !seen[static_cast<std::size_t>(next)]) {
      // Present and stalled by someone else: follow it (a late rank is never blamed).
      out.chain += ", which waits for rank " + std::to_string(r.peer);
      seen[static_cast<std::size_t>(next)] = true;
      at = next;
      continue;
    }
    if (same_call) return {};  // every rank of the cycle is in the call: no one to single out
    out.rank = next;
    const std::string who = "rank " + std::to_string(next);
    if (!r.known) {
      out.sentence = who + " did not answer: it is not in " + call_text(mine) + " nor in any wait";
    } else if (r.entered > mine.call && !r.waiting) {
      out.sentence = who + " has left " + call_text(mine) + " behind: its last call was #" + std::to_string(r.entered) +
                     ", and it waits in none";
    } else if (r.entered < mine.call) {
      out.sentence = who + " never entered " + call_text(mine) +
                     (r.entered == 0 ? std::string(" (it has entered no call yet)")
                                     : " (its last call was #" + std::to_string(r.entered) + ")");
      if (r.waiting) {
        out.sentence += r.call == 0 ? "; it waits for rank " + std::to_string(r.peer) + " in a point-to-point transfer"
                                    : "; it waits in " + call_text(r) + " for rank " + std::to_string(r.peer);
      }
    } else if (r.waiting && r.call == 0) {
      out.sentence = who + " is in " + call_text(mine) + " but waits for rank " + std::to_string(r.peer) +
                     " in a point-to-point transfer";
    } else if (r.waiting) {
      out.sentence = who + " is in " + call_text(r) + ", waiting for rank " + std::to_string(r.peer) + ", not in " +
                     call_text(mine);
    } else {
      out.sentence = who + " entered " + call_text(mine) + " but has not waited in it since (busy, or stopped)";
    }
    return out;
  }
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string group_reason(const blame& found, int self) {
  return found.sentence + "; rank " + std::to_string(self) + " timed out waiting for rank " +
         std::to_string(found.first_peer) + found.chain;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

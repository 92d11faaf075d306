// Defines plait::describe, verify's findings in words (see plait/algorithm/verify.hpp).
#pragma once

#include <string>

#include "plait/algorithm/verify.hpp"

namespace plait {
inline namespace v0 {

PLAIT_DECL std::string describe(const verify_result& result) {
  if (result) return {};
  auto num = [](int v) { return std::to_string(v); };
  const std::string at = "rank " + num(result.rank) + (result.step >= 0 ? ", step " + num(result.step) : std::string{});
  switch (result.fault) {
    case verify_fault::none: return {};
    case verify_fault::bad_size: return "the group size must be at least 1";
    case verify_fault::unsupported: return "the algorithm does not accept this group size";
    case verify_fault::bad_peer: return at + ": peer " + num(result.peer) + " is not a rank of the group";
    case verify_fault::self_transfer: return at + ": a transfer with itself (the executor copies local blocks)";
    case verify_fault::bad_block:
      return at + ": block " + num(result.block) + " does not exist (peer " + num(result.peer) + ")";
    case verify_fault::duplicate_block:
      return at + ": the message with peer " + num(result.peer) + " lists block " + num(result.block) + " twice";
    case verify_fault::send_unheld:
      return at + ": sends block " + num(result.block) + " to rank " + num(result.peer) + " without holding it";
    case verify_fault::recv_held:
      return at + ": receives block " + num(result.block) + " from rank " + num(result.peer) + " but already holds it";
    case verify_fault::recv_twice:
      return at + ": receives block " + num(result.block) + " (from rank " + num(result.peer) + ") a second time";
    case verify_fault::missing_block: return "rank " + num(result.rank) + " never receives block " + num(result.block);
    case verify_fault::unmatched:
      return at + ": a message with rank " + num(result.peer) + " has no matching counterpart on that rank";
    case verify_fault::mismatched_blocks:
      return at + ": the message to rank " + num(result.peer) +
             " and that rank's receive list different blocks (first difference: block " + num(result.block) + ")";
    case verify_fault::deadlock:
      return at + ": deadlock, waiting for rank " + num(result.peer) + " which never posts the other side";
    case verify_fault::wrong_contributions:
      return "rank " + num(result.rank) + "'s block " + num(result.block) +
             (result.peer >= 0 ? " has rank " + num(result.peer) + "'s contribution twice"
                               : " lacks a rank's contribution");
    case verify_fault::out_of_order:
      return "rank " + num(result.rank) + " combines block " + num(result.block) + " out of rank order";
    case verify_fault::not_left_fold:
      return "rank " + num(result.rank) + "'s block " + num(result.block) +
             " is not the left fold ((x0 op x1) op x2) ... over the ranks";
    case verify_fault::divergent_result:
      return "ranks " + num(result.peer) + " and " + num(result.rank) + " combine block " + num(result.block) +
             " in different ways";
  }
  return "unknown fault";
}

}  // namespace v0
}  // namespace plait

// Defines what plait/layout/bundle_plan.hpp declares: a schedule expanded for
// the members of a bundle.
#pragma once

#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/call_site.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/overlap.hpp"
#include "plait/layout/bundle_plan.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL schedule expand_for_members(const schedule& steps, int members) {
  const auto expand = [members](const std::vector<transfer>& list) {
    std::vector<transfer> out;
    out.reserve(list.size());
    for (const transfer& t : list) {
      transfer wide{t.peer, {}};
      wide.blocks.reserve(t.blocks.size() * static_cast<std::size_t>(members));
      for (int b : t.blocks) {
        for (int m = 0; m < members; ++m) wide.blocks.push_back(b * members + m);
      }
      out.push_back(std::move(wide));
    }
    return out;
  };
  schedule out;
  out.lockstep = steps.lockstep;  // the same steps on every rank, only wider
  out.steps.reserve(steps.steps.size());
  for (const step& s : steps.steps) out.steps.push_back(step{expand(s.sends), expand(s.recvs)});
  return out;
}

PLAIT_DECL void check_members_apart(const call_site& at, const strided_set* send, const strided_set* recv,
                                    std::size_t members) {
  for (std::size_t i = 0; i < members; ++i) {
    for (std::size_t j = i + 1; j < members; ++j) {
      if (share_bytes(recv[i], recv[j])) {
        at.fail(errc::invalid_argument, {"recv members ", i, " and ", j,
                                         " of the bundle share elements: both would write them, and one member's "
                                         "data would be lost; give each member its own memory"});
      }
    }
  }
  if (send == nullptr) return;  // in place
  for (std::size_t i = 0; i < members; ++i) {
    for (std::size_t j = 0; j < members; ++j) {
      if (i != j && share_bytes(send[i], recv[j])) {
        at.fail(errc::invalid_argument, {"send member ", i, " and recv member ", j,
                                         " of the bundle share elements: the call would overwrite data it has yet "
                                         "to send"});
      }
    }
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

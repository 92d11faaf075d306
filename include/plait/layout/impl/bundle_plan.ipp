// Defines what plait/layout/bundle_plan.hpp declares: a schedule expanded for
// the members of a bundle.
#pragma once

#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/config.hpp"
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
  out.steps.reserve(steps.steps.size());
  for (const step& s : steps.steps) out.steps.push_back(step{expand(s.sends), expand(s.recvs)});
  return out;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

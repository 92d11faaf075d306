// Defines what plait/core/call_stamp.hpp declares: how stamps read in error
// messages.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {

PLAIT_DECL std::string_view call_kind_name(call_kind kind) noexcept {
  switch (kind) {
    case call_kind::unknown: return "an unnamed call";
    case call_kind::all_gather: return "all_gather";
    case call_kind::all_to_all: return "all_to_all";
    case call_kind::check: return "check mode's signature exchange";
    case call_kind::split_all_gather: return "split_all_gather";
    case call_kind::control: return "a control exchange";
    case call_kind::all_gather_v: return "all_gather_v";
    case call_kind::all_to_all_v: return "all_to_all_v";
  }
  return "an unknown kind of call";
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string describe(call_stamp stamp) {
  char digest[16];
  std::snprintf(digest, sizeof digest, "%04x", static_cast<unsigned>(stamp.digest));
  return std::string(call_kind_name(stamp.kind)) + " (algorithm and layout digest " + digest + ")";
}

}  // namespace v0
}  // namespace plait

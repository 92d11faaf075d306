// Defines what plait/core/call_stamp.hpp declares: how stamps read in error
// messages.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {

namespace detail {
/// The names of the kinds from first_custom_call_kind on (null: unnamed).
inline std::array<std::atomic<const std::string_view*>, 256>& custom_call_kind_names() noexcept {
  static std::array<std::atomic<const std::string_view*>, 256> names{};
  return names;
}
}  // namespace detail

PLAIT_DECL void name_call_kind(call_kind kind, const std::string_view* name) noexcept {
  const auto index = static_cast<std::size_t>(kind);
  if (index >= first_custom_call_kind) detail::custom_call_kind_names()[index].store(name, std::memory_order_release);
}

PLAIT_DECL std::string_view call_kind_name(call_kind kind) noexcept {
  if (static_cast<std::size_t>(kind) >= first_custom_call_kind) {
    const std::string_view* name =
        detail::custom_call_kind_names()[static_cast<std::size_t>(kind)].load(std::memory_order_acquire);
    return name != nullptr ? *name : "an operation of one's own";
  }
  switch (kind) {
    case call_kind::unknown: return "an unnamed call";
    case call_kind::all_gather: return "all_gather";
    case call_kind::all_to_all: return "all_to_all";
    case call_kind::check: return "check mode's signature exchange";
    case call_kind::split_all_gather: return "split_all_gather";
    case call_kind::control: return "a control exchange";
    case call_kind::all_gather_v: return "all_gather_v";
    case call_kind::all_to_all_v: return "all_to_all_v";
    case call_kind::reduce_scatter: return "reduce_scatter";
    case call_kind::reduce_scatter_v: return "reduce_scatter_v";
    case call_kind::all_reduce: return "all_reduce";
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

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
  std::string text = std::string(call_kind_name(stamp.kind)) + " (algorithm and layout digest " + digest + ")";
  if (stamp.element != 0) text += " of " + describe_element(stamp.element);
  return text;
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string describe_element(std::uint8_t code) {
  const std::size_t size = element_size_in(code);
  const std::string bits = std::to_string(8 * size);
  switch (element_class_in(code)) {
    case element_class::none: return "no element type";
    case element_class::signed_integer: return "int" + bits;
    case element_class::unsigned_integer: return "uint" + bits;
    case element_class::floating:
      if (size == 2) return "half";
      if (size == 4) return "float";
      if (size == 8) return "double";
      return size == 0 ? "floating point of 32 bytes or more" : "floating point of " + std::to_string(size) + " bytes";
    case element_class::brain_floating:
      return size == 2 ? "bfloat16" : "brain floating point of " + std::to_string(size) + " bytes";
    case element_class::boolean: return "bool";
    case element_class::bytes: return size == 0 ? "bytes of size 32 or more" : "bytes of size " + std::to_string(size);
    case element_class::mixed: return "a bundle of several element types";
  }
  return "an unknown element type";
}

}  // namespace v0
}  // namespace plait

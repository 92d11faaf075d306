// Defines the executor's non-template helpers: direct_span and place_message (see plait/op/executor.hpp).
#pragma once

#include <cstddef>
#include <span>

#include "plait/core/region.hpp"
#include "plait/op/executor.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL std::span<std::byte> direct_span(std::span<const region> blocks) {
  if (blocks.empty()) return {};
  std::byte* start = blocks.front().data;
  std::byte* next = start;
  for (const region& r : blocks) {
    if (!r.is_contiguous() || (r.bytes() != 0 && r.data != next)) return {};
    if (r.bytes() != 0) next = r.data + r.bytes();
  }
  if (start == nullptr && next != nullptr) return {};
  return {start, static_cast<std::size_t>(next - start)};
}

PLAIT_DECL void place_message(located_message& m, std::span<const region> regions, std::size_t& staged) {
  const auto blocks = regions.subspan(m.first, m.count);
  m.bytes = 0;
  for (const region& r : blocks) m.bytes += r.bytes();
  m.direct = direct_span(blocks);
  if (m.direct.size() != m.bytes || (m.direct.data() == nullptr && m.bytes != 0)) {
    m.direct = {};
    m.staging_offset = staged;
    staged += m.bytes;
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

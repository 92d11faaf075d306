// Defines the executor's non-template helpers: direct_span, own_copy_step, largest_step_of and place_message (see
// plait/op/executor.hpp).
#pragma once

#include <algorithm>
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

PLAIT_DECL int own_copy_step(const schedule& steps, int block) {
  const auto holds = [block](const transfer& t) {
    return std::find(t.blocks.begin(), t.blocks.end(), block) != t.blocks.end();
  };
  for (std::size_t index = 0; index < steps.steps.size(); ++index) {
    const step& s = steps.steps[index];
    const bool received = std::any_of(s.recvs.begin(), s.recvs.end(), holds);
    bool sent = false;
    bool alone = true;
    for (const transfer& t : s.sends) {
      if (!holds(t)) continue;
      sent = true;
      alone = alone && t.blocks.size() == 1;
    }
    if (!received && !sent) continue;
    return !received && sent && alone ? static_cast<int>(index) : -1;
  }
  return -1;
}

PLAIT_DECL largest_step largest_step_of(const schedule& steps) {
  largest_step largest;
  for (const step& s : steps.steps) {
    std::size_t blocks = 0;
    for (const transfer& t : s.recvs) blocks += t.blocks.size();
    for (const transfer& t : s.sends) blocks += t.blocks.size();
    largest.messages = std::max(largest.messages, s.recvs.size() + s.sends.size());
    largest.blocks = std::max(largest.blocks, blocks);
  }
  return largest;
}

PLAIT_DECL void place_message(located_message& m, std::span<const region> regions, std::size_t& staged,
                              std::size_t vectored_from) {
  const auto blocks = regions.subspan(m.first, m.count);
  m.bytes = 0;
  for (const region& r : blocks) m.bytes += r.bytes();
  m.direct = direct_span(blocks);
  if (m.direct.size() != m.bytes || (m.direct.data() == nullptr && m.bytes != 0)) {
    m.direct = {};
    m.vectored = m.bytes >= vectored_from && std::all_of(blocks.begin(), blocks.end(), [](const region& r) {
                   return r.is_contiguous() || r.bytes() == 0;
                 });
    if (m.vectored) return;
    m.staging_offset = staged;
    staged += m.bytes;
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Defines the out-of-line part of plait/op/slot_run.hpp: reading a peer's
// round, whose table is the peer's words and checked before use.
#pragma once

#include <cstring>

#include "plait/op/slot_run.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL slot_scratch& slot_scratch::of_this_thread() noexcept {
  thread_local slot_scratch scratch;
  return scratch;
}

PLAIT_DECL const std::byte* find_in_slot(std::span<const std::byte> slot, int block, std::size_t expected, int peer,
                                         const error_context& at) {
  std::uint64_t count = 0;
  if (slot.size() >= sizeof count) std::memcpy(&count, slot.data(), sizeof count);
  if (slot.size() < sizeof count || count > (slot.size() - sizeof count) / sizeof(slot_entry)) {
    throw error(errc::transport, concat({"rank ", peer, "'s shared slot holds no valid table of blocks"}), at);
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    slot_entry entry;
    std::memcpy(&entry, slot.data() + sizeof count + i * sizeof entry, sizeof entry);
    if (entry.block != static_cast<std::uint32_t>(block)) continue;
    if (entry.bytes != expected) {
      throw error(
          errc::size_mismatch,
          concat({"rank ", peer, " sent ", entry.bytes, " bytes of block ", block, ", this rank expects ", expected}),
          at);
    }
    if (entry.offset > slot.size() || entry.bytes > slot.size() - entry.offset) {
      throw error(errc::transport, concat({"rank ", peer, "'s shared slot names bytes outside it"}), at);
    }
    return slot.data() + entry.offset;
  }
  throw error(errc::transport, concat({"rank ", peer, "'s shared slot does not hold block ", block}), at);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

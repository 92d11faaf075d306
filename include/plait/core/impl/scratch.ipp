// Defines plait/core/scratch.hpp's scratch_cache: a thread's kept blocks in a
// trivially destructible thread_local (valid while the thread lives, so a
// byte_buffer freed by a static destructor after the thread's own
// thread_locals are gone still finds it), emptied by a second thread_local's
// destructor when the thread ends.
#pragma once

#include <cstddef>

#include "plait/core/scratch.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

struct scratch_blocks {
  std::byte* data[scratch_cache::most_blocks];
  std::size_t bytes[scratch_cache::most_blocks];
  std::size_t count;
  std::size_t held;
  bool closed;  // the thread is ending: blocks handed back now are freed
};

PLAIT_DECL scratch_blocks& this_thread_scratch() noexcept {
  thread_local constinit scratch_blocks blocks{};
  return blocks;
}

/// Frees a thread's kept blocks when the thread ends.
struct scratch_reaper {
  scratch_reaper() = default;
  scratch_reaper(const scratch_reaper&) = delete;
  scratch_reaper& operator=(const scratch_reaper&) = delete;
  ~scratch_reaper() {
    scratch_blocks& kept = this_thread_scratch();
    for (std::size_t i = 0; i < kept.count; ++i) delete[] kept.data[i];
    kept.count = 0;
    kept.held = 0;
    kept.closed = true;
  }
};

PLAIT_DECL void reap_scratch_when_thread_ends() noexcept {
  thread_local scratch_reaper reaper;
  static_cast<void>(reaper);
}

PLAIT_DECL std::byte* scratch_cache::take(std::size_t bytes, std::size_t& capacity) {
  scratch_blocks& kept = this_thread_scratch();
  if (bytes >= smallest) {
    std::size_t best = kept.count;
    for (std::size_t i = 0; i < kept.count; ++i) {
      if (kept.bytes[i] >= bytes && (best == kept.count || kept.bytes[i] < kept.bytes[best])) best = i;
    }
    if (best != kept.count) {
      std::byte* data = kept.data[best];
      capacity = kept.bytes[best];
      kept.held -= capacity;
      --kept.count;
      kept.data[best] = kept.data[kept.count];
      kept.bytes[best] = kept.bytes[kept.count];
      return data;
    }
  }
  std::byte* data = new std::byte[bytes];
  capacity = bytes;
  return data;
}

PLAIT_DECL void scratch_cache::give(std::byte* data, std::size_t capacity) noexcept {
  if (data == nullptr) return;
  scratch_blocks& kept = this_thread_scratch();
  if (capacity < smallest || capacity > most_bytes || kept.closed) {
    delete[] data;
    return;
  }
  reap_scratch_when_thread_ends();
  // Room for it: the smallest kept blocks go, unless this one is smaller still.
  while (kept.count == most_blocks || kept.held + capacity > most_bytes) {
    std::size_t least = 0;
    for (std::size_t i = 1; i < kept.count; ++i) {
      if (kept.bytes[i] < kept.bytes[least]) least = i;
    }
    if (kept.bytes[least] >= capacity) {
      delete[] data;
      return;
    }
    delete[] kept.data[least];
    kept.held -= kept.bytes[least];
    --kept.count;
    kept.data[least] = kept.data[kept.count];
    kept.bytes[least] = kept.bytes[kept.count];
  }
  kept.data[kept.count] = data;
  kept.bytes[kept.count] = capacity;
  ++kept.count;
  kept.held += capacity;
}

PLAIT_DECL std::size_t scratch_cache::kept_bytes() noexcept { return this_thread_scratch().held; }

}  // namespace detail
}  // namespace v0
}  // namespace plait

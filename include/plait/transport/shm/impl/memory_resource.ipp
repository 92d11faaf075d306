// Defines the out-of-line parts of plait/transport/shm/memory_resource.hpp:
// pool segment names, creating and finding segments, first-fit allocation
// inside them, and a receiver's mappings of its peers' segments.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plait/core/error.hpp"
#include "plait/transport/shm/memory_resource.hpp"
#include "plait/transport/shm/segment.hpp"
#include "plait/transport/shm/shared_buffer.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

namespace detail {

inline constexpr std::string_view pool_name_prefix = "/plait-p";
inline constexpr std::size_t pool_granule = 64;                          // alignment and rounding of every allocation
inline constexpr std::size_t first_pool_segment = std::size_t{1} << 20;  // later ones double
inline constexpr std::size_t largest_doubled_segment = std::size_t{1} << 30;

PLAIT_DECL std::string pool_segment_name(std::int32_t pid, pool_key key, std::uint64_t id) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string name = std::string(pool_name_prefix) + std::to_string(pid) + "-";
  for (const std::uint64_t half : {key.high, key.low}) {
    for (int shift = 60; shift >= 0; shift -= 4) name += hex[(half >> shift) & 0xF];
  }
  return name + "-" + std::to_string(id);
}

PLAIT_DECL bool is_pool_segment_name(const char* name, std::size_t capacity) noexcept {
  const std::size_t length = strnlen(name, capacity);
  if (length == capacity) return false;  // unterminated
  const std::string_view text(name, length);
  if (text.substr(0, pool_name_prefix.size()) != pool_name_prefix) return false;
  auto digits = [&](std::size_t from, std::size_t to) {
    return from < to &&
           std::all_of(text.begin() + static_cast<std::ptrdiff_t>(from), text.begin() + static_cast<std::ptrdiff_t>(to),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  const std::size_t dash = text.find('-', pool_name_prefix.size());
  if (dash == std::string_view::npos || dash - pool_name_prefix.size() > 10 || !digits(pool_name_prefix.size(), dash)) {
    return false;
  }
  const std::size_t key_end = dash + 1 + 32;
  if (text.size() <= key_end + 1 || text[key_end] != '-' || text.size() - key_end - 1 > 20) return false;
  for (std::size_t i = dash + 1; i < key_end; ++i) {
    if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f'))) return false;
  }
  return digits(key_end + 1, text.size());
}

PLAIT_DECL void remove_abandoned_pool_segments() noexcept {
  static std::atomic<pid_t> swept_by{0};  // a pid, so that a forked child sweeps again
  const pid_t me = getpid();
  if (swept_by.exchange(me, std::memory_order_relaxed) == me) return;
  remove_abandoned_objects(is_pool_segment_name, pool_name_prefix.size());
}

PLAIT_DECL pool_mappings& pool_mappings::operator=(pool_mappings&& other) noexcept {
  if (this != &other) {
    unmap_all();
    mappings_ = std::move(other.mappings_);
    other.mappings_.clear();
  }
  return *this;
}

PLAIT_DECL void pool_mappings::unmap_all() noexcept {
  for (const mapping& m : mappings_) munmap(m.base, m.bytes);
  mappings_.clear();
}

PLAIT_DECL std::span<std::byte> pool_mappings::find_or_map(int peer, std::int32_t pid, pool_key key,
                                                           std::uint64_t id) noexcept {
  for (const mapping& m : mappings_) {
    if (m.id == id && m.peer == peer && m.pid == pid && m.key.high == key.high && m.key.low == key.low)
      return {m.base, m.bytes};
  }
  if (pid <= 0) return {};
  try {
    const std::string name = pool_segment_name(pid, key, id);
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) return {};
    struct stat info {};
    if (fstat(fd, &info) != 0 || info.st_uid != geteuid() || (info.st_mode & 0777) != 0600 || info.st_size <= 0) {
      close(fd);
      return {};
    }
    const auto bytes = static_cast<std::size_t>(info.st_size);
    void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) return {};
    mappings_.push_back({peer, pid, key, id, static_cast<std::byte*>(base), bytes});
    return {static_cast<std::byte*>(base), bytes};
  } catch (...) {  // std::bad_alloc from the name or the list: read by address instead
    return {};
  }
}

}  // namespace detail

PLAIT_DECL memory_resource::memory_resource(int rank, bool named)
    : rank_(rank), named_(named), pid_(static_cast<std::int32_t>(getpid())) {
  std::random_device device;
  auto bits64 = [&device] { return (std::uint64_t{device()} << 32) | device(); };
  key_ = {bits64(), bits64()};
  if (named_) detail::remove_abandoned_pool_segments();
}

PLAIT_DECL memory_resource::~memory_resource() {
  remove_names();
  for (const auto& s : segments_) munmap(s->base, s->bytes);
}

PLAIT_DECL void memory_resource::remove_names() noexcept {
  named_ = false;  // segments made from now on need no name either
  for (const auto& s : segments_) {
    if (!s->name.empty()) shm_unlink(s->name.c_str());
    s->name.clear();
  }
}

PLAIT_DECL memory_resource::segment& memory_resource::add_segment(std::size_t at_least) {
  const error_context at{rank_, "memory_resource::allocate"};
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  if (at_least > SIZE_MAX / 2 - page) {
    throw error(errc::transport, "cannot allocate " + std::to_string(at_least) + " bytes of shared memory", at);
  }
  const std::size_t last = segments_.empty() ? 0 : segments_.back()->bytes;
  const std::size_t doubled = std::max(detail::first_pool_segment, std::min(2 * last, detail::largest_doubled_segment));
  const std::size_t bytes = detail::round_up(std::max(at_least, doubled), page);
  auto s = std::make_unique<segment>();
  s->id = segments_.size() + 1;
  const std::string name = detail::pool_segment_name(pid_, key_, s->id);
  // A pool no other process opens gets no name at all, not even for a
  // moment: a name briefly in /dev/shm is one a crash can leak, and one a
  // scan of the names can see.
  const bool named = named_;
  const int fd =
      named ? shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600) : memfd_create("plait-pool", MFD_CLOEXEC);
  if (fd < 0) throw error(errc::transport, detail::system_message("cannot create pool segment", name), at);
  auto unlink_name = [&] {
    if (named) shm_unlink(name.c_str());
  };
  // fchmod: the umask may have cleared bits of 0600 but never adds any.
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const std::string message = detail::system_message("cannot size pool segment", name);
    close(fd);
    unlink_name();
    throw error(errc::transport, message + " (" + std::to_string(bytes) + " bytes; is /dev/shm large enough?)", at);
  }
  try {
    s->base = detail::map_and_close(fd, bytes, "pool segment", name, at);
  } catch (...) {
    unlink_name();
    throw;
  }
  s->bytes = bytes;
  s->free.emplace(0, bytes);
  if (named) s->name = name;
  segment& added = *s;
  try {
    segments_.push_back(std::move(s));
    by_address_.insert(std::upper_bound(by_address_.begin(), by_address_.end(), &added,
                                        [](const segment* a, const segment* b) { return a->base < b->base; }),
                       &added);
  } catch (...) {
    if (!segments_.empty() && segments_.back().get() == &added) segments_.pop_back();
    if (!added.name.empty()) shm_unlink(added.name.c_str());
    munmap(added.base, added.bytes);
    throw;
  }
  return added;
}

PLAIT_DECL void* memory_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  const std::size_t align = std::max(alignment, detail::pool_granule);
  if (bytes > SIZE_MAX / 4 || align > SIZE_MAX / 4 || (align & (align - 1)) != 0) {
    throw error(errc::transport,
                "cannot allocate " + std::to_string(bytes) + " bytes aligned to " + std::to_string(alignment) +
                    " in shared memory",
                {rank_, "memory_resource::allocate"});
  }
  const std::size_t length = detail::round_up(std::max<std::size_t>(bytes, 1), detail::pool_granule);
  auto take = [&](segment& s) -> void* {
    for (auto run = s.free.begin(); run != s.free.end(); ++run) {
      const auto [offset, run_length] = *run;
      const auto address = reinterpret_cast<std::uintptr_t>(s.base) + offset;
      const std::size_t pad = static_cast<std::size_t>((align - address % align) % align);
      if (pad > run_length || length > run_length - pad) continue;
      s.free.erase(run);
      if (pad != 0) s.free.emplace(offset, pad);
      if (run_length - pad - length != 0) s.free.emplace(offset + pad + length, run_length - pad - length);
      bytes_in_use_ += length;
      return s.base + offset + pad;
    }
    return nullptr;
  };
  for (const auto& s : segments_) {
    if (void* p = take(*s)) return p;
  }
  void* p = take(add_segment(length + align));
  if (p == nullptr)
    throw error(errc::transport, "a new pool segment is too small", {rank_, "memory_resource::allocate"});
  return p;
}

PLAIT_DECL void memory_resource::do_deallocate(void* p, std::size_t bytes, std::size_t /*alignment*/) {
  const auto* at = static_cast<const std::byte*>(p);
  segment* s = segment_of(at);
  if (s == nullptr) return;  // not ours: undefined by the contract; never touch another allocator's memory
  const std::size_t length = detail::round_up(std::max<std::size_t>(bytes, 1), detail::pool_granule);
  std::size_t offset = static_cast<std::size_t>(at - s->base);
  std::size_t run = length;
  bytes_in_use_ -= std::min(bytes_in_use_, length);
  auto next = s->free.lower_bound(offset);
  if (next != s->free.end() && next->first == offset + run) {  // merge with the run after
    run += next->second;
    next = s->free.erase(next);
  }
  if (next != s->free.begin()) {  // and with the run before
    const auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      offset = previous->first;
      run += previous->second;
      s->free.erase(previous);
    }
  }
  s->free.emplace(offset, run);
}

PLAIT_DECL memory_resource::segment* memory_resource::segment_of(const std::byte* p) const noexcept {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  // Compared as integers: the pointers may belong to different objects.
  auto after = std::upper_bound(by_address_.begin(), by_address_.end(), at, [](std::uintptr_t a, const segment* s) {
    return a < reinterpret_cast<std::uintptr_t>(s->base);
  });
  if (after == by_address_.begin()) return nullptr;
  segment* s = *std::prev(after);
  return at - reinterpret_cast<std::uintptr_t>(s->base) < s->bytes ? s : nullptr;
}

PLAIT_DECL detail::pool_location memory_resource::find(const std::byte* data, std::size_t bytes) const noexcept {
  if (by_address_.empty() || bytes == 0) return {};
  const segment* s = segment_of(data);
  if (s == nullptr) return {};
  const auto offset =
      static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(data) - reinterpret_cast<std::uintptr_t>(s->base));
  if (bytes > s->bytes - offset) return {};
  return {s->id, offset};
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

// Defines the out-of-line parts of plait/transport/shm/segment.hpp: segment
// creation, opening and checking, claiming ranks, reclaiming a segment whose
// processes have all ended, and the system-call helpers.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plait/core/backoff.hpp"
#include "plait/core/error.hpp"
#include "plait/transport/shm/segment.hpp"

namespace plait {
inline namespace v0 {
namespace shm::detail {

PLAIT_DECL std::string check_segment_header(const segment_header& h, const geometry& expected) {
  if (h.version != segment_version)
    return "version " + std::to_string(h.version) + " (expected " + std::to_string(segment_version) + ")";
  if (h.ranks != expected.ranks)
    return "ranks " + std::to_string(h.ranks) + " (expected " + std::to_string(expected.ranks) + ")";
  if (h.slots != expected.slots || h.slot_bytes != expected.slot_bytes) return "a different slot geometry";
  if (h.total_bytes != expected.total_bytes())
    return "size " + std::to_string(h.total_bytes) + " (expected " + std::to_string(expected.total_bytes()) + ")";
  if (h.creator_pid <= 0) return "no creator process (pid " + std::to_string(h.creator_pid) + ")";
  return {};
}

PLAIT_DECL bool process_ended(std::int32_t pid) noexcept {
  return pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
}

PLAIT_DECL std::string random_name() {
  std::random_device device;
  std::string name = "/plait-";
  static constexpr char hex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {  // 128 random bits
    std::uint32_t bits = device();
    for (int j = 0; j < 4; ++j) {
      name += hex[bits & 0xF];
      name += hex[(bits >> 4) & 0xF];
      bits >>= 8;
    }
  }
  return name;
}

PLAIT_DECL std::string system_message(std::string_view what, const std::string& name) {
  return std::string(what) + " " + name + ": " + std::strerror(errno);
}

PLAIT_DECL std::int32_t ended_creator(int fd, std::size_t bytes) noexcept {
  if (bytes < sizeof(segment_header)) return 0;
  void* base = mmap(nullptr, sizeof(segment_header), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return 0;
  auto& h = *static_cast<segment_header*>(base);
  std::int32_t creator = 0;
  if (atomic(h.magic).load(std::memory_order_acquire) == segment_magic && h.version == segment_version) {
    creator = h.creator_pid;
  }
  munmap(base, sizeof(segment_header));
  return process_ended(creator) ? creator : 0;
}

PLAIT_DECL std::byte* map_and_close(int fd, std::size_t bytes, std::string_view what, const std::string& name,
                                    const error_context& at) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int saved = errno;
  close(fd);
  if (base == MAP_FAILED) {
    errno = saved;
    throw error(errc::transport, system_message("cannot map " + std::string(what), name), at);
  }
  return static_cast<std::byte*>(base);
}

PLAIT_DECL segment::~segment() {
  unlink();
  if (base_ != nullptr) munmap(base_, bytes_);
}

PLAIT_DECL std::shared_ptr<segment> segment::create(const std::string& name, const geometry& shape,
                                                    const error_context& at) {
  int fd = -1;
  // An existing name is reclaimed only when its processes have all ended;
  // a third EEXIST means other processes keep creating it.
  for (int attempt = 0;; ++attempt) {
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) break;
    if (errno != EEXIST) throw error(errc::transport, system_message("cannot create shared-memory segment", name), at);
    if (attempt == 2) {
      throw error(
          errc::invalid_argument,
          "shared-memory segment " + name + " keeps being created by other processes (several rank 0s with this name?)",
          at);
    }
    remove_abandoned(name, at);  // throws unless the old segment is gone now
  }
  std::shared_ptr<segment> s(new segment(name, shape.total_bytes(), true));
  // fchmod: the umask may have cleared bits of 0600 but never adds any; make it exact.
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, static_cast<off_t>(s->bytes_)) != 0) {
    const std::string message = system_message("cannot size shared-memory segment", name);
    close(fd);
    throw error(errc::transport, message, at);
  }
  s->map(fd, at);
  auto& h = s->header();
  h.version = segment_version;
  h.ranks = shape.ranks;
  h.slots = shape.slots;
  h.slot_bytes = shape.slot_bytes;
  h.total_bytes = shape.total_bytes();
  h.creator_pid = static_cast<std::int32_t>(getpid());
  s->set_shape(shape);
  atomic(h.magic).store(segment_magic, std::memory_order_release);
  return s;
}

PLAIT_DECL std::shared_ptr<segment> segment::create_private(const geometry& shape, const error_context& at) {
  auto s = create(random_name(), shape, at);
  s->unlink();
  return s;
}

PLAIT_DECL std::shared_ptr<segment> segment::open(const std::string& name, const geometry& shape, deadline until,
                                                  const error_context& at) {
  plait::detail::backoff wait;
  // A segment left by a dead creator never forms a group: a new rank 0
  // removes its name and creates a fresh one, which this rank waits for.
  auto await_replacement = [&](std::int32_t dead_creator) {
    if (clock::now() > until) {
      throw error(errc::timeout,
                  "shared-memory segment " + name + " was created by process " + std::to_string(dead_creator) +
                      ", which has ended, and no new rank 0 replaced it in time",
                  at);
    }
    wait.pause();
  };
  for (;;) {
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) {
      if (errno != ENOENT) throw error(errc::transport, system_message("cannot open shared-memory segment", name), at);
      if (clock::now() > until) {
        throw error(errc::timeout, "shared-memory segment " + name + " was not created in time (is rank 0 running?)",
                    at);
      }
      wait.pause();
      continue;
    }
    struct stat info {};
    if (fstat(fd, &info) != 0) {
      const std::string message = system_message("cannot inspect shared-memory segment", name);
      close(fd);
      throw error(errc::transport, message, at);
    }
    if (info.st_uid != geteuid() || (info.st_mode & 0777) != 0600) {
      close(fd);
      throw error(errc::invalid_argument,
                  "shared-memory segment " + name + " is not owned by this user with mode 0600; refusing to use it",
                  at);
    }
    if (static_cast<std::size_t>(info.st_size) != shape.total_bytes()) {
      const std::int32_t dead_creator = ended_creator(fd, static_cast<std::size_t>(info.st_size));
      close(fd);
      if (dead_creator != 0) {  // a dead group of another size
        await_replacement(dead_creator);
        continue;
      }
      if (info.st_size != 0) {
        throw error(errc::invalid_argument,
                    "shared-memory segment " + name + " has " + std::to_string(info.st_size) + " bytes where " +
                        std::to_string(shape.total_bytes()) + " were expected (a group of another size?)",
                    at);
      }
      if (clock::now() > until) throw error(errc::timeout, "shared-memory segment " + name + " was never sized", at);
      wait.pause();  // the creator has not sized it yet
      continue;
    }
    std::shared_ptr<segment> s(new segment(name, shape.total_bytes(), false));
    s->map(fd, at);
    s->set_shape(shape);
    auto& h = s->header();
    while (atomic(h.magic).load(std::memory_order_acquire) != segment_magic) {
      if (clock::now() > until)
        throw error(errc::timeout, "shared-memory segment " + name + " was never initialised", at);
      wait.pause();
    }
    const segment_header copy = h;  // check a snapshot, not memory a peer may still change
    if (copy.version == segment_version && process_ended(copy.creator_pid)) {
      s.reset();
      await_replacement(copy.creator_pid);
      continue;
    }
    if (const std::string problem = check_segment_header(copy, shape); !problem.empty()) {
      throw error(errc::invalid_argument, "shared-memory segment " + name + " describes a different group: " + problem,
                  at);
    }
    return s;
  }
}

PLAIT_DECL void segment::remove_abandoned(const std::string& name, const error_context& at) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    if (errno == ENOENT) return;
    throw error(errc::transport, system_message("cannot open existing shared-memory segment", name), at);
  }
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    const std::string message = system_message("cannot inspect existing shared-memory segment", name);
    close(fd);
    throw error(errc::transport, message, at);
  }
  const std::string exists = "shared-memory segment " + name + " already exists";
  const std::string by_hand = " (remove /dev/shm" + name + " once no process uses it)";
  if (info.st_uid != geteuid() || (info.st_mode & 0777) != 0600) {
    close(fd);
    throw error(errc::invalid_argument, exists + " and is not this user's with mode 0600; refusing to touch it", at);
  }
  const auto bytes = static_cast<std::size_t>(info.st_size);
  if (bytes < sizeof(segment_header)) {
    close(fd);
    throw error(errc::invalid_argument,
                exists + " but is not initialised: its creator is creating it now, or was killed doing so" + by_hand,
                at);
  }
  std::shared_ptr<segment> old(new segment(name, bytes, false));
  old->map(fd, at);
  // Copies of what the creator writes once before the magic: the mapping is
  // another process's and could still change under us.
  const bool initialised = atomic(old->header().magic).load(std::memory_order_acquire) == segment_magic;
  const std::uint32_t version = old->header().version;
  const std::uint32_t ranks = old->header().ranks;
  const std::int32_t creator = old->header().creator_pid;
  if (!initialised || version != segment_version) {
    throw error(errc::invalid_argument,
                exists +
                    " but is not an initialised segment of this plait version, so whether its processes "
                    "still run cannot be told" +
                    by_hand,
                at);
  }
  const geometry old_shape{ranks};
  if (ranks < 1 || ranks > static_cast<std::uint32_t>(max_ranks) ||
      old_shape.records_offset() + ranks * sizeof(rank_record) > bytes) {
    throw error(errc::invalid_argument, exists + " but describes an impossible group" + by_hand, at);
  }
  old->set_shape(old_shape);
  if (!process_ended(creator)) {
    throw error(errc::invalid_argument,
                exists + " and belongs to a live group: its creator, process " + std::to_string(creator) +
                    ", is still running (another rank 0 with this name?)",
                at);
  }
  for (std::uint32_t r = 0; r < ranks; ++r) {
    const std::int32_t pid = atomic(old->record(static_cast<int>(r)).pid).load(std::memory_order_acquire);
    if (pid != 0 && !process_ended(pid)) {
      throw error(errc::invalid_argument,
                  exists + ": its creator, process " + std::to_string(creator) + ", has ended, but its rank " +
                      std::to_string(r) + ", process " + std::to_string(pid) + ", is still running",
                  at);
    }
  }
  std::uint32_t not_removed = 0;
  if (atomic(old->header().name_removed).compare_exchange_strong(not_removed, 1, std::memory_order_acq_rel)) {
    shm_unlink(name.c_str());
    const std::string line = "plait: removed shared-memory segment " + name + ", left by process " +
                             std::to_string(creator) + " and its ranks, which have all ended\n";
    std::fputs(line.c_str(), stderr);
  }
}

PLAIT_DECL void segment::claim(int rank, std::string_view group, const error_context& at) const {
  const auto me = static_cast<std::int32_t>(getpid());
  std::int32_t holder = 0;
  if (atomic(record(rank).pid).compare_exchange_strong(holder, me, std::memory_order_acq_rel)) return;
  const std::string which = "rank " + std::to_string(rank) + " of group '" + std::string(group) + "'";
  if (process_ended(holder)) {
    // Its attachment was counted: a second claimant would let the group
    // "form" with a rank missing, so the group is lost.
    throw error(errc::peer_lost,
                which + " was taken by process " + std::to_string(holder) +
                    ", which has ended before the group formed; the group cannot form (start all its ranks again)",
                at);
  }
  throw error(
      errc::invalid_argument,
      which + " is already taken by process " + std::to_string(holder) + (holder == me ? " (this process)" : ""), at);
}

PLAIT_DECL std::string segment::ended_member() const {
  const std::int32_t creator = atomic(header().creator_pid).load(std::memory_order_relaxed);
  if (process_ended(creator))
    return "the group's creator, process " + std::to_string(creator) + ", ended before every rank attached";
  for (std::uint32_t r = 0; r < shape_.ranks; ++r) {
    const std::int32_t pid = atomic(record(static_cast<int>(r)).pid).load(std::memory_order_relaxed);
    if (process_ended(pid)) {
      return "rank " + std::to_string(r) + ", process " + std::to_string(pid) + ", ended before every rank attached";
    }
  }
  return {};
}

PLAIT_DECL void segment::remove_name() noexcept {
  if (unlinked_.exchange(true)) return;
  std::uint32_t not_removed = 0;
  // Unmapped: create() failed before publishing anything, and the name is its own.
  if (base_ == nullptr
          ? owner_
          : atomic(header().name_removed).compare_exchange_strong(not_removed, 1, std::memory_order_acq_rel)) {
    shm_unlink(name_.c_str());
  }
}

PLAIT_DECL void segment::unlink() noexcept {
  if (owner_) remove_name();
}

PLAIT_DECL void segment::set_shape(const geometry& shape) {
  shape_ = shape;
  local_ = std::make_unique<std::atomic<bool>[]>(shape.ranks);  // value-initialised: false
}

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

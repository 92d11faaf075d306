// Defines the out-of-line parts of plait/transport/shm/segment.hpp: segment
// creation, opening and checking, and the system-call helpers.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include <fcntl.h>
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
  return {};
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
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      throw error(errc::invalid_argument,
                  "shared-memory segment " + name +
                      " already exists: another group uses this name, or a crashed "
                      "one left it behind (remove /dev/shm" +
                      name + ")",
                  at);
    }
    throw error(errc::transport, system_message("cannot create shared-memory segment", name), at);
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
      close(fd);
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
    if (const std::string problem = check_segment_header(copy, shape); !problem.empty()) {
      throw error(errc::invalid_argument, "shared-memory segment " + name + " describes a different group: " + problem,
                  at);
    }
    return s;
  }
}

PLAIT_DECL void segment::unlink() noexcept {
  if (owner_ && !unlinked_.exchange(true)) shm_unlink(name_.c_str());
}

PLAIT_DECL void segment::set_shape(const geometry& shape) {
  shape_ = shape;
  local_ = std::make_unique<std::atomic<bool>[]>(shape.ranks);  // value-initialised: false
}

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

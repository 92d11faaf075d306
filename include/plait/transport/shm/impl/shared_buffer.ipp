// Defines the out-of-line parts of plait/transport/shm/shared_buffer.hpp:
// window names, removing parts left by dead processes, and creating, opening
// and unmapping a window's parts.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plait/core/error.hpp"
#include "plait/transport/shm/segment.hpp"
#include "plait/transport/shm/shared_buffer.hpp"

namespace plait {
inline namespace v0 {
namespace shm::detail {

PLAIT_DECL std::string window_name() {
  return std::string(window_name_prefix) + std::to_string(getpid()) + "-" +
         random_name().substr(std::string_view("/plait-").size());
}

PLAIT_DECL bool is_window_name(const char* name, std::size_t capacity) noexcept {
  const std::size_t length = strnlen(name, capacity);
  if (length == capacity) return false;  // unterminated
  const std::string_view text(name, length);
  if (text.substr(0, window_name_prefix.size()) != window_name_prefix) return false;
  const std::size_t dash = text.find('-', window_name_prefix.size());
  const std::size_t digits = dash == std::string_view::npos ? 0 : dash - window_name_prefix.size();
  if (digits == 0 || digits > 10 || text.size() != dash + 1 + 32) return false;
  for (std::size_t i = window_name_prefix.size(); i < text.size(); ++i) {
    const char c = text[i];
    const bool ok = i < dash ? (c >= '0' && c <= '9') : i == dash || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!ok) return false;
  }
  return true;
}

PLAIT_DECL void remove_abandoned_parts() noexcept {
  static std::atomic<pid_t> swept_by{0};  // a pid, so that a forked child sweeps again
  const pid_t me = getpid();
  if (swept_by.exchange(me, std::memory_order_relaxed) == me) return;
  remove_abandoned_objects(is_window_name, window_name_prefix.size());
}

PLAIT_DECL void remove_abandoned_objects(bool (*matches)(const char* name, std::size_t capacity) noexcept,
                                         std::size_t prefix_length) noexcept {
  DIR* dir = opendir("/dev/shm");  // where Linux keeps POSIX shared memory; elsewhere nothing to do
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = std::string("/") + entry->d_name;
    if (!matches(name.c_str(), name.size() + 1)) continue;
    const long pid = std::strtol(name.c_str() + prefix_length, nullptr, 10);
    if (pid <= 0 || pid > INT32_MAX || !process_ended(static_cast<std::int32_t>(pid))) continue;
    struct stat info {};
    if (fstatat(dirfd(dir), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(info.st_mode) ||
        info.st_uid != geteuid()) {
      continue;
    }
    shm_unlink(name.c_str());
  }
  closedir(dir);
}

PLAIT_DECL window::~window() {
  for (const part& p : parts_) {
    if (p.base != nullptr) munmap(p.base, p.bytes);
  }
}

PLAIT_DECL std::string window::create_part(int rank, std::size_t bytes, const error_context& at) {
  remove_abandoned_parts();
  std::string name = window_name();
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw error(errc::transport, system_message("cannot create shared buffer", name), at);
  // fchmod: the umask may have cleared bits of 0600 but never adds any.
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const std::string message = system_message("cannot size shared buffer", name);
    close(fd);
    shm_unlink(name.c_str());
    throw error(errc::transport, message + " (" + std::to_string(bytes) + " bytes; is /dev/shm large enough?)", at);
  }
  try {
    map(rank, fd, bytes, name, at);
  } catch (...) {
    shm_unlink(name.c_str());
    throw;
  }
  return name;
}

PLAIT_DECL void window::open_part(int rank, const std::string& name, std::size_t bytes, const error_context& at) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) throw error(errc::transport, system_message("cannot open rank's shared buffer", name), at);
  struct stat info {};
  if (fstat(fd, &info) != 0 || info.st_uid != geteuid() || (info.st_mode & 0777) != 0600 ||
      static_cast<std::uint64_t>(info.st_size) != bytes) {
    close(fd);
    throw error(errc::transport,
                "shared buffer " + name + " of rank " + std::to_string(rank) + " is not this user's, mode 0600 and " +
                    std::to_string(bytes) + " bytes; refusing to use it",
                at);
  }
  map(rank, fd, bytes, name, at);
}

PLAIT_DECL void window::map(int rank, int fd, std::size_t bytes, const std::string& name, const error_context& at) {
  parts_[static_cast<std::size_t>(rank)] = {map_and_close(fd, bytes, "shared buffer", name, at), bytes};
}

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

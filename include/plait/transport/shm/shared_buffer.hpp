// plait::shm::shared_buffer<T> — what communicator::allocate<T>(n) returns: an
// owning buffer in shared memory that every rank of the group has mapped, so a
// peer reads it in place with one memcpy (no kernel call, no staging).
//
// Each collective allocation is a window: every rank creates one POSIX
// shared-memory object for its own part (O_EXCL, mode 0600, a fresh name:
// "plait-w", the creator's pid, 128 random bits), the ranks exchange names and
// sizes, each maps every peer's part and checks owner, mode and size, and once
// all have mapped, each removes its name (so nothing is left in /dev/shm when
// allocate returns). A process killed in between leaves its part's name; the
// next allocate of any process of this user removes it (remove_abandoned_parts).
// A window lives
// as long as the buffer does; the communicator only keeps weak references, so
// a freed buffer is never found again (no address-keyed cache to go stale).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/transport/shm/segment.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

namespace detail {

/// What each rank tells the others about its part of a window (fixed size:
/// it travels as one control message). Read from a peer: checked before use.
struct window_announcement {
  std::uint64_t id;     ///< the window's number in the group (same on every rank)
  std::uint64_t bytes;  ///< the size of this rank's part
  std::uint32_t ok;     ///< 1 when the part exists; 0 when this rank failed (see the error it throws)
  char name[68];        ///< its shared-memory object ("" when bytes == 0)
};
static_assert(sizeof(window_announcement) == 88, "no padding: every byte sent is initialised");

inline constexpr std::string_view window_name_prefix = "/plait-w";

/// A fresh name for this process's part of a window: "/plait-w<pid>-<32 hex
/// digits>", so a part left behind by a crash names its creator.
PLAIT_DECL std::string window_name();

/// True when `name` (at most `capacity` characters, maybe unterminated) is a
/// name window_name() makes. A peer's name is opened only when it passes, so
/// a hostile peer cannot point us at another object.
PLAIT_DECL bool is_window_name(const char* name, std::size_t capacity) noexcept;

/// Removes the names of window parts whose creating process has ended (killed
/// inside allocate before it removed its name): only /dev/shm entries that
/// is_window_name accepts exactly, that are regular files owned by this user,
/// and whose pid the kernel reports gone (process_ended). Runs once per process
/// (a forked child runs it again); a system without /dev/shm skips it.
PLAIT_DECL void remove_abandoned_parts() noexcept;

/// The sweep behind remove_abandoned_parts, for any kind of name that
/// `matches` accepts exactly and whose creator's pid follows its first
/// `prefix_length` characters (the pools of memory_resource.hpp use it too).
PLAIT_DECL void remove_abandoned_objects(bool (*matches)(const char* name, std::size_t capacity) noexcept,
                                         std::size_t prefix_length) noexcept;

/// True when a read of `bytes` at `offset` (from a peer's descriptor) lies
/// inside a part of `part_bytes`.
inline bool window_read_fits(std::uint64_t offset, std::uint64_t bytes, std::uint64_t part_bytes) noexcept {
  return offset <= part_bytes && bytes <= part_bytes - offset;
}

/// One collective allocation as mapped in this process: every rank's part.
class window {
 public:
  struct part {
    std::byte* base = nullptr;
    std::size_t bytes = 0;
  };

  window(std::uint64_t id, int size) : id_(id), parts_(static_cast<std::size_t>(size)) {}
  window(const window&) = delete;
  window& operator=(const window&) = delete;
  ~window();

  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  [[nodiscard]] const part& of(int rank) const noexcept { return parts_[static_cast<std::size_t>(rank)]; }

  /// Creates this rank's part under a fresh random name; returns the name.
  std::string create_part(int rank, std::size_t bytes, const error_context& at);

  /// Maps `rank`'s part, named by that rank; checks owner, mode and size.
  void open_part(int rank, const std::string& name, std::size_t bytes, const error_context& at);

 private:
  void map(int rank, int fd, std::size_t bytes, const std::string& name, const error_context& at);

  std::uint64_t id_;
  std::vector<part> parts_;
};

}  // namespace detail

/// An owning buffer of `size()` T in shared memory, from
/// communicator::allocate<T>(n). A contiguous range (use it wherever a
/// std::vector would do; it converts to std::span<T>); when it is the send buffer of a collective, the
/// peers copy straight out of it. Zero-initialised. Move-only; the memory is
/// released when this buffer (and the peers' mappings of it) go away.
template <class T>
class shared_buffer {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "plait::shm::shared_buffer<T> needs a trivially copyable, trivially destructible T: "
                "its bytes are shared between processes");

 public:
  /// The element type.
  using value_type = T;
  /// The element type (as std::span names it).
  using element_type = T;
  /// The type of size().
  using size_type = std::size_t;
  /// A pointer: the buffer is contiguous.
  using iterator = T*;
  /// A pointer to const.
  using const_iterator = const T*;

  shared_buffer() = default;
  /// Movable: `other` is left empty.
  shared_buffer(shared_buffer&& other) noexcept
      : window_(std::move(other.window_)),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  /// Movable: the buffer held here is released, `other` is left empty.
  shared_buffer& operator=(shared_buffer&& other) noexcept {
    window_ = std::move(other.window_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  shared_buffer(const shared_buffer&) = delete;
  shared_buffer& operator=(const shared_buffer&) = delete;

  /// The first element (null when empty).
  [[nodiscard]] T* data() const noexcept { return data_; }
  /// The number of elements.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// True when size() is 0.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// The first element.
  [[nodiscard]] T* begin() const noexcept { return data_; }
  /// One past the last element.
  [[nodiscard]] T* end() const noexcept { return data_ + size_; }
  /// Element i (unchecked).
  T& operator[](std::size_t i) const noexcept { return data_[i]; }
  /// The whole buffer as a span.
  [[nodiscard]] std::span<T> span() const noexcept { return {data_, size_}; }

 private:
  friend class communicator;
  shared_buffer(std::shared_ptr<detail::window> w, T* data, std::size_t size)
      : window_(std::move(w)), data_(data), size_(size) {}

  std::shared_ptr<detail::window> window_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace shm
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/transport/shm/impl/shared_buffer.ipp"
#endif

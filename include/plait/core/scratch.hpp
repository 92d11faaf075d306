// Scratch memory for the executor, packing and check mode: owning arrays of a
// size fixed when they are made. std::vector would do, but every distinct
// std::vector<T> costs each translation unit some 50-70 instantiated
// functions at -O2 (allocator, growth, destruction), and a header-only
// library pays that in every file that runs a collective (compile cost,
// docs/performance.md). These two small classes cost a few functions each.
//
// byte_buffer, the staging of every run, draws its large blocks from a
// per-thread cache of freed ones (scratch_cache below): new and delete of a
// block's size map and unmap, or grow and trim the heap, on every call, and
// the fresh pages fault on first touch.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// `size` default-constructed T, owned; movable, not copyable.
template <class T>
class fixed_array {
 public:
  fixed_array() noexcept = default;
  explicit fixed_array(std::size_t size) : data_(size != 0 ? new T[size]() : nullptr), size_(size) {}
  fixed_array(fixed_array&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  fixed_array& operator=(fixed_array&& other) noexcept {
    if (this != &other) {
      delete[] data_;
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  fixed_array(const fixed_array&) = delete;
  fixed_array& operator=(const fixed_array&) = delete;
  ~fixed_array() { delete[] data_; }

  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() const noexcept { return data_; }
  T* end() const noexcept { return data_ + size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// `size` value-initialised T, in place when `size` <= N and on the heap
/// beyond: the executor's per-call scratch (one entry per message or block of
/// a step), which for a few peers then costs no allocation. Neither copyable
/// nor movable: it lives on the stack of one call.
template <class T, std::size_t N>
class small_array {
 public:
  explicit small_array(std::size_t size) : size_(size) {
    if (size > N) {
      heap_ = fixed_array<T>(size);
      data_ = heap_.data();
      return;
    }
    for (std::size_t i = 0; i < size; ++i) ::new (static_cast<void*>(in_place_ + i * sizeof(T))) T();
    data_ = std::launder(reinterpret_cast<T*>(in_place_));
  }
  small_array(const small_array&) = delete;
  small_array& operator=(const small_array&) = delete;
  ~small_array() {
    if (size_ <= N) {
      for (std::size_t i = 0; i < size_; ++i) data_[i].~T();
    }
  }

  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  alignas(T) std::byte in_place_[N * sizeof(T)];
  fixed_array<T> heap_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// The freed scratch blocks a thread keeps for its next collectives. Every
/// call stages in blocks as large as its own (an all-reduce of 1 MiB on two
/// ranks: two of 512 KiB), and allocating them afresh each call costs more
/// than the call's own work: glibc maps and unmaps such blocks, or grows and
/// trims the heap, and every fresh page faults on first touch (measured at
/// P = 2: 340 faults and about 3x the time of an all_reduce of 1 MiB;
/// docs/performance.md, "Reductions"). Blocks under `smallest` bytes stay
/// with malloc, whose bins serve them without the kernel.
struct scratch_cache {
  static constexpr std::size_t smallest = std::size_t{32} << 10;
  /// At most this many blocks and bytes kept per thread; the smallest go first.
  static constexpr std::size_t most_blocks = 8;
  static constexpr std::size_t most_bytes = std::size_t{128} << 20;

  /// A block of at least `bytes` (> 0): the smallest kept one that is large
  /// enough, else a new one; its size in `capacity`.
  PLAIT_DECL static std::byte* take(std::size_t bytes, std::size_t& capacity);
  /// Hands back a block of `capacity` bytes from take (null: nothing). Kept
  /// for this thread's later calls, or freed; freed once the thread ends.
  PLAIT_DECL static void give(std::byte* data, std::size_t capacity) noexcept;
  /// Bytes this thread keeps now (tests).
  [[nodiscard]] PLAIT_DECL static std::size_t kept_bytes() noexcept;
};

/// Owning uninitialised bytes with data() and size(): the host executor's
/// staging and transit buffers, and plait::copy's bounce buffer. Large ones
/// come from and go back to the thread's scratch_cache.
class byte_buffer {
 public:
  byte_buffer() noexcept = default;
  explicit byte_buffer(std::size_t size) : size_(size) {
    if (size != 0) data_ = scratch_cache::take(size, capacity_);
  }
  byte_buffer(byte_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  byte_buffer& operator=(byte_buffer&& other) noexcept {
    if (this != &other) {
      scratch_cache::give(data_, capacity_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  byte_buffer(const byte_buffer&) = delete;
  byte_buffer& operator=(const byte_buffer&) = delete;
  ~byte_buffer() { scratch_cache::give(data_, capacity_); }

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;  // of the block behind data_, >= size_
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/scratch.ipp"
#endif

// Scratch memory for the executor, packing and check mode: owning arrays of a
// size fixed when they are made. std::vector would do, but every distinct
// std::vector<T> costs each translation unit some 50-70 instantiated
// functions at -O2 (allocator, growth, destruction), and a header-only
// library pays that in every file that runs a collective (compile cost,
// docs/performance.md). These two small classes cost a few functions each.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

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

/// Owning uninitialised bytes with data() and size(): the host executor's
/// staging and transit buffers, and plait::copy's bounce buffer.
class byte_buffer {
 public:
  byte_buffer() noexcept = default;
  explicit byte_buffer(std::size_t size) : data_(size != 0 ? new std::byte[size] : nullptr), size_(size) {}
  byte_buffer(byte_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  byte_buffer& operator=(byte_buffer&& other) noexcept {
    if (this != &other) {
      delete[] data_;
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  byte_buffer(const byte_buffer&) = delete;
  byte_buffer& operator=(const byte_buffer&) = delete;
  ~byte_buffer() { delete[] data_; }

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

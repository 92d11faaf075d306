// Scratch memory for the executor, packing and check mode: owning arrays of a
// size fixed when they are made. std::vector would do, but every distinct
// std::vector<T> costs each translation unit some 50-70 instantiated
// functions at -O2 (allocator, growth, destruction), and a header-only
// library pays that in every file that runs a collective (compile cost,
// docs/performance.md). These two small classes cost a few functions each.
#pragma once

#include <cstddef>
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

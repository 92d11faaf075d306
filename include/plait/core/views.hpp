// What users pass as data: contiguous ranges of trivially copyable elements,
// viewed as bytes as early as possible so the executor compiles once.
#pragma once

#include <cstddef>
#include <functional>
#include <ranges>
#include <span>
#include <type_traits>

namespace plait {
inline namespace v0 {

/// Marks an in-place all-gather: this rank's shard is already in its slice of recv.
struct in_place_t {
  explicit in_place_t() = default;
};
/// Pass as the send argument of an all-gather whose shard already sits in its slice of recv.
inline constexpr in_place_t in_place{};

/// Any contiguous, sized range of trivially copyable elements (std::vector,
/// std::array, std::span, C arrays; const or not).
template <class R>
concept send_range = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
    std::is_trivially_copyable_v<std::ranges::range_value_t<R>>;

/// A send_range whose elements can be written.
template <class R>
concept recv_range = send_range<R> && !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

namespace detail {
template <class R>
std::span<const std::byte> const_bytes(R&& range) {
  const auto* data = std::ranges::data(range);
  return {reinterpret_cast<const std::byte*>(data), std::ranges::size(range) * sizeof(*data)};
}
template <class R>
std::span<std::byte> mutable_bytes(R&& range) {
  auto* data = std::ranges::data(range);
  return {reinterpret_cast<std::byte*>(data), std::ranges::size(range) * sizeof(*data)};
}
/// True when the two byte ranges share at least one byte.
inline bool overlap(std::span<const std::byte> a, std::span<const std::byte> b) noexcept {
  if (a.empty() || b.empty()) return false;
  const auto* a0 = a.data();
  const auto* b0 = b.data();
  return std::less<>{}(a0, b0 + b.size()) && std::less<>{}(b0, a0 + a.size());
}
}  // namespace detail

}  // namespace v0
}  // namespace plait

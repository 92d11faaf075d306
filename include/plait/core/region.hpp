// Byte regions: where one block lives in memory, as contiguous runs of bytes
// addressed by an up-to-6-d index. Layouts describe blocks this way; the
// executor and the packers only ever see regions, never element types, so the
// core compiles once rather than once per user type.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

namespace plait {
inline namespace v0 {

struct region {
  static constexpr int max_dims = 6;

  std::byte* data = nullptr;    ///< the first byte of the first run
  std::size_t run_bytes = 0;    ///< bytes in each contiguous run
  int dims = 0;                 ///< outer dimensions; 0 means one run
  std::array<std::size_t, max_dims> extent{};      ///< runs along each outer dimension (outermost first)
  std::array<std::ptrdiff_t, max_dims> stride{};   ///< bytes between runs along each outer dimension

  /// One contiguous run.
  static constexpr region contiguous(std::byte* data, std::size_t bytes) noexcept { return region{data, bytes}; }

  [[nodiscard]] constexpr std::size_t runs() const noexcept {
    std::size_t n = 1;
    for (int d = 0; d < dims; ++d) n *= extent[static_cast<std::size_t>(d)];
    return n;
  }
  [[nodiscard]] constexpr std::size_t bytes() const noexcept { return run_bytes * runs(); }
  /// True when the region is one run of bytes() bytes starting at data.
  [[nodiscard]] constexpr bool is_contiguous() const noexcept {
    std::size_t expected = run_bytes;
    for (int d = dims - 1; d >= 0; --d) {
      const auto i = static_cast<std::size_t>(d);
      if (extent[i] > 1 && stride[i] != static_cast<std::ptrdiff_t>(expected)) return false;
      expected *= extent[i];
    }
    return true;
  }
  [[nodiscard]] std::span<std::byte> as_span() const noexcept { return {data, bytes()}; }
};

namespace detail {
/// Calls fn(run_pointer) for every run of r, outermost dimension slowest.
template <class Fn>
void for_each_run(const region& r, Fn&& fn) {
  if (r.bytes() == 0) return;
  if (r.dims == 0) {
    fn(r.data);
    return;
  }
  std::array<std::size_t, region::max_dims> index{};
  std::byte* p = r.data;
  const int last = r.dims - 1;
  for (;;) {
    fn(p);
    int d = last;
    for (; d >= 0; --d) {
      const auto i = static_cast<std::size_t>(d);
      p += r.stride[i];
      if (++index[i] < r.extent[i]) break;
      p -= r.stride[i] * static_cast<std::ptrdiff_t>(r.extent[i]);
      index[i] = 0;
    }
    if (d < 0) return;
  }
}
}  // namespace detail

/// Gathers the runs of src into the contiguous bytes at dst (src.bytes() of them).
inline void pack(const region& src, std::byte* dst) {
  if (src.is_contiguous()) {
    if (src.bytes() != 0) std::memcpy(dst, src.data, src.bytes());
    return;
  }
  detail::for_each_run(src, [&](const std::byte* run) {
    std::memcpy(dst, run, src.run_bytes);
    dst += src.run_bytes;
  });
}

/// Scatters contiguous bytes at src into the runs of dst; bytes between runs are never written.
inline void unpack(const std::byte* src, const region& dst) {
  if (dst.is_contiguous()) {
    if (dst.bytes() != 0) std::memcpy(dst.data, src, dst.bytes());
    return;
  }
  detail::for_each_run(dst, [&](std::byte* run) {
    std::memcpy(run, src, dst.run_bytes);
    src += dst.run_bytes;
  });
}

/// Copies between two regions of equal size (run shapes may differ).
inline void copy(const region& src, const region& dst) {
  if (src.is_contiguous()) return unpack(src.data, dst);
  if (dst.is_contiguous()) return pack(src, dst.data);
  // Both strided (rare: a strided all-to-all block onto itself): go through a
  // temporary rather than matching two run shapes.
  std::vector<std::byte> bounce(src.bytes());
  pack(src, bounce.data());
  unpack(bounce.data(), dst);
}

}  // namespace v0
}  // namespace plait

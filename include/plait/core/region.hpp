// Byte regions: where one block lives in memory, as contiguous runs of bytes
// addressed by an up-to-6-d index. Layouts describe blocks this way; the
// executor and the packers only ever see regions, never element types, so the
// core compiles once rather than once per user type.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <span>

#include "plait/core/config.hpp"
#include "plait/core/scratch.hpp"

namespace plait {
inline namespace v0 {

/// Bytes in memory as the executor sees them: contiguous runs of run_bytes along up to max_dims strided outer
/// dimensions.
struct region {
  /// The most outer dimensions a region has.
  static constexpr int max_dims = 6;

  std::byte* data = nullptr;                      ///< the first byte of the first run
  std::size_t run_bytes = 0;                      ///< bytes in each contiguous run
  int dims = 0;                                   ///< outer dimensions; 0 means one run
  std::array<std::size_t, max_dims> extent{};     ///< runs along each outer dimension (outermost first)
  std::array<std::ptrdiff_t, max_dims> stride{};  ///< bytes between runs along each outer dimension

  /// One contiguous run.
  static constexpr region contiguous(std::byte* data, std::size_t bytes) noexcept { return region{data, bytes}; }

  /// How many contiguous runs: the product of the outer extents.
  [[nodiscard]] constexpr std::size_t runs() const noexcept {
    std::size_t n = 1;
    for (int d = 0; d < dims; ++d) n *= extent[static_cast<std::size_t>(d)];
    return n;
  }
  /// All bytes of the region.
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
  /// The region as one span (meaningful only when is_contiguous()).
  [[nodiscard]] std::span<std::byte> as_span() const noexcept { return {data, bytes()}; }
};

// Packing and copying regions (plait/core/impl/region.ipp): one function each
// for every run size, compiled once in the compiled core.

/// Gathers the runs of src into the contiguous bytes at dst (src.bytes() of them).
PLAIT_DECL void pack(const region& src, std::byte* dst);

/// Scatters contiguous bytes at src into the runs of dst; bytes between runs are never written.
PLAIT_DECL void unpack(const std::byte* src, const region& dst);

/// Copies between two regions of equal size (run shapes may differ).
PLAIT_DECL void copy(const region& src, const region& dst);

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/region.ipp"
#endif

// Defines what plait/core/region.hpp declares: pack, unpack and copy, and the
// row loops they are built from.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>

#include "plait/core/config.hpp"
#include "plait/core/region.hpp"
#include "plait/core/scratch.hpp"

namespace plait {
inline namespace v0 {

namespace detail {
/// Moves one row of `count` runs of N bytes, `stride` bytes apart, to or from
/// the packed bytes at `packed`; returns the end of the packed bytes. N is a
/// constant for the small run sizes (a memcpy the compiler turns into one or
/// two moves instead of a library call per run), 0 for any other size `n`.
template <std::size_t N, bool Gather>
std::byte* move_row(std::byte* run, std::size_t count, std::ptrdiff_t stride, std::byte* packed, std::size_t n) {
  const std::size_t bytes = N != 0 ? N : n;
  for (std::size_t i = 0; i < count; ++i, run += stride, packed += bytes) {
    if constexpr (Gather) {
      std::memcpy(packed, run, bytes);
    } else {
      std::memcpy(run, packed, bytes);
    }
  }
  return packed;
}

/// move_row<N, Gather> for some N: gathers or scatters one row.
using row_mover = std::byte* (*)(std::byte*, std::size_t, std::ptrdiff_t, std::byte*, std::size_t);

/// The row mover for runs of `run_bytes` bytes.
template <bool Gather>
row_mover row_mover_for(std::size_t run_bytes) {
  switch (run_bytes) {
    case 1: return move_row<1, Gather>;
    case 2: return move_row<2, Gather>;
    case 4: return move_row<4, Gather>;
    case 8: return move_row<8, Gather>;
    case 12: return move_row<12, Gather>;
    case 16: return move_row<16, Gather>;
    case 32: return move_row<32, Gather>;
    default: return move_row<0, Gather>;
  }
}

/// Moves every run of r, outermost dimension slowest, to or from the packed
/// bytes at `packed`, one row (the innermost dimension) per `move` call; an
/// odometer steps the outer dimensions. One function for every run size and
/// both directions, so it compiles once (compile cost); only the small row
/// loops are specialised.
PLAIT_DECL void move_all_runs(const region& r, std::byte* packed, row_mover move) {
  if (r.bytes() == 0) return;
  const auto inner = static_cast<std::size_t>(r.dims > 0 ? r.dims - 1 : 0);
  const std::size_t inner_extent = r.dims > 0 ? r.extent[inner] : 1;
  const std::ptrdiff_t inner_stride = r.dims > 0 ? r.stride[inner] : 0;
  std::array<std::size_t, region::max_dims> index{};
  std::byte* row = r.data;
  for (;;) {
    packed = move(row, inner_extent, inner_stride, packed, r.run_bytes);
    int d = static_cast<int>(inner) - 1;
    for (; d >= 0; --d) {
      const auto k = static_cast<std::size_t>(d);
      row += r.stride[k];
      if (++index[k] < r.extent[k]) break;
      row -= r.stride[k] * static_cast<std::ptrdiff_t>(r.extent[k]);
      index[k] = 0;
    }
    if (d < 0) return;
  }
}
}  // namespace detail

/// Gathers the runs of src into the contiguous bytes at dst (src.bytes() of them).
PLAIT_DECL void pack(const region& src, std::byte* dst) {
  if (src.is_contiguous()) {
    if (src.bytes() != 0) std::memcpy(dst, src.data, src.bytes());
    return;
  }
  detail::move_all_runs(src, dst, detail::row_mover_for<true>(src.run_bytes));
}

/// Scatters contiguous bytes at src into the runs of dst; bytes between runs are never written.
PLAIT_DECL void unpack(const std::byte* src, const region& dst) {
  if (dst.is_contiguous()) {
    if (dst.bytes() != 0) std::memcpy(dst.data, src, dst.bytes());
    return;
  }
  // move_all_runs only reads through `packed` when scattering.
  detail::move_all_runs(dst, const_cast<std::byte*>(src), detail::row_mover_for<false>(dst.run_bytes));
}

/// Copies between two regions of equal size (run shapes may differ).
PLAIT_DECL void copy(const region& src, const region& dst) {
  if (src.is_contiguous()) return unpack(src.data, dst);
  if (dst.is_contiguous()) return pack(src, dst.data);
  // Both strided (rare: a strided all-to-all block onto itself): go through a
  // temporary rather than matching two run shapes.
  detail::byte_buffer bounce(src.bytes());
  pack(src, bounce.data());
  unpack(bounce.data(), dst);
}

}  // namespace v0
}  // namespace plait

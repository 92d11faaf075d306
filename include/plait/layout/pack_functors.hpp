// Packing written once for every executor: pack (gather a region's runs into
// contiguous bytes) and unpack (scatter contiguous bytes into a region's runs)
// as element-wise functors, `__host__ __device__` under nvcc and plain host
// code elsewhere. Work item i moves one chunk of 1, 2, 4, 8 or 16 bytes, the
// widest that the pointers, run length and strides allow, so neighbouring
// items touch neighbouring chunks (coalesced on a GPU) and 16-byte runs move
// as single vector loads and stores.
//
// The functors run under anything that calls f(i) for i in [0, n): a Thrust
// for_each on its CPP, OMP or CUDA back end, or the kernels of
// <plait/cuda/pack.cuh>. pack_with / unpack_with pick the chunk and index
// types and hand the functor to such a runner.
//
// Not included by <plait/plait.hpp>: PLAIT_HOST_DEVICE changes these
// definitions under nvcc, and nothing plait.hpp brings may do that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "plait/core/host_device.hpp"
#include "plait/core/region.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A region as plain arrays (no std::array, no member functions that are
/// host-only), passed to device code by value.
struct flat_region {
  std::byte* data = nullptr;
  std::size_t run_bytes = 0;
  int dims = 0;
  std::size_t extent[region::max_dims] = {};
  std::ptrdiff_t stride[region::max_dims] = {};

  static flat_region from(const region& r) noexcept {
    flat_region f;
    f.data = r.data;
    f.run_bytes = r.run_bytes;
    f.dims = r.dims;
    for (int d = 0; d < r.dims; ++d) {
      f.extent[d] = r.extent[static_cast<std::size_t>(d)];
      f.stride[d] = r.stride[static_cast<std::size_t>(d)];
    }
    return f;
  }

  /// Byte offset of run number `run` (runs counted outermost dimension slowest).
  template <class Index>
  PLAIT_HOST_DEVICE std::ptrdiff_t run_offset(Index run) const noexcept {
    std::ptrdiff_t offset = 0;
    for (int d = dims - 1; d >= 0; --d) {
      const auto e = static_cast<Index>(extent[d]);
      const Index q = run / e;
      offset += stride[d] * static_cast<std::ptrdiff_t>(run - q * e);
      run = q;
    }
    return offset;
  }
};

/// The unit one work item moves; 16 bytes as two 8-byte words, aligned so a
/// GPU issues one 128-bit load and store.
struct alignas(16) chunk16 {
  std::uint64_t lo;
  std::uint64_t hi;
};

/// Gathers: item i is chunk i of the packed bytes.
template <class Chunk, class Index>
struct pack_functor {
  flat_region src;
  Chunk* dst;
  Index chunks_per_run;

  PLAIT_HOST_DEVICE void operator()(std::size_t item) const noexcept {
    const auto i = static_cast<Index>(item);
    const Index run = i / chunks_per_run;
    const Index within = i - run * chunks_per_run;
    const auto* from = reinterpret_cast<const Chunk*>(src.data + src.run_offset(run)) + within;
    dst[i] = *from;
  }
};

/// Scatters: item i is chunk i of the packed bytes; bytes between runs are never touched.
template <class Chunk, class Index>
struct unpack_functor {
  const Chunk* src;
  flat_region dst;
  Index chunks_per_run;

  PLAIT_HOST_DEVICE void operator()(std::size_t item) const noexcept {
    const auto i = static_cast<Index>(item);
    const Index run = i / chunks_per_run;
    const Index within = i - run * chunks_per_run;
    auto* into = reinterpret_cast<Chunk*>(dst.data + dst.run_offset(run)) + within;
    *into = src[i];
  }
};

/// One contiguous run, no index arithmetic: what pack and unpack reduce to
/// when the region is contiguous.
template <class Chunk>
struct copy_functor {
  const Chunk* src;
  Chunk* dst;
  PLAIT_HOST_DEVICE void operator()(std::size_t item) const noexcept { dst[item] = src[item]; }
};

/// The widest chunk (16, 8, 4, 2 or 1 bytes) that divides the run length and
/// every address a work item forms: the region's start and strides, and the
/// packed buffer's start.
inline std::size_t chunk_bytes(const region& r, const void* packed) noexcept {
  auto bits = reinterpret_cast<std::uintptr_t>(r.data) | reinterpret_cast<std::uintptr_t>(packed) |
              static_cast<std::uintptr_t>(r.run_bytes);
  for (int d = 0; d < r.dims; ++d) {
    if (r.extent[static_cast<std::size_t>(d)] > 1)
      bits |= static_cast<std::uintptr_t>(r.stride[static_cast<std::size_t>(d)]);
  }
  for (std::size_t unit = 16; unit > 1; unit /= 2) {
    if ((bits & (unit - 1)) == 0) return unit;
  }
  return 1;
}

template <std::size_t Unit>
struct chunk_of;
template <>
struct chunk_of<1> {
  using type = std::uint8_t;
};
template <>
struct chunk_of<2> {
  using type = std::uint16_t;
};
template <>
struct chunk_of<4> {
  using type = std::uint32_t;
};
template <>
struct chunk_of<8> {
  using type = std::uint64_t;
};
template <>
struct chunk_of<16> {
  using type = chunk16;
};

/// Calls fn.template operator()<Chunk>() for the chunk type of `unit` bytes.
template <class Fn>
void with_chunk(std::size_t unit, Fn&& fn) {
  switch (unit) {
    case 16: fn(typename chunk_of<16>::type{}); break;
    case 8: fn(typename chunk_of<8>::type{}); break;
    case 4: fn(typename chunk_of<4>::type{}); break;
    case 2: fn(typename chunk_of<2>::type{}); break;
    default: fn(typename chunk_of<1>::type{}); break;
  }
}

/// 32-bit index arithmetic when every count fits (integer division is far
/// cheaper on GPUs at 32 bits), else 64-bit.
inline bool fits_32(const region& r, std::size_t unit) noexcept {
  return r.bytes() / unit <= std::numeric_limits<std::uint32_t>::max();
}

template <bool Pack, class Runner>
void transfer_with(Runner&& run, const region& r, std::byte* packed) {
  const std::size_t total = r.bytes();
  if (total == 0) return;
  const std::size_t unit = chunk_bytes(r, packed);
  const std::size_t items = total / unit;
  const bool contiguous = r.is_contiguous();
  const bool narrow = fits_32(r, unit);
  with_chunk(unit, [&](auto tag) {
    using chunk = decltype(tag);
    if (contiguous) {
      if constexpr (Pack) {
        run(items, copy_functor<chunk>{reinterpret_cast<const chunk*>(r.data), reinterpret_cast<chunk*>(packed)});
      } else {
        run(items, copy_functor<chunk>{reinterpret_cast<const chunk*>(packed), reinterpret_cast<chunk*>(r.data)});
      }
      return;
    }
    const flat_region flat = flat_region::from(r);
    const std::size_t per_run = r.run_bytes / unit;
    auto launch = [&](auto index_tag) {
      using index = decltype(index_tag);
      if constexpr (Pack) {
        run(items, pack_functor<chunk, index>{flat, reinterpret_cast<chunk*>(packed), static_cast<index>(per_run)});
      } else {
        run(items,
            unpack_functor<chunk, index>{reinterpret_cast<const chunk*>(packed), flat, static_cast<index>(per_run)});
      }
    };
    if (narrow) {
      launch(std::uint32_t{});
    } else {
      launch(std::uint64_t{});
    }
  });
}

}  // namespace detail

/// Packs region `src` into the contiguous bytes at `dst` by handing
/// `run(n, functor)` the work: run must call functor(i) for every i in [0, n)
/// (in any order, in parallel if it likes). Nothing is called for an empty region.
template <class Runner>
void pack_with(Runner&& run, const region& src, std::byte* dst) {
  detail::transfer_with<true>(run, src, dst);
}

/// Unpacks the contiguous bytes at `src` into region `dst` through `run`, as pack_with.
template <class Runner>
void unpack_with(Runner&& run, const std::byte* src, const region& dst) {
  // The packed side is only read; the functor takes it as const.
  detail::transfer_with<false>(run, dst, const_cast<std::byte*>(src));
}

}  // namespace v0
}  // namespace plait

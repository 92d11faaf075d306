// Copies with non-temporal (streaming) stores: the destination lines are
// written to memory without first being read into the cache (no
// read-for-ownership) and without evicting what the cache holds. Worth it only
// when the destination is large and not read again soon; for anything that
// fits the caches a plain memcpy is faster.
//
// Host transports copy large blocks into the user's result with copy_bytes():
// streaming from stream_copy_bytes() on (PLAIT_STREAM_COPY_BYTES, default
// 4 MiB, 0 = never). glibc's memcpy streams only above 3/4 of the last-level
// cache's share per thread, and a VM that reports a huge L3 (480 MiB on the
// 2-core machine of docs/performance.md) never gets there. Measured there
// (bench/cma-vs-copy, both ranks copying at once): a 2-32 MiB copy runs
// 1.2-1.5x faster streamed, a 1 MiB one 0.88x; an out-of-place 2-rank
// all-gather over process_vm_readv 1.08-1.23x faster from 32 MiB (0.95-1.19x
// at 16 MiB) when its own shard is copied streamed. docs/performance.md has
// the tables.
//
// x86-64: 64-byte AVX-512 stores where the CPU has them (chosen at run time;
// nothing here needs -mavx512f), else SSE2's 16-byte stores, which every x86-64
// has. Elsewhere: memcpy. Streaming stores are weakly ordered: call
// stream_fence() before publishing the bytes to another thread or process.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

// The stores are written with the compilers' builtins on 64- and 16-byte
// vector types rather than <immintrin.h>'s intrinsics: that header alone costs
// about 0.3 s to parse in every file that includes plait (scripts/compile-cost).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PLAIT_SHM_STREAM_COPY_X86 1
#endif

namespace plait {
inline namespace v0 {
namespace detail {

#if PLAIT_SHM_STREAM_COPY_X86

/// Copies the unaligned head with memcpy so that `dst` is 64-byte aligned,
/// returns how many bytes that took.
inline std::size_t stream_copy_head(unsigned char* dst, const unsigned char* src, std::size_t n) noexcept {
  std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(dst) & 63)) & 63;
  if (head > n) head = n;
  if (head != 0) std::memcpy(dst, src, head);
  return head;
}

using stream_vector64 = long long __attribute__((vector_size(64), aligned(64)));
using stream_vector16 = long long __attribute__((vector_size(16), aligned(16)));

// Unaligned loads (memcpy into a vector), streaming stores to an aligned
// destination: VMOVNTDQ (64 bytes) and MOVNTDQ (16 bytes).
#if defined(__clang__)
#define PLAIT_STREAM_STORE_64(dst, value) __builtin_nontemporal_store(value, reinterpret_cast<stream_vector64*>(dst))
#define PLAIT_STREAM_STORE_16(dst, value) __builtin_nontemporal_store(value, reinterpret_cast<stream_vector16*>(dst))
#else
#define PLAIT_STREAM_STORE_64(dst, value) __builtin_ia32_movntdq512(reinterpret_cast<stream_vector64*>(dst), value)
#define PLAIT_STREAM_STORE_16(dst, value) __builtin_ia32_movntdq(reinterpret_cast<stream_vector16*>(dst), value)
#endif

__attribute__((target("avx512f"))) inline void stream_copy_avx512(unsigned char* dst, const unsigned char* src,
                                                                  std::size_t n) noexcept {
  const std::size_t head = stream_copy_head(dst, src, n);
  dst += head, src += head, n -= head;
  // Four loads, then four stores: the unrolled form measured faster than one
  // vector at a time.
  for (; n >= 256; n -= 256, dst += 256, src += 256) {
    stream_vector64 a, b, c, d;
    std::memcpy(&a, src, 64);
    std::memcpy(&b, src + 64, 64);
    std::memcpy(&c, src + 128, 64);
    std::memcpy(&d, src + 192, 64);
    PLAIT_STREAM_STORE_64(dst, a);
    PLAIT_STREAM_STORE_64(dst + 64, b);
    PLAIT_STREAM_STORE_64(dst + 128, c);
    PLAIT_STREAM_STORE_64(dst + 192, d);
  }
  for (; n >= 64; n -= 64, dst += 64, src += 64) {
    stream_vector64 value;
    std::memcpy(&value, src, sizeof value);
    PLAIT_STREAM_STORE_64(dst, value);
  }
  if (n != 0) std::memcpy(dst, src, n);
}

inline void stream_copy_sse2(unsigned char* dst, const unsigned char* src, std::size_t n) noexcept {
  const std::size_t head = stream_copy_head(dst, src, n);
  dst += head, src += head, n -= head;
  for (; n >= 64; n -= 64, dst += 64, src += 64) {
    stream_vector16 a, b, c, d;
    std::memcpy(&a, src, 16);
    std::memcpy(&b, src + 16, 16);
    std::memcpy(&c, src + 32, 16);
    std::memcpy(&d, src + 48, 16);
    PLAIT_STREAM_STORE_16(dst, a);
    PLAIT_STREAM_STORE_16(dst + 16, b);
    PLAIT_STREAM_STORE_16(dst + 32, c);
    PLAIT_STREAM_STORE_16(dst + 48, d);
  }
  if (n != 0) std::memcpy(dst, src, n);
}

#undef PLAIT_STREAM_STORE_64
#undef PLAIT_STREAM_STORE_16

inline bool cpu_has_avx512f() noexcept {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

#endif

/// memcpy(dst, src, n) with streaming stores for the 64-byte-aligned middle.
/// The ranges must not overlap. Call stream_fence() before another thread or
/// process may read `dst`.
inline void stream_copy(void* dst, const void* src, std::size_t n) noexcept {
#if PLAIT_SHM_STREAM_COPY_X86
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (cpu_has_avx512f()) {
    stream_copy_avx512(d, s, n);
  } else {
    stream_copy_sse2(d, s, n);
  }
#else
  if (n != 0) std::memcpy(dst, src, n);
#endif
}

/// Orders every streaming store before it ahead of any store after it (a
/// release store of a flag alone does not: streaming stores are weakly ordered).
inline void stream_fence() noexcept {
#if PLAIT_SHM_STREAM_COPY_X86
  __builtin_ia32_sfence();
#endif
}

/// Copies of at least this many bytes stream by default (see the top of this file).
inline constexpr std::size_t default_stream_copy_bytes = std::size_t{4} << 20;

/// The threshold copy_bytes() streams from: PLAIT_STREAM_COPY_BYTES when set
/// (0: never), else default_stream_copy_bytes. Read once; tests and
/// benchmarks may store another value.
inline std::atomic<std::size_t>& stream_copy_bytes() noexcept {
  static std::atomic<std::size_t> bytes = [] {
    if (const char* text = std::getenv("PLAIT_STREAM_COPY_BYTES")) {
      char* end = nullptr;
      const unsigned long long value = std::strtoull(text, &end, 10);
      if (end != text && *end == '\0') return value == 0 ? SIZE_MAX : static_cast<std::size_t>(value);
    }
    return default_stream_copy_bytes;
  }();
  return bytes;
}

/// memcpy(dst, src, n) for a destination that is not read again at once (a
/// collective's result): streaming stores from stream_copy_bytes() on,
/// followed by stream_fence(), so the caller may publish dst right after.
inline void copy_bytes(void* dst, const void* src, std::size_t n) noexcept {
  if (n >= stream_copy_bytes().load(std::memory_order_relaxed)) {
    stream_copy(dst, src, n);
    stream_fence();
  } else if (n != 0) {
    std::memcpy(dst, src, n);
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

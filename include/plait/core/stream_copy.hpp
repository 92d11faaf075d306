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
// 2-core machine of docs/performance.md) never gets there. The measurements
// behind the 4 MiB are in docs/performance.md, "Why the constants are what
// they are".
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

#include "plait/core/config.hpp"

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

// The copy loops (plait/core/impl/stream_copy.ipp). A function with a
// `target` attribute is declared with the same attribute.

/// Copies the unaligned head with memcpy so that `dst` is 64-byte aligned,
/// returns how many bytes that took.
PLAIT_DECL std::size_t stream_copy_head(unsigned char* dst, const unsigned char* src, std::size_t n) noexcept;

/// 64-byte streaming stores; only where cpu_has_avx512f().
__attribute__((target("avx512f"))) PLAIT_DECL void stream_copy_avx512(unsigned char* dst, const unsigned char* src,
                                                                      std::size_t n) noexcept;

/// 16-byte streaming stores: every x86-64 has them.
PLAIT_DECL void stream_copy_sse2(unsigned char* dst, const unsigned char* src, std::size_t n) noexcept;

PLAIT_DECL bool cpu_has_avx512f() noexcept;

#endif

/// memcpy(dst, src, n) with streaming stores for the 64-byte-aligned middle.
/// The ranges must not overlap. Call stream_fence() before another thread or
/// process may read `dst`.
PLAIT_DECL void stream_copy(void* dst, const void* src, std::size_t n) noexcept;

/// Orders every streaming store before it ahead of any store after it (a
/// release store of a flag alone does not: streaming stores are weakly ordered).
inline void stream_fence() noexcept {
#if PLAIT_SHM_STREAM_COPY_X86
  __builtin_ia32_sfence();
#endif
}

/// Copies of at least this many bytes stream by default (see the top of this file).
inline constexpr std::size_t default_stream_copy_bytes = std::size_t{4} << 20;

/// PLAIT_STREAM_COPY_BYTES (0: SIZE_MAX, never) when set, else
/// default_stream_copy_bytes. Read lazily, on the copy path, so a bad value
/// reads as unset here; read_environment (core/environment.hpp) reports it
/// when a communicator is created.
PLAIT_DECL std::size_t stream_copy_bytes_from_environment() noexcept;

/// The threshold copy_bytes() streams from: PLAIT_STREAM_COPY_BYTES when set
/// (0: never), else default_stream_copy_bytes. Read once; tests and
/// benchmarks may store another value.
inline std::atomic<std::size_t>& stream_copy_bytes() noexcept {
  static std::atomic<std::size_t> bytes = stream_copy_bytes_from_environment();
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

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/stream_copy.ipp"
#endif

// Defines what plait/core/stream_copy.hpp declares: the streaming copy loops
// (AVX-512 and SSE2), the run-time choice between them, and the threshold's
// default from the environment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "plait/core/config.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/stream_copy.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

#if PLAIT_SHM_STREAM_COPY_X86

/// Copies the unaligned head with memcpy so that `dst` is 64-byte aligned,
/// returns how many bytes that took.
PLAIT_DECL std::size_t stream_copy_head(unsigned char* dst, const unsigned char* src, std::size_t n) noexcept {
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

__attribute__((target("avx512f"))) PLAIT_DECL void stream_copy_avx512(unsigned char* dst, const unsigned char* src,
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

PLAIT_DECL void stream_copy_sse2(unsigned char* dst, const unsigned char* src, std::size_t n) noexcept {
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

PLAIT_DECL bool cpu_has_avx512f() noexcept {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

#endif

PLAIT_DECL void stream_copy(void* dst, const void* src, std::size_t n) noexcept {
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

PLAIT_DECL std::size_t stream_copy_bytes_from_environment() noexcept {
  try {
    const std::optional<std::size_t> bytes = environment_bytes("PLAIT_STREAM_COPY_BYTES");
    if (bytes) return *bytes == 0 ? SIZE_MAX : *bytes;
  } catch (...) {  // reported by read_environment when a communicator was created
  }
  return default_stream_copy_bytes;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

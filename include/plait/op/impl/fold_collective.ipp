// Defines plait::detail::flushes_subnormals (see plait/op/fold_collective.hpp).
#pragma once

#include "plait/op/fold_collective.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL bool flushes_subnormals() noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__CUDA_ARCH__)
  constexpr unsigned flush_to_zero = 0x8000;       // MXCSR.FTZ
  constexpr unsigned denormals_are_zero = 0x0040;  // MXCSR.DAZ
  return (_mm_getcsr() & (flush_to_zero | denormals_are_zero)) != 0;
#else
  return false;
#endif
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

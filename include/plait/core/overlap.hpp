// Whether two views share an element, exactly: views are strided sets of
// elements, and two of them may interleave without sharing one (the real and
// the imaginary parts of complex numbers: stride 2, offsets 0 and 1), so
// comparing the bytes from first to last element would reject them.
#pragma once

#include <cstddef>

#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A view's elements as bytes: `rank` dimensions of extent[d] elements
/// stride[d] bytes apart, each element `element` bytes, the first at `data`.
/// The arrays are the caller's.
struct strided_set {
  const std::byte* data = nullptr;
  std::size_t element = 0;
  const std::size_t* extent = nullptr;
  const std::size_t* stride = nullptr;
  std::size_t rank = 0;
};

/// True when some byte of an element of `a` is a byte of an element of `b`.
/// Disjoint spans answer at once; otherwise the offsets between elements of
/// `a` and of `b` form a bounded lattice, searched dimension by dimension with
/// interval and gcd bounds (a few steps for any layout of strided views;
/// after 2^16 steps, which no view of plain strides needs, it answers true
/// rather than spend more: a false alarm, never a missed overlap).
PLAIT_DECL bool share_bytes(const strided_set& a, const strided_set& b);

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/overlap.ipp"
#endif

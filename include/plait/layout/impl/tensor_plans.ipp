// Defines what plait/layout/tensor_plans.hpp declares: a view's overflow
// checks as it becomes bytes, a byte box's region and the check that a
// destination names each element once, for any rank.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/region.hpp"
#include "plait/layout/tensor_plans.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// "[4294967296, 4294967296]": a view's extents or strides, for a message.
[[gnu::cold]] PLAIT_DECL std::string sizes_text(const std::size_t* values, std::size_t rank) {
  std::string out = "[";
  for (std::size_t r = 0; r < rank; ++r) out += (r == 0 ? "" : ", ") + std::to_string(values[r]);
  return out + "]";
}

PLAIT_DECL void box_byte_strides(std::size_t element, const std::size_t* extent, const std::size_t* stride,
                                 std::size_t rank, std::size_t* byte_stride, const call_site& at,
                                 std::string_view which) {
  // Zero extents are left out, so every part of the view (a slice, the
  // product of all extents but one) counts its bytes without overflow too.
  std::size_t bytes = element;
  bool empty = false;
  for (std::size_t r = 0; r < rank; ++r) {
    if (extent[r] == 0) {
      empty = true;
    } else if (mul_overflows(bytes, extent[r], bytes)) {
      at.fail(errc::invalid_argument,
              {which, " view's extents ", sizes_text(extent, rank), " of ", element,
               "-byte elements hold more bytes than std::size_t counts (the product overflows)"});
    }
  }
  for (std::size_t r = 0; r < rank; ++r) {
    if (mul_overflows(stride[r], element, byte_stride[r])) {
      at.fail(errc::invalid_argument, {which, " view's stride along dimension ", r, " (", stride[r], " elements of ",
                                       element, " bytes) overflows std::size_t in bytes"});
    }
  }
  if (empty) return;  // no element is ever addressed
  std::size_t span = element;
  for (std::size_t r = 0; r < rank; ++r) {
    std::size_t reach = 0;
    if (mul_overflows(extent[r] - 1, byte_stride[r], reach) || add_overflows(span, reach, span)) {
      at.fail(errc::invalid_argument,
              {which, " view's extents ", sizes_text(extent, rank), " and strides ", sizes_text(stride, rank),
               " (elements of ", element, " bytes) span more bytes than std::size_t counts (the span overflows)"});
    }
  }
}

PLAIT_DECL region box_region(std::byte* data, std::size_t element, const std::size_t* box_extent,
                             const std::size_t* box_stride, std::size_t rank, std::size_t* extent, std::size_t* stride,
                             const call_site& at, std::string_view which) {
  for (std::size_t r = 0; r < rank; ++r) {
    if (box_extent[r] == 0) return region::contiguous(data, 0);
  }
  std::size_t n = 0;
  for (std::size_t r = 0; r < rank; ++r) {
    if (box_extent[r] == 1) continue;
    extent[n] = box_extent[r];
    stride[n] = box_stride[r];
    ++n;
  }
  std::size_t run = element;
  while (n > 0 && stride[n - 1] == run) {
    run *= extent[n - 1];
    --n;
  }
  // Merge dimension i + 1 into i when stepping i is the same as stepping
  // i + 1 extent times: the runs then lie at one even stride.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (kept > 0 && stride[kept - 1] == stride[i] * extent[i]) {
      extent[kept - 1] *= extent[i];
      stride[kept - 1] = stride[i];
    } else {
      extent[kept] = extent[i];
      stride[kept] = stride[i];
      ++kept;
    }
  }
  if (kept > static_cast<std::size_t>(region::max_dims)) {
    at.fail(errc::unsupported,
            {"a block of ", which, " has ", kept,
             " strided dimensions after merging contiguous ones; a region holds at most ", region::max_dims});
  }
  region out = region::contiguous(data, run);
  out.dims = static_cast<int>(kept);
  for (std::size_t i = 0; i < kept; ++i) {
    out.extent[i] = extent[i];
    out.stride[i] = static_cast<std::ptrdiff_t>(stride[i]);
  }
  return out;
}

PLAIT_DECL std::size_t box_repeat_dimension(std::size_t element, const std::size_t* extent, const std::size_t* stride,
                                            std::size_t rank, std::size_t* order) noexcept {
  for (std::size_t r = 0; r < rank; ++r) {
    if (extent[r] == 0) return rank;
  }
  for (std::size_t r = 0; r < rank; ++r) order[r] = r;
  std::sort(order, order + rank, [&](std::size_t a, std::size_t b) { return stride[a] < stride[b]; });
  // Bytes spanned by the dimensions so far, from the first element's first
  // byte to the last's end. A dimension whose stride steps past that span
  // keeps its indices apart: a row may end short of the next row's stride
  // (padding after the last row, as an MPI vector type has).
  std::size_t reach = element;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t r = order[i];
    if (extent[r] == 1) continue;
    if (stride[r] < reach) return r;
    // Saturates: box_byte_strides bounds the span, not this one.
    std::size_t steps = 0;
    if (mul_overflows(stride[r], extent[r] - 1, steps) || steps > static_cast<std::size_t>(-1) - reach) {
      reach = static_cast<std::size_t>(-1);
    } else {
      reach += steps;
    }
  }
  return rank;
}

PLAIT_DECL void check_box_unique(std::size_t element, const std::size_t* extent, const std::size_t* stride,
                                 std::size_t rank, std::size_t* order, const call_site& at, std::string_view which) {
  const std::size_t r = box_repeat_dimension(element, extent, stride, rank, order);
  if (r == rank) return;
  at.fail(errc::invalid_argument, {which, " view's stride along dimension ", r, " (", stride[r] / element,
                                   " elements) makes elements overlap; a destination must name each element once"});
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Defines what plait/layout/tensor_plans.hpp declares: a byte box's region and
// the check that a destination names each element once, for any rank.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/region.hpp"
#include "plait/layout/tensor_plans.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

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

PLAIT_DECL void check_box_unique(std::size_t element, const std::size_t* extent, const std::size_t* stride,
                                 std::size_t rank, std::size_t* order, const call_site& at, std::string_view which) {
  for (std::size_t r = 0; r < rank; ++r) {
    if (extent[r] == 0) return;
  }
  for (std::size_t r = 0; r < rank; ++r) order[r] = r;
  std::sort(order, order + rank, [&](std::size_t a, std::size_t b) { return stride[a] < stride[b]; });
  std::size_t reach = element;  // bytes spanned by the dimensions so far
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t r = order[i];
    if (extent[r] == 1) continue;
    if (stride[r] < reach) {
      at.fail(errc::invalid_argument, {which, " view's stride along dimension ", r, " (", stride[r] / element,
                                       " elements) makes elements overlap; a destination must name each element once"});
    }
    reach = stride[r] * extent[r];
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

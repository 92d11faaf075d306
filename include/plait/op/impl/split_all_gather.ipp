// Defines split_all_gather's non-template helpers: the pipelining cut and the all-gather's name (see
// plait/op/split_all_gather.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "plait/op/split_all_gather.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL std::size_t piece_count(std::size_t extent, std::size_t shards, std::size_t slice_bytes,
                                   std::size_t piece_bytes) {
  const std::size_t smallest = extent / shards;
  std::size_t count = 1;
  if (piece_bytes != 0 && slice_bytes != 0 && smallest > 1) {
    const std::size_t shard_bytes = smallest * slice_bytes;
    count = std::clamp<std::size_t>((shard_bytes + piece_bytes - 1) / piece_bytes, 1, smallest);
  }
  return count;
}

PLAIT_DECL std::string boundary_gather_name(std::string_view algorithm) {
  return "split_all_gather.all_gather<" + std::string(algorithm) + ">";
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

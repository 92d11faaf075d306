// Definitions for plait/transport/two_level.hpp (the checks' messages).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plait/core/error.hpp"
#include "plait/transport/two_level.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL void check_node_sizes(int rank, std::span<const int> sizes, std::string_view operation) {
  bool equal = true;
  for (int s : sizes) equal = equal && s == sizes.front();
  if (equal) return;
  std::string listed;
  for (int s : sizes) listed += (listed.empty() ? "" : ", ") + std::to_string(s);
  fail(errc::invalid_argument,
       {"every node needs the same number of ranks (intra.size()), and the nodes have ", listed,
        " ranks; split the group into nodes of equal size"},
       {rank, operation});
}

PLAIT_DECL void check_rank_table(int rank, std::span<const int> rank_of_position, std::string_view operation) {
  std::vector<bool> seen(rank_of_position.size(), false);
  for (std::size_t p = 0; p < rank_of_position.size(); ++p) {
    const int r = rank_of_position[p];
    if (r < 0 || static_cast<std::size_t>(r) >= rank_of_position.size() || seen[static_cast<std::size_t>(r)]) {
      fail(errc::invalid_argument,
           {"the rank table gives position ", p, " rank ", r, ", which is out of range or listed twice"},
           {rank, operation});
    }
    seen[static_cast<std::size_t>(r)] = true;
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Definitions for plait/levels/two_level.hpp: the node census and the checks' messages.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plait/core/error.hpp"
#include "plait/levels/two_level.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL node_census node_census::of(std::vector<int> sizes, int rank, std::string_view operation, long total) {
  node_census census;
  census.offsets.assign(sizes.size() + 1, 0);
  if (sizes.empty()) fail(errc::invalid_argument, {"the node sizes list no node"}, {rank, operation});
  for (std::size_t n = 0; n < sizes.size(); ++n) {
    if (sizes[n] < 1) {
      fail(errc::invalid_argument, {"node ", n, " has ", sizes[n], " ranks; every node needs at least one"},
           {rank, operation});
    }
    census.offsets[n + 1] = census.offsets[n] + sizes[n];
  }
  if (total >= 0 && census.offsets.back() != total) {
    fail(errc::invalid_argument,
         {"the node sizes total ", census.offsets.back(), " ranks, and the rank table has ", total, " entries"},
         {rank, operation});
  }
  census.smallest = *std::min_element(sizes.begin(), sizes.end());
  census.largest = *std::max_element(sizes.begin(), sizes.end());
  census.sizes = std::move(sizes);
  return census;
}

PLAIT_DECL std::vector<int> node_census::nodes_with_local(int local) const {
  std::vector<int> nodes;
  for (std::size_t n = 0; n < sizes.size(); ++n) {
    if (sizes[n] > local) nodes.push_back(static_cast<int>(n));
  }
  return nodes;
}

PLAIT_DECL std::string inter_level_problem(const node_census& census, int node, int intra_size, int local,
                                           int inter_rank, int inter_size, std::span<const int> seen_sizes) {
  std::string listed;
  for (int s : census.sizes) listed += (listed.empty() ? "" : ", ") + std::to_string(s);
  if (node < 0 || static_cast<std::size_t>(node) >= census.sizes.size() ||
      census.sizes[static_cast<std::size_t>(node)] != intra_size) {
    return "this node has " + std::to_string(intra_size) + " ranks over intra, which is not node " +
           std::to_string(node) + " of the nodes of " + listed + " ranks; intra must be the ranks of one node";
  }
  const std::vector<int> nodes = census.nodes_with_local(local);
  bool same_level = inter_size == static_cast<int>(nodes.size()) && inter_rank >= 0 && inter_rank < inter_size &&
                    nodes[static_cast<std::size_t>(inter_rank)] == node;
  for (std::size_t i = 0; same_level && i < seen_sizes.size(); ++i) {
    same_level = i < nodes.size() && seen_sizes[i] == census.sizes[static_cast<std::size_t>(nodes[i])];
  }
  if (same_level) return {};
  return "inter of local rank " + std::to_string(local) + " has " + std::to_string(inter_size) + " ranks (this one " +
         std::to_string(inter_rank) + "), but the nodes have " + listed + " ranks, so it must be local rank " +
         std::to_string(local) + " of the " + std::to_string(nodes.size()) + " nodes that have one, in node order";
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

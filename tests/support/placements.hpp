// Ranks arranged on emulated nodes for two_level tests: nodes of given
// sizes, where each world rank sits (blocks, dealt round-robin, reversed),
// the rank table that keeps results in world order, and on_levels(), which
// runs a body on shm threads composed as a plait::two_level.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <plait/plait.hpp>

#include "support/harness.hpp"

namespace plait_test {

/// How world ranks sit on nodes: blocks of L consecutive ranks, rank w on
/// node w % N, or every rank at the position P-1-w (no pattern the
/// collectives write straight into: they go through staging).
enum class placement { block, round_robin, reversed };

inline const char* name(placement how) {
  return how == placement::block ? "block" : how == placement::round_robin ? "round-robin" : "reversed";
}

struct arrangement {
  int node;
  int local;
};

/// Nodes of the given sizes; position of (node, local) is the node's offset + local.
struct node_sizes {
  std::vector<int> sizes;

  [[nodiscard]] int ranks() const {
    int total = 0;
    for (int s : sizes) total += s;
    return total;
  }
  [[nodiscard]] int count() const { return static_cast<int>(sizes.size()); }
  [[nodiscard]] bool even() const {
    for (int s : sizes) {
      if (s != sizes.front()) return false;
    }
    return true;
  }
  [[nodiscard]] int offset(int node) const {
    int at = 0;
    for (int n = 0; n < node; ++n) at += sizes[static_cast<std::size_t>(n)];
    return at;
  }
  [[nodiscard]] arrangement at_position(int position) const {
    int node = 0;
    while (position >= sizes[static_cast<std::size_t>(node)]) position -= sizes[static_cast<std::size_t>(node++)];
    return {node, position};
  }
};

/// P ranks on N nodes as evenly as possible, the larger nodes first.
inline node_sizes spread(int ranks, int nodes) {
  node_sizes out;
  for (int n = 0; n < nodes; ++n) out.sizes.push_back(ranks / nodes + (n < ranks % nodes ? 1 : 0));
  return out;
}

/// Where world rank w sits: blocks of consecutive ranks, dealt to the nodes
/// in turn (skipping full ones; rank l x N + n with equal nodes), or every
/// rank at the position P-1-w.
inline arrangement place(placement how, int world_rank, const node_sizes& nodes) {
  if (how == placement::block) return nodes.at_position(world_rank);
  if (how == placement::reversed) return nodes.at_position(nodes.ranks() - 1 - world_rank);
  std::vector<int> dealt(nodes.sizes.size(), 0);
  int node = 0;
  for (int w = 0;; ++w) {
    while (dealt[static_cast<std::size_t>(node)] == nodes.sizes[static_cast<std::size_t>(node)]) {
      node = (node + 1) % nodes.count();
    }
    if (w == world_rank) return {node, dealt[static_cast<std::size_t>(node)]};
    ++dealt[static_cast<std::size_t>(node)];
    node = (node + 1) % nodes.count();
  }
}

/// The whole group's rank of each position: the world ranks, so results are in world order.
inline std::vector<int> world_table(placement how, const node_sizes& nodes) {
  std::vector<int> table(static_cast<std::size_t>(nodes.ranks()));
  for (int w = 0; w < nodes.ranks(); ++w) {
    const arrangement a = place(how, w, nodes);
    table[static_cast<std::size_t>(nodes.offset(a.node)) + static_cast<std::size_t>(a.local)] = w;
  }
  return table;
}

/// Runs fn(levels, world) on threads arranged as `nodes`; every rank's verdict.
/// Equal nodes take the rank-table constructor, others the one with node sizes too.
template <class Fn>
std::vector<std::string> on_levels(const node_sizes& nodes, placement how, Fn&& fn) {
  return plait_test::run_ranks(plait_test::mode::threads, nodes.ranks(), [&](plait::shm::communicator& world) {
    const arrangement a = place(how, world.rank(), nodes);
    auto intra = world.split(a.node, a.local);
    auto inter = world.split(a.local, a.node);
    auto levels = nodes.even() ? std::make_unique<plait::two_level<plait::shm::communicator, plait::shm::communicator>>(
                                     intra, inter, world_table(how, nodes))
                               : std::make_unique<plait::two_level<plait::shm::communicator, plait::shm::communicator>>(
                                     intra, inter, world_table(how, nodes), nodes.sizes);
    if (levels->rank() != world.rank()) return std::string("two_level rank differs from the world rank");
    if (levels->node_count() != nodes.count() || levels->node_index() != a.node) return std::string("wrong node");
    // Each placement takes its own path: straight by position, straight by local rank, or staging.
    const bool spread_out = nodes.count() > 1 && nodes.ranks() > nodes.count();
    const std::vector<int> table = world_table(how, nodes);
    bool identity = true;
    for (std::size_t p = 0; p < table.size(); ++p) identity = identity && table[p] == static_cast<int>(p);
    if (levels->node_major() != identity) return std::string("node_major() is wrong");
    if (levels->local_major() != (how == placement::round_robin && spread_out && nodes.even())) {
      return std::string("local_major() is wrong");
    }
    return fn(*levels, world);
  });
}

/// The same for P ranks spread over N nodes as evenly as possible (larger nodes first).
template <class Fn>
std::vector<std::string> on_levels(int ranks, int nodes, placement how, Fn&& fn) {
  return on_levels(spread(ranks, nodes), how, std::forward<Fn>(fn));
}

}  // namespace plait_test

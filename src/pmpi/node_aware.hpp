// Reductions that follow the nodes, for communicators that span them.
//
// All-reduce. The flat all-reduce over MPI runs a ring (or recursive
// doubling) over the whole group, whose steps cross the slow link as often
// as the placement makes them: with ranks 0, 1 on one host and 2, 3 on the
// other, a ring crosses it twice a step, 1.5x the bytes per direction of an
// all-reduce that keeps to the nodes. Here every local rank carries one shard:
//   1. reduce-scatter inside the node (shared memory): local rank l holds
//      shard l of its node's partial, n / L elements;
//   2. all-reduce of shard l among the local ranks l of every node (the node
//      levels' inter communicator, MPI): n / L elements per rank, L of them
//      crossing at once, so each node sends its n elements once per
//      algorithm step rather than the whole vector per rank;
//   3. all-gather of the shards inside the node (shared memory).
// Every rank combines the same partials in the same order, so all get the
// same bits.
//
// Reduce-scatter (MPI_Reduce_scatter, _block). Rank (node k, local rank l)
// wants block b(k, l) of the vector. Local rank l of every node is the only
// rank that needs, over MPI, the blocks b(0, l) .. b(N-1, l), so:
//   1. each rank copies its input grouped by local rank: the blocks of local
//      rank 0 of nodes 0 .. N-1, then those of local rank 1, ... (skipped
//      when the ranks' order is that already);
//   2. reduce-scatter of the grouped vector inside the node (shared memory):
//      local rank l holds its node's partial of b(0, l) .. b(N-1, l);
//   3. reduce-scatter of that among the local ranks l of every node (MPI):
//      node k's rank gets b(k, l) summed over all nodes, its result.
// Each node sends over the link only the partials of the other nodes'
// blocks, n (N-1) / N elements in all, once (a flat ring with ranks placed
// by node sends (P-1) / P of n per rank and crosses the link on every step).
//
// The order of combination is the nodes', not the ranks', so only
// commutative reductions go this way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include "pmpi_mpi.hpp"

namespace plait_pmpi {

/// Runs the all-reduce of `recv` (in place when `send` is null, else from
/// `send`, recv.size() elements) node by node; false, having done nothing,
/// when it does not apply: one node, nodes of different sizes, or a
/// reduction whose result depends on the order of ranks.
template <class Levels, class T, class R>
bool all_reduce_by_nodes(Levels& levels, const T* send, std::span<T> recv, const R& reduction) {
  if constexpr (!plait::is_commutative_v<R>) {
    return false;
  } else {
    if (levels.node_count() < 2 || !levels.even_nodes()) return false;
    plait::shm::communicator& node = levels.intra();
    const auto locals = static_cast<std::size_t>(node.size());
    const auto me = static_cast<std::size_t>(node.rank());
    std::vector<std::size_t> counts(locals, recv.size() / locals);
    for (std::size_t l = 0; l < recv.size() % locals; ++l) ++counts[l];
    std::size_t offset = 0;
    for (std::size_t l = 0; l < me; ++l) offset += counts[l];
    const std::span<T> shard = recv.subspan(offset, counts[me]);
    if (send == nullptr) {
      plait::reduce_scatter_v(node, plait::in_place, recv, counts, reduction);
    } else {
      plait::reduce_scatter_v(node, std::span<const T>{send, recv.size()}, shard, counts, reduction);
    }
    plait::all_reduce(levels.inter(), plait::in_place, shard, reduction);
    // The gather moves bytes: one instantiation for every element type.
    std::vector<std::size_t> bytes(counts);
    for (std::size_t& b : bytes) b *= sizeof(T);
    const std::span<std::byte> all{reinterpret_cast<std::byte*>(recv.data()), recv.size() * sizeof(T)};
    plait::all_gather_v(node, plait::in_place, all, bytes);
    return true;
  }
}

/// Runs the reduce-scatter of `all` (every rank's whole input, counts[r]
/// elements for rank r in rank order) into `mine` (this rank's counts[rank]
/// elements) node by node; false, having done nothing, when it does not
/// apply (as all_reduce_by_nodes).
template <class Levels, class T, class R>
bool reduce_scatter_by_nodes(Levels& levels, std::span<const T> all, std::span<T> mine,
                             std::span<const std::size_t> counts, const R& reduction) {
  if constexpr (!plait::is_commutative_v<R>) {
    return false;
  } else {
    if (levels.node_count() < 2 || !levels.even_nodes()) return false;
    plait::shm::communicator& node = levels.intra();
    const int locals = node.size();
    const int nodes = levels.node_count();
    const auto rank_of = [&](int k, int l) { return static_cast<std::size_t>(levels.rank_at(k * locals + l)); };
    std::vector<std::size_t> offsets(counts.size() + 1, 0);
    for (std::size_t r = 0; r < counts.size(); ++r) offsets[r + 1] = offsets[r] + counts[r];
    // Step 1: group the input by local rank, unless the ranks sit that way already.
    std::vector<std::size_t> grouped_counts(static_cast<std::size_t>(locals), 0);
    bool grouped_already = true;
    std::size_t next = 0;
    for (int l = 0; l < locals; ++l) {
      for (int k = 0; k < nodes; ++k) {
        grouped_counts[static_cast<std::size_t>(l)] += counts[rank_of(k, l)];
        grouped_already = grouped_already && rank_of(k, l) == next++;
      }
    }
    std::vector<T> grouped;
    if (!grouped_already) {
      grouped.resize(all.size());
      auto out = grouped.begin();
      for (int l = 0; l < locals; ++l) {
        for (int k = 0; k < nodes; ++k) {
          const std::size_t r = rank_of(k, l);
          out = std::copy(all.begin() + static_cast<std::ptrdiff_t>(offsets[r]),
                          all.begin() + static_cast<std::ptrdiff_t>(offsets[r + 1]), out);
        }
      }
    }
    const std::span<const T> input = grouped_already ? all : std::span<const T>{grouped};
    // Step 2: the node's partial of this local rank's blocks, over shared memory.
    const int me = node.rank();
    std::vector<T> partial(grouped_counts[static_cast<std::size_t>(me)]);
    plait::reduce_scatter_v(node, input, std::span<T>{partial}, grouped_counts, reduction);
    // Step 3: among the same local rank of every node, over MPI; node k's block is b(k, me).
    std::vector<std::size_t> across(static_cast<std::size_t>(nodes));
    for (int k = 0; k < nodes; ++k) across[static_cast<std::size_t>(k)] = counts[rank_of(k, me)];
    plait::reduce_scatter_v(levels.inter(), std::span<const T>{partial}, mine, across, reduction);
    return true;
  }
}

/// Whether a served call's group (on_levels) spans nodes: the node levels.
template <class Group>
inline constexpr bool spans_nodes_v = std::is_same_v<std::decay_t<Group>, plait::mpi::node_levels>;

}  // namespace plait_pmpi

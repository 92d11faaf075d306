// An all-reduce that follows the nodes, for communicators that span them.
// The flat all-reduce over MPI runs a ring (or recursive doubling) over the
// whole group, whose steps cross the slow link as often as the placement
// makes them: with ranks 0, 1 on one host and 2, 3 on the other, a ring
// crosses it twice a step, 1.5x the bytes per direction of an all-reduce
// that keeps to the nodes. Here every local rank carries one shard:
//   1. reduce-scatter inside the node (shared memory): local rank l holds
//      shard l of its node's partial, n / L elements;
//   2. all-reduce of shard l among the local ranks l of every node (the node
//      levels' inter communicator, MPI): n / L elements per rank, L of them
//      crossing at once, so each node sends its n elements once per
//      algorithm step rather than the whole vector per rank;
//   3. all-gather of the shards inside the node (shared memory).
// Every rank combines the same partials in the same order, so all get the
// same bits; the order is the nodes', not the ranks', so only commutative
// reductions go this way.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "pmpi_mpi.hpp"

namespace plait_pmpi {

/// Runs the all-reduce of `recv` (in place when `send` is null, else from
/// `send`, recv.size() elements) node by node; false, having done nothing,
/// when it does not apply: one node, nodes of different sizes, or a
/// reduction whose result depends on the order of ranks.
template <class T, class R>
bool all_reduce_by_nodes(plait::mpi::node_levels& levels, const T* send, std::span<T> recv, const R& reduction) {
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

}  // namespace plait_pmpi

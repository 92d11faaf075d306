// plait::mpi::node_levels: the usual two levels of an MPI job, built from
// one communicator: the node's ranks over shared memory (node_local_shm) and
// the ranks of the same local rank on every node over MPI. Its rank() is the
// world's rank whatever the launcher's placement: it carries the table
// between world ranks and (node, local rank) positions, which the
// hierarchical collectives honour (op/hierarchical.hpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <map>
#include <vector>

#include "plait/core/error.hpp"
#include "plait/levels/mpi/node_local.hpp"
#include "plait/levels/two_level.hpp"
#include "plait/transport/mpi/communicator.hpp"
#include "plait/transport/mpi/error.hpp"
#include "plait/transport/mpi/setup.hpp"
#include "plait/transport/shm/communicator.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {
namespace detail {

/// The smallest rank of `world` on this shared-memory node (collective over
/// `world`, called once every rank has agreed to: MPI_Comm_split_type
/// blocks): the node's id, the same on every rank of the node.
inline int shared_node_id(const communicator& world) {
  const plait::error_context at{world.rank(), "node_levels", -1, -1};
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(world.native_handle(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &node),
        "MPI_Comm_split_type", at);
  int id = world.rank();
  const int code = MPI_Allreduce(MPI_IN_PLACE, &id, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  check(code, "MPI_Allreduce", at);
  return id;
}

/// Every node's size in node order (nodes in the order of their ids) and
/// this rank's node index, from every rank's node id.
struct node_ids {
  std::vector<int> sizes;
  int index = 0;
};

/// What node_levels owns, built before its two_level base refers to it.
/// Every blocking MPI step follows an agreement over world (transport/mpi/
/// setup.hpp), so each step is bounded by world.timeout(), and a rank that
/// rejects its node id, or whose node group fails, makes every rank throw
/// the same error naming it.
class node_levels_parts {
 protected:
  node_levels_parts(communicator& world, setup_call call, int node_id) : node_world_(&world) {
    const plait::error_context at{world.rank(), "node_levels", -1, -1};
    if (!world) throw plait::error(errc::invalid_argument, "called on a null communicator", at);
    setup_verdict mine;
    if (call == setup_call::node_levels_named && node_id < 0) {
      mine = {static_cast<int>(errc::invalid_argument), plait::detail::concat({"node id ", node_id, " is negative"})};
    }
    // The first exchange also tells the two forms apart: ranks that mix them all throw.
    std::vector<int> ids = setup_access::agree(world, call, mine, "node_levels", node_id);
    if (call == setup_call::node_levels_shared) {
      node_id = shared_node_id(world);
      ids = setup_access::agree(world, call, {}, "node_levels", node_id);
    }
    node_ids_ = census(ids, node_id);

    // This node's ranks over shm; a rank whose node fails here (a node id
    // that spans machines, an shm failure) brings that to the next agreement.
    setup_verdict joined;
    {
      communicator node = world.split(node_id, world.rank());
      try {
        node_intra_ = join_node(node, node_id, at);
      } catch (const plait::error& e) {
        joined = setup_verdict::of(e);
      }
    }

    // Every rank learns every rank's position (its node's first position + local rank).
    int position = node_intra_ ? node_intra_.rank() : 0;
    for (int n = 0; n < node_ids_.index; ++n) position += node_ids_.sizes[static_cast<std::size_t>(n)];
    const std::vector<int> positions = setup_access::agree(world, call, joined, "node_levels", position);
    node_table_.assign(positions.size(), -1);
    for (std::size_t r = 0; r < positions.size(); ++r)
      node_table_[static_cast<std::size_t>(positions[r])] = static_cast<int>(r);

    node_inter_ = world.split(node_intra_.rank(), node_id);
  }

  communicator* node_world_;
  node_ids node_ids_;
  shm::communicator node_intra_;
  communicator node_inter_;
  std::vector<int> node_table_;

 private:
  static node_ids census(const std::vector<int>& ids, int node_id) {
    std::map<int, int> ranks_of_node;
    for (int id : ids) ++ranks_of_node[id];
    node_ids out;
    for (const auto& [id, count] : ranks_of_node) {
      if (id < node_id) ++out.index;
      out.sizes.push_back(count);
    }
    return out;
  }

  // The ranks of `node` (world's ranks with this node id, in world order), joined over shm.
  static shm::communicator join_node(communicator& node, int node_id, const plait::error_context& at) {
    shm::communicator joined = node_local_shm(node);
    if (joined.size() != node.size()) {
      plait::detail::fail(errc::invalid_argument,
                          {"node id ", node_id, " names ", node.size(), " ranks, of which only ", joined.size(),
                           " share this machine's memory; a node id must not span machines"},
                          at);
    }
    return joined;
  }
};

}  // namespace detail

/// The two levels of an MPI job, owned: intra is a plait::shm::communicator
/// over the node's ranks (node_local_shm), inter a plait::mpi::communicator
/// over the ranks of the same local rank on every node, nodes in the order of
/// their ids. rank() and size() are world's, whatever the placement (block,
/// round-robin, ...): hierarchical collectives reorder as needed, and world()
/// serves flat ones (automatic picks between them). Nodes may have different
/// numbers of ranks. Collective over world; not movable (its two_level base refers to its parts).
/// Each of its MPI steps waits at most world.timeout(): a rank that does not
/// call it leaves the others with errc::timeout and world poisoned.
///   plait::mpi::communicator world{MPI_COMM_WORLD};
///   auto node = plait::mpi::node_levels(world);
///   plait::all_gather<plait::hierarchical<plait::ring, plait::recursive_doubling>>(node, mine, all);
class node_levels : private detail::node_levels_parts, public two_level<shm::communicator, communicator> {
 public:
  /// Nodes as MPI sees them (MPI_COMM_TYPE_SHARED); a node's id is its smallest world rank.
  explicit node_levels(communicator& world) : node_levels(world, detail::setup_call::node_levels_shared, -1) {}

  /// Nodes named by the caller: ranks with the same `node_id` (>= 0) form a
  /// node, which must lie within one machine. Tests emulate several nodes on
  /// one machine this way. A negative id on some rank is invalid_argument
  /// naming that rank on every rank.
  node_levels(communicator& world, int node_id) : node_levels(world, detail::setup_call::node_levels_named, node_id) {}

  /// A temporary world would dangle: world() refers to it.
  explicit node_levels(communicator&&) = delete;
  /// A temporary world would dangle: world() refers to it.
  node_levels(communicator&&, int) = delete;
  /// Not copyable or movable: the levels refer to the parts it owns.
  node_levels(const node_levels&) = delete;
  /// Not assignable either.
  node_levels& operator=(const node_levels&) = delete;

  /// The whole group as one MPI communicator, for flat collectives.
  [[nodiscard]] communicator& world() const noexcept { return *node_world_; }

 private:
  node_levels(communicator& world, detail::setup_call call, int node_id)
      : detail::node_levels_parts(world, call, node_id),
        two_level<shm::communicator, communicator>(node_intra_, node_inter_, std::move(node_table_),
                                                   std::move(node_ids_.sizes)) {}
};

}  // namespace mpi
}  // namespace v0
}  // namespace plait

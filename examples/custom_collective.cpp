// A collective plait does not ship, composed only from its public pieces: a
// two-level (hierarchical) all-gather, the shape used across nodes, where the
// slow links between nodes should carry each byte once.
//
//   1. all-gather inside each node            (fast links; comm.split by node)
//   2. all-gather among the node leaders      (one rank per node; the others
//                                              pass plait::no_group and get a
//                                              null communicator)
//   3. broadcast inside each node             (leader -> members, point-to-point)
//
// Here 8 ranks, as forked processes, play 3 "nodes" of 3, 3 and 2 ranks.
// Every rank ends with all 8 shards in rank order, checked against the
// serial answer; a wrong one throws, and run_processes rethrows it here.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <plait/plait.hpp>

namespace {

constexpr int ranks = 8;
constexpr int ranks_per_node = 3;
constexpr std::size_t n = 257;  // elements per shard

std::uint64_t value(int rank, std::size_t i) { return static_cast<std::uint64_t>(rank) * 1'000'003 + i; }

void two_level_all_gather(plait::shm::communicator& world, std::span<const std::uint64_t> shard,
                          std::span<std::uint64_t> all) {
  const int node = world.rank() / ranks_per_node;
  plait::shm::communicator local = world.split(node, world.rank());
  const bool leader = local.rank() == 0;
  plait::shm::communicator leaders = world.split(leader ? 0 : plait::no_group, world.rank());

  // 1. Gather the node's shards. Nodes hold consecutive ranks, so the node's
  //    block is one contiguous slice of the final result.
  const std::size_t node_first = static_cast<std::size_t>(node * ranks_per_node) * n;
  std::span<std::uint64_t> node_part = all.subspan(node_first, static_cast<std::size_t>(local.size()) * n);
  plait::all_gather<plait::ring>(local, shard, node_part);

  // 2. Leaders exchange whole node blocks. Node blocks differ in size (the
  //    last node is smaller), so the leaders exchange equal padded slots.
  if (leader) {
    const std::size_t slot = static_cast<std::size_t>(ranks_per_node) * n;
    std::vector<std::uint64_t> mine(slot, 0);
    std::copy(node_part.begin(), node_part.end(), mine.begin());
    std::vector<std::uint64_t> gathered(slot * static_cast<std::size_t>(leaders.size()));
    plait::all_gather<plait::bruck>(leaders, mine, gathered);
    for (int other = 0; other < leaders.size(); ++other) {
      const std::size_t first = static_cast<std::size_t>(other) * slot;
      const std::size_t count = std::min(slot, all.size() - first);
      std::copy_n(gathered.begin() + static_cast<std::ptrdiff_t>(first), count,
                  all.begin() + static_cast<std::ptrdiff_t>(first));
    }
  } else if (leaders) {
    throw std::logic_error("a non-leader got a real leader communicator");
  }

  // 3. Broadcast the result inside the node with plain point-to-point moves.
  if (leader) {
    for (int member = 1; member < local.size(); ++member) local.send(member, std::as_bytes(all));
  } else {
    local.recv(0, std::as_writable_bytes(all));
  }
}

}  // namespace

int main() {
  try {
    plait::shm::run_processes(ranks, [](plait::shm::communicator& world) {
      std::vector<std::uint64_t> shard(n);
      for (std::size_t i = 0; i < n; ++i) shard[i] = value(world.rank(), i);
      std::vector<std::uint64_t> all(n * ranks);
      two_level_all_gather(world, shard, all);
      for (std::size_t j = 0; j < all.size(); ++j) {
        if (all[j] != value(static_cast<int>(j / n), j % n)) {
          throw std::runtime_error("rank " + std::to_string(world.rank()) + ": wrong element " + std::to_string(j));
        }
      }
    });
  } catch (const std::exception& e) {
    std::printf("two-level all-gather failed: %s\n", e.what());
    return 1;
  }
  std::printf("two-level all-gather on %d processes (nodes of %d): every rank holds all %d shards\n", ranks,
              ranks_per_node, ranks);
  return 0;
}

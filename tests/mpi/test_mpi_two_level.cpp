// plait::mpi::node_levels and hierarchical<Inner, Outer> over MPI: the job is
// split into 1, 2 or 4 emulated nodes by a fake node id (block: ranks
// 0..L-1 on node 0; round-robin: rank w on node w % N), each node's ranks
// over shm and the same local ranks over MPI. Results must equal
// MPI_Allgather / MPI_Alltoall on MPI_COMM_WORLD in world rank order; the
// slow level must carry exactly the documented bytes, for nodes of equal
// and of different sizes (P = 3, 5, 7 on 2 nodes; 5, 6, 7 on 4); automatic
// picks hierarchical where its model, the node's link shared by its ranks,
// says so. The [.all_pairs] case runs every Inner x Outer pair of the
// algorithms that serve each operation (the `full` label).
#include <mpi.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../support/throwing_reduction.hpp"
#include "mpi_test.hpp"
#include "plait/mpi.hpp"

namespace {

/// Block, round-robin, or blocks in reverse (node 0 holds the last ranks:
/// neither pattern, so the collectives reorder through staging).
enum class placement { block, round_robin, reversed };

const char* name(placement how) {
  return how == placement::block ? "block" : how == placement::round_robin ? "round-robin" : "reversed";
}

/// Ranks on node n when `size` ranks spread over `nodes` as evenly as possible, larger nodes first.
int node_size(int n, int nodes, int size) { return size / nodes + (n < size % nodes ? 1 : 0); }

/// The node of position p (nodes in blocks, larger first).
int node_of_position(int p, int nodes, int size) {
  int node = 0;
  while (p >= node_size(node, nodes, size)) p -= node_size(node++, nodes, size);
  return node;
}

int fake_node(placement how, int rank, int nodes, int size) {
  if (how == placement::block) return node_of_position(rank, nodes, size);
  if (how == placement::round_robin) return rank % nodes;  // the first size % nodes nodes take one more
  return node_of_position(size - 1 - rank, nodes, size);
}

/// Node counts 1, 2 and 4 (up to the job's size), each with every placement;
/// nodes of different sizes where the job does not divide.
std::vector<std::pair<int, placement>> arrangements() {
  std::vector<std::pair<int, placement>> out;
  for (int nodes : {1, 2, 4}) {
    if (nodes > plait_test::world_size()) continue;
    out.emplace_back(nodes, placement::block);
    if (nodes > 1 && nodes < plait_test::world_size()) out.emplace_back(nodes, placement::round_robin);
    if (nodes > 1) out.emplace_back(nodes, placement::reversed);
  }
  return out;
}

/// Whether algorithm A can run on `ranks` ranks (neighbor_exchange: even or 1).
template <class A>
bool runs_on(int ranks) {
  if constexpr (std::is_same_v<A, plait::neighbor_exchange>) return ranks == 1 || ranks % 2 == 0;
  return true;
}

/// MPI_Allgather's answer on MPI_COMM_WORLD against plait's on the levels; true on this rank if equal.
template <class Algorithm, class Levels>
bool gather_matches_mpi(Levels& levels, std::size_t n, int salt) {
  const auto mine = plait_test::pattern_bytes(plait_test::world_rank(), n, salt);
  std::vector<std::byte> all(n * static_cast<std::size_t>(levels.size()));
  plait::all_gather<Algorithm>(levels, mine, all);
  std::vector<std::byte> expected(all.size());
  MPI_Allgather(mine.data(), static_cast<int>(n), MPI_BYTE, expected.data(), static_cast<int>(n), MPI_BYTE,
                MPI_COMM_WORLD);
  return all == expected;
}

/// MPI_Alltoall's answer on MPI_COMM_WORLD against plait's on the levels.
template <class Algorithm, class Levels>
bool exchange_matches_mpi(Levels& levels, std::size_t n, int salt) {
  const auto send =
      plait_test::pattern_bytes(plait_test::world_rank(), n * static_cast<std::size_t>(levels.size()), salt);
  std::vector<std::byte> recv(send.size());
  plait::all_to_all<Algorithm>(levels, send, recv);
  std::vector<std::byte> expected(send.size());
  MPI_Alltoall(send.data(), static_cast<int>(n), MPI_BYTE, expected.data(), static_cast<int>(n), MPI_BYTE,
               MPI_COMM_WORLD);
  return recv == expected;
}

/// Nodes of different sizes (M = the smallest): both operations against
/// MPI, and each level's bytes against docs/hierarchical.md's formulas.
/// all-gather, both direct: local rank l < M sends share l of its node's
/// block to N - 1 nodes; the node level carries the shard and then row l
/// (share l of every node). all-to-all, both pairwise: the node's own row
/// goes straight, and relay r carries the blocks from other nodes for local
/// ranks r, r + M, ...
bool uneven_bytes_match(plait::mpi::node_levels& levels, std::uint64_t s) {
  const std::uint64_t nodes = levels.node_count();
  const std::uint64_t m = levels.smallest_node_size();
  const std::uint64_t local = levels.intra().rank();
  const std::uint64_t size = levels.node_size();
  const std::uint64_t me = levels.node_index();
  const std::uint64_t p = levels.size();
  const auto node_size_of = [&](std::uint64_t node) {
    return static_cast<std::uint64_t>(levels.node_size_of(static_cast<int>(node)));
  };
  const auto share = [&](std::uint64_t node, std::uint64_t l) {
    const std::uint64_t block = node_size_of(node) * s;
    return block * (l + 1) / m - block * l / m;
  };
  bool ok = gather_matches_mpi<plait::hierarchical<plait::direct, plait::direct>>(levels, s, 14);
  const plait::level_bytes gathered = levels.bytes_sent();
  std::uint64_t row = 0;
  for (std::uint64_t node = 0; node < nodes && local < m; ++node) row += share(node, local);
  ok = ok && gathered.inter == (local < m ? (nodes - 1) * share(me, local) : 0);
  ok = ok && gathered.intra == (size - 1) * s + (size - 1) * row;
  const auto served = [&](std::uint64_t node, std::uint64_t r) { return (node_size_of(node) - r + m - 1) / m; };
  ok = exchange_matches_mpi<plait::hierarchical<plait::pairwise, plait::pairwise>>(levels, s, 15) && ok;
  const plait::level_bytes exchanged = levels.bytes_sent();
  std::uint64_t intra = (size - 1) * s;  // the node's own row
  for (std::uint64_t r = 0; r < m; ++r) {
    if (r == local) continue;
    for (std::uint64_t node = 0; node < nodes; ++node) intra += node == me ? 0 : served(node, r) * s;
  }
  std::uint64_t inter = 0;
  if (local < m) {
    for (std::uint64_t node = 0; node < nodes; ++node) inter += node == me ? 0 : size * served(node, local) * s;
    intra += (served(me, local) - 1) * (p - size) * s;
  }
  ok = ok && exchanged.inter - gathered.inter == inter && exchanged.intra - gathered.intra == intra;
  if (!ok) {
    UNSCOPED_INFO("gathered " << gathered.inter << "/" << gathered.intra << ", exchanged "
                              << exchanged.inter - gathered.inter << "/" << exchanged.intra - gathered.intra);
  }
  return ok;
}

template <class... A>
struct algorithms {};

/// Every Inner x Outer pair of `algorithms<A...>` for one operation; returns
/// the number of pairs that disagreed with MPI on this rank.
template <bool Gather, class... Inner, class... Outer>
int sweep_pairs(plait::mpi::node_levels& levels, algorithms<Inner...>, algorithms<Outer...> outer, std::size_t n) {
  int wrong = 0;
  const auto per_inner = [&]<class I>() {
    const auto per_outer = [&]<class O>() {
      for (int node = 0; node < levels.node_count(); ++node) {
        if (!runs_on<I>(levels.node_size_of(node))) return;
      }
      if (!runs_on<O>(levels.node_count())) return;
      using H = plait::hierarchical<I, O>;
      bool ok = false;
      if constexpr (Gather) {
        ok = gather_matches_mpi<H>(levels, n, 11);
      } else {
        ok = exchange_matches_mpi<H>(levels, n, 12);
      }
      if (!ok) {
        UNSCOPED_INFO("hierarchical<" << I::name << ", " << O::name << "> differs from MPI");
        ++wrong;
      }
    };
    (per_outer.template operator()<Outer>(), ...);
  };
  (per_inner.template operator()<Inner>(), ...);
  (void)outer;
  return wrong;
}

using gather_algorithms = algorithms<plait::ring, plait::tree, plait::pairwise, plait::bruck, plait::recursive_doubling,
                                     plait::direct, plait::neighbor_exchange, plait::automatic>;
using exchange_algorithms = algorithms<plait::ring, plait::pairwise, plait::bruck, plait::direct, plait::automatic>;

}  // namespace

TEST_CASE("mpi node_levels keeps world ranks whatever the placement", "[mpi][two_level]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  for (const auto& [nodes, how] : arrangements()) {
    INFO(nodes << " nodes, " << name(how));
    plait::mpi::node_levels levels(world, fake_node(how, world.rank(), nodes, world.size()));
    CHECK(levels.rank() == world.rank());
    CHECK(levels.size() == world.size());
    CHECK(levels.node_count() == nodes);
    const int node = fake_node(how, world.rank(), nodes, world.size());
    CHECK(levels.node_index() == node);
    CHECK(levels.node_size() == node_size(node, nodes, world.size()));
    CHECK(levels.even_nodes() == (world.size() % nodes == 0));
    CHECK(&levels.world() == &world);
    PLAIT_REQUIRE_ALL(levels.position_of(levels.rank()) == levels.node_offset(node) + levels.intra().rank());
  }
  // Without a node id: nodes as MPI sees them (one machine here).
  plait::mpi::node_levels machine(world);
  CHECK(machine.rank() == world.rank());
  PLAIT_REQUIRE_ALL(machine.node_count() >= 1 && machine.size() == world.size());
}

TEST_CASE("mpi hierarchical all_gather and all_to_all equal MPI's on 1, 2 and 4 emulated nodes", "[mpi][two_level]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  for (const auto& [nodes, how] : arrangements()) {
    INFO(nodes << " nodes, " << name(how));
    plait::mpi::node_levels levels(world, fake_node(how, world.rank(), nodes, world.size()));
    bool ok = gather_matches_mpi<plait::hierarchical<plait::ring, plait::recursive_doubling>>(levels, 1001, 1);
    ok = gather_matches_mpi<plait::hierarchical<plait::direct, plait::bruck>>(levels, 3, 2) && ok;
    ok = gather_matches_mpi<plait::hierarchical<plait::automatic, plait::automatic>>(levels, 4096, 3) && ok;
    ok = exchange_matches_mpi<plait::hierarchical<plait::pairwise, plait::pairwise>>(levels, 513, 4) && ok;
    ok = exchange_matches_mpi<plait::hierarchical<plait::bruck, plait::direct>>(levels, 2, 5) && ok;
    ok = exchange_matches_mpi<plait::hierarchical<plait::automatic, plait::ring>>(levels, 64, 6) && ok;
    PLAIT_REQUIRE_ALL(ok);
  }
}

TEST_CASE("mpi nonblocking and persistent collectives on node_levels equal MPI's on 1, 2 and 4 emulated nodes",
          "[mpi][two_level][nonblocking][persistent]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  const auto p = static_cast<std::size_t>(world.size());
  for (const auto& [nodes, how] : arrangements()) {
    INFO(nodes << " nodes, " << name(how));
    plait::mpi::node_levels levels(world, fake_node(how, world.rank(), nodes, world.size()));
    const std::size_t n = 257;
    std::vector<std::byte> mine(n), all(n * p), send(n * p), recv(n * p), all_want(all.size()), recv_want(recv.size());
    bool ok = true;
    auto expect = [&] {
      MPI_Allgather(mine.data(), static_cast<int>(n), MPI_BYTE, all_want.data(), static_cast<int>(n), MPI_BYTE,
                    MPI_COMM_WORLD);
      MPI_Alltoall(send.data(), static_cast<int>(n), MPI_BYTE, recv_want.data(), static_cast<int>(n), MPI_BYTE,
                   MPI_COMM_WORLD);
      ok = ok && all == all_want && recv == recv_want;
    };
    auto fill = [&](int salt) {
      const auto a = plait_test::pattern_bytes(world.rank(), n, salt);
      const auto b = plait_test::pattern_bytes(world.rank(), n * p, salt + 50);
      std::copy(a.begin(), a.end(), mine.begin());
      std::copy(b.begin(), b.end(), send.begin());
    };
    // Hierarchical, automatic (which may run flat on world()) and flat on world().
    fill(1);
    auto g = plait::iall_gather<plait::hierarchical<plait::ring, plait::bruck>>(levels, mine, all);
    auto x = plait::iall_to_all<plait::automatic>(levels, send, recv);
    x.wait();
    g.wait();
    expect();
    fill(2);
    auto flat = plait::iall_gather<plait::ring>(levels, mine, all);
    flat.wait();
    plait::all_to_all<plait::hierarchical<plait::pairwise, plait::direct>>(levels, send, recv);
    expect();
    // The v forms (and bundles) on node_levels run flat on world().
    const std::vector<int> counts(p, static_cast<int>(n));
    auto gv = plait::iall_gather_v<plait::automatic>(levels, mine, all, counts);
    gv.wait();
    auto xv = plait::all_to_all_v_init<plait::pairwise>(levels, send, counts, recv, counts);
    xv.start();
    xv.wait();
    expect();
    auto gp = plait::all_gather_init<plait::hierarchical<plait::direct, plait::ring>>(levels, mine, all);
    auto xp = plait::all_to_all_init<plait::hierarchical<plait::pairwise, plait::pairwise>>(levels, send, recv);
    for (int round = 3; round < 6; ++round) {
      fill(round);
      gp.start();
      xp.start();
      xp.wait();
      gp.wait();
      expect();
    }
    PLAIT_REQUIRE_ALL(ok);
  }
}

TEST_CASE("mpi hierarchical collectives equal MPI's for every inner x outer pair", "[.][all_pairs][mpi][two_level]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  for (const auto& [nodes, how] : arrangements()) {
    INFO(nodes << " nodes, " << name(how));
    plait::mpi::node_levels levels(world, fake_node(how, world.rank(), nodes, world.size()));
    int wrong = sweep_pairs<true>(levels, gather_algorithms{}, gather_algorithms{}, 37);
    wrong += sweep_pairs<false>(levels, exchange_algorithms{}, exchange_algorithms{}, 19);
    PLAIT_REQUIRE_ALL(wrong == 0);
  }
}

TEST_CASE("mpi hierarchical collectives send exactly the documented bytes over the slow level", "[mpi][two_level]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  for (const auto& [nodes, how] : arrangements()) {
    INFO(nodes << " nodes, " << name(how));
    plait::mpi::node_levels levels(world, fake_node(how, world.rank(), nodes, world.size()));
    const std::uint64_t n = levels.node_count();
    const std::uint64_t l = levels.node_size();
    const std::uint64_t s = 1000;
    const plait::level_bytes start = levels.bytes_sent();
    CHECK(start == plait::level_bytes{});
    if (!levels.even_nodes()) {
      PLAIT_REQUIRE_ALL(uneven_bytes_match(levels, s));
      continue;
    }
    // all-gather with Outer = ring: (N - 1) x s per rank over inter.
    bool ok = gather_matches_mpi<plait::hierarchical<plait::ring, plait::ring>>(levels, s, 7);
    const plait::level_bytes gathered = levels.bytes_sent();
    CHECK(gathered.inter == (n - 1) * s);
    CHECK(gathered.intra == (l - 1) * n * s);
    // all-to-all with Outer = pairwise: (N - 1) x L x s per rank over inter.
    ok = exchange_matches_mpi<plait::hierarchical<plait::pairwise, plait::pairwise>>(levels, s, 8) && ok;
    const plait::level_bytes exchanged = levels.bytes_sent();
    CHECK(exchanged.inter - gathered.inter == (n - 1) * l * s);
    CHECK(exchanged.intra - gathered.intra == (l - 1) * n * s);
    // The whole job's slow-level bytes, summed: N x L ranks each sending as above.
    std::uint64_t inter_total = 0;
    MPI_Allreduce(&exchanged.inter, &inter_total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(inter_total == n * l * ((n - 1) * s + (n - 1) * l * s));
    CHECK(world.bytes_sent() == 0);
    PLAIT_REQUIRE_ALL(ok);
  }
}

TEST_CASE("mpi automatic gathers 1 MiB blocks hierarchically on two nodes of two or more ranks", "[mpi][two_level]") {
  // Flat direct sends each node's link L x (N - 1) x L blocks, hierarchical
  // L x (N - 1): with every rank's bytes charged as if it had a link of its
  // own, automatic chose flat here (through libplait_pmpi on two emulated
  // hosts of two ranks: 1.39x native at 1 MiB, hierarchical 2.28x).
  plait::mpi::communicator world{MPI_COMM_WORLD};
  if (world.size() < 4 || world.size() % 2 != 0) return;
  plait::mpi::node_levels levels(world, fake_node(placement::block, world.rank(), 2, world.size()));
  const bool ok = gather_matches_mpi<plait::automatic>(levels, std::size_t{1} << 20, 17);
  const plait::level_choice gathered = levels.last_choice();
  INFO("hierarchical " << gathered.hierarchical_seconds << " s, flat " << gathered.flat_seconds << " s");
  CHECK(gathered.hierarchical);
  PLAIT_REQUIRE_ALL(ok);
}

TEST_CASE("mpi automatic on node_levels picks flat or hierarchical from both cost models and says which",
          "[mpi][two_level]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  const int nodes = world.size() % 2 == 0 ? 2 : 1;
  plait::mpi::node_levels levels(world, fake_node(placement::round_robin, world.rank(), nodes, world.size()));
  bool ok = true;
  for (const std::size_t n : {std::size_t{8}, std::size_t{1} << 16}) {
    ok = gather_matches_mpi<plait::automatic>(levels, n, 9) && ok;
    const plait::level_choice gathered = levels.last_choice();
    CHECK(gathered.flat_seconds > 0);
    CHECK(gathered.hierarchical_seconds > 0);
    CHECK(gathered.hierarchical == (gathered.hierarchical_seconds <= gathered.flat_seconds));
    // MPI's model, its bandwidth term shared by a node's ranks for the bytes that leave the node.
    const int locals = levels.largest_node_size();
    const plait::cost_model shared =
        plait::detail::sharing_node_links(plait::detail::model_of<plait::automatic, plait::mpi::communicator>(), locals,
                                          plait::detail::flat_share_leaving(world.size(), locals));
    const double flat =
        plait::explain<plait::op::all_gather, plait::automatic>(world.size(), n, shared).predicted_seconds;
    CHECK(gathered.flat_seconds == Approx(flat));
    ok = exchange_matches_mpi<plait::automatic>(levels, n, 10) && ok;
    CHECK(levels.last_choice().name() == (levels.last_choice().hierarchical ? "hierarchical" : "flat"));
  }
  // A flat algorithm on node_levels runs over world().
  const std::uint64_t before = world.bytes_sent();
  ok = gather_matches_mpi<plait::ring>(levels, 16, 13) && ok;
  CHECK(world.bytes_sent() - before == (static_cast<std::uint64_t>(world.size()) - 1) * 16);
  PLAIT_REQUIRE_ALL(ok);
}

TEST_CASE("mpi node_levels serves a node of one rank beside a node of all the others", "[mpi][two_level][uneven]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  if (world.size() < 3) return;  // two nodes of unequal size need 3 ranks
  // Node 0: rank 0 alone (M = 1: it relays everything); node 1: the rest.
  plait::mpi::node_levels levels(world, world.rank() == 0 ? 0 : 1);
  CHECK(levels.smallest_node_size() == 1);
  CHECK(levels.largest_node_size() == world.size() - 1);
  bool ok = gather_matches_mpi<plait::hierarchical<plait::ring, plait::bruck>>(levels, 777, 16);
  ok = exchange_matches_mpi<plait::hierarchical<plait::bruck, plait::pairwise>>(levels, 33, 17) && ok;
  ok = gather_matches_mpi<plait::automatic>(levels, 5, 18) && ok;
  ok = exchange_matches_mpi<plait::automatic>(levels, 5, 19) && ok;
  PLAIT_REQUIRE_ALL(ok);
}

namespace {

/// plait's reductions on the levels against MPI_Allreduce and
/// MPI_Reduce_scatter_block on MPI_COMM_WORLD (integers: exact), in every form.
template <class Algorithm, class Levels>
bool reductions_match_mpi(Levels& levels, std::size_t block) {
  const auto p = static_cast<std::size_t>(levels.size());
  const std::size_t n = block * p;
  std::vector<std::int64_t> send(n);
  for (std::size_t i = 0; i < n; ++i) {
    send[i] = static_cast<std::int64_t>(plait_test::world_rank() + 1) * 7919 + static_cast<std::int64_t>(i % 97) - 40;
  }
  std::vector<std::int64_t> sum_want(n), max_want(n), part_want(block);
  MPI_Allreduce(send.data(), sum_want.data(), static_cast<int>(n), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(send.data(), max_want.data(), static_cast<int>(n), MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  MPI_Reduce_scatter_block(send.data(), part_want.data(), static_cast<int>(block), MPI_INT64_T, MPI_BXOR,
                           MPI_COMM_WORLD);
  std::vector<std::int64_t> recv(n), part(block);
  plait::all_reduce<Algorithm>(levels, send, recv, plait::sum{});
  bool ok = recv == sum_want;
  auto request = plait::iall_reduce<Algorithm>(levels, send, recv, plait::max{});
  request.wait();
  ok = ok && recv == max_want;
  auto persistent = plait::reduce_scatter_init<Algorithm>(levels, send, part, plait::bit_xor{});
  persistent.start();
  persistent.wait();
  return ok && part == part_want;
}

}  // namespace

TEST_CASE("mpi reductions on node_levels equal MPI_Allreduce and MPI_Reduce_scatter_block on emulated nodes",
          "[mpi][two_level][reduce]") {
  plait::mpi::communicator world{MPI_COMM_WORLD};
  for (const auto& [nodes, how] : arrangements()) {
    INFO(nodes << " nodes, " << name(how));
    plait::mpi::node_levels levels(world, fake_node(how, world.rank(), nodes, world.size()));
    bool ok = reductions_match_mpi<plait::hierarchical<plait::ring, plait::ring>>(levels, 33);
    ok = reductions_match_mpi<plait::hierarchical<plait::automatic, plait::automatic>>(levels, 1) && ok;
    ok = reductions_match_mpi<plait::automatic>(levels, 0) && ok;
    // The exact left fold over world ranks, whatever the placement.
    const std::size_t n = 7;
    std::vector<double> mine(n), folded(n);
    const auto value = [](int rank, std::size_t i) {
      return (rank % 2 == 0 ? 1.0 : -1.0) * 1e16 * static_cast<double>(1 + (rank + i) % 3) + 0.3 * (rank + 1);
    };
    for (std::size_t i = 0; i < n; ++i) mine[i] = value(world.rank(), i);
    plait::all_reduce<plait::hierarchical<plait::direct, plait::chain>>(levels, mine, folded,
                                                                        plait::ordered<plait::sum>{});
    for (std::size_t i = 0; i < n; ++i) {
      double want = value(0, i);
      for (int r = 1; r < world.size(); ++r) want = want + value(r, i);
      ok = ok && std::memcmp(&want, &folded[i], sizeof want) == 0;
    }
    PLAIT_REQUIRE_ALL(ok);
  }
}

TEST_CASE("mpi an error inside a level of node_levels names world ranks, level ranks in parentheses",
          "[mpi][two_level][errors]") {
  // Two nodes, round-robin (world rank w on node w % 2): the inter level of
  // local rank l holds world ranks 2l and 2l + 1 as its ranks 0 and 1. Node 1
  // gathers shards of 3 elements, node 0 of 2, so check mode refuses every
  // inter level's first collective on both of its ranks (nobody is left
  // waiting), with the level's "rank 0 calls ..., but rank 1 calls ...".
  plait::mpi::communicator world{MPI_COMM_WORLD};
  if (world.size() < 4 || world.size() % 2 != 0) return;  // local-major placement needs equal nodes of two or more
  plait::mpi::node_levels levels(world, world.rank() % 2);
  levels.inter().set_check_mode(true);
  const std::size_t n = world.rank() % 2 == 0 ? 2 : 3;
  std::vector<int> mine(n, world.rank());
  std::vector<int> all(n * static_cast<std::size_t>(world.size()));
  std::string verdict;
  try {
    plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, mine, all);
    verdict = "returned";
  } catch (const plait::error& e) {
    const std::string text = e.what();
    const int first = world.rank() - world.rank() % 2;
    const std::string parts[] = {"all_gather<hierarchical<ring, ring>>", "in the inter level's",
                                 "rank " + std::to_string(first) + " (rank 0 of the inter level)",
                                 "rank " + std::to_string(first + 1) + " (rank 1 of the inter level)"};
    if (e.rank() != world.rank()) verdict = "wrong rank: " + text;
    for (const std::string& part : parts) {
      if (text.find(part) == std::string::npos) verdict = "lacks '" + part + "': " + text;
    }
  }
  CAPTURE(verdict);
  PLAIT_REQUIRE_ALL(verdict.empty());
}

TEST_CASE("mpi a rank that waits for a rank held at its other level of node_levels names the rank that holds it",
          "[mpi][two_level][errors]") {
  // Two nodes in blocks; the second rank of node 1 never calls. In an
  // all-reduce's inter step, node 0's first rank waits for node 1's first at
  // the MPI level (300 ms), which waits at its shm level (450 ms) for the
  // absent rank, while node 0's other ranks wait at the shm level for their
  // first rank. Each that timed out first blamed the rank it waited for:
  // the MPI query went unanswered (the rank was at its shm level), and the
  // shm record said "never entered". Now both wait one timeout more, until
  // the held rank's own timeout names the absent rank.
  static_assert(requires(plait::mpi::communicator & c) { c.note_level_step(true); });
  static_assert(requires(plait::shm::communicator & c) { c.note_other_level(true); });
  using namespace std::chrono_literals;
  plait::mpi::communicator world{MPI_COMM_WORLD};
  if (world.size() < 4 || world.size() % 2 != 0) return;
  const int absent = world.size() / 2 + 1;
  plait::mpi::node_levels levels(world, fake_node(placement::block, world.rank(), 2, world.size()));
  std::string verdict;
  if (world.rank() == absent) {
    std::this_thread::sleep_for(1500ms);
  } else {
    levels.intra().set_timeout(450ms);
    levels.inter().set_timeout(300ms);
    std::vector<int> mine(2, world.rank());
    std::vector<int> all(2);
    try {
      plait::all_reduce<plait::hierarchical<plait::ring, plait::ring>>(levels, mine, all, plait::sum{});
      verdict = "returned";
    } catch (const plait::error& e) {
      if (e.peer() != absent) verdict = "does not name rank " + std::to_string(absent) + ": " + e.what();
    }
  }
  CAPTURE(verdict);
  PLAIT_REQUIRE_ALL(verdict.empty());
}

TEST_CASE("mpi a reduction that throws on one rank of node_levels fails every rank of both levels at once",
          "[mpi][two_level][reduce][errors]") {
  // Two emulated nodes; world rank 0 throws. On the reversed placement it
  // is local rank 0 of node 1 (node_levels numbers a node's ranks in world
  // order), where a rank-order reduction is gathered and folded, in the
  // body itself. The MPI level passes the failure on by its verdicts, the
  // shm level by its failure record.
  plait::mpi::communicator world{MPI_COMM_WORLD};
  if (world.size() < 2) return;
  const int thrower = 0;
  for (const bool commutative : {true, false}) {
    for (const placement how : {placement::block, placement::reversed}) {
      if (!commutative && how != placement::reversed) continue;
      for (int form = 0; form < 3; ++form) {
        INFO(name(how) << (commutative ? ", commutative" : ", rank order") << ", form " << form);
        plait::mpi::node_levels levels(world, fake_node(how, world.rank(), 2, world.size()));
        const std::string verdict = plait_test::left_by_a_throwing_reduction(levels, thrower, commutative, form);
        CAPTURE(verdict);
        PLAIT_REQUIRE_ALL(verdict.empty());
      }
    }
  }
}

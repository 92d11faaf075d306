// plait-test-labels: quick shm sanitize
// plait-test-also: compiled
// plait-test-timeout: 300
// Two-level collectives with both levels on shm threads: a world split into
// nodes (intra) and same-local-rank groups (inter), composed as
// plait::two_level. hierarchical<Inner, Outer> all-gathers and all-to-alls
// land in the whole group's rank order for block and round-robin placements,
// each level carries exactly the documented bytes, unequal nodes are refused
// on every rank, and automatic reports its choice. (tests/mpi runs the same
// over MPI with node_levels.)
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <plait/plait.hpp>

#include "support/harness.hpp"

namespace {

using plait_test::mode;

std::uint64_t shard_value(int rank, std::size_t i) { return static_cast<std::uint64_t>(rank) * 1000003u + i + 1; }
std::uint64_t block_value(int from, int to, std::size_t i) {
  return static_cast<std::uint64_t>(from) * 7919u * 1000u + static_cast<std::uint64_t>(to) * 1000u + i + 1;
}

/// How world ranks sit on nodes: blocks of L consecutive ranks, rank w on
/// node w % N, or every rank at the position P-1-w (no pattern the
/// collectives write straight into: they go through staging).
enum class placement { block, round_robin, reversed };

const char* name(placement how) {
  return how == placement::block ? "block" : how == placement::round_robin ? "round-robin" : "reversed";
}

struct arrangement {
  int node;
  int local;
};

arrangement place(placement how, int world_rank, int nodes, int locals) {
  if (how == placement::block) return {world_rank / locals, world_rank % locals};
  if (how == placement::round_robin) return {world_rank % nodes, world_rank / nodes};
  const int position = nodes * locals - 1 - world_rank;
  return {position / locals, position % locals};
}

/// The whole group's rank of each position: the world ranks, so results are in world order.
std::vector<int> world_table(placement how, int nodes, int locals) {
  std::vector<int> table(static_cast<std::size_t>(nodes * locals));
  for (int w = 0; w < nodes * locals; ++w) {
    const arrangement a = place(how, w, nodes, locals);
    table[static_cast<std::size_t>(a.node * locals + a.local)] = w;
  }
  return table;
}

/// Runs fn(levels, world) on P threads arranged as `nodes` nodes; every rank's verdict.
template <class Fn>
std::vector<std::string> on_levels(int ranks, int nodes, placement how, Fn&& fn) {
  const int locals = ranks / nodes;
  return plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& world) {
    const arrangement a = place(how, world.rank(), nodes, locals);
    auto intra = world.split(a.node, a.local);
    auto inter = world.split(a.local, a.node);
    plait::two_level levels(intra, inter, world_table(how, nodes, locals));
    if (levels.rank() != world.rank()) return std::string("two_level rank differs from the world rank");
    // Each placement takes its own path: straight by position, straight by local rank, or staging.
    const bool spread = nodes > 1 && locals > 1;
    if (levels.node_major() != (how == placement::block || (how == placement::round_robin && !spread))) {
      return std::string("node_major() is wrong");
    }
    if (levels.local_major() != (how == placement::round_robin && spread)) return std::string("local_major() is wrong");
    return fn(levels, world);
  });
}

template <class Algorithm, class Levels>
std::string gather_and_check(Levels& levels, std::size_t n) {
  const int p = levels.size();
  std::vector<std::uint64_t> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = shard_value(levels.rank(), i);
  std::vector<std::uint64_t> all(n * static_cast<std::size_t>(p), 0);
  plait::all_gather<Algorithm>(levels, mine, all);
  for (std::size_t j = 0; j < all.size(); ++j) {
    if (all[j] != shard_value(static_cast<int>(j / n), j % n)) return "wrong element " + std::to_string(j);
  }
  return {};
}

template <class Algorithm, class Levels>
std::string exchange_and_check(Levels& levels, std::size_t n) {
  const int p = levels.size();
  std::vector<std::uint64_t> send(n * static_cast<std::size_t>(p));
  for (std::size_t j = 0; j < send.size(); ++j) send[j] = block_value(levels.rank(), static_cast<int>(j / n), j % n);
  std::vector<std::uint64_t> recv(send.size(), 0);
  plait::all_to_all<Algorithm>(levels, send, recv);
  for (std::size_t j = 0; j < recv.size(); ++j) {
    if (recv[j] != block_value(static_cast<int>(j / n), levels.rank(), j % n))
      return "wrong element " + std::to_string(j);
  }
  return {};
}

void require_all_empty(const std::vector<std::string>& verdicts) {
  for (std::size_t r = 0; r < verdicts.size(); ++r) {
    INFO("rank " << r);
    CHECK(verdicts[r].empty());
    if (!verdicts[r].empty()) UNSCOPED_INFO(verdicts[r]);
  }
}

struct shape {
  int ranks;
  int nodes;
};
constexpr shape shapes[] = {{2, 1}, {2, 2}, {4, 2}, {4, 4}, {6, 2}, {8, 4}};

}  // namespace

TEMPLATE_TEST_CASE("a hierarchical all-gather on two shm levels lands in the whole group's rank order",
                   "[two_level][all_gather]", (plait::hierarchical<plait::ring, plait::recursive_doubling>),
                   (plait::hierarchical<plait::direct, plait::ring>), (plait::hierarchical<plait::bruck, plait::tree>),
                   (plait::hierarchical<plait::automatic, plait::automatic>)) {
  for (const placement how : {placement::block, placement::round_robin, placement::reversed}) {
    for (const shape s : shapes) {
      INFO("P = " << s.ranks << " on " << s.nodes << " nodes, " << name(how));
      require_all_empty(on_levels(s.ranks, s.nodes, how, [](auto& levels, auto&) {
        std::string verdict = gather_and_check<TestType>(levels, 5);
        return verdict.empty() ? gather_and_check<TestType>(levels, 1) : verdict;
      }));
    }
  }
}

TEMPLATE_TEST_CASE("a hierarchical all-to-all on two shm levels lands in the whole group's rank order",
                   "[two_level][all_to_all]", (plait::hierarchical<plait::pairwise, plait::pairwise>),
                   (plait::hierarchical<plait::direct, plait::bruck>),
                   (plait::hierarchical<plait::ring, plait::direct>),
                   (plait::hierarchical<plait::automatic, plait::automatic>)) {
  for (const placement how : {placement::block, placement::round_robin, placement::reversed}) {
    for (const shape s : shapes) {
      INFO("P = " << s.ranks << " on " << s.nodes << " nodes, " << name(how));
      require_all_empty(on_levels(s.ranks, s.nodes, how, [](auto& levels, auto&) {
        std::string verdict = exchange_and_check<TestType>(levels, 3);
        return verdict.empty() ? exchange_and_check<TestType>(levels, 1) : verdict;
      }));
    }
  }
}

TEST_CASE("each level sends exactly the documented bytes", "[two_level][bytes]") {
  // 3 nodes of 2 ranks, 40-byte shards and blocks. all-gather, Outer ring:
  // (N-1) x s on inter; Inner ring: (L-1) x N x s on intra. all-to-all, both
  // pairwise: (N-1) x L x s on inter, (L-1) x N x s on intra.
  constexpr int nodes = 3;
  constexpr int locals = 2;
  constexpr std::size_t n = 5;
  constexpr std::uint64_t s = n * sizeof(std::uint64_t);
  require_all_empty(on_levels(nodes * locals, nodes, placement::block, [&](auto& levels, auto&) -> std::string {
    const plait::level_bytes start = levels.bytes_sent();
    if (start != plait::level_bytes{}) return "the construction's exchange was counted as payload";
    std::string verdict = gather_and_check<plait::hierarchical<plait::ring, plait::ring>>(levels, n);
    const plait::level_bytes gathered = levels.bytes_sent();
    if (gathered.inter != (nodes - 1) * s) return "all_gather inter bytes " + std::to_string(gathered.inter);
    if (gathered.intra != (locals - 1) * nodes * s) return "all_gather intra bytes " + std::to_string(gathered.intra);
    if (verdict.empty()) verdict = exchange_and_check<plait::hierarchical<plait::pairwise, plait::pairwise>>(levels, n);
    const plait::level_bytes exchanged = levels.bytes_sent();
    if (exchanged.inter - gathered.inter != (nodes - 1) * locals * s) {
      return "all_to_all inter bytes " + std::to_string(exchanged.inter - gathered.inter);
    }
    if (exchanged.intra - gathered.intra != (locals - 1) * nodes * s) {
      return "all_to_all intra bytes " + std::to_string(exchanged.intra - gathered.intra);
    }
    return verdict;
  }));
}

TEST_CASE("hierarchical all-to-alls that grow, shrink and reach zero-size blocks stay exact",
          "[two_level][all_to_all]") {
  // The bundle buffer is the two_level's, kept between calls: a later call
  // must never read bytes an earlier, larger one left there.
  for (const placement how : {placement::block, placement::round_robin, placement::reversed}) {
    for (const shape s : {shape{6, 2}, shape{6, 3}, shape{8, 4}}) {
      INFO("P = " << s.ranks << " on " << s.nodes << " nodes, " << name(how));
      require_all_empty(on_levels(s.ranks, s.nodes, how, [](auto& levels, auto&) -> std::string {
        using pairwise = plait::hierarchical<plait::pairwise, plait::pairwise>;
        using direct_bruck = plait::hierarchical<plait::direct, plait::bruck>;
        // 20000 elements: 160 KB blocks, which shm sends by single copy.
        for (const std::size_t n :
             {std::size_t{4}, std::size_t{1}, std::size_t{9}, std::size_t{0}, std::size_t{20000}, std::size_t{4}}) {
          std::string verdict = exchange_and_check<pairwise>(levels, n);
          if (verdict.empty()) verdict = exchange_and_check<direct_bruck>(levels, n + 1);
          if (!verdict.empty()) return verdict + " with " + std::to_string(n) + "-element blocks";
        }
        return std::string();
      }));
    }
  }
}

TEST_CASE("nodes of different sizes are refused on every rank, naming the sizes", "[two_level][bad_input]") {
  // 5 ranks: a node of 3 and a node of 2.
  const auto verdicts = plait_test::run_ranks(mode::threads, 5, [](plait::shm::communicator& world) -> std::string {
    const int node = world.rank() < 3 ? 0 : 1;
    auto intra = world.split(node, world.rank());
    auto inter = world.split(intra.rank(), node);
    try {
      plait::two_level levels{intra, inter};
      return "accepted";
    } catch (const plait::error& e) {
      const std::string text = e.what();
      if (e.code() != plait::errc::invalid_argument) return "wrong code: " + text;
      if (text.find("same number of ranks") == std::string::npos) return "unclear: " + text;
      if (text.find("3") == std::string::npos || text.find("2") == std::string::npos) return "sizes missing: " + text;
      return {};
    }
  });
  require_all_empty(verdicts);
}

TEST_CASE("a wrong recv size is refused on this rank before any byte moves", "[two_level][bad_input]") {
  require_all_empty(on_levels(4, 2, placement::block, [](auto& levels, auto&) -> std::string {
    std::vector<int> mine(3, 1);
    std::vector<int> all(3 * 4 - 1);
    try {
      plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, mine, all);
      return "accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) return std::string("wrong code: ") + e.what();
    }
    if (levels.bytes_sent() != plait::level_bytes{}) return "bytes moved";
    return {};
  }));
}

TEST_CASE("automatic on a two_level without a whole communicator runs hierarchically and says so",
          "[two_level][automatic]") {
  require_all_empty(on_levels(4, 2, placement::round_robin, [](auto& levels, auto&) -> std::string {
    std::string verdict = gather_and_check<plait::automatic>(levels, 4);
    if (!verdict.empty()) return verdict;
    if (!levels.last_choice().hierarchical || levels.last_choice().name() != "hierarchical") return "not hierarchical";
    if (!(levels.last_choice().hierarchical_seconds > 0)) return "no prediction";
    return exchange_and_check<plait::automatic>(levels, 4);
  }));
}

TEST_CASE("a rank table that is not one rank per position is refused on this rank", "[two_level][bad_input]") {
  require_all_empty(plait_test::run_ranks(mode::threads, 4, [](plait::shm::communicator& world) -> std::string {
    auto intra = world.split(world.rank() / 2, world.rank());
    auto inter = world.split(world.rank() % 2, world.rank());
    for (const std::vector<int>& table :
         {std::vector<int>{0, 1, 1, 3}, std::vector<int>{0, 1, 2}, std::vector<int>{0, 1, 2, 4}}) {
      try {
        plait::two_level levels(intra, inter, table);
        return "accepted a table of " + std::to_string(table.size());
      } catch (const plait::error& e) {
        if (e.code() != plait::errc::invalid_argument) return std::string("wrong code: ") + e.what();
        if (std::string(e.what()).find("rank table") == std::string::npos) return std::string("unclear: ") + e.what();
      }
    }
    return {};
  }));
}

TEST_CASE("two_level's own size check is control traffic, and its ranks are positions", "[two_level][bytes]") {
  // Round-robin on 2 nodes of 3: without a rank table, rank() is the position node x 3 + local.
  require_all_empty(plait_test::run_ranks(mode::threads, 6, [](plait::shm::communicator& world) -> std::string {
    const arrangement a = place(placement::round_robin, world.rank(), 2, 3);
    auto intra = world.split(a.node, a.local);
    auto inter = world.split(a.local, a.node);
    plait::two_level levels{intra, inter};
    if (levels.bytes_sent() != plait::level_bytes{}) return "the size check counted as payload";
    if (levels.rank() != a.node * 3 + a.local || !levels.node_major()) return "rank is not the position";
    return gather_and_check<plait::hierarchical<plait::ring, plait::ring>>(levels, 2);
  }));
}

TEST_CASE("an error inside one level names the two-level call, the level and the whole group's rank",
          "[two_level][bad_input]") {
  // neighbor_exchange cannot run on the 3 nodes of the inter level: every rank
  // refuses before any byte moves, from inside the inter level's collective.
  require_all_empty(on_levels(6, 3, placement::round_robin, [](auto& levels, auto& world) -> std::string {
    std::vector<int> mine(2, 1);
    std::vector<int> all(2 * 6);
    try {
      plait::all_gather<plait::hierarchical<plait::ring, plait::neighbor_exchange>>(levels, mine, all);
      return "accepted";
    } catch (const plait::error& e) {
      const std::string text = e.what();
      if (e.code() != plait::errc::unsupported) return "wrong code: " + text;
      if (e.rank() != world.rank() || e.operation() != "all_gather<hierarchical>") return "wrong place: " + text;
      if (text.find("in the inter level (") == std::string::npos || text.find("3 ranks") == std::string::npos) {
        return "unclear: " + text;
      }
    }
    return levels.bytes_sent() == plait::level_bytes{} ? std::string() : std::string("bytes moved");
  }));
}

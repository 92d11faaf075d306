// plait-test-labels: quick shm sanitize
// plait-test-timeout: 300
// Two-level collectives with both levels on shm threads: a world split into
// nodes (intra) and same-local-rank groups (inter), composed as
// plait::two_level. hierarchical<Inner, Outer> all-gathers and all-to-alls
// land in the whole group's rank order for block and round-robin placements,
// each level carries exactly the documented bytes, nodes of different sizes
// are served (equal nodes and unequal ones, the smallest first, last or in
// the middle), and automatic reports its choice. (tests/mpi runs the same
// over MPI with node_levels.)
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <plait/plait.hpp>

#include "support/harness.hpp"
#include "support/placements.hpp"

namespace {

using plait_test::mode;

std::uint64_t shard_value(int rank, std::size_t i) { return static_cast<std::uint64_t>(rank) * 1000003u + i + 1; }
std::uint64_t block_value(int from, int to, std::size_t i) {
  return static_cast<std::uint64_t>(from) * 7919u * 1000u + static_cast<std::uint64_t>(to) * 1000u + i + 1;
}

using plait_test::arrangement;
using plait_test::node_sizes;
using plait_test::on_levels;
using plait_test::place;
using plait_test::placement;
using plait_test::spread;
using plait_test::world_table;

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

/// Equal nodes, then nodes of different sizes (the smallest last, first, in the middle).
const std::vector<node_sizes>& shapes() {
  static const std::vector<node_sizes> all{
      {{2}},    {{1, 1}},    {{2, 2}}, {{1, 1, 1, 1}}, {{3, 3}},       {{2, 2, 2, 2}}, {{2, 1}},
      {{3, 2}}, {{1, 2, 2}}, {{4, 3}}, {{2, 1, 1, 1}}, {{2, 2, 2, 1}}, {{3, 1, 3}},    {{1, 4}},
  };
  return all;
}

std::string describe(const node_sizes& nodes) {
  std::string out;
  for (int s : nodes.sizes) out += (out.empty() ? "" : "+") + std::to_string(s);
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("a hierarchical all-gather on two shm levels lands in the whole group's rank order",
                   "[two_level][all_gather]", (plait::hierarchical<plait::ring, plait::recursive_doubling>),
                   (plait::hierarchical<plait::direct, plait::ring>), (plait::hierarchical<plait::bruck, plait::tree>),
                   (plait::hierarchical<plait::automatic, plait::automatic>)) {
  for (const placement how : {placement::block, placement::round_robin, placement::reversed}) {
    for (const node_sizes& nodes : shapes()) {
      INFO("nodes of " << describe(nodes) << " ranks, " << name(how));
      require_all_empty(on_levels(nodes, how, [](auto& levels, auto&) {
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
    for (const node_sizes& nodes : shapes()) {
      INFO("nodes of " << describe(nodes) << " ranks, " << name(how));
      require_all_empty(on_levels(nodes, how, [](auto& levels, auto&) {
        std::string verdict = exchange_and_check<TestType>(levels, 3);
        return verdict.empty() ? exchange_and_check<TestType>(levels, 1) : verdict;
      }));
    }
  }
}

TEMPLATE_TEST_CASE("nonblocking and persistent hierarchical collectives on two shm levels equal the blocking ones",
                   "[two_level][nonblocking][persistent]", (plait::hierarchical<plait::ring, plait::pairwise>),
                   (plait::hierarchical<plait::automatic, plait::automatic>)) {
  // Two iall_* in flight at once (they run one after the other on the
  // levels' engine, in order), waited for in the reverse order, then a
  // persistent all-gather and all-to-all started three times with fresh
  // contents, a blocking call in between while one is pending.
  for (const placement how : {placement::block, placement::round_robin, placement::reversed}) {
    for (const node_sizes& nodes : shapes()) {
      INFO("nodes of " << describe(nodes) << " ranks, " << name(how));
      require_all_empty(on_levels(nodes, how, [](auto& levels, auto&) -> std::string {
        const auto p = static_cast<std::size_t>(levels.size());
        const int me = levels.rank();
        const std::size_t n = 3;
        std::vector<std::uint64_t> mine(n), all(n * p, 0), send(n * p), recv(n * p, 0);
        auto fill = [&](int round) {
          for (std::size_t i = 0; i < n; ++i) mine[i] = shard_value(me, i) + 100000u * static_cast<unsigned>(round);
          for (std::size_t j = 0; j < send.size(); ++j) {
            send[j] = block_value(me, static_cast<int>(j / n), j % n) + 100000u * static_cast<unsigned>(round);
          }
        };
        auto check = [&](int round) -> std::string {
          const std::uint64_t salt = 100000u * static_cast<unsigned>(round);
          for (std::size_t j = 0; j < all.size(); ++j) {
            if (all[j] != shard_value(static_cast<int>(j / n), j % n) + salt)
              return "all_gather: wrong element " + std::to_string(j) + " in round " + std::to_string(round);
          }
          for (std::size_t j = 0; j < recv.size(); ++j) {
            if (recv[j] != block_value(static_cast<int>(j / n), me, j % n) + salt)
              return "all_to_all: wrong element " + std::to_string(j) + " in round " + std::to_string(round);
          }
          return {};
        };
        fill(0);
        auto gather = plait::iall_gather<TestType>(levels, mine, all);
        auto exchange = plait::iall_to_all<TestType>(levels, send, recv);
        exchange.wait();
        gather.wait();
        if (std::string v = check(0); !v.empty()) return "nonblocking " + v;
        auto gather_p = plait::all_gather_init<TestType>(levels, mine, all);
        auto exchange_p = plait::all_to_all_init<TestType>(levels, send, recv);
        for (int round = 1; round <= 3; ++round) {
          fill(round);
          gather_p.start();
          exchange_p.start();
          if (round == 2) {  // a blocking call while both are pending goes behind them
            std::vector<std::uint64_t> extra_all(n * p);
            plait::all_gather<TestType>(levels, mine, extra_all);
            if (extra_all != all) return "a blocking all_gather among pending ones differs from theirs";
          }
          while (!gather_p.test()) {
          }
          exchange_p.wait();
          if (std::string v = check(round); !v.empty()) return "persistent " + v;
        }
        return {};
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
    for (const node_sizes& nodes : {node_sizes{{3, 3}}, node_sizes{{2, 2, 2}}, node_sizes{{2, 2, 2, 2}},
                                    node_sizes{{3, 2, 2}}, node_sizes{{1, 3}}}) {
      INFO("nodes of " << describe(nodes) << " ranks, " << name(how));
      require_all_empty(on_levels(nodes, how, [](auto& levels, auto&) -> std::string {
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

TEST_CASE("two_level learns nodes of different sizes by its exchange and serves them", "[two_level][uneven]") {
  // Nodes of 1, 3 and 2 ranks, in blocks, without a table: rank() is the position.
  const node_sizes nodes{{1, 3, 2}};
  const auto verdicts = plait_test::run_ranks(mode::threads, 6, [&](plait::shm::communicator& world) -> std::string {
    const arrangement a = place(placement::block, world.rank(), nodes);
    auto intra = world.split(a.node, a.local);
    auto inter = world.split(a.local, a.node);
    plait::two_level levels{intra, inter};
    if (levels.bytes_sent() != plait::level_bytes{}) return "the exchange counted as payload";
    if (levels.size() != 6 || levels.node_count() != 3 || levels.node_index() != a.node) return "wrong census";
    if (levels.even_nodes() || levels.smallest_node_size() != 1 || levels.largest_node_size() != 3) {
      return "wrong sizes";
    }
    for (int n = 0; n < 3; ++n) {
      if (levels.node_size_of(n) != nodes.sizes[static_cast<std::size_t>(n)] ||
          levels.node_offset(n) != nodes.offset(n))
        return "wrong node " + std::to_string(n);
    }
    if (levels.rank() != world.rank() || !levels.node_major()) return "rank is not the position";
    std::string verdict = gather_and_check<plait::hierarchical<plait::ring, plait::ring>>(levels, 3);
    if (verdict.empty()) verdict = exchange_and_check<plait::hierarchical<plait::pairwise, plait::pairwise>>(levels, 2);
    return verdict;
  });
  require_all_empty(verdicts);
}

TEST_CASE("an inter level that is not the same local rank of every node is refused, naming the sizes",
          "[two_level][bad_input]") {
  // Nodes of 3 and 2 ranks, but inter groups the ranks by world rank parity:
  // local rank 2 of node 0 would meet node 1, which has no local rank 2.
  const auto verdicts = plait_test::run_ranks(mode::threads, 5, [](plait::shm::communicator& world) -> std::string {
    const int node = world.rank() < 3 ? 0 : 1;
    auto intra = world.split(node, world.rank());
    auto inter = world.split(world.rank() % 2, world.rank());
    try {
      plait::two_level levels{intra, inter};
      return "accepted";
    } catch (const plait::error& e) {
      const std::string text = e.what();
      if (e.code() != plait::errc::invalid_argument) return "wrong code: " + text;
      if (text.find("inter level wrong") == std::string::npos && text.find("3, 2 ranks") == std::string::npos) {
        return "unclear: " + text;
      }
      return {};
    }
  });
  // Local ranks 0 see a consistent census; their node-mates' verdicts make them refuse too.
  require_all_empty(verdicts);
}

TEST_CASE("each level sends exactly the documented bytes on nodes of different sizes", "[two_level][bytes][uneven]") {
  // Nodes of 3, 2 and 2 ranks (M = 2 relays), 10-byte shards and blocks.
  const node_sizes nodes{{3, 2, 2}};
  constexpr std::size_t n = 5;
  constexpr std::uint64_t s = n * sizeof(std::uint16_t);
  require_all_empty(on_levels(nodes, placement::block, [&](auto& levels, auto&) -> std::string {
    const std::uint64_t p = 7;
    const std::uint64_t node_count = 3;
    const auto local = static_cast<std::uint64_t>(levels.intra().rank());
    const auto size = static_cast<std::uint64_t>(levels.node_size());
    const auto me = static_cast<std::uint64_t>(levels.node_index());
    // all-gather, both direct. Share l of node m's block of L_m x s bytes:
    // [L_m s l / M, L_m s (l + 1) / M).
    const auto share = [&](std::uint64_t m, std::uint64_t l) {
      const std::uint64_t block = static_cast<std::uint64_t>(nodes.sizes[m]) * s;
      return block * (l + 1) / 2 - block * l / 2;
    };
    std::vector<std::uint16_t> mine(n, static_cast<std::uint16_t>(levels.rank()));
    std::vector<std::uint16_t> all(n * p);
    plait::all_gather<plait::hierarchical<plait::direct, plait::direct>>(levels, mine, all);
    for (std::size_t j = 0; j < all.size(); ++j) {
      if (all[j] != j / n) return "wrong gathered element " + std::to_string(j);
    }
    const plait::level_bytes gathered = levels.bytes_sent();
    const std::uint64_t row = local < 2 ? share(0, local) + share(1, local) + share(2, local) : 0;
    if (gathered.inter != (local < 2 ? (node_count - 1) * share(me, local) : 0)) {
      return "all_gather inter bytes " + std::to_string(gathered.inter);
    }
    if (gathered.intra != (size - 1) * s + (size - 1) * row) {
      return "all_gather intra bytes " + std::to_string(gathered.intra);
    }
    // all-to-all, both pairwise: relay r carries the blocks from other nodes
    // for local ranks r, r + 2, ... Step 1: the node's own row (L - 1
    // blocks), then every rank sends each other relay of its node the blocks
    // for that relay's local ranks on the other nodes; step 2: relay r sends
    // node m L x (served by r on m) blocks; step 3: relay r forwards the P -
    // L blocks from other nodes to each of its local ranks k >= 2.
    const auto served = [&](std::uint64_t m, std::uint64_t r) {
      return (static_cast<std::uint64_t>(nodes.sizes[m]) - r + 1) / 2;
    };
    std::string verdict = exchange_and_check<plait::hierarchical<plait::pairwise, plait::pairwise>>(levels, n);
    const plait::level_bytes exchanged = levels.bytes_sent();
    const std::uint64_t b = n * sizeof(std::uint64_t);
    std::uint64_t intra = (size - 1) * b;
    for (std::uint64_t r = 0; r < 2; ++r) {
      for (std::uint64_t m = 0; m < node_count && r != local; ++m) intra += m == me ? 0 : served(m, r) * b;
    }
    std::uint64_t inter = 0;
    if (local < 2) {
      for (std::uint64_t m = 0; m < node_count; ++m) inter += m == me ? 0 : size * served(m, local) * b;
      intra += (served(me, local) - 1) * (p - size) * b;
    }
    if (exchanged.inter - gathered.inter != inter) {
      return "all_to_all inter bytes " + std::to_string(exchanged.inter - gathered.inter);
    }
    if (exchanged.intra - gathered.intra != intra) {
      return "all_to_all intra bytes " + std::to_string(exchanged.intra - gathered.intra);
    }
    return verdict;
  }));
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

TEST_CASE("the hierarchical v forms check their counts as the flat ones do, before any payload moves",
          "[two_level][bad_input][uneven]") {
  // One node of 4: every pair is within the node, so every rank sees the disagreement.
  require_all_empty(on_levels(4, 1, placement::block, [](auto& levels, auto&) -> std::string {
    using hier = plait::hierarchical<plait::ring, plait::pairwise>;
    std::vector<int> mine(1, 1), all(4);
    std::vector<int> three(3, 1);
    try {
      plait::all_gather_v<hier>(levels, mine, all, three);
      return "three counts for four ranks accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) return std::string("wrong code: ") + e.what();
    }
    // Rank 0 sends rank 1 two elements; rank 1 expects one.
    std::vector<int> send_counts(4, 1), recv_counts(4, 1);
    if (levels.rank() == 0) send_counts[1] = 2;
    std::vector<int> send(levels.rank() == 0 ? 5 : 4), recv(4);
    try {
      plait::all_to_all_v<hier>(levels, send, send_counts, recv, recv_counts);
      return "disagreeing counts accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) return std::string("wrong code: ") + e.what();
      if (std::string(e.what()).find("rank 0 sends 8 bytes to rank 1, but rank 1 expects 4") == std::string::npos) {
        return std::string("unclear: ") + e.what();
      }
    }
    if (levels.bytes_sent() != plait::level_bytes{}) return "payload bytes moved";
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
    const arrangement a = place(placement::round_robin, world.rank(), spread(6, 2));
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
      if (e.rank() != world.rank() || e.operation() != "all_gather<hierarchical<ring, neighbor_exchange>>") {
        return "wrong place: " + text;
      }
      if (text.find("in the inter level's all_gather") == std::string::npos ||
          text.find("3 ranks") == std::string::npos) {
        return "unclear: " + text;
      }
    }
    return levels.bytes_sent() == plait::level_bytes{} ? std::string() : std::string("bytes moved");
  }));
}

TEST_CASE("a timeout inside one level names world ranks, level ranks in parentheses, and the call the user made",
          "[two_level][errors]") {
  // Two nodes of two, round-robin: world ranks 0 and 2 on node 0, 1 and 3 on
  // node 1, so the intra level's rank 1 of node 1 is world rank 3. Rank 3
  // never calls (alive, so absent rather than lost); rank 1, whose intra
  // level peer it is, times out first, waiting for level rank 1.
  using namespace std::chrono_literals;
  const auto verdicts = on_levels(4, 2, placement::round_robin, [](auto& levels, auto& world) -> std::string {
    if (world.rank() == 3) {
      std::this_thread::sleep_for(900ms);
      return {};
    }
    levels.intra().set_timeout(world.rank() == 1 ? 250ms : 600ms);
    levels.inter().set_timeout(world.rank() == 1 ? 250ms : 600ms);
    std::vector<int> mine(2, world.rank());
    std::vector<int> all(8);
    try {
      plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, mine, all);
      return "returned";
    } catch (const plait::error& e) {
      const std::string text = e.what();
      if (e.operation() != "all_gather<hierarchical<ring, ring>>") return "wrong operation: " + text;
      if (e.rank() != world.rank()) return "wrong rank: " + text;
      if (world.rank() != 1) return {};
      if (e.code() != plait::errc::timeout || e.peer() != 3) return "wrong code or peer: " + text;
      for (const char* part :
           {"rank 1 (rank 0 of the intra level)", "waiting for rank 3 (rank 1 of the intra level)"}) {
        if (text.find(part) == std::string::npos) return std::string("lacks '") + part + "': " + text;
      }
    }
    return {};
  });
  require_all_empty(verdicts);
}

TEST_CASE("ranks whose two-level calls differ only in element type fail instead of taking each other's bytes",
          "[two_level][errors]") {
  // Rank 3 all-gathers 8 uint8 where the others all-gather 2 int32: the same
  // bytes per rank, which is all the levels' collectives see. Found by the
  // soak's two-level trials: every rank returned normally, the others with
  // rank 3's bytes as its int32s. Each level's collectives now carry the
  // two-level call's stamp (element type included), and the ranks that
  // receive rank 3's messages refuse them.
  using namespace std::chrono_literals;
  const auto how = GENERATE(placement::block, placement::round_robin, placement::reversed);
  CAPTURE(name(how));
  std::vector<std::string> messages(4);
  const auto verdicts = on_levels(4, 2, how, [&](auto& levels, auto& world) -> std::string {
    levels.intra().set_timeout(5s);
    levels.inter().set_timeout(5s);
    try {
      if (world.rank() == 3) {
        std::vector<std::uint8_t> mine(8, 3), all(32);
        plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, mine, all);
      } else {
        std::vector<std::int32_t> mine(2, world.rank()), all(8);
        plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, mine, all);
      }
      return "returned normally";
    } catch (const plait::error& e) {
      messages[static_cast<std::size_t>(world.rank())] = e.what();
      return {};
    }
  });
  require_all_empty(verdicts);
  bool named = false;
  for (const std::string& m : messages) {
    named = named || (m.find("of uint8") != std::string::npos && m.find("of int32") != std::string::npos);
  }
  CAPTURE(messages);
  CHECK(named);
}

TEST_CASE("a call on levels that an earlier failure left unusable names the two-level call that failed",
          "[two_level][errors]") {
  // Rank 5 never calls; the others time out or learn of it, then call again.
  // A level poisoned by its own collective kept only that collective's name
  // ("poisoned by all_gather<ring> #4"), which the user never called (found
  // by the soak's two-level trials). A call refused first (neighbor_exchange
  // cannot run on the 3 nodes) poisons nothing and is not the one named.
  using namespace std::chrono_literals;
  const auto verdicts = on_levels(6, 3, placement::block, [](auto& levels, auto& world) -> std::string {
    if (world.rank() == 5) {
      std::this_thread::sleep_for(1500ms);
      return {};
    }
    levels.intra().set_timeout(300ms);
    levels.inter().set_timeout(300ms);
    std::vector<int> mine(2, world.rank());
    std::vector<int> all(12);
    try {
      plait::all_gather<plait::hierarchical<plait::ring, plait::neighbor_exchange>>(levels, mine, all);
      return "neighbor_exchange ran on 3 nodes";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::unsupported) return std::string("not refused: ") + e.what();
    }
    for (int call = 0; call < 2; ++call) {
      try {
        plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, mine, all);
        return "call " + std::to_string(call) + " returned";
      } catch (const plait::error& e) {
        const std::string text = e.what();
        const std::size_t since = text.find("unusable since");
        if (call == 1 && (since == std::string::npos ||
                          text.find("all_gather<hierarchical<ring, ring>>", since) == std::string::npos ||
                          text.find("neighbor_exchange") != std::string::npos)) {
          return "the later error does not name the call that failed: " + text;
        }
      }
    }
    return {};
  });
  require_all_empty(verdicts);
}

TEST_CASE("every rank number of a level's message becomes the whole group's, lists and all", "[two_level][errors]") {
  // Level ranks 0, 1, 2 are whole-group ranks 5, 7, 9. "3 ranks", a split
  // communicator's "parent rank", numbers beyond the level and what another
  // level passed on in whole-group words (op/abandon_levels.hpp) stay as
  // they are.
  const int whole[] = {5, 7, 9};
  const plait::error raised(plait::errc::size_mismatch,
                            "ranks 0 and 2 disagree; rank 1 calls x; ranks 0, 1 and 2 on 3 ranks; parent rank 1; "
                            "rank 12; whole-group rank 1; rank 2 (rank 0 of the inter level) failed",
                            {1, "all_gather<ring>", -1, 2});
  const plait::error seen =
      plait::detail::level_error(raised, 7, "all_gather<hierarchical<ring, ring>>", "intra", 9, whole);
  CHECK(std::string(seen.what()) ==
        "plait, rank 7, all_gather<hierarchical<ring, ring>>, peer 9: rank 7 (rank 1 of the intra level), in the intra "
        "level's all_gather<ring>: ranks 5 (rank 0 of the intra level) and 9 (rank 2 of the intra level) disagree; "
        "rank 7 (rank 1 of the intra level) calls x; ranks 5 (rank 0 of the intra level), 7 (rank 1 of the intra "
        "level) and 9 (rank 2 of the intra level) on 3 ranks; parent rank 1; rank 12; whole-group rank 1; rank 2 "
        "(rank 0 of the inter level) failed");
  CHECK(seen.code() == plait::errc::size_mismatch);
  CHECK(seen.peer() == 9);
}

TEST_CASE("a failure passed on from another level blames the rank its text names", "[two_level][errors]") {
  using plait::detail::blamed_in_text;
  CHECK(blamed_in_text("whole-group rank 12 is to blame: rank 3 (rank 1 of the inter level) failed") == 12);
  CHECK(blamed_in_text("the group failed: rank 1 failed: whole-group rank 0 is to blame: ...") == 0);
  CHECK(blamed_in_text("rank 3 (rank 1 of the inter level) failed") == -1);
  CHECK(blamed_in_text("whole-group rank ") == -1);
  CHECK(blamed_in_text("whole-group rank 99999999999 is to blame") == -1);
}

TEST_CASE("two_level's census queues behind collectives in flight on its levels", "[two_level][nonblocking]") {
  // Nodes of 3 and 2 ranks; an all-gather is in flight on intra while the
  // census runs: the census's exchanges go through intra's engine behind it,
  // and only their own bytes leave bytes_sent() (the all-gather's moved meanwhile).
  const node_sizes nodes{{3, 2}};
  const auto verdicts = plait_test::run_ranks(mode::threads, 5, [&](plait::shm::communicator& world) -> std::string {
    const arrangement a = place(placement::block, world.rank(), nodes);
    auto intra = world.split(a.node, a.local);
    auto inter = world.split(a.local, a.node);
    std::vector<int> mine(3, world.rank());
    std::vector<int> all(mine.size() * static_cast<std::size_t>(intra.size()));
    auto pending = plait::iall_gather<plait::ring>(intra, mine, all);
    plait::two_level levels{intra, inter};
    pending.wait();
    if (levels.node_count() != 2 || levels.node_index() != a.node || levels.size() != 5) return "wrong census";
    if (levels.bytes_sent().intra != (mine.size() * sizeof(int)) * static_cast<std::size_t>(intra.size() - 1)) {
      return "the census counted as payload: " + std::to_string(levels.bytes_sent().intra);
    }
    for (std::size_t j = 0; j < all.size(); ++j) {
      if (all[j] != world.rank() - a.local + static_cast<int>(j / mine.size())) return "wrong gathered element";
    }
    return gather_and_check<plait::hierarchical<plait::ring, plait::direct>>(levels, 2);
  });
  require_all_empty(verdicts);
}

namespace {
/// How rank 1 waits for rank 0: in the same two-level call (at their intra
/// level, in wait_all), or in a flat blocking all_gather<direct> on their
/// intra communicator, which at these sizes waits in a shared-slot round
/// (op/slot_run.hpp; a two-level body's steps never take that path).
enum class rank_one_calls { the_two_level_call, a_flat_direct_call };

/// Rank 2 never calls, on two nodes of two (block: node 1 is ranks 2 and
/// 3). Rank 0 waits at its inter level for rank 2 (for `inter_timeout`)
/// while rank 1 waits at their intra level for rank 0 (for 300 ms, so it
/// times out first). Each rank's error; none where it returned.
std::vector<std::optional<plait::error>> rank_one_waits_for_a_rank_at_its_other_level(
    bool reduce, std::chrono::milliseconds inter_timeout, rank_one_calls how = rank_one_calls::the_two_level_call) {
  using namespace std::chrono_literals;
  std::vector<std::optional<plait::error>> errors(4);
  const auto verdicts = on_levels(4, 2, placement::block, [&](auto& levels, auto& world) -> std::string {
    if (world.rank() == 2) {
      std::this_thread::sleep_for(inter_timeout + 900ms);
      return {};
    }
    levels.intra().set_timeout(300ms);
    levels.inter().set_timeout(inter_timeout);
    std::vector<int> mine(2, world.rank());
    std::vector<int> all(reduce ? 2 : 8);
    try {
      if (world.rank() == 1 && how == rank_one_calls::a_flat_direct_call) {
        all.resize(4);
        const std::uint64_t rounds_before = levels.intra().slot_rounds();
        try {
          plait::all_gather<plait::direct>(levels.intra(), mine, all);
        } catch (...) {
          if (levels.intra().slot_rounds() == rounds_before) return "rank 1 did not wait in a shared-slot round";
          throw;
        }
      } else if (reduce) {
        plait::all_reduce<plait::hierarchical<plait::ring, plait::ring>>(levels, mine, all, plait::sum{});
      } else {
        plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, mine, all);
      }
    } catch (const plait::error& e) {
      errors[static_cast<std::size_t>(world.rank())] = e;
    }
    return {};
  });
  require_all_empty(verdicts);
  return errors;
}
}  // namespace

TEST_CASE("a rank that waits for a rank held at its other level names the rank that holds it there",
          "[two_level][errors]") {
  // Found by the soak's two-level trials: rank 1 timed out first and blamed
  // rank 0, which "never entered" the intra level's call: it waited at the
  // inter level for rank 2, a chain no record on the intra level shows. Rank
  // 0's intra record now says it is at the other level, and rank 1 waits one
  // timeout more, until rank 0's own timeout fails the intra level naming
  // rank 2. All-gather goes inter then intra; all-reduce intra, inter
  // (leaders only), then intra.
  static_assert(requires(plait::shm::communicator & c) { c.note_other_level(true); });
  using namespace std::chrono_literals;
  const bool reduce = GENERATE(false, true);
  CAPTURE(reduce);
  const auto errors = rank_one_waits_for_a_rank_at_its_other_level(reduce, 400ms);
  for (const int r : {0, 1, 3}) {
    const auto& e = errors[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << (e ? e->what() : "returned"));
    CHECK((e && e->peer() == 2));
  }
}

TEST_CASE("a rank that waits for a rank still at its other level after one timeout more says where it is",
          "[two_level][errors]") {
  // Rank 0's inter level waits 900 ms, longer than rank 1's 300 ms and the
  // 300 ms more: rank 1 fails first, naming rank 0 as held at the other
  // level, and the time it waited in all; in wait_all, or in a shared-slot
  // round (a flat all_gather<direct> on the intra communicator).
  using namespace std::chrono_literals;
  const rank_one_calls how = GENERATE(rank_one_calls::the_two_level_call, rank_one_calls::a_flat_direct_call);
  CAPTURE(how == rank_one_calls::a_flat_direct_call);
  const auto errors = rank_one_waits_for_a_rank_at_its_other_level(false, 900ms, how);
  REQUIRE(errors[0]);
  REQUIRE(errors[1]);
  const plait::error& e = *errors[1];
  const std::string text = e.what();
  INFO(text);
  CHECK(e.code() == plait::errc::timeout);
  CHECK(e.peer() == 0);
  CHECK(text.find(how == rank_one_calls::a_flat_direct_call
                      ? "timed out after 0.6 s waiting for rank 0 to post its shared slot"
                      : "timed out after 0.6 s waiting for rank 0 (rank 0 of the intra level)") != std::string::npos);
  CHECK(text.find("it is at the other level of a two-level call") != std::string::npos);
  CHECK(errors[0]->peer() == 2);
}

TEST_CASE("a rank that waits in a shared-slot round for a rank held at its other level takes that level's error",
          "[two_level][errors]") {
  // Rank 1's flat call on the intra communicator is not rank 0's, but rank
  // 0's all-gather goes inter level first, where rank 2, which never
  // called, holds it: rank 1's slot round waits one timeout more too, and
  // takes the failure of rank 0's two-level call, which names rank 2. Rank
  // 2 has no number on the intra communicator: rank 1's error names rank
  // 0, whose failure it is, and its text the rank to blame. (An all-reduce
  // goes intra first: rank 0 would meet rank 1's other call there and
  // rightly blame it.)
  using namespace std::chrono_literals;
  const auto errors = rank_one_waits_for_a_rank_at_its_other_level(false, 400ms, rank_one_calls::a_flat_direct_call);
  REQUIRE(errors[0]);
  REQUIRE(errors[1]);
  CHECK(errors[0]->peer() == 2);
  const std::string text = errors[1]->what();
  INFO(text);
  CHECK(errors[1]->peer() == 0);
  CHECK(text.find("the group failed: rank 0 failed: whole-group rank 2 is to blame") != std::string::npos);
}

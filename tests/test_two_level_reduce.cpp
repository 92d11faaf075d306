// plait-test-labels: quick shm sanitize
// plait-test-timeout: 300
// Reductions on two shm levels composed as a plait::two_level (no whole
// communicator): hierarchical<Inner, Outer> and automatic, blocking,
// nonblocking and persistent, all_reduce, reduce_scatter, reduce_scatter_v
// and bundles, on nodes of equal and different sizes and with ranks placed in
// blocks, dealt round-robin and reversed; integers equal a serial reference,
// plait::ordered sums the serial left fold bit for bit, a reduction that does
// not commute comes out in rank order, and avg divides once. (tests/mpi runs
// reductions over MPI with node_levels.)
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <plait/plait.hpp>

#include "support/harness.hpp"
#include "support/order_sensitive.hpp"
#include "support/placements.hpp"
#include "support/throwing_reduction.hpp"

using plait_test::on_levels;
using plait_test::placement;

namespace {

std::int64_t contribution(int rank, std::size_t i) {
  return static_cast<std::int64_t>(rank + 1) * 1000003 + static_cast<std::int64_t>(i * 37 % 1001) - 500;
}
std::int64_t total(int ranks, std::size_t i) {
  std::int64_t sum = 0;
  for (int r = 0; r < ranks; ++r) sum += contribution(r, i);
  return sum;
}

/// Every form of every reduction shape with one algorithm policy on `levels`.
template <class Algorithm, class Levels>
std::string every_reduction(Levels& levels) {
  const int p = levels.size();
  const int me = levels.rank();
  const std::size_t block = 5;
  const std::size_t n = block * static_cast<std::size_t>(p);
  std::vector<std::int64_t> send(n);
  for (std::size_t i = 0; i < n; ++i) send[i] = contribution(me, i);
  std::vector<std::int64_t> recv(n, -1);
  plait::all_reduce<Algorithm>(levels, send, recv, plait::sum{});
  for (std::size_t i = 0; i < n; ++i) {
    if (recv[i] != total(p, i)) return "all_reduce element " + std::to_string(i);
  }
  std::vector<std::int64_t> buffer = send;
  auto request = plait::iall_reduce<Algorithm>(levels, plait::in_place, buffer, plait::sum{});
  request.wait();
  if (buffer != recv) return "in-place iall_reduce";
  std::vector<std::int64_t> part(block, -1);
  auto persistent = plait::reduce_scatter_init<Algorithm>(levels, send, part, plait::sum{});
  for (int round = 0; round < 2; ++round) {
    persistent.start();
    persistent.wait();
    for (std::size_t i = 0; i < block; ++i) {
      if (part[i] != total(p, static_cast<std::size_t>(me) * block + i)) return "reduce_scatter_init";
    }
  }
  std::vector<int> counts(static_cast<std::size_t>(p));
  std::size_t first = 0;
  std::size_t all = 0;
  for (int r = 0; r < p; ++r) {
    counts[static_cast<std::size_t>(r)] = (r * 3) % 4;
    if (r < me) first += static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
    all += static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
  }
  std::vector<std::int64_t> uneven(all);
  for (std::size_t i = 0; i < all; ++i) uneven[i] = contribution(me, i);
  std::vector<std::int64_t> mine(static_cast<std::size_t>(counts[static_cast<std::size_t>(me)]));
  plait::reduce_scatter_v<Algorithm>(levels, uneven, mine, counts, plait::sum{});
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (mine[i] != total(p, first + i)) return "reduce_scatter_v";
  }
  std::vector<float> ones(7, static_cast<float>(2 * me));
  std::vector<double> halves(3, 0.5 * me);
  std::vector<float> ones_mean(7);
  std::vector<double> mean(3);
  plait::all_reduce<Algorithm>(levels, plait::bundle(ones, halves), plait::bundle(ones_mean, mean), plait::avg{});
  for (float x : ones_mean) {
    if (x != static_cast<float>(p - 1)) return "bundle avg (float member): " + std::to_string(x);
  }
  for (double x : mean) {
    if (x != 0.5 * (p - 1) / 2.0) return "bundle avg divides once: " + std::to_string(x);
  }
  return {};
}

using plait_test::float_contribution;
using plait_test::matrix;
using plait_test::matrix_of;
using plait_test::times;

/// The exact left fold and rank order, whatever the placement.
template <class Levels>
std::string ordered_and_rank_order(Levels& levels) {
  const int p = levels.size();
  const std::size_t n = 9;
  std::vector<float> send(n);
  for (std::size_t i = 0; i < n; ++i) send[i] = float_contribution(levels.rank(), i);
  std::vector<float> recv(n);
  plait::all_reduce<plait::hierarchical<plait::direct, plait::chain>>(levels, send, recv, plait::ordered<plait::sum>{});
  for (std::size_t i = 0; i < n; ++i) {
    float fold = float_contribution(0, i);
    for (int r = 1; r < p; ++r) fold = fold + float_contribution(r, i);
    if (std::bit_cast<std::uint32_t>(recv[i]) != std::bit_cast<std::uint32_t>(fold)) return "not the left fold";
  }
  const auto product =
      plait::reduction([](const matrix& a, const matrix& b) { return times(a, b); }, plait::associative);
  std::vector<matrix> mats(n);
  for (std::size_t i = 0; i < n; ++i) mats[i] = matrix_of(levels.rank(), i);
  std::vector<matrix> out(n);
  auto request =
      plait::iall_reduce<plait::hierarchical<plait::tree, plait::recursive_doubling>>(levels, mats, out, product);
  request.wait();
  for (std::size_t i = 0; i < n; ++i) {
    matrix want = matrix_of(0, i);
    for (int r = 1; r < p; ++r) want = times(want, matrix_of(r, i));
    if (!(out[i] == want)) return "matrix product out of rank order";
  }
  return {};
}

}  // namespace

TEMPLATE_TEST_CASE("reductions on two shm levels equal a serial reference in every form", "[two_level][reduce]",
                   (plait::hierarchical<plait::ring, plait::ring>),
                   (plait::hierarchical<plait::recursive_doubling, plait::direct>), plait::automatic) {
  const int ranks = GENERATE(1, 2, 4, 5, 6);
  const int nodes = GENERATE(1, 2, 3);
  const placement how = GENERATE(placement::block, placement::round_robin, placement::reversed);
  if (nodes > ranks) return;
  CAPTURE(ranks, nodes, plait_test::name(how));
  const auto verdicts = on_levels(
      ranks, nodes, how, [](auto& levels, plait::shm::communicator&) { return every_reduction<TestType>(levels); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("ordered sums and reductions that do not commute keep rank order on two levels, whatever the placement",
          "[two_level][reduce][ordered]") {
  const int ranks = GENERATE(3, 5, 6);
  const int nodes = GENERATE(2, 3);
  const placement how = GENERATE(placement::block, placement::round_robin, placement::reversed);
  CAPTURE(ranks, nodes, plait_test::name(how));
  const auto verdicts = on_levels(
      ranks, nodes, how, [](auto& levels, plait::shm::communicator&) { return ordered_and_rank_order(levels); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a reduction on two levels refuses a wrong recv size on this rank before any byte moves",
          "[two_level][reduce][bad_input]") {
  const auto verdicts = on_levels(4, 2, placement::block, [](auto& levels, plait::shm::communicator&) {
    std::vector<int> send(8, 1);
    std::vector<int> recv(7, -1);
    try {
      plait::all_reduce<plait::hierarchical<plait::ring, plait::ring>>(levels, send, recv, plait::sum{});
      return std::string("accepted");
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) return std::string("wrong code: ") + e.what();
      if (std::string(e.what()).find("all_reduce<hierarchical<ring, ring>>") == std::string::npos) {
        return std::string("does not name the call: ") + e.what();
      }
    }
    return recv == std::vector<int>(7, -1) ? std::string() : std::string("recv was written");
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a reduction that throws on one rank of two levels fails every rank of both at once, naming the cause",
          "[two_level][reduce][errors]") {
  // Combined per node (in the levels' all-reduces), every rank may throw;
  // gathered (rank order on a reversed placement), local rank 0 folds in
  // the body itself: rank 1 sits there.
  const bool commutative = GENERATE(true, false);
  const int thrower = GENERATE(0, 1, 2, 3);
  const placement how = GENERATE(placement::block, placement::round_robin, placement::reversed);
  const int form = GENERATE(0, 1, 2);
  if (!commutative && (thrower != 1 || how != placement::reversed)) return;
  CAPTURE(commutative, thrower, plait_test::name(how), form);
  const auto start = std::chrono::steady_clock::now();
  const auto verdicts = on_levels(4, 2, how, [&](auto& levels, plait::shm::communicator&) {
    return plait_test::left_by_a_throwing_reduction(levels, thrower, commutative, form);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

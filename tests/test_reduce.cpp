// plait-test-labels: quick shm
// plait-test-timeout: 600
// Reductions (reduce_scatter, all_reduce) on the shared-memory transport:
// every algorithm that schedules them, every form (blocking, in place,
// nonblocking, persistent), threads and processes, P = 1..8 with zero-size
// data, against a serial reference. Floating-point results under
// plait::ordered equal the serial left fold bit for bit, on data whose other
// orders differ; every rank's all_reduce result is the same bits, NaNs and
// signed zeros included; a reduction that does not commute gets rank order.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "support/algorithm_lists.hpp"
#include "support/deny_vm_readv.hpp"
#include "support/harness.hpp"
#include "support/order_sensitive.hpp"
#include "support/throwing_reduction.hpp"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

using plait_test::mode;

namespace {

using any_all_reduce = plait::op::all_reduce<>;
using any_reduce_scatter = plait::op::reduce_scatter<>;

/// Rank r's contribution to element i: negative, large and small values, so
/// that sums overflow (and must wrap) and min/max/bitwise results vary.
std::int32_t contribution(int rank, std::size_t i, int salt) {
  const auto x = static_cast<std::uint32_t>(rank + 1) * 2654435761u + static_cast<std::uint32_t>(i) * 40503u +
                 static_cast<std::uint32_t>(salt) * 977u;
  return static_cast<std::int32_t>(x);
}

template <class Reduction>
std::int32_t serial(const Reduction& reduction, int ranks, std::size_t i, int salt) {
  std::int32_t acc = contribution(0, i, salt);
  for (int r = 1; r < ranks; ++r) acc = reduction(acc, contribution(r, i, salt));
  return acc;
}

template <class Reduction>
std::string check_result(const std::vector<std::int32_t>& got, const Reduction& reduction, int ranks, std::size_t first,
                         int salt, std::string_view what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const std::int32_t want = serial(reduction, ranks, first + i, salt);
    if (got[i] != want) {
      return std::string(what) + ": element " + std::to_string(first + i) + " is " + std::to_string(got[i]) +
             ", want " + std::to_string(want);
    }
  }
  return {};
}

/// all_reduce and reduce_scatter with one algorithm and reduction: blocking
/// out of place, and with `all_forms` also in place, nonblocking and
/// persistent (the forms share one engine whatever the reduction, so one
/// reduction sweeps them; every form of every reduction doubled this file's
/// compile time for no path the sweep did not already take).
template <class Algorithm, bool all_forms, class Reduction>
std::string every_form(plait::shm::communicator& comm, std::size_t block, const Reduction& reduction) {
  const int p = comm.size();
  const std::size_t n = block * static_cast<std::size_t>(p);
  const auto fill = [&](std::vector<std::int32_t>& v, int salt) {
    v.resize(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = contribution(comm.rank(), i, salt);
  };
  std::vector<std::int32_t> send;
  std::vector<std::int32_t> recv(n, -7);
  std::vector<std::int32_t> part(block, -7);
  std::string verdict;
  const auto note = [&](std::string v) {
    if (verdict.empty()) verdict = std::move(v);
  };
  const std::size_t mine = static_cast<std::size_t>(comm.rank()) * block;
  const auto my_block = [&](const std::vector<std::int32_t>& v) {
    return std::vector<std::int32_t>(v.begin() + static_cast<std::ptrdiff_t>(mine),
                                     v.begin() + static_cast<std::ptrdiff_t>(mine + block));
  };

  if constexpr (plait_test::has_schedule<Algorithm, any_all_reduce>) {
    fill(send, 1);
    plait::all_reduce<Algorithm>(comm, send, recv, reduction);
    note(check_result(recv, reduction, p, 0, 1, "all_reduce"));
  }
  if constexpr (all_forms && plait_test::has_schedule<Algorithm, any_all_reduce>) {
    std::vector<std::int32_t> buffer;
    fill(buffer, 2);
    plait::all_reduce<Algorithm>(comm, plait::in_place, buffer, reduction);
    note(check_result(buffer, reduction, p, 0, 2, "in-place all_reduce"));
    fill(send, 3);
    auto request = plait::iall_reduce<Algorithm>(comm, send, recv, reduction);
    request.wait();
    note(check_result(recv, reduction, p, 0, 3, "iall_reduce"));
    auto persistent = plait::all_reduce_init<Algorithm>(comm, send, recv, reduction);
    for (int salt : {4, 5}) {  // the contents at each start are what counts
      fill(send, salt);
      persistent.start();
      persistent.wait();
      note(check_result(recv, reduction, p, 0, salt, "all_reduce_init"));
    }
  }
  if constexpr (plait_test::has_schedule<Algorithm, any_reduce_scatter>) {
    fill(send, 6);
    plait::reduce_scatter<Algorithm>(comm, send, part, reduction);
    note(check_result(part, reduction, p, mine, 6, "reduce_scatter"));
  }
  if constexpr (all_forms && plait_test::has_schedule<Algorithm, any_reduce_scatter>) {
    std::vector<std::int32_t> buffer;
    fill(buffer, 7);
    plait::reduce_scatter<Algorithm>(comm, plait::in_place, buffer, reduction);
    note(check_result(my_block(buffer), reduction, p, mine, 7, "in-place reduce_scatter"));
    fill(send, 8);
    auto request = plait::ireduce_scatter<Algorithm>(comm, send, part, reduction);
    request.wait();
    note(check_result(part, reduction, p, mine, 8, "ireduce_scatter"));
    auto persistent = plait::reduce_scatter_init<Algorithm>(comm, send, part, reduction);
    for (int salt : {9, 10}) {
      fill(send, salt);
      persistent.start();
      persistent.wait();
      note(check_result(part, reduction, p, mine, salt, "reduce_scatter_init"));
    }
  }
  return verdict;
}

using plait_test::float_contribution;
using plait_test::left_fold;
using plait_test::matrix;
using plait_test::matrix_of;
using plait_test::right_fold;
using plait_test::times;

using order_keeping = std::tuple<plait::tree, plait::recursive_doubling, plait::direct, plait::chain,
                                 plait::recursive_halving, plait::automatic>;
using ordered_algorithms = std::tuple<plait::direct, plait::chain, plait::automatic>;

}  // namespace

TEMPLATE_LIST_TEST_CASE("integer reductions equal a serial reference for every algorithm and P, the sum in every form",
                        "[reduce]", plait_test::algorithms_for<any_all_reduce>) {
  using Algorithm = TestType;
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 4, 5, 6, 7, 8);
  const std::size_t block = GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{257});
  CAPTURE(plait_test::to_string(m), ranks, block);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) {
    std::string v = every_form<Algorithm, true>(comm, block, plait::sum{});
    if (v.empty()) v = every_form<Algorithm, false>(comm, block, plait::max{});
    if (v.empty() && block < 10) {
      v = every_form<Algorithm, false>(comm, block, plait::prod{});
      if (v.empty()) v = every_form<Algorithm, false>(comm, block, plait::min{});
      if (v.empty()) v = every_form<Algorithm, false>(comm, block, plait::bit_xor{});
      if (v.empty()) v = every_form<Algorithm, false>(comm, block, plait::bit_and{});
      if (v.empty()) v = every_form<Algorithm, false>(comm, block, plait::logical_or{});
    }
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("the reductions' schedules pass verify for every algorithm, order and P", "[reduce][verify]") {
  using order = plait::op::fold_order;
  for (int p = 1; p <= 12; ++p) {
    CAPTURE(p);
    CHECK(plait::verify_report<plait::ring, plait::op::all_reduce<order::any>>(p) == "");
    CHECK(plait::verify_report<plait::ring, plait::op::reduce_scatter<order::any>>(p) == "");
    CHECK(plait::verify_report<plait::tree, plait::op::all_reduce<order::rank>>(p) == "");
    CHECK(plait::verify_report<plait::tree, plait::op::reduce_scatter<order::rank>>(p) == "");
    CHECK(plait::verify_report<plait::recursive_doubling, plait::op::all_reduce<order::rank>>(p) == "");
    CHECK(plait::verify_report<plait::direct, plait::op::all_reduce<order::left>>(p) == "");
    CHECK(plait::verify_report<plait::direct, plait::op::reduce_scatter<order::left>>(p) == "");
    CHECK(plait::verify_report<plait::chain, plait::op::all_reduce<order::left>>(p) == "");
    CHECK(plait::verify_report<plait::chain, plait::op::reduce_scatter<order::left>>(p) == "");
    CHECK(plait::verify_report<plait::recursive_halving, plait::op::all_reduce<order::any>>(p) == "");
    CHECK(plait::verify_report<plait::recursive_halving, plait::op::all_reduce<order::rank>>(p) == "");
    CHECK(plait::verify_report<plait::recursive_halving, plait::op::reduce_scatter<order::any>>(p) == "");
    CHECK(plait::verify_report<plait::recursive_halving, plait::op::reduce_scatter<order::rank>>(p) == "");
  }
  STATIC_REQUIRE(plait::verify<plait::chain, plait::op::all_reduce<order::left>>(5));
  STATIC_REQUIRE(plait::verify<plait::direct, plait::op::reduce_scatter<order::left>>(4));
}

namespace {
/// Blocks a rank's schedule sends (own contributions folded in move nothing).
int blocks_sent(const plait::schedule& s) {
  int blocks = 0;
  for (const plait::step& st : s.steps) {
    for (const plait::transfer& t : st.sends) blocks += static_cast<int>(t.blocks.size());
  }
  return blocks;
}

/// What verify finds wrong with each registered algorithm's schedules for
/// Op on `p` ranks, one line each (empty when all pass).
template <class Op>
std::string verify_every_registered(int p) {
  std::string found;
  [&]<class... A>(plait::works_with<A...>) {
    ((found += plait::verify_report<A, Op>(p).empty()
                   ? ""
                   : std::string(A::name) + ": " + plait::verify_report<A, Op>(p) + "\n"),
     ...);
  }(plait::built_in_algorithms_for<Op>{});
  return found;
}
}  // namespace

TEST_CASE("the reductions' schedules take the documented steps and send the documented blocks",
          "[reduce][verify][cost]") {
  using order = plait::op::fold_order;
  for (int p = 1; p <= 9; ++p) {
    CAPTURE(p);
    CHECK(verify_every_registered<plait::op::all_reduce<order::any>>(p) == "");
    CHECK(verify_every_registered<plait::op::all_reduce<order::rank>>(p) == "");
    CHECK(verify_every_registered<plait::op::all_reduce<order::left>>(p) == "");
    CHECK(verify_every_registered<plait::op::reduce_scatter<order::any>>(p) == "");
    CHECK(verify_every_registered<plait::op::reduce_scatter<order::rank>>(p) == "");
    CHECK(verify_every_registered<plait::op::reduce_scatter<order::left>>(p) == "");
    for (int r = 0; r < p; ++r) {
      CAPTURE(r);
      // ring: P-1 steps of one block each way (reduce-scatter), twice that for all-reduce.
      const auto ring_rs = plait::ring::plan(plait::op::reduce_scatter<>{}, r, p);
      CHECK(ring_rs.steps.size() == static_cast<std::size_t>(p - 1));
      CHECK(blocks_sent(ring_rs) == p - 1);
      CHECK(blocks_sent(plait::ring::plan(plait::op::all_reduce<>{}, r, p)) == 2 * (p - 1));
      // direct: one step of P-1 blocks (reduce-scatter); then P-1 more (all-reduce).
      CHECK(blocks_sent(plait::direct::plan(plait::op::reduce_scatter<order::left>{}, r, p)) == p - 1);
      CHECK(blocks_sent(plait::direct::plan(plait::op::all_reduce<order::left>{}, r, p)) == 2 * (p - 1));
      // chain: every rank but the last passes all P blocks on; the last sends each
      // result to its owner (reduce-scatter) or to every other rank (all-reduce).
      const int last = p - 1;
      CHECK(blocks_sent(plait::chain::plan(plait::op::reduce_scatter<order::left>{}, r, p)) == (r < last ? p : p - 1));
      CHECK(blocks_sent(plait::chain::plan(plait::op::all_reduce<order::left>{}, r, p)) ==
            (r < last ? p : (p - 1) * p));
    }
  }
  // recursive doubling on a power of two: lg P steps, each swapping all P blocks.
  const auto rd = plait::recursive_doubling::plan(plait::op::all_reduce<>{}, 3, 8);
  CHECK(rd.steps.size() == 3);
  CHECK(blocks_sent(rd) == 3 * 8);
  // recursive halving: lg P steps and P-1 blocks (reduce-scatter), twice both
  // (all-reduce), in either order; for other P one more block on the extra
  // ranks (2i+1, i < P - p2), which send their every contribution to 2i.
  for (int p = 1; p <= 12; ++p) {
    int p2 = 1;
    int lg = 0;
    while (p2 * 2 <= p) {
      p2 *= 2;
      ++lg;
    }
    for (int r = 0; r < p; ++r) {
      CAPTURE(p, r);
      const bool extra = r < 2 * (p - p2) && r % 2 == 1;
      const bool host = r < 2 * (p - p2) && r % 2 == 0;
      for (const auto& rs : {plait::recursive_halving::plan(plait::op::reduce_scatter<order::any>{}, r, p),
                             plait::recursive_halving::plan(plait::op::reduce_scatter<order::rank>{}, r, p)}) {
        CHECK(blocks_sent(rs) == (extra ? p : p - 1));
        CHECK(rs.steps.size() == static_cast<std::size_t>(extra ? 2 : host ? lg + 2 : lg));
      }
      const auto ar = plait::recursive_halving::plan(plait::op::all_reduce<order::any>{}, r, p);
      CHECK(ar.steps.size() == static_cast<std::size_t>(extra ? 2 : host ? 2 * lg + 2 : 2 * lg));
      if (p == p2) CHECK(blocks_sent(ar) == 2 * (p - 1));
    }
  }
  // P = 8, commutative: distances 4, 2, 1, every half a run of blocks; rank
  // order: distances 1, 2, 4, halves that interleave. One block per message.
  const auto halves = plait::recursive_halving::plan(plait::op::reduce_scatter<order::any>{}, 5, 8);
  REQUIRE(halves.steps.size() == 3);
  CHECK(halves.steps[0].sends == std::vector<plait::transfer>{{1, {0}}, {1, {1}}, {1, {2}}, {1, {3}}});
  CHECK(halves.steps[1].sends == std::vector<plait::transfer>{{7, {6}}, {7, {7}}});
  CHECK(halves.steps[2].recvs == std::vector<plait::transfer>{{4, {5}, plait::fold::from_left}});
  const auto interleaved = plait::recursive_halving::plan(plait::op::reduce_scatter<order::rank>{}, 5, 8);
  REQUIRE(interleaved.steps.size() == 3);
  CHECK(interleaved.steps[0].sends == std::vector<plait::transfer>{{4, {0}}, {4, {2}}, {4, {4}}, {4, {6}}});
  CHECK(interleaved.steps[0].recvs[0] == plait::transfer{4, {1}, plait::fold::from_left});
  CHECK(interleaved.steps[2].recvs == std::vector<plait::transfer>{{1, {5}, plait::fold::from_left}});
}

namespace {
/// The default parameters, and every built-in a candidate.
struct every_built_in {
  static constexpr plait::cost_model cost_model() { return plait::default_cost_model; }
  static constexpr bool allows(plait::algorithm_id) { return true; }
};
/// The default parameters, recursive_halving the only candidate.
struct only_halving {
  static constexpr plait::cost_model cost_model() { return plait::default_cost_model; }
  static constexpr bool allows(plait::algorithm_id id) { return id == plait::algorithm_id::recursive_halving; }
};
}  // namespace

TEST_CASE("automatic leaves recursive_halving to tunings that allow it, which run it by the model",
          "[reduce][automatic]") {
  using order = plait::op::fold_order;
  using halving_id = std::integral_constant<plait::algorithm_id, plait::algorithm_id::recursive_halving>;
  for (int p = 1; p <= 16; ++p) {
    for (std::size_t n = 64; n <= (std::size_t{4} << 20); n *= 4) {
      CAPTURE(p, n);
      CHECK(plait::explain<plait::op::all_reduce<order::any>>(p, n).id != halving_id::value);
      CHECK(plait::explain<plait::op::all_reduce<order::rank>>(p, n).id != halving_id::value);
      CHECK(plait::explain<plait::op::reduce_scatter<order::any>>(p, n).id != halving_id::value);
      CHECK(plait::explain<plait::op::reduce_scatter<order::rank>>(p, n).id != halving_id::value);
    }
  }
  // Under the same model with every built-in allowed it wins where it saves steps.
  CHECK(plait::explain<plait::op::reduce_scatter<>, plait::automatic_with<every_built_in>>(16, 16 << 10).id ==
        halving_id::value);
  CHECK(plait::explain<plait::op::all_reduce<order::rank>, plait::automatic_with<every_built_in>>(8, 1 << 20).id ==
        halving_id::value);
  const int ranks = GENERATE(3, 4);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) {
    std::vector<std::int32_t> send(5 * static_cast<std::size_t>(ranks), comm.rank() + 1);
    std::vector<std::int32_t> recv(send.size());
    plait::all_reduce<plait::automatic_with<only_halving>>(comm, send, recv, plait::sum{});
    for (std::int32_t x : recv) {
      if (x != ranks * (ranks + 1) / 2) return std::string("automatic_with<only_halving>: wrong sum");
    }
    return std::string{};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {
/// ring's reduce-scatter schedule offered for an order it cannot keep, and
/// tree's all-reduce for the exact left fold: verify must refuse both.
struct ring_claiming_rank_order {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::reduce_scatter<plait::op::fold_order::rank>, int rank, int size) {
    return plait::ring::plan(plait::op::reduce_scatter<>{}, rank, size);
  }
};
struct tree_claiming_left_fold {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_reduce<plait::op::fold_order::left>, int rank, int size) {
    return plait::tree::plan(plait::op::all_reduce<plait::op::fold_order::rank>{}, rank, size);
  }
};
/// direct's reduce-scatter without the rank's own contribution.
struct forgets_its_own {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::reduce_scatter<>, int rank, int size) {
    plait::schedule s = plait::direct::plan(plait::op::reduce_scatter<>{}, rank, size);
    for (plait::step& st : s.steps)
      std::erase_if(st.recvs, [](const plait::transfer& t) { return t.peer == plait::own_contribution; });
    return s;
  }
};
/// recursive halving's commutative schedule (distances P/2 first) offered
/// for rank order: its partials cover r, r + P/2, ..., so verify must refuse it.
struct halving_claiming_rank_order {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_reduce<plait::op::fold_order::rank>, int rank, int size) {
    return plait::recursive_halving::plan(plait::op::all_reduce<>{}, rank, size);
  }
};
/// recursive doubling whose partners disagree on which partial goes left.
struct partners_disagree {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_reduce<>, int rank, int size) {
    plait::schedule s = plait::recursive_doubling::plan(plait::op::all_reduce<>{}, rank, size);
    for (plait::step& st : s.steps) {
      for (plait::transfer& t : st.recvs) t.arrival = plait::fold::from_left;
    }
    return s;
  }
};
}  // namespace

TEST_CASE("verify refuses reduction schedules that lose order, contributions or agreement", "[reduce][verify]") {
  using order = plait::op::fold_order;
  CHECK(plait::verify_detailed<ring_claiming_rank_order, plait::op::reduce_scatter<order::rank>>(4).fault ==
        plait::verify_fault::out_of_order);
  CHECK(plait::verify_detailed<tree_claiming_left_fold, plait::op::all_reduce<order::left>>(4).fault ==
        plait::verify_fault::not_left_fold);
  CHECK(plait::verify_detailed<halving_claiming_rank_order, plait::op::all_reduce<order::rank>>(4).fault ==
        plait::verify_fault::out_of_order);
  CHECK(plait::verify_detailed<forgets_its_own, plait::op::reduce_scatter<>>(3).fault ==
        plait::verify_fault::wrong_contributions);
  CHECK(plait::verify_detailed<partners_disagree, plait::op::all_reduce<>>(4).fault ==
        plait::verify_fault::divergent_result);
  CHECK(plait::verify_report<partners_disagree, plait::op::all_reduce<>>(4).find("in different ways") !=
        std::string::npos);
}

TEMPLATE_LIST_TEST_CASE("ordered float sums equal the serial left fold bit for bit", "[reduce][ordered]",
                        ordered_algorithms) {
  using Algorithm = TestType;
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(3, 5, 8);  // two operands commute: orders differ from three on
  const std::size_t block = 33;
  CAPTURE(plait_test::to_string(m), ranks);
  // The test can fail: on this data another order gives other bits.
  bool orders_differ = false;
  for (std::size_t i = 0; i < block * static_cast<std::size_t>(ranks); ++i) {
    orders_differ = orders_differ || std::bit_cast<std::uint32_t>(left_fold(ranks, i)) !=
                                         std::bit_cast<std::uint32_t>(right_fold(ranks, i));
  }
  REQUIRE(orders_differ);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) -> std::string {
    const std::size_t n = block * static_cast<std::size_t>(ranks);
    std::vector<float> send(n);
    std::vector<float> recv(n);
    std::vector<float> part(block);
    for (std::size_t i = 0; i < n; ++i) send[i] = float_contribution(comm.rank(), i);
    plait::all_reduce<Algorithm>(comm, send, recv, plait::ordered<plait::sum>{});
    for (std::size_t i = 0; i < n; ++i) {
      if (std::bit_cast<std::uint32_t>(recv[i]) != std::bit_cast<std::uint32_t>(left_fold(ranks, i))) {
        return "all_reduce element " + std::to_string(i) + " is not the left fold";
      }
    }
    auto persistent = plait::reduce_scatter_init<Algorithm>(comm, send, part, plait::ordered<plait::sum>{});
    persistent.start();
    persistent.wait();
    const std::size_t mine = static_cast<std::size_t>(comm.rank()) * block;
    for (std::size_t i = 0; i < block; ++i) {
      if (std::bit_cast<std::uint32_t>(part[i]) != std::bit_cast<std::uint32_t>(left_fold(ranks, mine + i))) {
        return "reduce_scatter element " + std::to_string(mine + i) + " is not the left fold";
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("every rank's all_reduce result is the same bits, NaNs and signed zeros included",
                        "[reduce][bits]", plait_test::algorithms_for<any_all_reduce>) {
  using Algorithm = TestType;
  const int ranks = GENERATE(2, 3, 4, 6, 7);
  CAPTURE(ranks);
  const std::size_t n = 64;
  std::vector<std::vector<std::uint32_t>> sums(static_cast<std::size_t>(ranks));
  std::vector<std::vector<std::uint32_t>> maxima(static_cast<std::size_t>(ranks));
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) {
    std::vector<float> send(n);
    for (std::size_t i = 0; i < n; ++i) {
      float x = float_contribution(comm.rank(), i);
      if (i % 7 == 3 && comm.rank() == 1) x = std::numeric_limits<float>::quiet_NaN();
      // Partials holding NaNs of different payloads meet (ranks 0 and 2: in
      // recursive doubling's second step, where each partner combines into
      // its own partial, one on the left and one on the right): a combine that
      // keeps the payload of whichever operand the compiled loop puts first
      // would leave the partners with different bits.
      if (i % 9 == 4 && (comm.rank() == 0 || comm.rank() == 2)) {
        x = std::bit_cast<float>(comm.rank() == 0 ? std::uint32_t{0x7fc00000u} : std::uint32_t{0xffc00005u});
      }
      if (i % 5 == 1) x = comm.rank() % 2 == 0 ? 0.0f : -0.0f;
      send[i] = x;
    }
    std::vector<float> recv(n);
    plait::all_reduce<Algorithm>(comm, send, recv, plait::sum{});
    for (float x : recv) sums[static_cast<std::size_t>(comm.rank())].push_back(std::bit_cast<std::uint32_t>(x));
    plait::all_reduce<Algorithm>(comm, send, recv, plait::max{});
    for (float x : recv) maxima[static_cast<std::size_t>(comm.rank())].push_back(std::bit_cast<std::uint32_t>(x));
    return std::string{};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  for (int r = 1; r < ranks; ++r) {
    CAPTURE(r);
    CHECK(sums[static_cast<std::size_t>(r)] == sums[0]);
    CHECK(maxima[static_cast<std::size_t>(r)] == maxima[0]);
  }
}

TEMPLATE_LIST_TEST_CASE("a reduction that does not commute is combined in rank order", "[reduce][order]",
                        order_keeping) {
  using Algorithm = TestType;
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto product =
      plait::reduction([](const matrix& a, const matrix& b) { return times(a, b); }, plait::associative);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) -> std::string {
    const std::size_t block = 5;
    const std::size_t n = block * static_cast<std::size_t>(ranks);
    std::vector<matrix> send(n);
    std::vector<matrix> recv(n);
    std::vector<matrix> part(block);
    for (std::size_t i = 0; i < n; ++i) send[i] = matrix_of(comm.rank(), i);
    const auto want = [&](std::size_t i) {
      matrix acc = matrix_of(0, i);
      for (int r = 1; r < ranks; ++r) acc = times(acc, matrix_of(r, i));
      return acc;
    };
    plait::all_reduce<Algorithm>(comm, send, recv, product);
    for (std::size_t i = 0; i < n; ++i) {
      if (!(recv[i] == want(i))) return "all_reduce element " + std::to_string(i) + " is out of rank order";
    }
    if constexpr (plait_test::has_schedule<Algorithm, plait::op::reduce_scatter<plait::op::fold_order::rank>>) {
      plait::reduce_scatter<Algorithm>(comm, send, part, product);
      const std::size_t mine = static_cast<std::size_t>(comm.rank()) * block;
      for (std::size_t i = 0; i < block; ++i) {
        if (!(part[i] == want(mine + i))) return "reduce_scatter element is out of rank order";
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

/// Bytes of one element, as a run-time reduction's caller moves them.
template <std::size_t N>
struct raw_element {
  std::array<std::byte, N> bytes;
};

TEST_CASE("a reduction carried as its kernel combines as the reduction it was made from and in its order",
          "[reduce][kernel_reduction]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  // max on int32 (a kernel that compared unsigned, or summed, would differ) and a
  // product that does not commute (rank order), both on elements that are only bytes.
  const auto max_kernel = plait::detail::kernel_reduction_for<std::int32_t>(plait::max{});
  const auto product =
      plait::reduction([](const matrix& a, const matrix& b) { return times(a, b); }, plait::associative);
  const auto product_kernel = plait::detail::kernel_reduction_for<matrix>(product);
  static_assert(plait::is_commutative_v<decltype(max_kernel)> && !plait::is_commutative_v<decltype(product_kernel)>);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) -> std::string {
    const std::size_t block = 3;
    const std::size_t n = block * static_cast<std::size_t>(ranks);
    const auto value = [](int rank, std::size_t i) {
      return static_cast<std::int32_t>((rank * 37 + static_cast<int>(i) * 11) % 23) - 11;
    };
    std::vector<raw_element<4>> ints(n);
    std::vector<raw_element<4>> ints_out(n);
    std::vector<raw_element<16>> matrices(n);
    std::vector<raw_element<16>> matrices_out(n);
    std::vector<raw_element<16>> part(block);
    for (std::size_t i = 0; i < n; ++i) {
      ints[i] = std::bit_cast<raw_element<4>>(value(comm.rank(), i));
      matrices[i] = std::bit_cast<raw_element<16>>(matrix_of(comm.rank(), i));
    }
    plait::all_reduce(comm, ints, ints_out, max_kernel);
    plait::all_reduce<plait::tree>(comm, matrices, matrices_out, product_kernel);
    plait::reduce_scatter(comm, matrices, part, product_kernel);
    for (std::size_t i = 0; i < n; ++i) {
      std::int32_t most = value(0, i);
      matrix folded = matrix_of(0, i);
      for (int r = 1; r < ranks; ++r) {
        most = std::max(most, value(r, i));
        folded = times(folded, matrix_of(r, i));
      }
      if (std::bit_cast<std::int32_t>(ints_out[i]) != most) return "max element " + std::to_string(i) + " differs";
      if (!(std::bit_cast<matrix>(matrices_out[i]) == folded)) {
        return "all_reduce element " + std::to_string(i) + " is out of rank order";
      }
      const std::size_t mine = static_cast<std::size_t>(comm.rank()) * block;
      if (i >= mine && i < mine + block && !(std::bit_cast<matrix>(part[i - mine]) == folded)) {
        return "reduce_scatter element " + std::to_string(i) + " is out of rank order";
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  // The kernel is the original's, its name and element code included (what a call's stamp compares).
  const plait::detail::reduction_kernel kernel = plait::detail::kernel_for<raw_element<4>>(max_kernel);
  CHECK(kernel.name == "max");
  CHECK(kernel.element == plait::detail::kernel_for<std::int32_t>(plait::max{}).element);
  CHECK(kernel.combine == plait::detail::kernel_for<std::int32_t>(plait::max{}).combine);
}

TEST_CASE("premul_sum scales each input and avg divides the sum by P", "[reduce]") {
  const int ranks = GENERATE(1, 3, 4);
  CAPTURE(ranks);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) {
    const std::size_t n = 12;
    std::vector<double> send(n);
    std::vector<double> recv(n);
    for (std::size_t i = 0; i < n; ++i) send[i] = static_cast<double>((comm.rank() + 1) * 4) + static_cast<double>(i);
    double total = 0;
    for (int r = 0; r < ranks; ++r) total += static_cast<double>((r + 1) * 4);
    plait::all_reduce<plait::ring>(comm, send, recv, plait::premul_sum(0.5));
    for (std::size_t i = 0; i < n; ++i) {
      if (recv[i] != 0.5 * (total + static_cast<double>(ranks) * static_cast<double>(i))) return std::string("premul");
    }
    // A temporary reduction given to a nonblocking call: the call keeps its own copy.
    auto request = plait::iall_reduce<plait::direct>(comm, send, recv, plait::premul_sum(0.25));
    request.wait();
    for (std::size_t i = 0; i < n; ++i) {
      if (recv[i] != 0.25 * (total + static_cast<double>(ranks) * static_cast<double>(i))) {
        return std::string("nonblocking premul");
      }
    }
    std::vector<double> part(4);
    std::vector<double> blocks(4 * static_cast<std::size_t>(ranks), static_cast<double>(comm.rank() * 2));
    plait::reduce_scatter<plait::chain>(comm, blocks, part, plait::avg{});
    for (double x : part) {
      if (x != static_cast<double>(ranks - 1)) return std::string("avg: ") + std::to_string(x);
    }
    return std::string{};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("reductions refuse buffers of the wrong size before any byte moves", "[reduce][bad_input]") {
  const int ranks = 3;
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) {
    std::vector<int> send(6, 1);
    std::vector<int> short_recv(5, -1);
    std::string v;
    try {
      plait::all_reduce<plait::ring>(comm, send, short_recv, plait::sum{});
      v = "all_reduce accepted a short recv";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) v = std::string("all_reduce: ") + e.what();
    }
    if (short_recv != std::vector<int>(5, -1)) v = "recv was written";
    std::vector<int> part(3, -1);  // 6 elements are 3 ranks x 2, not x 3
    try {
      plait::reduce_scatter<plait::direct>(comm, send, part, plait::sum{});
      v = "reduce_scatter accepted a wrong recv";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) v = std::string("reduce_scatter: ") + e.what();
      if (std::string(e.what()).find("reduce_scatter") == std::string::npos) v = "the error does not name the call";
    }
    if (part != std::vector<int>(3, -1)) v = "recv was written";
    try {
      plait::all_reduce<plait::ring>(comm, send, send, plait::sum{});
      v = "all_reduce accepted send == recv without in_place";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) v = std::string("overlap: ") + e.what();
    }
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("reduce_scatter_v combines parts of every size, zeros included, in every form",
                        "[reduce][uneven]", plait_test::algorithms_for<any_reduce_scatter>) {
  using Algorithm = TestType;
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) -> std::string {
    std::vector<long> counts(static_cast<std::size_t>(ranks));
    std::vector<std::size_t> first(static_cast<std::size_t>(ranks) + 1, 0);
    for (int r = 0; r < ranks; ++r) {
      counts[static_cast<std::size_t>(r)] = (r * 5) % 4;  // 0, 1, 2, 3, 0, ...
      first[static_cast<std::size_t>(r) + 1] =
          first[static_cast<std::size_t>(r)] + static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
    }
    const std::size_t total = first.back();
    const std::size_t mine = first[static_cast<std::size_t>(comm.rank())];
    std::vector<std::int32_t> send(total);
    std::vector<std::int32_t> part(static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]), -7);
    const auto fill = [&](std::vector<std::int32_t>& v, int salt) {
      v.resize(total);
      for (std::size_t i = 0; i < total; ++i) v[i] = contribution(comm.rank(), i, salt);
    };
    std::string verdict;
    const auto note = [&](std::string v) {
      if (verdict.empty()) verdict = std::move(v);
    };
    fill(send, 1);
    plait::reduce_scatter_v<Algorithm>(comm, send, part, counts, plait::sum{});
    note(check_result(part, plait::sum{}, ranks, mine, 1, "reduce_scatter_v"));
    std::vector<std::int32_t> buffer;
    fill(buffer, 2);
    plait::reduce_scatter_v<Algorithm>(comm, plait::in_place, buffer, counts, plait::bit_xor{});
    const std::vector<std::int32_t> own(buffer.begin() + static_cast<std::ptrdiff_t>(mine),
                                        buffer.begin() + static_cast<std::ptrdiff_t>(mine + part.size()));
    note(check_result(own, plait::bit_xor{}, ranks, mine, 2, "in-place reduce_scatter_v"));
    fill(send, 3);
    auto request = plait::ireduce_scatter_v<Algorithm>(comm, send, part, counts, plait::max{});
    request.wait();
    note(check_result(part, plait::max{}, ranks, mine, 3, "ireduce_scatter_v"));
    auto persistent = plait::reduce_scatter_v_init<Algorithm>(comm, send, part, counts, plait::sum{});
    for (int salt : {4, 5}) {
      fill(send, salt);
      persistent.start();
      persistent.wait();
      note(check_result(part, plait::sum{}, ranks, mine, salt, "reduce_scatter_v_init"));
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("a bundle of tensors of several types is all-reduced in one call, in every form",
                        "[reduce][bundle]", plait_test::algorithms_for<any_all_reduce>) {
  using Algorithm = TestType;
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) -> std::string {
    // A DDP bucket: gradients of three layers, two types, one of them empty.
    const double r = comm.rank();
    std::vector<float> weights(37, static_cast<float>(r + 1));
    std::vector<double> biases(5, r * 0.5);
    std::vector<float> unused;
    std::vector<float> weights_sum(weights.size());
    std::vector<double> biases_sum(biases.size());
    std::vector<float> unused_sum;
    const double p = ranks;
    const auto check = [&](double scale, const char* form) -> std::string {
      for (float x : weights_sum) {
        if (x != static_cast<float>(scale * p * (p + 1) / 2)) return std::string(form) + ": weights";
      }
      for (double x : biases_sum) {
        if (x != scale * 0.5 * p * (p - 1) / 2) return std::string(form) + ": biases";
      }
      return {};
    };
    plait::all_reduce<Algorithm>(comm, plait::bundle(weights, biases, unused),
                                 plait::bundle(weights_sum, biases_sum, unused_sum), plait::sum{});
    if (auto v = check(1, "all_reduce"); !v.empty()) return v;
    auto request =
        plait::iall_reduce<Algorithm>(comm, plait::bundle(weights, biases, unused),
                                      plait::bundle(weights_sum, biases_sum, unused_sum), plait::premul_sum(2.0));
    request.wait();
    if (auto v = check(2, "iall_reduce with premul_sum"); !v.empty()) return v;
    auto persistent = plait::all_reduce_init<Algorithm>(
        comm, plait::bundle(weights, biases, unused), plait::bundle(weights_sum, biases_sum, unused_sum), plait::sum{});
    persistent.start();
    persistent.wait();
    return check(1, "all_reduce_init");
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a bundle of reduce_scatter_v parts shares one counts array", "[reduce][bundle][uneven]") {
  const int ranks = GENERATE(2, 3, 4);
  CAPTURE(ranks);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) {
    std::vector<int> counts(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) counts[static_cast<std::size_t>(r)] = r + 1;
    const std::size_t total = static_cast<std::size_t>(ranks * (ranks + 1) / 2);
    const auto part = static_cast<std::size_t>(comm.rank() + 1);
    std::vector<std::int64_t> a(total, comm.rank());
    std::vector<std::uint8_t> b(total, 1);
    std::vector<std::int64_t> a_part(part);
    std::vector<std::uint8_t> b_part(part);
    plait::reduce_scatter_v<plait::ring>(comm, plait::bundle(a, b), plait::bundle(a_part, b_part), counts,
                                         plait::sum{});
    for (std::int64_t x : a_part) {
      if (x != ranks * (ranks - 1) / 2) return std::string("int64 member");
    }
    for (std::uint8_t x : b_part) {
      if (x != ranks) return std::string("uint8 member");
    }
    return std::string{};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode catches ranks that reduce with different reductions or orders", "[reduce][check]") {
  const int ranks = 3;
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) {
    comm.set_check_mode(true);
    std::vector<float> send(6, 1.0f);
    std::vector<float> recv(6);
    std::string v;
    plait::all_reduce<plait::direct>(comm, send, recv, plait::sum{});  // agreeing ranks pass
    try {
      if (comm.rank() == 1) {
        plait::all_reduce<plait::direct>(comm, send, recv, plait::max{});
      } else {
        plait::all_reduce<plait::direct>(comm, send, recv, plait::sum{});
      }
      v = "sum and max were not told apart";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) v = std::string("different reductions: ") + e.what();
    }
    try {
      if (comm.rank() == 2) {
        plait::all_reduce<plait::direct>(comm, send, recv, plait::ordered<plait::sum>{});
      } else {
        plait::all_reduce<plait::direct>(comm, send, recv, plait::sum{});
      }
      v = "sum and ordered<sum> were not told apart";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) v = std::string("ordered: ") + e.what();
    }
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("16-bit floats accumulated in float round once, and their partials travel as floats", "[reduce][float16]") {
  const int ranks = 4;
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) {
    // 256 + 1 + 1 + 1: in bfloat16 every partial sum rounds back to 256;
    // in float the sum is 259, which rounds once to 260.
    const std::size_t n = 8 * ranks;
    const plait::bfloat16 mine(comm.rank() == 0 ? 256.0f : 1.0f);
    std::vector<plait::bfloat16> send(n, mine);
    std::vector<plait::bfloat16> recv(n);
    const std::uint64_t before = comm.bytes_sent();
    plait::all_reduce<plait::direct>(comm, send, recv, plait::ordered<plait::sum>{});
    const std::uint64_t narrow = comm.bytes_sent() - before;
    for (plait::bfloat16 x : recv) {
      if (x.bits() != plait::bfloat16(256.0f).bits()) return "bfloat16 sum: " + std::to_string(static_cast<float>(x));
    }
    const std::uint64_t middle = comm.bytes_sent();
    plait::all_reduce<plait::direct>(comm, send, recv, plait::ordered<plait::accumulate<float, plait::sum>>{});
    const std::uint64_t wide = comm.bytes_sent() - middle;
    for (plait::bfloat16 x : recv) {
      if (x.bits() != plait::bfloat16(259.0f).bits())
        return "float accumulation: " + std::to_string(static_cast<float>(x));
    }
    if (wide != 2 * narrow)
      return "float partials sent " + std::to_string(wide) + " bytes, bfloat16 " + std::to_string(narrow);
    std::vector<plait::half> halves(n, plait::half(comm.rank() == 0 ? 2048.0f : 1.0f));
    std::vector<plait::half> averaged(n);
    plait::all_reduce<plait::ring>(comm, halves, averaged, plait::accumulate<float, plait::avg>{});
    for (plait::half x : averaged) {
      if (x.bits() != plait::half(2051.0f / 4).bits())
        return "half avg in float: " + std::to_string(static_cast<float>(x));
    }
    return std::string{};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {
/// "" when `call`, whose ranks' stamps differ, fails naming all_reduce: the
/// rank that sees the other's stamp says size_mismatch; the other learns of
/// it as a peer that failed. `went_through` if the call returned.
template <class Call>
std::string stamp_conflict_verdict(Call&& call, const std::string& went_through) {
  try {
    call();
    return went_through;
  } catch (const plait::error& e) {
    if (e.code() != plait::errc::size_mismatch && e.code() != plait::errc::peer_lost) {
      return std::string("wrong error: ") + e.what();
    }
    if (std::string(e.what()).find("all_reduce") == std::string::npos) return "no call named: " + std::string(e.what());
  }
  return {};
}
}  // namespace

TEST_CASE("without check mode, the call stamps tell ranks that reduce differently apart", "[reduce][stamp]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = plait_test::run_ranks(m, 2, [&](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(std::chrono::seconds(5));
    std::vector<int> send(4, comm.rank() + 1);
    std::vector<int> recv(4, 0);
    return stamp_conflict_verdict(
        [&] {
          if (comm.rank() == 0) {
            plait::all_reduce<plait::direct>(comm, send, recv, plait::sum{});
          } else {
            plait::all_reduce<plait::direct>(comm, send, recv, plait::max{});
          }
        },
        "sum and max were combined with each other");
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a rank that changes its reduction, element type or algorithm after a matching call is still caught",
          "[reduce][stamp]") {
  // Each thread keeps its last reduction stamp (op/fold_collective.hpp):
  // here every rank first runs the same call, so the kept stamp is warm, and
  // then rank 0 alone changes one input of the stamp. A key the memo missed
  // would hand rank 0 the first call's stamp and combine unlike data.
  const mode m = GENERATE(mode::threads, mode::processes);
  const std::string change = GENERATE(as<std::string>{}, "reduction", "element type", "algorithm");
  CAPTURE(plait_test::to_string(m), change);
  const auto verdicts = plait_test::run_ranks(m, 2, [&](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(std::chrono::seconds(5));
    // Small calls run direct through the shared slots and ring through
    // messages, which never meet: the algorithm's case sends 64 KiB, which
    // both send as messages, where the stamps meet.
    const std::size_t n = change == "algorithm" ? 16384 : 4;
    std::vector<std::int32_t> send(n, comm.rank() + 1);
    std::vector<std::int32_t> recv(n, 0);
    plait::all_reduce<plait::direct>(comm, send, recv, plait::sum{});
    if (recv != std::vector<std::int32_t>(n, 3)) return "the matching call's sum is wrong";
    return stamp_conflict_verdict(
        [&] {
          if (comm.rank() == 1) {
            plait::all_reduce<plait::direct>(comm, send, recv, plait::sum{});
          } else if (change == "reduction") {
            plait::all_reduce<plait::direct>(comm, send, recv, plait::max{});
          } else if (change == "element type") {
            std::vector<float> send_float(n, 1.0F), recv_float(n, 0.0F);
            plait::all_reduce<plait::direct>(comm, send_float, recv_float, plait::sum{});
          } else {
            plait::all_reduce<plait::ring>(comm, send, recv, plait::sum{});
          }
        },
        "the changed call went through: " + change);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {
/// reduce_scatter along dimension D of a [2, 3, 4]-per-rank-block tensor
/// (the split dimension P times longer), out of place and in place.
template <class Algorithm, std::size_t D>
std::string reduce_scatter_along(plait::shm::communicator& comm) {
  const auto p = static_cast<std::size_t>(comm.size());
  std::array<std::size_t, 3> block{2, 3, 4};
  std::array<std::size_t, 3> whole = block;
  whole[D] *= p;
  const std::size_t n = whole[0] * whole[1] * whole[2];
  const auto at = [&](const std::array<std::size_t, 3>& e, std::size_t i, std::size_t j, std::size_t k) {
    return (i * e[1] + j) * e[2] + k;
  };
  const auto value = [](int rank, std::size_t i, std::size_t j, std::size_t k) {
    return static_cast<std::int64_t>(rank * 1000 + static_cast<int>(i * 100 + j * 10 + k));
  };
  std::vector<std::int64_t> send(n);
  for (std::size_t i = 0; i < whole[0]; ++i) {
    for (std::size_t j = 0; j < whole[1]; ++j) {
      for (std::size_t k = 0; k < whole[2]; ++k) send[at(whole, i, j, k)] = value(comm.rank(), i, j, k);
    }
  }
  std::vector<std::int64_t> recv(n / p, -1);
  plait::reduce_scatter<Algorithm, plait::along<D>>(comm, plait::tensor_view<const std::int64_t, 3>(send.data(), whole),
                                                    plait::tensor_view<std::int64_t, 3>(recv.data(), block),
                                                    plait::sum{});
  std::vector<std::int64_t> buffer = send;
  plait::reduce_scatter<Algorithm, plait::along<D>>(
      comm, plait::in_place, plait::tensor_view<std::int64_t, 3>(buffer.data(), whole), plait::sum{});
  for (std::size_t i = 0; i < block[0]; ++i) {
    for (std::size_t j = 0; j < block[1]; ++j) {
      for (std::size_t k = 0; k < block[2]; ++k) {
        std::array<std::size_t, 3> g{i, j, k};
        g[D] += static_cast<std::size_t>(comm.rank()) * block[D];
        std::int64_t want = 0;
        for (int r = 0; r < comm.size(); ++r) want += value(r, g[0], g[1], g[2]);
        if (recv[at(block, i, j, k)] != want) return "along<" + std::to_string(D) + ">: wrong element";
        if (buffer[at(whole, g[0], g[1], g[2])] != want) return "in-place along<" + std::to_string(D) + ">";
      }
    }
  }
  return {};
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("reduce_scatter along a tensor dimension gives each rank its slice combined",
                        "[reduce][layout]", plait_test::algorithms_for<any_reduce_scatter>) {
  using Algorithm = TestType;
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) {
    std::string v = reduce_scatter_along<Algorithm, 0>(comm);
    if (v.empty()) v = reduce_scatter_along<Algorithm, 1>(comm);
    if (v.empty()) v = reduce_scatter_along<Algorithm, 2>(comm);
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {
/// all_reduce along dimension D of a [7, 5] tensor whose send view takes
/// every other row of a [14, 5] buffer and whose recv view is column-major
/// (stride order reversed): 7 and 5 split unevenly over 2, 3 and 5 ranks,
/// and leave empty slabs on 8. Out of place, in place on a strided view
/// (the rows between must stay as they were), nonblocking and persistent.
template <class Algorithm, std::size_t D>
std::string all_reduce_along(plait::shm::communicator& comm) {
  constexpr std::size_t rows = 7;
  constexpr std::size_t cols = 5;
  const auto value = [](int rank, std::size_t i, std::size_t j) {
    return static_cast<std::int64_t>(rank * 1000 + static_cast<int>(i * 10 + j));
  };
  const auto want = [&](std::size_t i, std::size_t j) {
    std::int64_t sum = 0;
    for (int r = 0; r < comm.size(); ++r) sum += value(r, i, j);
    return sum;
  };
  const std::int64_t untouched = -7;
  std::vector<std::int64_t> padded(2 * rows * cols, untouched);  // rows 0, 2, 4, ... of [14, 5]
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) padded[2 * i * cols + j] = value(comm.rank(), i, j);
  }
  const std::array<std::size_t, 2> shape{rows, cols};
  const std::array<std::size_t, 2> every_other_row{2 * cols, 1};
  const std::array<std::size_t, 2> column_major{1, rows};
  const plait::tensor_view<const std::int64_t, 2> send(padded.data(), shape, every_other_row);
  const std::string name = "along<" + std::to_string(D) + ">";

  const auto recv_wrong = [&](const std::vector<std::int64_t>& out, const char* form) -> std::string {
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        if (out[j * rows + i] != want(i, j)) return name + " " + form + ": wrong element";
      }
    }
    return {};
  };
  std::vector<std::int64_t> out(rows * cols, -1);
  plait::all_reduce<Algorithm, plait::along<D>>(
      comm, send, plait::tensor_view<std::int64_t, 2>(out.data(), shape, column_major), plait::sum{});
  if (std::string v = recv_wrong(out, "out of place"); !v.empty()) return v;

  std::vector<std::int64_t> nonblocking(rows * cols, -1);
  plait::iall_reduce<Algorithm, plait::along<D>>(
      comm, send, plait::tensor_view<std::int64_t, 2>(nonblocking.data(), shape, column_major), plait::sum{})
      .wait();
  if (std::string v = recv_wrong(nonblocking, "nonblocking"); !v.empty()) return v;

  std::vector<std::int64_t> bound(rows * cols, -1);
  auto persistent = plait::all_reduce_init<Algorithm, plait::along<D>>(
      comm, send, plait::tensor_view<std::int64_t, 2>(bound.data(), shape, column_major), plait::sum{});
  for (int start = 0; start < 2; ++start) {
    std::fill(bound.begin(), bound.end(), -1);
    persistent.start();
    persistent.wait();
    if (std::string v = recv_wrong(bound, "persistent"); !v.empty()) return v;
  }

  std::vector<std::int64_t> buffer = padded;
  plait::all_reduce<Algorithm, plait::along<D>>(
      comm, plait::in_place, plait::tensor_view<std::int64_t, 2>(buffer.data(), shape, every_other_row), plait::sum{});
  for (std::size_t i = 0; i < 2 * rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const std::int64_t expected = i % 2 == 0 ? want(i / 2, j) : untouched;
      if (buffer[i * cols + j] != expected) return name + " in place: wrong element or a row between written";
    }
  }
  return {};
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("all_reduce along a tensor dimension combines strided views of one shape element by element",
                        "[reduce][layout]", plait_test::algorithms_for<any_all_reduce>) {
  using Algorithm = TestType;
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) {
    std::string v = all_reduce_along<Algorithm, 0>(comm);
    if (v.empty()) v = all_reduce_along<Algorithm, 1>(comm);
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("reductions on comm.allocate and plait::shm::allocator buffers equal those on plain vectors",
          "[reduce][allocate]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3, 4);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) -> std::string {
    const std::size_t block = 1000;
    const std::size_t n = block * static_cast<std::size_t>(ranks);
    auto send = comm.allocate<std::int32_t>(n);
    auto recv = comm.allocate<std::int32_t>(n);
    std::vector<std::int32_t, plait::shm::allocator<std::int32_t>> part(block,
                                                                        plait::shm::allocator<std::int32_t>{comm});
    for (std::size_t i = 0; i < n; ++i) send[i] = contribution(comm.rank(), i, 11);
    plait::all_reduce<plait::ring>(comm, send, recv, plait::sum{});
    std::string v = check_result(std::vector<std::int32_t>(recv.begin(), recv.end()), plait::sum{}, ranks, 0, 11,
                                 "all_reduce on allocate buffers");
    plait::reduce_scatter<plait::direct>(comm, send, part, plait::max{});
    if (v.empty()) {
      v = check_result(std::vector<std::int32_t>(part.begin(), part.end()), plait::max{}, ranks,
                       static_cast<std::size_t>(comm.rank()) * block, 11, "reduce_scatter into an allocator vector");
    }
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

#if defined(__x86_64__)
TEST_CASE("check mode refuses an ordered float reduction while the thread flushes subnormals", "[reduce][check]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [&](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    std::vector<float> send(4, 1.0f);
    std::vector<float> recv(4);
    const unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u);  // FTZ and DAZ, as -ffast-math's startup code sets them
    std::string v;
    try {
      plait::all_reduce<plait::direct>(comm, send, recv, plait::ordered<plait::sum>{});
      v = "ordered ran with FTZ/DAZ set";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument || std::string(e.what()).find("FTZ") == std::string::npos) {
        v = std::string("unclear: ") + e.what();
      }
    }
    _mm_setcsr(saved);
    plait::all_reduce<plait::direct>(comm, send, recv, plait::ordered<plait::sum>{});  // and runs once they are off
    if (v.empty() && recv != std::vector<float>(4, 2.0f)) v = "wrong sum after FTZ/DAZ were cleared";
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}
#endif

namespace {

/// all_reduce and reduce_scatter (ring) of `block` elements per rank: the
/// results against the serial sum, and whether arriving partials were
/// combined as they came (bytes_combined_on_receive) rather than staged.
std::string combined_as_they_arrive(plait::shm::communicator& comm, std::size_t block) {
  const int p = comm.size();
  const std::size_t n = block * static_cast<std::size_t>(p);
  std::vector<std::int32_t> send(n);
  for (std::size_t i = 0; i < n; ++i) send[i] = contribution(comm.rank(), i, 5);
  std::vector<std::int32_t> recv(n, -7);
  std::vector<std::int32_t> part(block, -7);
  const std::uint64_t before = comm.bytes_combined_on_receive();
  plait::all_reduce<plait::ring>(comm, send, recv, plait::sum{});
  std::string v = check_result(recv, plait::sum{}, p, 0, 5, "all_reduce");
  plait::reduce_scatter<plait::ring>(comm, send, part, plait::sum{});
  if (v.empty())
    v = check_result(part, plait::sum{}, p, static_cast<std::size_t>(comm.rank()) * block, 5, "reduce_scatter");
  // Ring: P - 1 arrivals combined per call, each one block.
  const std::uint64_t want = block == 0 ? 0 : 2 * static_cast<std::uint64_t>(p - 1) * block * sizeof(std::int32_t);
  if (v.empty() && comm.bytes_combined_on_receive() - before != want) {
    v = "combined " + std::to_string(comm.bytes_combined_on_receive() - before) + " bytes on receive, expected " +
        std::to_string(want);
  }
  return v;
}

}  // namespace

TEST_CASE("on shm a reduction folds each arriving partial in as it comes, from a slot or the sender's buffer",
          "[reduce][fused]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5);
  // Empty; chunks through the slots; one reference; one that another process
  // reads in one piece; one it reads in several (plus a part piece: 2.3 MiB
  // of int32 against combine_piece_bytes, 1 MiB).
  const std::size_t block =
      GENERATE(std::size_t{0}, std::size_t{16}, std::size_t{8192}, std::size_t{40000}, std::size_t{600000});
  CAPTURE(plait_test::to_string(m), ranks, block);
  const auto verdicts = plait_test::run_ranks(
      m, ranks, [&](plait::shm::communicator& comm) -> std::string { return combined_as_they_arrive(comm, block); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("on shm a reduction's messages to another process go in chunks below 1 MiB unless single copy is asked for",
          "[reduce][fused]") {
  const int ranks = GENERATE(2, 3);
  const bool by_reference = GENERATE(false, true);
  // Chunks by default, or one piece of process_vm_readv; several pieces
  // (combine_piece_bytes, 1 MiB), by reference by default too.
  const std::size_t block = GENERATE(std::size_t{40000}, std::size_t{600000});
  CAPTURE(ranks, by_reference, block);
  const auto verdicts =
      plait_test::run_ranks(mode::processes, ranks, [&](plait::shm::communicator& comm) -> std::string {
        if (by_reference) comm.set_single_copy_bytes(16 << 10);
        const bool large = block * sizeof(std::int32_t) >= comm.process_fold_single_copy_bytes();
        const std::uint64_t before = comm.bytes_read_from_processes();
        std::string v = combined_as_they_arrive(comm, block);
        const std::uint64_t read = comm.bytes_read_from_processes() - before;
        // Ring: all_reduce's P - 1 folded and P - 1 placed arrivals, reduce_scatter's P - 1 folded.
        const std::uint64_t all = 3 * static_cast<std::uint64_t>(comm.size() - 1) * block * sizeof(std::int32_t);
        const std::uint64_t expected = by_reference || large ? all : 0;
        if (v.empty() && read != expected) {
          v = "read " + std::to_string(read) + " bytes from other processes, expected " + std::to_string(expected);
        }
        // A plain message of that size still goes by reference.
        std::vector<std::int32_t> mine(block, comm.rank()), gathered(block * static_cast<std::size_t>(comm.size()));
        const std::uint64_t before_gather = comm.bytes_read_from_processes();
        plait::all_gather<plait::ring>(comm, mine, gathered);
        if (v.empty() && comm.bytes_read_from_processes() == before_gather)
          v = "an all_gather read nothing by reference";
        if (v.empty() && gathered.back() != comm.size() - 1) v = "wrong all_gather result";
        return v;
      });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("where process_vm_readv is refused a reduction still folds partials in as they arrive through the slots",
          "[reduce][fused]") {
  const auto verdicts = plait_test::run_ranks(mode::processes, 3, [](plait::shm::communicator& comm) -> std::string {
    if (!plait_test::deny_process_vm_readv(EPERM)) return "cannot install the seccomp filter";
    return combined_as_they_arrive(comm, 40000);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a reduction that throws on one rank fails every rank at once, naming it, and poisons its communicator",
          "[reduce][errors]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3, 5);
  // One round of the slots; rounds of direct through the slots; channels,
  // where arrivals combine as they come.
  const std::size_t block = GENERATE(std::size_t{4}, std::size_t{256}, std::size_t{20000});
  const int form = GENERATE(0, 1, 2);  // all_reduce, reduce_scatter, iall_reduce
  CAPTURE(plait_test::to_string(m), ranks, block, form);
  const auto start = std::chrono::steady_clock::now();
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(std::chrono::seconds(60));  // the peers must not need it
    return plait_test::abandoned_by_a_throwing_reduction(comm, block, form);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  // Milliseconds: no rank waits for the timeout, nor for a copy that a throw ended.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

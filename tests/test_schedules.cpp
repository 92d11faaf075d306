// plait-test-labels: quick
// Schedules without bytes: every built-in algorithm verifies for P = 1..64,
// verify catches each kind of broken schedule, the schedules have the shapes
// their headers document, and algorithm_id / automatic / explain behave.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/algorithm/algorithm_id.hpp"
#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/select.hpp"
#include "plait/algorithm/verify.hpp"
#include "plait/core/error.hpp"

namespace {

using plait::algorithm_id;
using plait::schedule;
namespace op = plait::op;

// --- Deliberately broken user algorithms -----------------------------------

/// ring all-gather one step short: the last block never arrives.
struct missing_block {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s = plait::ring::plan(op::all_gather{}, rank, size);
    if (!s.steps.empty()) s.steps.pop_back();
    return s;
  }
};

/// ring all-gather followed by a direct all-gather: every block arrives twice.
struct duplicate_block {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s = plait::ring::plan(op::all_gather{}, rank, size);
    for (auto& st : plait::direct::plan(op::all_gather{}, rank, size).steps) s.steps.push_back(st);
    return s;
  }
};

/// ring all-gather whose first step forwards a block the rank has not received yet.
struct unheld_send {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s;
    const int right = (rank + 1) % size;
    const int left = (rank + size - 1) % size;
    for (int k = 0; k + 1 < size; ++k) {
      s.next_step().send(right, {(rank - k - 1 + 2 * size) % size}).recv(left, {(rank - k - 2 + 3 * size) % size});
    }
    return s;
  }
};

/// bruck all-gather where rank 1 expects a two-block message in the other
/// order than its sender packs it: each side alone is consistent.
struct mismatched_pair {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s = plait::bruck::plan(op::all_gather{}, rank, size);
    if (rank == 1 && s.steps.size() > 1) {
      auto& blocks = s.steps[1].recvs[0].blocks;
      std::swap(blocks.front(), blocks.back());
    }
    return s;
  }
};

/// ring all-gather plus one more round in which every rank gets its own shard back.
struct echo {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s = plait::ring::plan(op::all_gather{}, rank, size);
    if (size > 1) s.next_step().send((rank + 1) % size, {(rank + 1) % size}).recv((rank + size - 1) % size, {rank});
    return s;
  }
};

/// Everyone first waits to receive from the left, then sends right: a cycle of waits.
struct deadlocking {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s;
    if (size == 1) return s;
    const int right = (rank + 1) % size;
    const int left = (rank + size - 1) % size;
    s.next_step().recv(left, {left});
    s.next_step().send(right, {rank});
    // The rest as in ring, shifted by one step.
    for (int k = 1; k + 1 < size; ++k) {
      s.next_step().send(right, {(rank - k + size) % size}).recv(left, {(rank - k - 1 + 2 * size) % size});
    }
    return s;
  }
};

/// A send with no receive on the other side.
struct unmatched_send {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s = plait::ring::plan(op::all_gather{}, rank, size);
    if (rank == 0 && size > 1) s.next_step().send(1, {0});
    return s;
  }
};

/// A rank that "sends" its shard to itself.
struct self_send {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr schedule plan(op::all_gather, int rank, int size) {
    schedule s = plait::ring::plan(op::all_gather{}, rank, size);
    s.next_step().send(rank, {rank}).recv(rank, {rank});
    return s;
  }
};

/// all-to-all pairwise with one block sent to the wrong rank.
struct misrouted_all_to_all {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr schedule plan(op::all_to_all, int rank, int size) {
    schedule s = plait::pairwise::plan(op::all_to_all{}, rank, size);
    if (!s.steps.empty()) {
      // Keep the pairing intact on both sides, but carry block (rank, rank): never needed by the peer.
      s.steps[0].sends[0].blocks = {op::all_to_all::block(rank, rank, size)};
      s.steps[0].recvs[0].blocks = {op::all_to_all::block(s.steps[0].recvs[0].peer, s.steps[0].recvs[0].peer, size)};
    }
    return s;
  }
};

// The compile-time face of verify, for the built-ins and the broken ones.
static_assert(plait::verify<plait::ring, op::all_gather>(8));
static_assert(plait::verify<plait::tree, op::all_gather>(7));
static_assert(plait::verify<plait::bruck, op::all_to_all>(6));
static_assert(plait::verify<plait::recursive_doubling, op::all_gather>(6));
static_assert(plait::verify<plait::neighbor_exchange, op::all_gather>(8));
static_assert(plait::verify<plait::direct, op::all_to_all>(10));
static_assert(!plait::verify<missing_block, op::all_gather>(4));
static_assert(!plait::verify<deadlocking, op::all_gather>(4));
static_assert(!plait::verify<plait::neighbor_exchange, op::all_gather>(5));  // odd P is not accepted

template <class A, class Op>
std::string verify_range(int max_size) {
  std::string failures;
  for (int p = 1; p <= max_size; ++p) {
    if (!plait::accepts<A, Op>(p)) continue;
    const std::string report = plait::verify_report<A, Op>(p);
    if (!report.empty()) failures += "P=" + std::to_string(p) + ": " + report + "\n";
  }
  return failures;
}

int ceil_lg(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}

std::size_t blocks_sent(const schedule& s) {
  std::size_t n = 0;
  for (const auto& st : s.steps) {
    for (const auto& x : st.sends) n += x.blocks.size();
  }
  return n;
}

}  // namespace

TEST_CASE("every built-in all-gather schedule verifies for 1 to 64 ranks", "[schedules][all_gather][verify]") {
  CHECK(verify_range<plait::ring, op::all_gather>(64) == "");
  CHECK(verify_range<plait::tree, op::all_gather>(64) == "");
  CHECK(verify_range<plait::pairwise, op::all_gather>(64) == "");
  CHECK(verify_range<plait::bruck, op::all_gather>(64) == "");
  CHECK(verify_range<plait::recursive_doubling, op::all_gather>(64) == "");
  CHECK(verify_range<plait::direct, op::all_gather>(64) == "");
  CHECK(verify_range<plait::neighbor_exchange, op::all_gather>(64) == "");
}

TEST_CASE("every built-in all-to-all schedule verifies for 1 to 64 ranks", "[schedules][all_to_all][verify]") {
  CHECK(verify_range<plait::ring, op::all_to_all>(64) == "");
  CHECK(verify_range<plait::pairwise, op::all_to_all>(64) == "");
  CHECK(verify_range<plait::bruck, op::all_to_all>(64) == "");
  CHECK(verify_range<plait::direct, op::all_to_all>(64) == "");
}

TEST_CASE("verify names the first fault of a broken schedule", "[schedules][verify]") {
  using plait::verify_fault;
  for (int p : {2, 3, 4, 5, 8}) {
    CAPTURE(p);
    CHECK(plait::verify_detailed<missing_block, op::all_gather>(p).fault == verify_fault::missing_block);
    CHECK(plait::verify_detailed<duplicate_block, op::all_gather>(p).fault == verify_fault::recv_twice);
    CHECK(plait::verify_detailed<echo, op::all_gather>(p).fault == verify_fault::recv_held);
    CHECK(plait::verify_detailed<unheld_send, op::all_gather>(p).fault == verify_fault::send_unheld);
    CHECK(plait::verify_detailed<deadlocking, op::all_gather>(p).fault == verify_fault::deadlock);
    CHECK(plait::verify_detailed<unmatched_send, op::all_gather>(p).fault == verify_fault::unmatched);
    CHECK(plait::verify_detailed<misrouted_all_to_all, op::all_to_all>(p).fault == verify_fault::missing_block);
  }
  CHECK(plait::verify_detailed<self_send, op::all_gather>(1).fault == verify_fault::self_transfer);
  for (int p : {4, 5, 8}) {
    CAPTURE(p);
    CHECK(plait::verify_detailed<mismatched_pair, op::all_gather>(p).fault == verify_fault::mismatched_blocks);
  }
  CHECK(plait::verify_detailed<plait::ring, op::all_gather>(0).fault == verify_fault::bad_size);
  CHECK(plait::verify_detailed<plait::neighbor_exchange, op::all_gather>(7).fault == verify_fault::unsupported);
}

TEST_CASE("verify_report says what is wrong in words and nothing when all is well", "[schedules][verify]") {
  CHECK(plait::verify_report<plait::ring, op::all_gather>(5).empty());
  const std::string missing = plait::verify_report<missing_block, op::all_gather>(4);
  CHECK_THAT(missing, Catch::Contains("never receives block"));
  const std::string dead = plait::verify_report<deadlocking, op::all_gather>(3);
  CHECK_THAT(dead, Catch::Contains("deadlock"));
  const std::string unheld = plait::verify_report<unheld_send, op::all_gather>(4);
  CHECK_THAT(unheld, Catch::Contains("without holding it"));
}

TEST_CASE("schedules have the step counts and wire bytes their headers document", "[schedules]") {
  for (int p = 1; p <= 64; ++p) {
    CAPTURE(p);
    const bool power_of_two = (p & (p - 1)) == 0;
    for (int r = 0; r < p; ++r) {
      CAPTURE(r);
      REQUIRE(plait::ring::plan(op::all_gather{}, r, p).steps.size() == static_cast<std::size_t>(p - 1));
      REQUIRE(plait::ring::plan(op::all_to_all{}, r, p).steps.size() == static_cast<std::size_t>(p - 1));
      const schedule b = plait::bruck::plan(op::all_gather{}, r, p);
      REQUIRE(b.steps.size() == static_cast<std::size_t>(ceil_lg(p)));
      REQUIRE(blocks_sent(b) == static_cast<std::size_t>(p - 1));  // bandwidth-optimal
      REQUIRE(plait::bruck::plan(op::all_to_all{}, r, p).steps.size() == static_cast<std::size_t>(ceil_lg(p)));
      if (power_of_two) {
        const schedule rd = plait::recursive_doubling::plan(op::all_gather{}, r, p);
        REQUIRE(rd.steps.size() == static_cast<std::size_t>(ceil_lg(p)));
        REQUIRE(blocks_sent(rd) == static_cast<std::size_t>(p - 1));
      }
      if (p % 2 == 0) {
        const schedule ne = plait::neighbor_exchange::plan(op::all_gather{}, r, p);
        REQUIRE(ne.steps.size() == static_cast<std::size_t>(p / 2));
        REQUIRE(blocks_sent(ne) == static_cast<std::size_t>(p - 1));
      }
      REQUIRE(plait::direct::plan(op::all_gather{}, r, p).steps.size() == (p > 1 ? 1U : 0U));
      const schedule d = plait::direct::plan(op::all_to_all{}, r, p);
      REQUIRE(d.steps.size() ==
              static_cast<std::size_t>((p - 1 + plait::direct::max_in_flight - 1) / plait::direct::max_in_flight));
      for (const auto& st : d.steps) REQUIRE(st.sends.size() <= static_cast<std::size_t>(plait::direct::max_in_flight));
    }
    REQUIRE(plait::tree::plan(op::all_gather{}, 0, p).steps.size() == static_cast<std::size_t>(2 * ceil_lg(p)));
  }
}

TEST_CASE("pairwise all-to-all pairs by XOR for powers of two and shifts otherwise", "[schedules][pairwise]") {
  const schedule pow2 = plait::pairwise::plan(op::all_to_all{}, 5, 8);
  for (std::size_t k = 0; k < pow2.steps.size(); ++k) {
    CHECK(pow2.steps[k].sends[0].peer == (5 ^ static_cast<int>(k + 1)));
    CHECK(pow2.steps[k].recvs[0].peer == (5 ^ static_cast<int>(k + 1)));
  }
  const schedule shifted = plait::ring::plan(op::all_to_all{}, 5, 8);
  CHECK(shifted.steps[0].sends[0].peer == 6);
  CHECK(shifted.steps[0].recvs[0].peer == 4);
}

TEST_CASE("neighbor_exchange refuses an odd number of ranks", "[schedules][neighbor_exchange]") {
  CHECK(plait::accepts<plait::neighbor_exchange, op::all_gather>(1));
  CHECK(plait::accepts<plait::neighbor_exchange, op::all_gather>(6));
  CHECK_FALSE(plait::accepts<plait::neighbor_exchange, op::all_gather>(5));
  try {
    (void)plait::neighbor_exchange::plan(op::all_gather{}, 0, 5);
    FAIL("plan accepted 5 ranks");
  } catch (const plait::error& e) {
    CHECK(e.code() == plait::errc::unsupported);
  }
  try {
    (void)plait::detail::plan_schedule<plait::neighbor_exchange, op::all_gather, void>(0, 3, 8);
    FAIL("plan_schedule accepted 3 ranks");
  } catch (const plait::error& e) {
    CHECK(e.code() == plait::errc::unsupported);
    CHECK_THAT(std::string(e.what()), Catch::Contains("neighbor_exchange"));
  }
}

TEST_CASE("algorithm_id names every built-in and round-trips through strings", "[algorithm_id]") {
  for (algorithm_id id : plait::all_algorithm_ids) {
    CAPTURE(id);
    const auto parsed = plait::algorithm_from_string(plait::to_string(id));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == id);
    CHECK(plait::visit_algorithm(id, []<class A>(std::type_identity<A>) { return plait::algorithm_id_of<A>; }) == id);
  }
  CHECK(plait::to_string(algorithm_id::recursive_doubling) == "recursive_doubling");
  CHECK_FALSE(plait::algorithm_from_string("Ring").has_value());
  CHECK_FALSE(plait::algorithm_from_string("automatic").has_value());
  CHECK_FALSE(plait::algorithm_id_of<missing_block>.has_value());
}

TEST_CASE("run-time plan dispatch gives the tag type's schedule and refuses what has none", "[algorithm_id]") {
  CHECK(plait::plan(algorithm_id::bruck, op::all_to_all{}, 3, 7) == plait::bruck::plan(op::all_to_all{}, 3, 7));
  CHECK(plait::plan(algorithm_id::tree, op::all_gather{}, 2, 9) == plait::tree::plan(op::all_gather{}, 2, 9));
  auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const plait::error& e) {
      return e.value();
    }
    return plait::errc{};
  };
  CHECK(code_of([] { (void)plait::plan(algorithm_id::tree, op::all_to_all{}, 0, 4); }) == plait::errc::unsupported);
  CHECK(code_of([] { (void)plait::plan(algorithm_id::recursive_doubling, op::all_to_all{}, 0, 4); }) ==
        plait::errc::unsupported);
  CHECK(code_of([] { (void)plait::plan(algorithm_id::neighbor_exchange, op::all_gather{}, 0, 9); }) ==
        plait::errc::unsupported);
  CHECK(code_of([] { (void)plait::plan(algorithm_id::ring, op::all_gather{}, 4, 4); }) ==
        plait::errc::invalid_argument);
  CHECK(plait::supports<op::all_to_all>(algorithm_id::direct, 5));
  CHECK_FALSE(plait::supports<op::all_to_all>(algorithm_id::neighbor_exchange, 4));
}

namespace {
/// Tuning for the tests: no latency at all, so only bytes and packing count.
struct bandwidth_only {
  static constexpr plait::cost_model cost_model() { return {0, 0, 1e-9, 0, 1e-9}; }
};
/// Tuning that allows a single candidate.
struct only_pairwise {
  static constexpr plait::cost_model cost_model() { return {}; }
  static constexpr bool allows(algorithm_id id) { return id == algorithm_id::pairwise; }
};
static_assert(plait::explain<op::all_to_all, plait::automatic_with<only_pairwise>>(8, 64).id == algorithm_id::pairwise);
}  // namespace

TEST_CASE("automatic picks the cheapest candidate and never an unsupported one", "[automatic][explain]") {
  for (int p = 1; p <= 33; ++p) {
    for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{4096}, std::size_t{1} << 20}) {
      CAPTURE(p, bytes);
      const plait::choice ag = plait::explain<op::all_gather>(p, bytes);
      REQUIRE(plait::supports<op::all_gather>(ag.id, p));
      if (p % 2 == 1 && p > 1) REQUIRE(ag.id != algorithm_id::neighbor_exchange);
      const plait::choice aa = plait::explain<op::all_to_all>(p, bytes);
      REQUIRE(plait::has_schedule<op::all_to_all>(aa.id));
      for (algorithm_id id : plait::all_algorithm_ids) {
        if (plait::supports<op::all_gather>(id, p)) {
          REQUIRE(ag.predicted_seconds <= plait::explain<op::all_gather>(id, p, bytes).predicted_seconds);
        }
        if (plait::supports<op::all_to_all>(id, p)) {
          REQUIRE(aa.predicted_seconds <= plait::explain<op::all_to_all>(id, p, bytes).predicted_seconds);
        }
      }
    }
  }
}

TEST_CASE("automatic prefers few steps for small blocks and few bytes for large ones", "[automatic][explain]") {
  // 64 ranks, tiny blocks: a log-step algorithm beats P-1 steps.
  const auto small = plait::explain<op::all_to_all>(64, 8);
  CHECK(small.id == algorithm_id::bruck);
  // Large blocks: bruck all-to-all sends ~lg P / 2 times the bytes; a linear one wins.
  const auto large = plait::explain<op::all_to_all>(64, std::size_t{1} << 20);
  CHECK(large.id != algorithm_id::bruck);
  // With latency free, tree (lg P times the bytes at the root) never wins.
  for (int p = 2; p <= 16; ++p) {
    CHECK(plait::explain<op::all_gather, plait::automatic_with<bandwidth_only>>(p, 1000).id != algorithm_id::tree);
  }
  // A fixed algorithm is explained as itself.
  const auto fixed = plait::explain<op::all_gather, plait::tree>(8, 100);
  CHECK(fixed.id == algorithm_id::tree);
  CHECK(fixed.predicted_seconds > 0);
  // The transport's own parameters are used when it has them: with only a
  // per-step cost, one-step direct wins at 1 s.
  struct slow_steps {
    static constexpr plait::cost_model cost_model() { return {1.0, 0, 0, 0, 0}; }
  };
  const auto one_step = plait::explain<op::all_gather, plait::automatic, slow_steps>(8, 1);
  CHECK(one_step.id == algorithm_id::direct);
  CHECK(one_step.predicted_seconds == Approx(1.0));
}

TEST_CASE("a step with a message at or above the rendezvous size costs alpha_rendezvous once", "[automatic]") {
  plait::cost_model m{0, 0, 0, 0, 0};
  m.rendezvous_bytes = 16 << 10;
  m.alpha_rendezvous = 1.0;
  // Ring on 2 ranks: two steps of one block; recursive doubling: one step of both blocks.
  const plait::schedule ring = plait::ring::plan(op::all_reduce<>{}, 0, 2);
  const plait::schedule doubling = plait::recursive_doubling::plan(op::all_reduce<>{}, 0, 2);
  CHECK(plait::predicted_seconds(ring, (16 << 10) - 1, m) == 0);
  CHECK(plait::predicted_seconds(ring, 16 << 10, m) == 2.0);
  CHECK(plait::predicted_seconds(doubling, 8 << 10, m) == 1.0);
  CHECK(plait::predicted_seconds(doubling, (8 << 10) - 1, m) == 0);
  CHECK(plait::default_cost_model.alpha_rendezvous == 0);  // the default model has none
}

TEST_CASE("a received message of several blocks that fold costs beta_staged per byte", "[automatic]") {
  plait::cost_model m{0, 0, 0, 0, 0};
  m.beta_staged = 1.0;
  // Recursive doubling on 2 ranks receives both blocks in one message and
  // folds them; ring's messages carry one block each.
  CHECK(plait::predicted_seconds(plait::recursive_doubling::plan(op::all_reduce<>{}, 0, 2), 3, m) == 6.0);
  CHECK(plait::predicted_seconds(plait::ring::plan(op::all_reduce<>{}, 0, 2), 3, m) == 0);
  // An all-gather's messages place, they do not fold.
  CHECK(plait::predicted_seconds(plait::recursive_doubling::plan(op::all_gather{}, 0, 4), 3, m) == 0);
  CHECK(plait::default_cost_model.beta_staged == 0);
}

TEST_CASE("plan_schedule runs automatic's choice and names the algorithm it ran", "[automatic][select]") {
  const auto planned = plait::detail::plan_schedule<plait::automatic, op::all_to_all, void>(2, 64, 8);
  CHECK(planned.algorithm == "bruck");
  CHECK(planned.steps == plait::bruck::plan(op::all_to_all{}, 2, 64));
  const auto fixed = plait::detail::plan_schedule<plait::ring, op::all_gather, void>(1, 3, 8);
  CHECK(fixed.algorithm == "ring");
  CHECK(fixed.steps == plait::ring::plan(op::all_gather{}, 1, 3));
  const auto tuned = plait::detail::plan_schedule<plait::automatic_with<only_pairwise>, op::all_gather, void>(0, 5, 1);
  CHECK(tuned.algorithm == "pairwise");
}

namespace {

/// Whether every rank's all-to-all schedule for `size` ranks sends only the
/// rank's own blocks: nothing is forwarded.
template <class A>
bool forwards_nothing(int size) {
  for (int rank = 0; rank < size; ++rank) {
    for (const auto& s : A::plan(op::all_to_all{}, rank, size).steps) {
      for (const auto& message : s.sends) {
        for (int block : message.blocks) {
          if (op::all_to_all::source(block, size) != rank) return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

TEST_CASE("every registered algorithm that says it forwards no block sends only its own blocks, P = 1..16",
          "[schedules][all_to_all]") {
  int claims = 0;
  [&]<class... As>(plait::works_with<As...>) {
    (
        [&] {
          if constexpr (requires { As::forwards_blocks; }) {
            static_assert(!As::forwards_blocks, "the only claim an algorithm makes is that it forwards nothing");
            ++claims;
            for (int p = 1; p <= 16; ++p) {
              CAPTURE(As::name, p);
              CHECK(forwards_nothing<As>(p));
            }
          }
        }(),
        ...);
  }(plait::built_in_algorithms{});
  CHECK(claims == 2);  // pairwise and direct
}

TEST_CASE("the forwarding check sees bruck forward blocks", "[schedules][all_to_all]") {
  // Bruck sends block distance d in the steps of d's set bits: from P = 4 on,
  // distance 3 goes in two hops, through a rank that is neither end.
  CHECK_FALSE(forwards_nothing<plait::bruck>(4));
  CHECK_FALSE(forwards_nothing<plait::bruck>(7));
  CHECK(forwards_nothing<plait::bruck>(3));
}

TEST_CASE("restrict_automatic replaces automatic's run-time candidates wherever one of them runs the operation",
          "[automatic][select]") {
  struct lift {
    ~lift() { plait::restrict_automatic(0); }
  } lifted_at_exit;
  const auto only = [](plait::algorithm_id id) {
    plait::detail::algorithm_set set = 0;
    for (std::size_t i = 0; i < plait::all_algorithm_ids.size(); ++i) {
      if (plait::all_algorithm_ids[i] == id) set |= plait::detail::algorithm_set{1} << i;
    }
    return set;
  };
  // Sizes from a vector: run-time arguments, so the choice is made at run time.
  const std::vector<int> sizes{5, 6};
  const std::size_t bytes = 1024;
  const plait::choice unrestricted = plait::explain<plait::op::all_gather>(sizes[0], bytes);
  REQUIRE(unrestricted.id != plait::algorithm_id::bruck);

  plait::restrict_automatic(only(plait::algorithm_id::bruck));
  CHECK(plait::automatic_restriction() == only(plait::algorithm_id::bruck));
  CHECK(plait::explain<plait::op::all_gather>(sizes[0], bytes).id == plait::algorithm_id::bruck);
  CHECK(plait::explain<plait::op::all_to_all>(sizes[1], bytes).id == plait::algorithm_id::bruck);

  // neighbor_exchange cannot run an odd group: there automatic's own candidates choose.
  plait::restrict_automatic(only(plait::algorithm_id::neighbor_exchange));
  CHECK(plait::explain<plait::op::all_gather>(sizes[0], bytes) == unrestricted);
  CHECK(plait::explain<plait::op::all_gather>(sizes[1], bytes).id == plait::algorithm_id::neighbor_exchange);

  plait::restrict_automatic(0);
  CHECK(plait::explain<plait::op::all_gather>(sizes[0], bytes) == unrestricted);
}

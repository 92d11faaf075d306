// plait-test-labels: quick shm
// plait-test-timeout: 120
// The shm transport's shared slots (op/slot_run.hpp): direct's lockstep
// schedules run one round per step through them when the call fits, and
// automatic takes that route for small blocks. One body on threads and
// processes, P = 1..8, zero-size and non-power-of-two data, against serial
// references: every operation (placing and folding), the even and v forms,
// in place, a reduction in rank order bit for bit, a call too large for the
// slots (every rank takes the channels together, even when only one rank's
// part is too large), a two-rank all-reduce as large as a slot in one round,
// automatic's rule and the slot run agreeing on the largest round that fits,
// a blocking call while a nonblocking one is in flight, back-to-back calls
// on skewed, preempted ranks (no buffer reused while read), and a rank that
// never joins (timeout naming the call and the peer).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.hpp"

using plait_test::mode;

namespace {

// A float sum whose result depends on the order of the terms: the left fold in rank order is the reference.
float term(int rank, std::size_t i) {
  return (rank % 2 == 0 ? 1.0F : 1e-8F) * static_cast<float>(i + 1) + static_cast<float>(rank) * 1e7F;
}

std::string body(plait::shm::communicator& comm, std::size_t n) {
  const int P = comm.size();
  const auto p = static_cast<std::size_t>(P);
  const int me = comm.rank();
  const std::uint64_t rounds_before = comm.slot_rounds();
  const std::string at = " n=" + std::to_string(n) + ": ";

  // all_gather, and in place.
  std::vector<std::int32_t> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = plait_test::make_value<std::int32_t>(me, i);
  std::vector<std::int32_t> want(n * p);
  for (int r = 0; r < P; ++r) {
    for (std::size_t i = 0; i < n; ++i)
      want[static_cast<std::size_t>(r) * n + i] = plait_test::make_value<std::int32_t>(r, i);
  }
  std::vector<std::int32_t> all(n * p, -1);
  plait::all_gather<plait::direct>(comm, mine, all);
  if (auto v = plait_test::compare(all, want, "all_gather" + at); !v.empty()) return v;
  std::vector<std::int32_t> in_place(n * p, -1);
  for (std::size_t i = 0; i < n; ++i) in_place[static_cast<std::size_t>(me) * n + i] = mine[i];
  plait::all_gather<plait::direct>(comm, plait::in_place, in_place);
  if (auto v = plait_test::compare(in_place, want, "all_gather in place" + at); !v.empty()) return v;

  // all_to_all: block (from, to) distinct per pair.
  std::vector<std::int32_t> send(n * p), recv(n * p, -1), expect(n * p);
  for (std::size_t j = 0; j < p; ++j) {
    for (std::size_t i = 0; i < n; ++i) {
      send[j * n + i] = plait_test::make_value<std::int32_t>(me, i, static_cast<int>(j) + 1);
      expect[j * n + i] = plait_test::make_value<std::int32_t>(static_cast<int>(j), i, me + 1);
    }
  }
  plait::all_to_all<plait::direct>(comm, send, recv);
  if (auto v = plait_test::compare(recv, expect, "all_to_all" + at); !v.empty()) return v;

  // all_gather_v: rank r has n + r elements.
  std::vector<std::size_t> counts(p);
  std::size_t total = 0;
  for (std::size_t r = 0; r < p; ++r) total += counts[r] = n + r;
  std::vector<std::int32_t> part(n + static_cast<std::size_t>(me)), gathered(total, -1), gathered_want;
  for (std::size_t i = 0; i < part.size(); ++i) part[i] = plait_test::make_value<std::int32_t>(me, i, 7);
  for (int r = 0; r < P; ++r) {
    for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) {
      gathered_want.push_back(plait_test::make_value<std::int32_t>(r, i, 7));
    }
  }
  plait::all_gather_v<plait::direct>(comm, part, gathered, counts);
  if (auto v = plait_test::compare(gathered, gathered_want, "all_gather_v" + at); !v.empty()) return v;

  // Reductions in rank order: the serial left fold, bit for bit, on every rank.
  std::vector<float> contribution(n * p);
  for (std::size_t i = 0; i < n * p; ++i) contribution[i] = term(me, i);
  std::vector<float> folded(n * p);
  for (std::size_t i = 0; i < n * p; ++i) {
    float acc = term(0, i);
    for (int r = 1; r < P; ++r) acc += term(r, i);
    folded[i] = acc;
  }
  std::vector<float> reduced(n * p, -1);
  plait::all_reduce<plait::direct>(comm, contribution, reduced, plait::ordered<plait::sum>{});
  if (auto v = plait_test::compare(reduced, folded, "all_reduce ordered" + at); !v.empty()) return v;
  std::vector<float> automatic_reduced(n * p, -1);
  plait::all_reduce(comm, contribution, automatic_reduced, plait::ordered<plait::sum>{});
  if (auto v = plait_test::compare(automatic_reduced, folded, "all_reduce automatic" + at); !v.empty()) return v;
  std::vector<float> block(n, -1);
  plait::reduce_scatter<plait::direct>(comm, contribution, block, plait::ordered<plait::sum>{});
  const std::vector<float> own_block(
      folded.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me) * n),
      folded.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me + 1) * n));
  if (auto v = plait_test::compare(block, own_block, "reduce_scatter ordered" + at); !v.empty()) return v;
  std::vector<float> in_place_sum = contribution;
  plait::all_reduce<plait::direct>(comm, plait::in_place, in_place_sum, plait::ordered<plait::sum>{});
  if (auto v = plait_test::compare(in_place_sum, folded, "all_reduce in place" + at); !v.empty()) return v;

  // Every call above ran through the slots: one round per step of direct's
  // schedules, and one for an all-reduce of at most one_round_fold_bytes(P) in all.
  const std::uint64_t all_reduce_rounds = n * p * sizeof(float) <= plait::detail::one_round_fold_bytes(P) ? 1 : 2;
  const std::uint64_t direct_rounds = P == 1 ? 0 : 2 + (P - 1 + 7) / 8 + 1 + 3 * all_reduce_rounds + 1;
  if (comm.slot_rounds() - rounds_before != direct_rounds) {
    return "ran " + std::to_string(comm.slot_rounds() - rounds_before) + " shared-slot rounds, expected " +
           std::to_string(direct_rounds) + at;
  }
  return {};
}

// A call too large for the slots: every rank takes the channels, also when only rank 0's part is.
std::string too_large(plait::shm::communicator& comm) {
  const std::uint64_t rounds_before = comm.slot_rounds();
  const auto p = static_cast<std::size_t>(comm.size());
  const std::size_t big = plait::shm::communicator::shared_slot_bytes;  // a block alone fills a slot with its table
  std::vector<std::byte> mine(big, std::byte{static_cast<unsigned char>(comm.rank() + 1)}), all(big * p);
  plait::all_gather<plait::direct>(comm, mine, all);
  for (std::size_t r = 0; r < p; ++r) {
    if (all[r * big] != std::byte{static_cast<unsigned char>(r + 1)}) return "all_gather too large: wrong block";
  }
  std::vector<std::size_t> counts(p, 8);
  counts[0] = big;
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  std::vector<std::byte> part(counts[static_cast<std::size_t>(comm.rank())],
                              std::byte{static_cast<unsigned char>(comm.rank() + 1)});
  std::vector<std::byte> gathered(total);
  plait::all_gather_v<plait::direct>(comm, part, gathered, counts);
  std::size_t at = 0;
  for (std::size_t r = 0; r < p; ++r) {
    if (gathered[at] != std::byte{static_cast<unsigned char>(r + 1)})
      return "all_gather_v, rank 0 too large: wrong block";
    at += counts[r];
  }
  // Every rank knows every block's size here: no round at all.
  if (comm.slot_rounds() != rounds_before) return "too large: unexpected shared-slot rounds";
  if (comm.size() > 1 && comm.bytes_sent() == 0) return "too large: nothing went through the channels";
  // all_to_all_v: a rank knows only its own blocks' sizes; rank 0's are too
  // large, and every rank learns it from the first round's flags.
  std::vector<std::size_t> send_counts(p, 4), recv_counts(p, 4);
  if (comm.rank() == 0) std::fill(send_counts.begin(), send_counts.end(), big);
  recv_counts[0] = big;
  std::size_t send_total = 0, recv_total = 0;
  for (std::size_t r = 0; r < p; ++r) send_total += send_counts[r], recv_total += recv_counts[r];
  std::vector<std::byte> v_send(send_total, std::byte{static_cast<unsigned char>(comm.rank() + 1)}), v_recv(recv_total);
  const std::uint64_t before_v = comm.slot_rounds();
  plait::all_to_all_v<plait::direct>(comm, v_send, send_counts, v_recv, recv_counts);
  std::size_t offset = 0;
  for (std::size_t r = 0; r < p; ++r) {
    if (v_recv[offset] != std::byte{static_cast<unsigned char>(r + 1)}) return "all_to_all_v too large: wrong block";
    offset += recv_counts[r];
  }
  if (comm.size() > 1 && comm.slot_rounds() - before_v != 1) return "all_to_all_v too large: no round agreed on it";
  return {};
}

}  // namespace

TEST_CASE("Direct's small collectives run through the shm transport's shared slots on threads and processes",
          "[shm][slots]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 4, 5, 8);
  if (m == mode::processes && (ranks == 4 || ranks == 5)) return;  // processes: 1, 2, 3, 8 (fork is the cost)
  INFO(plait_test::to_string(m) << ", P = " << ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) {
    // 200: an all-reduce of 1600 B takes one round on two ranks, two on more.
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{13}, std::size_t{64}, std::size_t{200}}) {
      if (auto v = body(comm, n); !v.empty()) return v;
    }
    return too_large(comm);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("Back-to-back shared-slot calls on skewed ranks never overwrite a round that a peer still reads",
          "[shm][slots]") {
  // A buffer is written again two rounds later, as soon as every peer has
  // posted the round between (a peer posts only after reading). Eight ranks
  // on fewer cores are preempted in the middle of their reads, and one rank
  // a call sleeps besides: every call's data differ from the last's, so a
  // round overwritten while read shows as a wrong value.
  const mode m = GENERATE(mode::threads, mode::processes);
  INFO(plait_test::to_string(m));
  const auto verdicts = plait_test::run_ranks(m, 8, [](plait::shm::communicator& comm) -> std::string {
    const int P = comm.size();
    const auto p = static_cast<std::size_t>(P);
    const int me = comm.rank();
    constexpr std::size_t n = 24;  // ints a rank gathers
    constexpr int calls = 400;
    const std::uint64_t rounds_before = comm.slot_rounds();
    for (int call = 0; call < calls; ++call) {
      if (me == call % P && call % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      const std::string at = " in call " + std::to_string(call);
      std::vector<std::int32_t> mine(n), all(n * p, -1);
      for (std::size_t i = 0; i < n; ++i) mine[i] = plait_test::make_value<std::int32_t>(me, i, call);
      plait::all_gather<plait::direct>(comm, mine, all);
      for (int r = 0; r < P; ++r) {
        for (std::size_t i = 0; i < n; ++i) {
          if (all[static_cast<std::size_t>(r) * n + i] != plait_test::make_value<std::int32_t>(r, i, call)) {
            return "all_gather: rank " + std::to_string(r) + "'s block is wrong" + at;
          }
        }
      }
      // Integers whose sum is exact in any order: 512 of them, 2 KiB, two rounds.
      std::vector<std::int32_t> values(512), sums(512, -1);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = (me + 1) * 1000 + static_cast<int>(i) + call;
      plait::all_reduce<plait::direct>(comm, values, sums, plait::sum{});
      for (std::size_t i = 0; i < sums.size(); ++i) {
        const std::int32_t want = 1000 * P * (P + 1) / 2 + P * (static_cast<int>(i) + call);
        if (sums[i] != want) return "all_reduce: element " + std::to_string(i) + " is wrong" + at;
      }
    }
    const std::uint64_t rounds = comm.slot_rounds() - rounds_before;
    if (rounds != calls * 3) return "ran " + std::to_string(rounds) + " shared-slot rounds, expected 3 a call";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("A one-round all-reduce whose ranks pass different counts fails on every rank, never a wrong sum",
          "[shm][slots][bad_input]") {
  // Each rank folds the whole vector at once where every peer's table of
  // blocks equals its own; here rank 2's does not (16 floats against 12),
  // and every rank must find that in the tables, not fold the bytes it finds.
  const mode m = GENERATE(mode::threads, mode::processes);
  INFO(plait_test::to_string(m));
  const auto verdicts = plait_test::run_ranks(m, 3, [](plait::shm::communicator& comm) -> std::string {
    const std::size_t n = comm.rank() == 2 ? 16 : 12;
    std::vector<float> values(n, 1.0F), sums(n, -1.0F);
    const std::uint64_t rounds_before = comm.slot_rounds();
    try {
      plait::all_reduce<plait::direct>(comm, values, sums, plait::sum{});
      return "the all_reduce of different counts went through";
    } catch (const plait::error& e) {
      const std::string what = e.what();
      if (e.code() != plait::errc::size_mismatch) return "not a size mismatch: " + what;
      if (what.find("bytes of block") == std::string::npos) return "the error does not name the block: " + what;
    }
    if (comm.slot_rounds() != rounds_before + 1) return "the call did not take one shared-slot round";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("Automatic takes the shared slots for small blocks and the channels for large ones", "[shm][slots]") {
  // On two ranks the cost model's choice is ring at every size: only the shared-slot rule picks direct.
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    std::vector<std::int32_t> small(16, comm.rank()), small_all(32);
    std::uint64_t before = comm.slot_rounds();
    plait::all_gather(comm, small, small_all);
    if (comm.slot_rounds() != before + 1) return "a 64-byte all_gather did not take the shared slots";
    // automatic's limit, plait::detail::shared_slot_block_bytes: 8 KiB blocks in, one element more out.
    std::vector<std::int32_t> limit(2048, comm.rank()), limit_all(2 * 2048);
    before = comm.slot_rounds();
    plait::all_gather(comm, limit, limit_all);
    if (comm.slot_rounds() != before + 1) return "an all_gather of 8 KiB blocks did not take the shared slots";
    std::vector<std::int32_t> large(2049, comm.rank()), large_all(2 * 2049);
    before = comm.slot_rounds();
    plait::all_gather(comm, large, large_all);
    if (comm.slot_rounds() != before) return "an all_gather of 8 KiB + 4 B blocks took the shared slots";
    for (int r = 0; r < 2; ++r) {
      const auto at = static_cast<std::size_t>(r);
      if (small_all[at * 16] != r || limit_all[at * 2048 + 2047] != r || large_all[at * 2049 + 2048] != r) {
        return "wrong result";
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("A two-rank all-reduce as large as a slot holds runs in one round and folds in rank order", "[shm][slots]") {
  // One round on two ranks wherever the whole vector and its table fit a
  // buffer (op/slot_run.hpp, one_round_fold_bytes); one float more takes
  // direct's two rounds, which above 16 KiB (slot_round_bytes) go through the
  // channels. Every size gives the serial left fold's bits, out of place and
  // in place; automatic takes the one round at 16 KiB, and on three ranks
  // the channels for a round above 16 KiB and two rounds below.
  const mode m = GENERATE(mode::threads, mode::processes);
  INFO(plait_test::to_string(m));
  constexpr std::size_t fits =
      (plait::shm::communicator::shared_slot_bytes - plait::detail::slot_data_offset(2)) / sizeof(float);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    const int me = comm.rank();
    const auto check = [&](std::size_t n, bool automatic, std::uint64_t rounds_wanted) -> std::string {
      const std::string at = " of " + std::to_string(n) + " floats" + (automatic ? " (automatic)" : "");
      std::vector<float> mine(n), folded(n), sums(n, -1.0F);
      for (std::size_t i = 0; i < n; ++i) {
        mine[i] = term(me, i);
        folded[i] = term(0, i) + term(1, i);
      }
      std::uint64_t before = comm.slot_rounds();
      if (automatic) {
        plait::all_reduce(comm, mine, sums, plait::ordered<plait::sum>{});
      } else {
        plait::all_reduce<plait::direct>(comm, mine, sums, plait::ordered<plait::sum>{});
      }
      if (auto v = plait_test::compare(sums, folded, "all_reduce" + at); !v.empty()) return v;
      if (comm.slot_rounds() - before != rounds_wanted) {
        return "all_reduce" + at + " ran " + std::to_string(comm.slot_rounds() - before) +
               " shared-slot rounds, expected " + std::to_string(rounds_wanted);
      }
      before = comm.slot_rounds();
      plait::all_reduce<plait::direct>(comm, plait::in_place, mine, plait::ordered<plait::sum>{});
      if (auto v = plait_test::compare(mine, folded, "all_reduce in place" + at); !v.empty()) return v;
      if (comm.slot_rounds() - before != rounds_wanted) return "all_reduce in place" + at + ": rounds";
      return {};
    };
    for (const std::size_t n : {std::size_t{1024}, std::size_t{3000}, fits - 2, fits}) {
      if (auto v = check(n, false, 1); !v.empty()) return v;
    }
    if (auto v = check(fits + 2, false, 0); !v.empty()) return v;  // two rounds above 16 KiB: the channels
    if (auto v = check(4096, true, 1); !v.empty()) return v;       // 16 KiB: 8 KiB blocks, automatic's limit
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  const auto three = plait_test::run_ranks(m, 3, [](plait::shm::communicator& comm) -> std::string {
    // 8 KiB blocks: direct's first round sends two, 16 KiB and a table.
    std::vector<std::int32_t> values(3 * 2048, comm.rank() + 1), sums(3 * 2048, -1);
    const std::uint64_t before = comm.slot_rounds();
    plait::all_reduce(comm, values, sums, plait::sum{});
    if (std::any_of(sums.begin(), sums.end(), [](std::int32_t x) { return x != 6; })) return "wrong sum";
    if (comm.slot_rounds() != before) return "a three-rank all_reduce with rounds above 16 KiB took the shared slots";
    // Blocks of 1031 floats: two rounds, the second copying each combined
    // block (over 2 KiB, an odd length) into the slot; the left fold's bits.
    const std::size_t n = 3 * 1031;
    std::vector<float> mine(n), folded(n), reduced(n, -1.0F);
    for (std::size_t i = 0; i < n; ++i) {
      mine[i] = term(comm.rank(), i);
      folded[i] = term(0, i) + term(1, i) + term(2, i);
    }
    const std::uint64_t two_before = comm.slot_rounds();
    plait::all_reduce<plait::direct>(comm, mine, reduced, plait::ordered<plait::sum>{});
    if (auto v = plait_test::compare(reduced, folded, "three-rank all_reduce of 1031-float blocks"); !v.empty())
      return v;
    if (comm.slot_rounds() - two_before != 2)
      return "a three-rank all_reduce of 1031-float blocks did not take two rounds";
    return {};
  });
  REQUIRE(plait_test::failures(three) == "");
  // automatic's own rule agrees: 8 KiB blocks go to the slots on two ranks, not on three.
  using all_reduce = plait::op::all_reduce<>;
  CHECK(plait::detail::through_shared_slots<plait::automatic, all_reduce, plait::shm::communicator>(2, 8 << 10));
  CHECK_FALSE(plait::detail::through_shared_slots<plait::automatic, all_reduce, plait::shm::communicator>(3, 8 << 10));
}

TEST_CASE("Automatic sends a call through the slots exactly when the slot run fits its rounds", "[shm][slots]") {
  // Both size a round with core/slot_table.hpp: a three-rank all-reduce's
  // first round sends two blocks, so blocks that fill the round limit with
  // the table go through the slots under automatic and direct alike, and
  // blocks one alignment step larger go through the channels under both
  // (automatic's rule once charged a larger table and sent the first to the
  // channels while direct ran them through the slots).
  using all_reduce = plait::op::all_reduce<>;
  using shm = plait::shm::communicator;
  constexpr std::size_t filling = (plait::detail::slot_round_limit<shm>() - plait::detail::slot_data_offset(2)) / 2;
  constexpr std::size_t larger = filling + plait::detail::slot_alignment;
  STATIC_REQUIRE(filling % plait::detail::slot_alignment == 0);
  STATIC_REQUIRE(plait::detail::slot_round_size(2, filling) == plait::detail::slot_round_limit<shm>());
  CHECK(plait::detail::through_shared_slots<plait::automatic, all_reduce, shm>(3, filling));
  CHECK_FALSE(plait::detail::through_shared_slots<plait::automatic, all_reduce, shm>(3, larger));
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](shm& comm) -> std::string {
    for (const std::size_t block_bytes : {filling, larger}) {
      const std::uint64_t rounds_wanted = block_bytes == filling ? 2 : 0;
      const std::size_t n = 3 * block_bytes / sizeof(std::int32_t);
      for (const bool automatic : {true, false}) {
        const std::string at = std::to_string(block_bytes) + "-byte blocks" + (automatic ? " (automatic)" : "");
        std::vector<std::int32_t> values(n, comm.rank() + 1), sums(n, -1);
        const std::uint64_t before = comm.slot_rounds();
        if (automatic) {
          plait::all_reduce(comm, values, sums, plait::sum{});
        } else {
          plait::all_reduce<plait::direct>(comm, values, sums, plait::sum{});
        }
        if (std::any_of(sums.begin(), sums.end(), [](std::int32_t x) { return x != 6; })) return "wrong sum, " + at;
        if (comm.slot_rounds() - before != rounds_wanted) {
          return "all_reduce of " + at + " ran " + std::to_string(comm.slot_rounds() - before) +
                 " shared-slot rounds, expected " + std::to_string(rounds_wanted);
        }
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("Automatic on shm charges single copies and staged folds and all-reduces 16-64 KiB on two ranks by ring",
          "[shm][automatic]") {
  // Ring's two 8 KiB steps measured 4.4 us against 15 us for recursive
  // doubling's one exchange of both blocks, which goes by single copy between
  // processes and is staged before it folds; the default model, without those
  // terms, ranks them the other way.
  constexpr plait::cost_model m = plait::shm::communicator::cost_model();
  STATIC_REQUIRE(m.rendezvous_bytes == plait::shm::detail::process_single_copy_bytes);
  STATIC_REQUIRE(m.alpha_rendezvous > 0);
  STATIC_REQUIRE(m.beta_staged > 0);
  CHECK(plait::explain<plait::op::all_reduce<>, plait::automatic, plait::shm::communicator>(2, 32 << 10).id ==
        plait::algorithm_id::ring);
  using all_reduce = plait::op::all_reduce<>;
  CHECK(plait::explain<all_reduce, plait::automatic, plait::shm::communicator>(2, 8 << 10).id ==
        plait::algorithm_id::ring);
  CHECK(plait::explain<all_reduce, plait::automatic>(2, 8 << 10).id == plait::algorithm_id::recursive_doubling);
}

TEST_CASE("A blocking shared-slot call runs while a nonblocking collective is in flight", "[shm][slots]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) -> std::string {
    std::vector<std::int32_t> big(64 << 10, comm.rank()), big_all(3 * (64 << 10));
    auto request = plait::iall_gather<plait::ring>(comm, big, big_all);
    std::vector<std::int32_t> small(4, comm.rank() + 10), small_all(12);
    plait::all_gather<plait::direct>(comm, small, small_all);
    request.wait();
    for (int r = 0; r < 3; ++r) {
      if (small_all[static_cast<std::size_t>(r) * 4] != r + 10 || big_all[static_cast<std::size_t>(r) << 16] != r) {
        return "wrong result";
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("A rank that never joins a shared-slot round times out naming the call and the peer", "[shm][slots]") {
  std::vector<std::string> errors(2);
  try {
    plait::shm::run_threads(2, [&](plait::shm::communicator& comm) {
      comm.set_timeout(std::chrono::milliseconds(300));
      if (comm.rank() == 1) return;  // never joins
      std::vector<std::int32_t> mine(4, 1), all(8);
      try {
        plait::all_gather<plait::direct>(comm, mine, all);
      } catch (const plait::error& e) {
        errors[0] = e.what();
        throw;
      }
    });
  } catch (const plait::error&) {
  }
  INFO(errors[0]);
  CHECK(errors[0].find("all_gather<direct>") != std::string::npos);
  CHECK(errors[0].find("rank 1") != std::string::npos);
  CHECK(errors[0].find("shared slot") != std::string::npos);
}

TEST_CASE("A rank that learns of a failed shared-slot round from the group names the call then and later",
          "[shm][slots]") {
  // Rank 0 skips the call; whichever of ranks 1 and 2 times out first marks
  // the group failed, and the other reads that failure in its round's wait.
  // Both errors, and both ranks' next ones, name the call (the soak found
  // the second rank's dropping it).
  std::vector<std::string> first(3), later(3), operation(3);
  plait::shm::run_threads(3, [&](plait::shm::communicator& comm) {
    comm.set_timeout(std::chrono::milliseconds(300));
    const auto me = static_cast<std::size_t>(comm.rank());
    if (me == 0) return;  // never joins
    std::vector<std::int32_t> mine(4, 1), all(12);
    try {
      plait::all_gather<plait::direct>(comm, mine, all);
    } catch (const plait::error& e) {
      first[me] = e.what();
      operation[me] = e.operation();
    }
    try {
      plait::all_gather<plait::direct>(comm, mine, all);
    } catch (const plait::error& e) {
      later[me] = e.what();
    }
  });
  for (std::size_t r = 1; r < 3; ++r) {
    INFO("rank " << r << ": " << first[r] << "\nthen: " << later[r]);
    CHECK(operation[r] == "all_gather<direct>");
    CHECK(first[r].find("rank 0") != std::string::npos);
    CHECK(later[r].find("poisoned by all_gather<direct>") != std::string::npos);
  }
}

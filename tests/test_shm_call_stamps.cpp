// plait-test-labels: quick shm sanitize
// Call stamps without check mode: every shm message carries a 32-bit stamp of
// its call (kind, algorithm and layout) next to its tag, so ranks that run
// different collectives under the same call sequence fail naming both calls
// instead of taking each other's bytes as their own: a rank that sees the
// other's stamp with size_mismatch, a rank whose peer saw it first with
// peer_lost quoting the peer's reason.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.hpp"

using namespace std::chrono_literals;
using plait_test::mode;

namespace {
// How a rank learnt of the conflict: it saw the peer's stamp itself, or the
// peer saw this rank's first, marked the group failed and this rank's wait
// ended with peer_lost quoting the peer's reason. Which one happens depends
// on which rank looks at the other's message first.
const std::string detected = "detected";
const std::string quoted = "quoted";

/// The call must throw size_mismatch naming `words` (returns `detected`), or
/// peer_lost quoting the peer's size_mismatch, whose text names `words` as
/// well (returns `quoted`); and no element of `result` may hold `peer_value`,
/// what the peer sent (its own block may be copied before any message
/// arrives). Anything else is returned as the failure.
std::string expect_conflict(plait::shm::communicator& comm, const std::function<void()>& call,
                            const std::vector<std::string>& words, const std::vector<int>& result, int peer_value) {
  comm.set_timeout(5s);
  std::string how;
  try {
    call();
    return "the mismatched call went through";
  } catch (const plait::error& e) {
    const std::string what = e.what();
    // "rank 1 failed on a transfer with rank 0: ..." (or "rank 1 failed: ...").
    const std::string peer_failed = "the group failed: rank " + std::to_string(1 - comm.rank()) + " failed";
    if (e.code() == plait::errc::size_mismatch) {
      how = detected;
    } else if (e.code() == plait::errc::peer_lost && what.find(peer_failed) != std::string::npos) {
      how = quoted;
    } else {
      return std::string("wrong code: ") + what;
    }
    for (const auto& w : words) {
      if (what.find(w) == std::string::npos) return "message lacks '" + w + "': " + what;
    }
  }
  for (int v : result) {
    if (v == peer_value) return "the failed call wrote the peer's bytes into the result";
  }
  return how;
}

/// "" when every rank learnt of the conflict and at least one saw it itself.
std::string conflict_failures(std::vector<std::string> verdicts) {
  bool any_detected = false;
  for (std::string& v : verdicts) {
    any_detected = any_detected || v == detected;
    if (v == detected || v == quoted) v.clear();
  }
  const std::string out = plait_test::failures(verdicts);
  return out.empty() && !any_detected ? "no rank saw the conflict itself: each quoted the other\n" : out;
}
}  // namespace

TEST_CASE("ranks that call all_gather and all_to_all with the same bytes both fail naming both calls",
          "[shm][stamps]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  // 4-int messages: chunks; 4096-int messages: single copy by reference.
  const std::size_t n = GENERATE(std::size_t{4}, std::size_t{4096});
  const auto verdicts = plait_test::run_ranks(m, 2, [n](plait::shm::communicator& comm) {
    // Rank 0 sends 1s (all_gather), rank 1 sends 7s (all_to_all).
    std::vector<int> mine(n, 1), all(2 * n, -1);
    return expect_conflict(
        comm,
        [&] {
          if (comm.rank() == 0) {
            plait::all_gather<plait::ring>(comm, mine, all);
          } else {
            std::vector<int> send(2 * n, 7);
            plait::all_to_all<plait::pairwise>(comm, send, all);
          }
        },
        {"all_gather", "all_to_all", "peer " + std::to_string(1 - comm.rank())}, all, comm.rank() == 0 ? 7 : 1);
  });
  REQUIRE(conflict_failures(verdicts) == "");
}

TEST_CASE("ranks that all-gather the same bytes as int8 and as float both fail naming both element types",
          "[shm][stamps][element]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  // 8-byte messages: chunks; 64 KiB messages: single copy by reference.
  const std::size_t bytes = GENERATE(std::size_t{8}, std::size_t{1} << 16);
  const auto verdicts = plait_test::run_ranks(m, 2, [bytes](plait::shm::communicator& comm) {
    // Rank 0 sends `bytes` int8 of 1, rank 1 bytes / 4 floats of 7: the same
    // byte counts, so only the stamp's element byte tells them apart.
    std::vector<std::int8_t> small(bytes, 1), small_all(2 * bytes, -1);
    std::vector<float> wide(bytes / 4, 7.0F), wide_all(bytes / 2, -1.0F);
    std::string verdict = expect_conflict(
        comm,
        [&] {
          if (comm.rank() == 0) {
            plait::all_gather<plait::ring>(comm, small, small_all);
          } else {
            plait::all_gather<plait::ring>(comm, wide, wide_all);
          }
        },
        {"all_gather", "of int8", "of float", "element types"}, {}, 0);
    // No peer byte may land: rank 0's block 1 stays -1, rank 1's block 0 stays -1.
    if (comm.rank() == 0 && small_all[bytes] != -1) return std::string("the float bytes landed as int8");
    if (comm.rank() == 1 && wide_all[0] != -1.0F) return std::string("the int8 bytes landed as float");
    return verdict;
  });
  REQUIRE(conflict_failures(verdicts) == "");
}

TEST_CASE("bundles whose members hold other element types on another rank fail", "[shm][stamps][element]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) {
    // Both ranks move 4 + 8 bytes a member pair: int32 then double on rank 0,
    // float then int64 on rank 1.
    std::vector<std::int32_t> a(1, 1), a_all(2, -1);
    std::vector<double> b(1, 1.0), b_all(2, -1.0);
    std::vector<float> c(1, 7.0F), c_all(2, -1.0F);
    std::vector<std::int64_t> d(1, 7), d_all(2, -1);
    return expect_conflict(
        comm,
        [&] {
          if (comm.rank() == 0) {
            plait::all_gather<plait::ring>(comm, plait::bundle(a, b), plait::bundle(a_all, b_all));
          } else {
            plait::all_gather<plait::ring>(comm, plait::bundle(c, d), plait::bundle(c_all, d_all));
          }
        },
        {"all_gather", "a bundle of several element types"}, {}, 0);
  });
  REQUIRE(conflict_failures(verdicts) == "");
}

TEST_CASE("plait::half and plait::bfloat16 are told apart, and from int16", "[shm][stamps][element]") {
  STATIC_REQUIRE(plait::element_code<plait::half> != plait::element_code<plait::bfloat16>);
  STATIC_REQUIRE(plait::element_code<plait::half> != plait::element_code<std::int16_t>);
  STATIC_REQUIRE(plait::element_code<std::int16_t> != plait::element_code<std::uint16_t>);
  STATIC_REQUIRE(plait::element_code<const float> == plait::element_code<float>);
  struct twelve {
    char bytes[12];
  };
  struct forty {
    char bytes[40];
  };
  REQUIRE(plait::describe_element(plait::element_code<twelve>) == "bytes of size 12");
  REQUIRE(plait::describe_element(plait::element_code<plait::bfloat16>) == "bfloat16");
  REQUIRE(plait::describe_element(plait::element_code<std::uint64_t>) == "uint64");
  // 40-byte structs: the size lives in the digest, so 40 and 48 differ.
  struct forty_eight {
    char bytes[48];
  };
  using op = plait::op::all_gather;
  constexpr auto s40 = plait::detail::collective_stamp<op, plait::contiguous, forty>("ring");
  constexpr auto s48 = plait::detail::collective_stamp<op, plait::contiguous, forty_eight>("ring");
  STATIC_REQUIRE(plait::stamps_conflict(s40, s48));
}

TEST_CASE("ranks that call the same all_to_all with different layouts fail naming both calls", "[shm][stamps]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) {
    // 2 x 2 ints on each rank: both layouts move 8 bytes each way.
    std::vector<int> send(4, comm.rank()), recv(4, -1);
    return expect_conflict(
        comm,
        [&] {
          auto in = plait::tensor_view<const int, 2>(send.data(), {2, 2});
          if (comm.rank() == 0) {
            auto out = plait::tensor_view<int, 2>(recv.data(), {2, 2});
            plait::all_to_all<plait::pairwise, plait::redistribute<1, 1>>(comm, in, out);
          } else {
            auto out = plait::tensor_view<int, 2>(recv.data(), {2, 2});
            plait::all_to_all<plait::pairwise, plait::redistribute<0, 0>>(comm, in, out);
          }
        },
        {"all_to_all (algorithm and layout digest", "where this rank runs all_to_all"}, recv, 1 - comm.rank());
  });
  REQUIRE(conflict_failures(verdicts) == "");
}

TEST_CASE("of four ranks, the one whose element type differs is blamed, also where it sees the conflict first",
          "[shm][stamps][element]") {
  // Rank 2 all-gathers floats where the others all-gather int32s of the
  // same bytes. A pair alone cannot tell which of them is wrong; the other
  // ranks can. direct at 8 bytes runs a shared-slot round, where every rank
  // has posted its stamp when rank 2 reads them. In the ring rank 2 comes
  // 50 ms late and rank 3 150 ms: rank 2 then sees rank 1's message first,
  // while ranks 0 and 1 wait in the call, and their wait records say what
  // they run. Before, rank 2 blamed rank 1 (slots: rank 0), and in the ring
  // every other rank's peer_lost named rank 1 too.
  const mode m = GENERATE(mode::threads, mode::processes);
  const bool slots = GENERATE(true, false);
  CAPTURE(slots);
  const auto verdicts = plait_test::run_ranks(m, 4, [slots](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(5s);
    if (!slots && comm.rank() >= 2) std::this_thread::sleep_for(comm.rank() == 2 ? 50ms : 150ms);
    std::vector<int> ints(2, 1), int_all(8, -1);
    std::vector<float> floats(2, 1.0F), float_all(8, -1.0F);
    const auto gather = [&](auto& mine, auto& all) {
      if (slots) {
        plait::all_gather<plait::direct>(comm, mine, all);
      } else {
        plait::all_gather<plait::ring>(comm, mine, all);
      }
    };
    try {
      if (comm.rank() == 2) {
        gather(floats, float_all);
      } else {
        gather(ints, int_all);
      }
      return "the mismatched call went through";
    } catch (const plait::error& e) {
      const std::string what = e.what();
      // Rank 2 itself: it saw the conflict and names itself, or another
      // rank's verdict (naming rank 2) ended its wait, and a rank never
      // names itself in peer_lost.
      if (comm.rank() == 2 && e.code() == plait::errc::peer_lost) return {};
      if (e.peer() != 2) return "names rank " + std::to_string(e.peer()) + ": " + what;
      if (comm.rank() == 2 && what.find("'s call too: this rank's is the odd one") == std::string::npos) {
        return "does not say why it is the odd one: " + what;
      }
      return {};
    }
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("matching calls still work, and automatic matches the algorithm it runs", "[shm][stamps]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(5s);
    for (int round = 0; round < 40; ++round) {  // more calls than the core remembers stamps for
      std::vector<int> mine(3, comm.rank() * 100 + round), all(6, -1);
      // Rank 1 asks for direct by name, rank 0 for automatic, which picks
      // direct for this size on shm (through its shared slots).
      if (comm.rank() == 0) {
        plait::all_gather<plait::automatic>(comm, mine, all);
      } else {
        plait::all_gather<plait::direct>(comm, mine, all);
      }
      for (int r = 0; r < 2; ++r) {
        for (int i = 0; i < 3; ++i) {
          if (all[static_cast<std::size_t>(3 * r + i)] != r * 100 + round) return "wrong value";
        }
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("user point-to-point messages carry no stamp and are never compared", "[shm][stamps]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(5s);
    std::vector<int> mine(2, comm.rank()), all(4, -1);
    plait::all_gather<plait::ring>(comm, mine, all);  // rank's tag 1 now has an all_gather stamp
    // Tag 0 is the user's; tag 1 reused by hand on one side only: the
    // receiver's stamp for tag 1 is known, the sender's (rank 1) as well, but
    // the message of tag 0 has none.
    std::vector<int> box(8, comm.rank() + 10);
    if (comm.rank() == 0) {
      comm.send(1, std::as_bytes(std::span(box)));
    } else {
      std::vector<int> got(8, 0);
      comm.recv(0, std::as_writable_bytes(std::span(got)));
      if (got != std::vector<int>(8, 10)) return "user message scrambled";
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

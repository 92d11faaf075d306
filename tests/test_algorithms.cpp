// plait-test-labels: quick shm
// plait-test-timeout: 600
// Every algorithm x operation end to end through the public API on the shm
// transport, as threads and as processes, for P = 1..9 and 16, with shards of
// 0, 1, an odd count of 12-byte elements and ~1 MiB per rank; results are
// compared with a serial reference, and each rank's payload bytes with what
// its schedule says it sends. Ranks only collect verdicts; the main thread asserts.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <plait/plait.hpp>

#include "plait/algorithm/algorithm_id.hpp"
#include "plait/algorithm/automatic.hpp"
#include "support/harness.hpp"

namespace {

namespace op = plait::op;
using plait_test::mode;

/// Payload blocks one rank's schedule sends (what bytes_sent must grow by, per byte of block).
template <class A, class Op>
std::uint64_t blocks_sent(int rank, int size) {
  if constexpr (plait::detail::is_automatic<A>) {
    return 0;  // not known before the choice; not checked
  } else {
    std::uint64_t n = 0;
    for (const auto& st : A::plan(Op{}, rank, size).steps) {
      for (const auto& x : st.sends) n += x.blocks.size();
    }
    return n;
  }
}

template <class A, class T>
std::string all_gather_once(plait::shm::communicator& comm, std::size_t n, int salt) {
  const int r = comm.rank();
  const int p = comm.size();
  std::vector<T> send(n);
  for (std::size_t i = 0; i < n; ++i) send[i] = plait_test::make_value<T>(r, i, salt);
  std::vector<T> recv(n * static_cast<std::size_t>(p));
  std::vector<T> want(recv.size());
  for (int j = 0; j < p; ++j) {
    for (std::size_t i = 0; i < n; ++i)
      want[static_cast<std::size_t>(j) * n + i] = plait_test::make_value<T>(j, i, salt);
  }
  const std::uint64_t before = comm.bytes_sent();
  plait::all_gather<A>(comm, send, recv);
  const std::uint64_t sent = comm.bytes_sent() - before;
  const std::string what = "all_gather n=" + std::to_string(n) + " elements of " + std::to_string(sizeof(T)) + " bytes";
  std::string verdict = plait_test::compare(recv, want, what);
  if (verdict.empty() && !plait::detail::is_automatic<A>) {
    const std::uint64_t expected = blocks_sent<A, op::all_gather>(r, p) * n * sizeof(T);
    if (sent != expected) {
      verdict =
          what + ": sent " + std::to_string(sent) + " payload bytes, the schedule says " + std::to_string(expected);
    }
  }
  return verdict;
}

template <class A, class T>
std::string all_to_all_once(plait::shm::communicator& comm, std::size_t n, int salt) {
  const int r = comm.rank();
  const auto p = static_cast<std::size_t>(comm.size());
  std::vector<T> send(n * p);
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = plait_test::make_value<T>(r, i, salt);
  std::vector<T> recv(n * p);
  std::vector<T> want(n * p);
  for (std::size_t s = 0; s < p; ++s) {
    for (std::size_t i = 0; i < n; ++i) {
      want[s * n + i] = plait_test::make_value<T>(static_cast<int>(s), static_cast<std::size_t>(r) * n + i, salt);
    }
  }
  const std::uint64_t before = comm.bytes_sent();
  plait::all_to_all<A>(comm, send, recv);
  const std::uint64_t sent = comm.bytes_sent() - before;
  const std::string what = "all_to_all n=" + std::to_string(n) + " elements of " + std::to_string(sizeof(T)) + " bytes";
  std::string verdict = plait_test::compare(recv, want, what);
  if (verdict.empty() && !plait::detail::is_automatic<A>) {
    const std::uint64_t expected = blocks_sent<A, op::all_to_all>(r, comm.size()) * n * sizeof(T);
    if (sent != expected) {
      verdict =
          what + ": sent " + std::to_string(sent) + " payload bytes, the schedule says " + std::to_string(expected);
    }
  }
  return verdict;
}

/// Runs Op under A on P ranks for every size of the shared test body; returns
/// every rank's failures, "" when all passed.
template <class A, class Op>
std::string run_sizes(mode m, int p) {
  // ~1 MiB per rank in the larger buffer (recv for all-gather, send for all-to-all).
  const std::size_t large = (std::size_t{1} << 20) / (sizeof(std::uint64_t) * static_cast<std::size_t>(p));
  const bool few = p > 9;  // keep P = 16 cheap on 2 cores
  auto verdicts = plait_test::run_ranks(m, p, [&](plait::shm::communicator& comm) -> std::string {
    auto once = [&]<class T>(std::size_t n, int salt) {
      if constexpr (std::is_same_v<Op, op::all_gather>) {
        return all_gather_once<A, T>(comm, n, salt);
      } else {
        return all_to_all_once<A, T>(comm, n, salt);
      }
    };
    std::string out;
    if (!few) out += once.template operator()<std::uint64_t>(0, 1);
    if (out.empty() && !few) out += once.template operator()<std::uint8_t>(1, 2);
    if (out.empty()) out += once.template operator()<plait_test::triple>(13, 3);
    if (out.empty()) out += once.template operator()<std::uint64_t>(large, 4);
    return out;
  });
  return plait_test::failures(verdicts);
}

template <class A, class Op>
void check_all_sizes(mode m) {
  for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16}) {
    if (!plait::accepts<A, Op>(p)) continue;
    CAPTURE(p, plait_test::to_string(m));
    CHECK(run_sizes<A, Op>(m, p) == "");
  }
}

}  // namespace

// One test case per algorithm x operation x mode, so a failure names all three.
#define PLAIT_ALGORITHM_CASE(alg, op_type, op_text, mode_name)                   \
  TEST_CASE(#alg " " op_text " matches the serial reference on shm " #mode_name, \
            "[" #op_type "][" #alg "][shm][" #mode_name "]") {                   \
    check_all_sizes<plait::alg, op::op_type>(mode::mode_name);                   \
  }

PLAIT_ALGORITHM_CASE(ring, all_gather, "all-gather", threads)
PLAIT_ALGORITHM_CASE(ring, all_gather, "all-gather", processes)
PLAIT_ALGORITHM_CASE(tree, all_gather, "all-gather", threads)
PLAIT_ALGORITHM_CASE(tree, all_gather, "all-gather", processes)
PLAIT_ALGORITHM_CASE(pairwise, all_gather, "all-gather", threads)
PLAIT_ALGORITHM_CASE(pairwise, all_gather, "all-gather", processes)
PLAIT_ALGORITHM_CASE(bruck, all_gather, "all-gather", threads)
PLAIT_ALGORITHM_CASE(bruck, all_gather, "all-gather", processes)
PLAIT_ALGORITHM_CASE(recursive_doubling, all_gather, "all-gather", threads)
PLAIT_ALGORITHM_CASE(recursive_doubling, all_gather, "all-gather", processes)
PLAIT_ALGORITHM_CASE(direct, all_gather, "all-gather", threads)
PLAIT_ALGORITHM_CASE(direct, all_gather, "all-gather", processes)
PLAIT_ALGORITHM_CASE(neighbor_exchange, all_gather, "all-gather", threads)
PLAIT_ALGORITHM_CASE(neighbor_exchange, all_gather, "all-gather", processes)
PLAIT_ALGORITHM_CASE(automatic, all_gather, "all-gather", threads)
PLAIT_ALGORITHM_CASE(automatic, all_gather, "all-gather", processes)
PLAIT_ALGORITHM_CASE(ring, all_to_all, "all-to-all", threads)
PLAIT_ALGORITHM_CASE(ring, all_to_all, "all-to-all", processes)
PLAIT_ALGORITHM_CASE(pairwise, all_to_all, "all-to-all", threads)
PLAIT_ALGORITHM_CASE(pairwise, all_to_all, "all-to-all", processes)
PLAIT_ALGORITHM_CASE(bruck, all_to_all, "all-to-all", threads)
PLAIT_ALGORITHM_CASE(bruck, all_to_all, "all-to-all", processes)
PLAIT_ALGORITHM_CASE(direct, all_to_all, "all-to-all", threads)
PLAIT_ALGORITHM_CASE(direct, all_to_all, "all-to-all", processes)
PLAIT_ALGORITHM_CASE(automatic, all_to_all, "all-to-all", threads)
PLAIT_ALGORITHM_CASE(automatic, all_to_all, "all-to-all", processes)

#undef PLAIT_ALGORITHM_CASE

TEST_CASE("neighbor_exchange all-gather on an odd number of ranks is unsupported before any byte moves",
          "[all_gather][neighbor_exchange][shm][threads]") {
  for (int p : {3, 5}) {
    CAPTURE(p);
    auto verdicts = plait_test::run_ranks(mode::threads, p, [](plait::shm::communicator& comm) -> std::string {
      const std::vector<std::uint32_t> send(4, 7);
      std::vector<std::uint32_t> recv(4 * static_cast<std::size_t>(comm.size()), 0xdeadbeef);
      const std::uint64_t before = comm.bytes_sent();
      try {
        plait::all_gather<plait::neighbor_exchange>(comm, send, recv);
      } catch (const plait::error& e) {
        if (e.code() != plait::errc::unsupported) return std::string("wrong error: ") + e.what();
        for (auto v : recv) {
          if (v != 0xdeadbeef) return "recv was written before the error";
        }
        if (comm.bytes_sent() != before) return "bytes moved before the error";
        return {};
      }
      return "no error for an odd number of ranks";
    });
    CHECK(plait_test::failures(verdicts) == "");
  }
}

TEST_CASE("automatic with a tuning runs the algorithm the tuning allows", "[all_to_all][automatic][shm][threads]") {
  struct only_direct {
    static constexpr plait::cost_model cost_model() { return {}; }
    static constexpr bool allows(plait::algorithm_id id) { return id == plait::algorithm_id::direct; }
  };
  using tuned = plait::automatic_with<only_direct>;
  for (int p : {3, 10}) {
    CAPTURE(p);
    auto verdicts = plait_test::run_ranks(mode::threads, p, [](plait::shm::communicator& comm) -> std::string {
      const std::uint64_t before = comm.bytes_sent();
      std::string out = all_to_all_once<tuned, std::uint32_t>(comm, 5, 9);
      // direct sends exactly P-1 blocks of 5 elements.
      const std::uint64_t want = static_cast<std::uint64_t>(comm.size() - 1) * 5 * sizeof(std::uint32_t);
      if (out.empty() && comm.bytes_sent() - before != want) out = "tuned automatic did not run direct";
      return out;
    });
    CHECK(plait_test::failures(verdicts) == "");
  }
}

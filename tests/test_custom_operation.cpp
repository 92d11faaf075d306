// plait-test-labels: quick shm sanitize
// An operation and an algorithm that exist only in the tests
// (tests/support/custom_operation.hpp), and nowhere in include/, get every
// form from the engine: blocking, nonblocking and persistent, even and v,
// bundles, on a two_level (flat on its whole communicator), check mode, and
// call stamps whose messages name the operation; the diagnostics are
// checked by tests/compile_fail/custom_operation_fail.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/custom_operation.hpp"
#include "support/harness.hpp"
#include "support/shm_levels.hpp"

namespace {

using custom::shift;
using custom::shift_once;
using plait_test::mode;

std::uint32_t value(int rank, std::size_t i, int round) {
  return static_cast<std::uint32_t>(rank) * 100000u + static_cast<std::uint32_t>(i) * 10u +
         static_cast<std::uint32_t>(round);
}

/// "" if `got` is what rank `from` sent in `round`.
template <class T>
std::string expect_block(const std::vector<T>& got, int from, int round, const char* form) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != static_cast<T>(value(from, i, round))) {
      return std::string(form) + ": element " + std::to_string(i) + " is not rank " + std::to_string(from) + "'s";
    }
  }
  return {};
}

/// Every form of shift<shift_once> on `comm` (any communicator type the
/// forms take: a transport or a two_level), checked on this rank.
template <class Comm>
std::string every_form(Comm& comm, int rank, int size) {
  const int left = (rank + size - 1) % size;
  std::string out;
  // Blocking, 5 elements per block.
  std::vector<std::uint32_t> send(5), recv(5, 0);
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = value(rank, i, 1);
  plait::run_collective<shift, shift_once>(comm, send, recv);
  out += expect_block(recv, left, 1, "blocking");
  // Nonblocking: two in flight.
  std::vector<std::uint32_t> send2(3), recv2(3, 0);
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = value(rank, i, 2);
  for (std::size_t i = 0; i < send2.size(); ++i) send2[i] = value(rank, i, 3);
  auto a = plait::start_collective<shift, shift_once>(comm, send, recv);
  auto b = plait::start_collective<shift, shift_once>(comm, send2, recv2);
  b.wait();
  a.wait();
  out += expect_block(recv, left, 2, "nonblocking") + expect_block(recv2, left, 3, "nonblocking");
  // Persistent: three starts with fresh contents.
  auto p = plait::init_collective<shift, shift_once>(comm, send, recv);
  for (int round = 4; round < 7; ++round) {
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = value(rank, i, round);
    p.start();
    p.wait();
    out += expect_block(recv, left, round, "persistent");
  }
  // A bundle of two element types in one collective.
  std::vector<double> dsend(2), drecv(2, 0);
  for (std::size_t i = 0; i < dsend.size(); ++i) dsend[i] = value(rank, i, 7);
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = value(rank, i, 7);
  plait::run_collective<shift, shift_once>(comm, plait::bundle(send, dsend), plait::bundle(recv, drecv));
  out += expect_block(recv, left, 7, "bundle") + expect_block(drecv, left, 7, "bundle");
  // v forms: rank j's block holds (2j + 1) % 4 elements (zeros included).
  std::vector<int> counts(static_cast<std::size_t>(size));
  for (int j = 0; j < size; ++j) counts[static_cast<std::size_t>(j)] = (2 * j + 1) % 4;
  std::vector<std::uint32_t> vsend(static_cast<std::size_t>(counts[static_cast<std::size_t>(rank)]));
  std::vector<std::uint32_t> vrecv(static_cast<std::size_t>(counts[static_cast<std::size_t>(left)]), 0);
  for (std::size_t i = 0; i < vsend.size(); ++i) vsend[i] = value(rank, i, 8);
  plait::run_collective_v<shift, shift_once>(comm, vsend, vrecv, counts);
  out += expect_block(vrecv, left, 8, "v");
  for (std::size_t i = 0; i < vsend.size(); ++i) vsend[i] = value(rank, i, 9);
  auto v = plait::start_collective_v<shift, shift_once>(comm, vsend, vrecv, counts);
  v.wait();
  out += expect_block(vrecv, left, 9, "nonblocking v");
  auto pv = plait::init_collective_v<shift, shift_once>(comm, vsend, vrecv, counts);
  for (std::size_t i = 0; i < vsend.size(); ++i) vsend[i] = value(rank, i, 10);
  pv.start();
  pv.wait();
  out += expect_block(vrecv, left, 10, "persistent v");
  return out;
}

}  // namespace

TEST_CASE("an operation and an algorithm defined in a test get every form, with and without check mode",
          "[custom][shm]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5);
  const bool check = GENERATE(false, true);
  CAPTURE(plait_test::to_string(m), ranks, check);
  const auto verdicts = plait_test::run_ranks(m, ranks, [check](plait::shm::communicator& comm) {
    comm.set_check_mode(check);
    return every_form(comm, comm.rank(), comm.size());
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("an operation defined in a test gets every form on a two_level, flat on its whole communicator",
          "[custom][two_level]") {
  const int ranks = GENERATE(2, 4, 6);
  CAPTURE(ranks);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [](plait::shm::communicator& world) {
    const int node = world.rank() / 2;
    auto intra = world.split(node, world.rank() % 2);
    auto inter = world.split(world.rank() % 2, node);
    plait_test::shm_levels levels(intra, inter, world);
    return every_form(levels, world.rank(), world.size());
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("ranks that run the test's operation and all_gather with the same bytes fail naming both",
          "[custom][stamps]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(std::chrono::seconds(5));
    std::vector<std::uint32_t> send(4, 1), recv(4, 0), all(8, 0);
    try {
      if (comm.rank() == 0) {
        plait::run_collective<shift, shift_once>(comm, send, recv);
      } else {
        plait::all_gather<plait::ring>(comm, send, all);
      }
      return "the mismatched calls went through";
    } catch (const plait::error& e) {
      const std::string what = e.what();
      // The rank that saw the other's stamp names both calls; its peer may
      // learn of it as peer_lost quoting that message.
      if (what.find("shift") == std::string::npos || what.find("all_gather") == std::string::npos) {
        return "the message does not name both calls: " + what;
      }
      return {};
    }
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode names the test's operation when ranks disagree on its block sizes", "[custom][check]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    comm.set_timeout(std::chrono::seconds(5));
    // Rank 1's blocks are twice rank 0's.
    std::vector<std::uint32_t> send(comm.rank() == 0 ? 3 : 6, 1), recv(send.size(), 0);
    try {
      plait::run_collective<shift, shift_once>(comm, send, recv);
      return "the disagreeing calls went through";
    } catch (const plait::error& e) {
      const std::string what = e.what();
      if (e.code() != plait::errc::size_mismatch || what.find("shift") == std::string::npos) {
        return "expected size_mismatch naming shift: " + what;
      }
      return {};
    }
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

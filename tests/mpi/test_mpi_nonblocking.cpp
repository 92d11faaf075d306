// Nonblocking and persistent collectives over plait::mpi::communicator: many
// in flight at once (MPI matches by tag, so they all move at once), results
// equal MPI_Allgather / MPI_Allgatherv / MPI_Alltoallv on the same data; a
// persistent all_gather and persistent v forms repeated; a timeout while
// collectives are pending.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../support/in_flight_workload.hpp"
#include "mpi_test.hpp"
#include "plait/mpi.hpp"

using plait_test::packed_displacements;
using plait_test::total;

TEST_CASE("mpi many collectives in flight at once, waited for in any order, equal their references",
          "[mpi][nonblocking]") {
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const std::string verdict = plait_test::many_in_flight(comm, seed);
    CAPTURE(seed, verdict);
    PLAIT_REQUIRE_ALL(verdict.empty());
  }
}

TEST_CASE("mpi iall_gather_v and iall_to_all_v in flight together equal MPI_Allgatherv and MPI_Alltoallv",
          "[mpi][nonblocking]") {
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  const int p = comm.size();
  const int me = comm.rank();
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const auto counts = plait_test::in_flight_counts(p, seed, 900);
    const auto mine = plait_test::pattern_bytes(me, static_cast<std::size_t>(counts[static_cast<std::size_t>(me)]), 5);
    std::vector<std::byte> gathered(static_cast<std::size_t>(total(counts))), gathered_want(gathered.size());

    const auto row = [&](int s) { return plait_test::in_flight_counts(p, seed * 17u + static_cast<unsigned>(s), 700); };
    const auto send_counts = row(me);
    std::vector<int> recv_counts;
    for (int s = 0; s < p; ++s) recv_counts.push_back(row(s)[static_cast<std::size_t>(me)]);
    const auto send = plait_test::pattern_bytes(me, static_cast<std::size_t>(total(send_counts)), 6);
    std::vector<std::byte> routed(static_cast<std::size_t>(total(recv_counts))), routed_want(routed.size());

    auto exchange = plait::iall_to_all_v<plait::pairwise>(comm, send, send_counts, routed, recv_counts);
    auto gather = plait::iall_gather_v<plait::ring>(comm, mine, gathered, counts);
    if ((me + static_cast<int>(seed)) % 2 == 0) {
      gather.wait();
      exchange.wait();
    } else {
      while (!exchange.test()) {
      }
      gather.wait();
    }
    const auto d = packed_displacements(counts);
    MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, gathered_want.data(), counts.data(), d.data(),
                   MPI_BYTE, MPI_COMM_WORLD);
    const auto sd = packed_displacements(send_counts);
    const auto rd = packed_displacements(recv_counts);
    MPI_Alltoallv(send.data(), send_counts.data(), sd.data(), MPI_BYTE, routed_want.data(), recv_counts.data(),
                  rd.data(), MPI_BYTE, MPI_COMM_WORLD);
    CAPTURE(seed);
    PLAIT_REQUIRE_ALL(gathered == gathered_want && routed == routed_want);
  }
}

TEST_CASE("mpi a persistent all_gather equals MPI_Allgather at every start", "[mpi][persistent]") {
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  const int p = comm.size();
  std::vector<std::byte> shard(3000), full(3000 * static_cast<std::size_t>(p)), want(full.size());
  auto gather = plait::all_gather_init<plait::recursive_doubling>(comm, shard, full);
  bool ok = true;
  for (int round = 0; round < 5; ++round) {
    const auto fresh = plait_test::pattern_bytes(comm.rank(), shard.size(), round);
    std::copy(fresh.begin(), fresh.end(), shard.begin());  // the bound buffer itself, not a new one
    gather.start();
    gather.wait();
    MPI_Allgather(shard.data(), static_cast<int>(shard.size()), MPI_BYTE, want.data(), static_cast<int>(shard.size()),
                  MPI_BYTE, MPI_COMM_WORLD);
    ok = ok && full == want;
  }
  PLAIT_REQUIRE_ALL(ok);
}

TEST_CASE("mpi persistent all_gather_v and all_to_all_v equal MPI_Allgatherv and MPI_Alltoallv at every start",
          "[mpi][persistent][uneven]") {
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  const int p = comm.size();
  const int me = comm.rank();
  const auto counts = plait_test::in_flight_counts(p, 3u, 900);
  const auto row = [&](int s) { return plait_test::in_flight_counts(p, 41u + static_cast<unsigned>(s), 700); };
  const auto send_counts = row(me);
  std::vector<int> recv_counts;
  for (int s = 0; s < p; ++s) recv_counts.push_back(row(s)[static_cast<std::size_t>(me)]);
  std::vector<std::byte> mine(static_cast<std::size_t>(counts[static_cast<std::size_t>(me)]));
  std::vector<std::byte> gathered(static_cast<std::size_t>(total(counts))), gathered_want(gathered.size());
  std::vector<std::byte> send(static_cast<std::size_t>(total(send_counts)));
  std::vector<std::byte> routed(static_cast<std::size_t>(total(recv_counts))), routed_want(routed.size());
  // ring forwards blocks, so the persistent all_to_all_v exchanges the counts once, at init.
  auto gather = plait::all_gather_v_init<plait::bruck>(comm, mine, gathered, counts);
  auto exchange = plait::all_to_all_v_init<plait::ring>(comm, send, send_counts, routed, recv_counts);
  const auto d = packed_displacements(counts);
  const auto sd = packed_displacements(send_counts);
  const auto rd = packed_displacements(recv_counts);
  bool ok = true;
  for (int round = 0; round < 4; ++round) {
    const auto fresh_part = plait_test::pattern_bytes(me, mine.size(), round);
    const auto fresh_send = plait_test::pattern_bytes(me, send.size(), 10 + round);
    std::copy(fresh_part.begin(), fresh_part.end(), mine.begin());  // the bound buffers themselves
    std::copy(fresh_send.begin(), fresh_send.end(), send.begin());
    gather.start();
    exchange.start();
    exchange.wait();
    gather.wait();
    MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, gathered_want.data(), counts.data(), d.data(),
                   MPI_BYTE, MPI_COMM_WORLD);
    MPI_Alltoallv(send.data(), send_counts.data(), sd.data(), MPI_BYTE, routed_want.data(), recv_counts.data(),
                  rd.data(), MPI_BYTE, MPI_COMM_WORLD);
    ok = ok && gathered == gathered_want && routed == routed_want;
  }
  PLAIT_REQUIRE_ALL(ok);
}

TEST_CASE("mpi a timeout while collectives are pending poisons the communicator and cancels their receives",
          "[mpi][nonblocking][timeout]") {
  plait::mpi::communicator world(MPI_COMM_WORLD);
  if (world.size() < 2) return;
  // Its own communicator: rank 0's abandoned messages stay in it.
  plait::mpi::communicator comm = world.split(0, world.rank());
  comm.set_timeout(std::chrono::milliseconds(300));
  bool ok = true;
  if (comm.rank() == 0) {
    std::vector<std::uint32_t> shard(8, 7u), full(8 * static_cast<std::size_t>(comm.size()), 0xABCDu);
    auto first = plait::iall_gather<plait::ring>(comm, shard, full);
    std::vector<std::uint32_t> blocks(full.size(), 1u), routed(full.size(), 0xABCDu);
    auto second = plait::iall_to_all<plait::pairwise>(comm, blocks, routed);
    (void)second;
    try {
      first.wait();
      ok = false;  // the peers never joined
    } catch (const plait::error& e) {
      ok = e.value() == plait::errc::timeout;
    }
    ok = ok && !comm.usable();
    for (std::size_t i = 8; i < full.size(); ++i) ok = ok && full[i] == 0xABCDu;
  }
  PLAIT_REQUIRE_ALL(ok);
}

TEST_CASE("mpi a send buffer changed while its collective is in flight fails the completion in check mode",
          "[mpi][nonblocking][send_buffers]") {
  // On MPI a change after the post reached peers as a mix of old and new
  // bytes; check mode's digest comparison reports it at wait() or test(),
  // and unchanged buffers pass.
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  comm.set_check_mode(true);
  const int p = comm.size();
  std::vector<int> mine(1 << 12, comm.rank());
  std::vector<int> all(mine.size() * static_cast<std::size_t>(p));
  std::string verdict;
  auto expect_changed = [&](auto&& complete, const char* form) {
    try {
      complete();
      verdict += std::string(form) + ": the change went unnoticed; ";
    } catch (const plait::error& e) {
      const std::string text = e.what();
      if (e.code() != plait::errc::invalid_argument || text.find("send (") == std::string::npos ||
          text.find("rank " + std::to_string(comm.rank())) == std::string::npos) {
        verdict += std::string(form) + ": " + text + "; ";
      }
    }
  };
  auto gather = plait::iall_gather<plait::ring>(comm, mine, all);
  mine[7] = -1;
  expect_changed([&] { gather.wait(); }, "iall_gather");
  auto bound = plait::all_gather_init<plait::ring>(comm, mine, all);
  bound.start();
  bound.wait();  // unchanged: passes
  bound.start();
  mine[0] = -2;
  expect_changed(
      [&] {
        while (!bound.test()) {
        }
      },
      "persistent all_gather");
  CAPTURE(verdict);
  PLAIT_REQUIRE_ALL(verdict.empty());
}

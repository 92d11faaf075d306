// plait-test-labels: quick shm sanitize
// plait-test-timeout: 300
// Nonblocking and persistent collectives on the shared-memory transport:
// many in flight at once and waited for in any order, blocking calls among
// them, a request destroyed before it was waited for, a timeout while several
// are pending, persistent start/wait cycles and the progress thread; threads
// and processes, P = 1..8.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.hpp"
#include "support/in_flight_workload.hpp"

using plait_test::mode;

TEST_CASE("many collectives in flight at once, waited for in any order, equal their references", "[nonblocking]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 4, 5, 6, 7, 8);
  const unsigned seed = GENERATE(1u, 2u);
  CAPTURE(plait_test::to_string(m), ranks, seed);
  const auto verdicts = plait_test::run_ranks(
      m, ranks, [&](plait::shm::communicator& comm) { return plait_test::many_in_flight(comm, seed); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a blocking collective made while requests are pending completes, and so do they", "[nonblocking]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    const int p = comm.size();
    plait_test::gathered first(comm.rank(), p, 6, 1);
    plait_test::gathered blocking(comm.rank(), p, 5000, 2);
    plait_test::exchanged last(comm.rank(), p, 4, 3);
    auto r1 = plait::iall_gather<plait::ring>(comm, first.send, first.recv);
    plait::all_gather<plait::pairwise>(comm, blocking.send, blocking.recv);
    auto r2 = plait::iall_to_all<plait::direct>(comm, last.send, last.recv);
    r2.wait();
    r1.wait();
    if (first.recv != first.want) return "the first nonblocking all-gather is wrong";
    if (blocking.recv != blocking.want) return "the blocking all-gather among them is wrong";
    if (last.recv != last.want) return "the last nonblocking all-to-all is wrong";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a request destroyed before it was waited for completes first", "[nonblocking]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3, 6);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    plait_test::gathered g(comm.rank(), comm.size(), 3000, 4);
    {
      auto r = plait::iall_gather<plait::ring>(comm, g.send, g.recv);
      (void)r;  // never waited for
    }
    if (g.recv != g.want) return "the destroyed request had not completed";
    plait::collective_request moved_into = plait::iall_gather<plait::bruck>(comm, g.send, g.recv);
    moved_into = plait::iall_gather<plait::ring>(comm, g.send, g.recv);  // the first completes before it is replaced
    moved_into.wait();
    if (g.recv != g.want) return "a replaced request's result is wrong";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a timeout while several collectives are pending poisons the communicator and leaves the buffers alone",
          "[nonblocking][timeout]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(std::chrono::milliseconds(300));
    plait_test::gathered first(comm.rank(), 2, 8, 1);
    if (comm.rank() == 1) {
      // Takes part in the first collective only, then stays away until
      // rank 0 has given up.
      plait::all_gather<plait::ring>(comm, first.send, first.recv);
      std::this_thread::sleep_for(std::chrono::milliseconds(900));
      return {};
    }
    std::vector<std::uint32_t> second_recv(2 * 3000, 0xABCDu), third_recv(2 * 8, 0xABCDu);
    std::vector<std::uint32_t> second_send(3000, 1u), third_send(8, 2u);
    auto r1 = plait::iall_gather<plait::ring>(comm, first.send, first.recv);
    auto r2 = plait::iall_gather<plait::ring>(comm, second_send, second_recv);
    auto r3 = plait::iall_gather<plait::pairwise>(comm, third_send, third_recv);
    r1.wait();
    std::string verdict;
    try {
      r3.wait();
      verdict = "waiting on a collective the peer never joined did not throw";
    } catch (const plait::error& e) {
      if (e.value() != plait::errc::timeout) verdict = std::string("expected a timeout, got: ") + e.what();
    }
    if (!verdict.empty()) return verdict;
    try {
      r2.wait();
      return "the other pending collective did not fail too";
    } catch (const plait::error&) {
    }
    if (comm.usable()) return "the communicator is still usable after the timeout";
    const auto second_after = second_recv;
    const auto third_after = third_recv;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (second_recv != second_after || third_recv != third_after) return "a buffer changed after the throw";
    // The peer's shard of the second all-gather never arrived.
    for (std::size_t i = 3000; i < 6000; ++i) {
      if (second_recv[i] != 0xABCDu) return "the peer's part of a failed collective was written";
    }
    try {
      auto again = plait::iall_gather<plait::ring>(comm, first.send, first.recv);
      return "a new collective started on a poisoned communicator";
    } catch (const plait::error&) {
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a persistent all_gather and all_to_all move fresh contents at every start", "[persistent]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 4, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    const int p = comm.size();
    std::vector<std::uint32_t> shard(700), full(700 * static_cast<std::size_t>(p));
    std::vector<std::uint32_t> blocks(5 * static_cast<std::size_t>(p)), routed(5 * static_cast<std::size_t>(p));
    auto gather = plait::all_gather_init<plait::ring>(comm, shard, full);
    auto exchange = plait::all_to_all_init<plait::pairwise>(comm, blocks, routed);
    if (!gather.test()) return "test() before the first start() did not return true";
    gather.wait();  // before the first start: returns at once
    for (int round = 0; round < 6; ++round) {
      for (std::size_t i = 0; i < shard.size(); ++i) shard[i] = plait_test::in_flight_value(comm.rank(), i, round);
      for (int d = 0; d < p; ++d) {
        for (std::size_t i = 0; i < 5; ++i) {
          blocks[static_cast<std::size_t>(d) * 5 + i] =
              plait_test::in_flight_value(comm.rank(), i + 100 * static_cast<std::size_t>(d), round);
        }
      }
      gather.start();
      exchange.start();
      // A one-shot collective between persistent starts.
      plait_test::gathered between(comm.rank(), p, 2, round);
      auto r = plait::iall_gather(comm, between.send, between.recv);
      if (round % 2 == 0) {
        exchange.wait();
        while (!gather.test()) {
        }
      } else {
        gather.wait();
        exchange.wait();
      }
      r.wait();
      if (between.recv != between.want) return "a one-shot collective among persistent ones is wrong";
      for (int s = 0; s < p; ++s) {
        for (std::size_t i = 0; i < shard.size(); ++i) {
          if (full[static_cast<std::size_t>(s) * 700 + i] != plait_test::in_flight_value(s, i, round))
            return "persistent all_gather: wrong element in round " + std::to_string(round);
        }
        for (std::size_t i = 0; i < 5; ++i) {
          if (routed[static_cast<std::size_t>(s) * 5 + i] !=
              plait_test::in_flight_value(s, i + 100 * static_cast<std::size_t>(comm.rank()), round))
            return "persistent all_to_all: wrong element in round " + std::to_string(round);
        }
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("persistent all_gather_v and all_to_all_v move fresh contents at every start, with zero counts",
          "[persistent][uneven]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(false);  // check mode refuses counts changed after init (the next test)
    const int p = comm.size();
    const int me = comm.rank();
    // Rank j contributes (3j + 1) % 4 elements (zeros included); rank s
    // sends (s + d) % 3 elements to rank d.
    std::vector<int> parts(static_cast<std::size_t>(p)), send_counts(parts.size()), recv_counts(parts.size());
    for (int j = 0; j < p; ++j) {
      parts[static_cast<std::size_t>(j)] = (3 * j + 1) % 4;
      send_counts[static_cast<std::size_t>(j)] = (me + j) % 3;
      recv_counts[static_cast<std::size_t>(j)] = (j + me) % 3;
    }
    auto sum = [](const std::vector<int>& v) {
      std::size_t t = 0;
      for (int x : v) t += static_cast<std::size_t>(x);
      return t;
    };
    std::vector<std::uint32_t> mine(static_cast<std::size_t>(parts[static_cast<std::size_t>(me)])), all(sum(parts));
    std::vector<std::uint32_t> blocks(sum(send_counts)), routed(sum(recv_counts));
    auto gather = plait::all_gather_v_init<plait::ring>(comm, mine, all, parts);
    auto exchange = plait::all_to_all_v_init<plait::bruck>(comm, blocks, send_counts, routed, recv_counts);
    // The counts were read at init: changing them now changes nothing.
    std::fill(parts.begin(), parts.end(), 0);
    std::fill(send_counts.begin(), send_counts.end(), 0);
    for (int round = 0; round < 4; ++round) {
      for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = plait_test::in_flight_value(me, i, round);
      std::size_t at = 0;
      for (int d = 0; d < p; ++d) {
        for (int i = 0; i < (me + d) % 3; ++i) {
          blocks[at++] = plait_test::in_flight_value(me, static_cast<std::size_t>(i + 100 * d), round);
        }
      }
      gather.start();
      exchange.start();
      exchange.wait();
      gather.wait();
      at = 0;
      for (int s = 0; s < p; ++s) {
        for (int i = 0; i < (3 * s + 1) % 4; ++i) {
          if (all[at++] != plait_test::in_flight_value(s, static_cast<std::size_t>(i), round))
            return "persistent all_gather_v: wrong element in round " + std::to_string(round);
        }
      }
      at = 0;
      for (int s = 0; s < p; ++s) {
        for (int i = 0; i < (s + me) % 3; ++i) {
          if (routed[at++] != plait_test::in_flight_value(s, static_cast<std::size_t>(i + 100 * me), round))
            return "persistent all_to_all_v: wrong element in round " + std::to_string(round);
        }
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("in check mode, start() of a persistent v form whose counts changed since init throws before any byte moves",
          "[persistent][uneven][check]") {
  const int ranks = GENERATE(1, 2, 3);
  const bool levels = GENERATE(false, true);  // on a plain two_level (hierarchical) too
  CAPTURE(ranks, levels);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [levels](plait::shm::communicator& world) {
    world.set_check_mode(true);
    auto body = [](auto& comm, const auto& check_on) -> std::string {
      const int p = comm.size();
      const int me = comm.rank();
      std::vector<int> parts(static_cast<std::size_t>(p), 2), send_counts(parts.size(), 1),
          recv_counts(parts.size(), 1);
      std::vector<std::uint32_t> mine(2, static_cast<std::uint32_t>(me)), all(2 * parts.size(), 0);
      std::vector<std::uint32_t> blocks(parts.size()), routed(parts.size(), 0);
      for (int d = 0; d < p; ++d) blocks[static_cast<std::size_t>(d)] = static_cast<std::uint32_t>(100 * me + d);
      auto gather = plait::all_gather_v_init(comm, mine, all, parts);
      auto exchange = plait::all_to_all_v_init(comm, blocks, send_counts, routed, recv_counts);
      if (!check_on()) return "check mode is off";
      const auto refused = [&](plait::persistent_collective& c, const std::string& what) -> std::string {
        try {
          c.start();
          c.wait();
          return what + ": start() moved counts changed since init; ";
        } catch (const plait::error& e) {
          const std::string text = e.what();
          if (e.value() != plait::errc::invalid_argument) return what + ": wrong error code: " + text + "; ";
          if (text.find(what) == std::string::npos || text.find("at init") == std::string::npos ||
              text.find("rank " + std::to_string(me)) == std::string::npos) {
            return "unclear message: " + text + "; ";
          }
          if (c.active()) return what + ": active after a refused start(); ";
        }
        return {};
      };
      // Every rank changes the same count, so every rank refuses before any byte moves.
      parts[0] = 3;
      std::string verdict = refused(gather, "recv_counts[0] is 3 at this start() but was 2 at init");
      parts[0] = 2;
      send_counts.back() = 0;
      verdict += refused(exchange, "send_counts[" + std::to_string(p - 1) + "] is 0 at this start() but was 1");
      send_counts.back() = 1;
      recv_counts.push_back(1);
      verdict += refused(exchange, "recv_counts holds " + std::to_string(p + 1) + " counts");
      recv_counts.pop_back();
      // Restored: both run, and move the right bytes.
      gather.start();
      gather.wait();
      exchange.start();
      exchange.wait();
      for (std::size_t j = 0; j < all.size(); ++j) {
        if (all[j] != j / 2) verdict += "all_gather_v wrong after the restored counts; ";
      }
      for (int s = 0; s < p; ++s) {
        if (routed[static_cast<std::size_t>(s)] != static_cast<std::uint32_t>(100 * s + me))
          verdict += "all_to_all_v wrong after the restored counts; ";
      }
      return verdict;
    };
    if (!levels) return body(world, [&] { return world.check_mode(); });
    const int node = world.rank() / 2;
    auto intra = world.split(node, world.rank() % 2);
    auto inter = world.split(world.rank() % 2, node);
    intra.set_check_mode(true);
    inter.set_check_mode(true);
    plait::two_level two{intra, inter};
    return body(two, [&] { return intra.check_mode(); });
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("start() on a persistent collective that is still active is invalid_argument", "[persistent]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    std::vector<std::uint32_t> shard(4, static_cast<std::uint32_t>(comm.rank())), full(8);
    auto gather = plait::all_gather_init<plait::ring>(comm, shard, full);
    gather.start();
    std::string verdict = "a second start() while active did not throw";
    try {
      gather.start();
    } catch (const plait::error& e) {
      verdict = e.value() == plait::errc::invalid_argument ? "" : "wrong error code";
    }
    gather.wait();
    if (gather.active()) return "still active after wait()";
    plait::persistent_collective empty;
    try {
      empty.start();
      return "start() on an empty persistent collective did not throw";
    } catch (const plait::error& e) {
      if (e.value() != plait::errc::invalid_argument) return "empty start(): wrong error code";
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("the progress thread completes collectives while the caller does not test", "[nonblocking][progress]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    plait::progress_thread helper(comm);
    plait_test::gathered g(comm.rank(), comm.size(), 20000, 9);
    auto r = plait::iall_gather<plait::ring>(comm, g.send, g.recv);
    // Without test() or wait(), the request completes (complete() moves nothing).
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!r.complete() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!r.complete()) return "the progress thread did not complete the collective";
    r.wait();
    if (g.recv != g.want) return "the collective the progress thread completed is wrong";
    // A persistent one too.
    auto p = plait::all_gather_init<plait::bruck>(comm, g.send, g.recv);
    p.start();
    while (p.active() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (p.active()) return "the progress thread did not complete the persistent start";
    p.wait();
    // Blocking calls still work while the thread runs.
    plait_test::exchanged e(comm.rank(), comm.size(), 3, 10);
    plait::all_to_all<plait::pairwise>(comm, e.send, e.recv);
    if (e.recv != e.want) return "a blocking call beside the progress thread is wrong";
    return plait_test::many_in_flight(comm, 3u);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a persistent collective stays right as a progress thread comes and goes between its starts",
          "[nonblocking][persistent][progress]") {
  // Without a progress thread the engine takes no lock and a restarted run
  // replays its located steps; with one, the thread moves the same run.
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3, 5);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    plait_test::gathered g(comm.rank(), comm.size(), 3000, 11);
    auto bound = plait::all_gather_init<plait::ring>(comm, g.send, g.recv);
    for (int round = 0; round < 6; ++round) {
      // Fresh contents each round: a start must read the buffers as they are now.
      plait_test::gathered fresh(comm.rank(), comm.size(), 3000, 20 + round);
      std::copy(fresh.send.begin(), fresh.send.end(), g.send.begin());  // the bound buffer itself
      std::fill(g.recv.begin(), g.recv.end(), 0U);
      std::optional<plait::progress_thread> helper;
      if (round % 2 == 1) helper.emplace(comm);
      bound.start();
      bound.wait();
      if (g.recv != fresh.want) return "round " + std::to_string(round) + ": wrong result";
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

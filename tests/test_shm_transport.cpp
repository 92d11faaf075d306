// plait-test-labels: quick shm sanitize
// plait-test-timeout: 120
// The shared-memory transport on its own: point-to-point of any size,
// barrier, split, join, timeouts, failures and segment cleanup.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sched.h>

#include "support/harness.hpp"

using namespace std::chrono_literals;
using plait_test::mode;
using plait_test::pattern;

namespace {
std::atomic<int> ranks_seen{0};
void count_rank(plait::shm::communicator& comm) {
  comm.barrier();
  ranks_seen.fetch_add(1);
}
// Exits non-zero in the rank whose size is wrong, so run_processes throws.
void check_size_of_three(plait::shm::communicator& comm) {
  if (comm.size() != 3) throw std::runtime_error("wrong size");
  comm.barrier();
}
}  // namespace

// run_threads/run_processes erase the callable before the non-template part
// (impl/run.ipp): a plain function, a function pointer and a const functor
// must reach it as a lambda does.
TEST_CASE("run_threads and run_processes take plain functions and const functors, not only lambdas", "[shm]") {
  ranks_seen = 0;
  plait::shm::run_threads(3, count_rank);
  void (*pointer)(plait::shm::communicator&) = count_rank;
  plait::shm::run_threads(2, pointer);
  struct counter {
    std::atomic<int>* seen;
    void operator()(plait::shm::communicator& comm) const {
      comm.barrier();
      seen->fetch_add(1);
    }
  };
  const counter functor{&ranks_seen};
  plait::shm::run_threads(4, functor);
  REQUIRE(ranks_seen.load() == 9);
  REQUIRE_NOTHROW(plait::shm::run_processes(3, check_size_of_three));
}

namespace {
std::string unique_name(std::string_view what) {
  return "test-" + std::string(what) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}
bool segment_exists(const std::string& group) {
  const auto names = plait_test::plait_segments();
  return std::find(names.begin(), names.end(), "plait-" + group) != names.end();
}
}  // namespace

TEST_CASE("shm point-to-point delivers messages of any size in order", "[shm][p2p]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const std::size_t bytes = GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{4097}, std::size_t{3} << 20);
  CAPTURE(plait_test::to_string(m), bytes);
  const auto verdicts = plait_test::run_ranks(m, 3, [&](plait::shm::communicator& comm) -> std::string {
    // Every rank sends two messages to every rank (itself too) and receives them.
    std::vector<std::vector<std::byte>> in(6, std::vector<std::byte>(bytes));
    std::vector<std::vector<std::byte>> out;
    std::vector<plait::shm::communicator::request> requests;
    for (int peer = 0; peer < 3; ++peer) {
      for (int k = 0; k < 2; ++k) requests.push_back(comm.irecv(peer, in[static_cast<std::size_t>(peer * 2 + k)]));
    }
    for (int peer = 0; peer < 3; ++peer) {
      for (int k = 0; k < 2; ++k) out.push_back(pattern(bytes, comm.rank() * 10 + peer * 2 + k));
    }
    for (int peer = 0; peer < 3; ++peer) {
      for (int k = 0; k < 2; ++k) requests.push_back(comm.isend(peer, out[static_cast<std::size_t>(peer * 2 + k)]));
    }
    comm.wait_all(requests);
    for (int peer = 0; peer < 3; ++peer) {
      for (int k = 0; k < 2; ++k) {
        if (in[static_cast<std::size_t>(peer * 2 + k)] != pattern(bytes, peer * 10 + comm.rank() * 2 + k)) {
          return "message " + std::to_string(k) + " from " + std::to_string(peer) + " wrong";
        }
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("blocking send and recv pass a token around a ring", "[shm][p2p]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 5, 8);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    std::uint64_t token = 0;
    auto bytes = std::as_writable_bytes(std::span(&token, 1));
    const int right = (comm.rank() + 1) % comm.size();
    const int left = (comm.rank() + comm.size() - 1) % comm.size();
    if (comm.rank() == 0) {
      token = 1;
      comm.send(right, bytes);
      comm.recv(left, bytes);
      if (token != static_cast<std::uint64_t>(comm.size())) return "token " + std::to_string(token);
    } else {
      comm.recv(left, bytes);
      ++token;
      comm.send(right, bytes);
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("barrier separates phases many times over", "[shm][barrier]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 3, 8);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    for (int i = 0; i < 200; ++i) comm.barrier();
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("split forms groups by color ordered by key, and no_group gives a null communicator", "[shm][split]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 7, [](plait::shm::communicator& comm) -> std::string {
    const int color = comm.rank() == 6 ? plait::no_group : comm.rank() % 2;
    auto sub = comm.split(color, -comm.rank());  // reverse order inside each group
    if (comm.rank() == 6) {
      if (sub) return "no_group gave a usable communicator";
      try {
        sub.barrier();
        return "barrier on a null communicator did not throw";
      } catch (const plait::error& e) {
        if (e.code() != plait::errc::invalid_argument) return "wrong error on null communicator";
      }
      return {};
    }
    const int expected_size = comm.rank() % 2 == 0 ? 3 : 3;
    if (sub.size() != expected_size) return "size " + std::to_string(sub.size());
    // Ranks 0,2,4 -> keys 0,-2,-4 -> new ranks 2,1,0.
    const int expected_rank = comm.rank() % 2 == 0 ? (4 - comm.rank()) / 2 : (5 - comm.rank()) / 2;
    if (sub.rank() != expected_rank) return "rank " + std::to_string(sub.rank());
    std::vector<int> mine{comm.rank()}, all(3);
    plait::all_gather<plait::ring>(sub, mine, all);
    std::vector<int> want = comm.rank() % 2 == 0 ? std::vector<int>{4, 2, 0} : std::vector<int>{5, 3, 1};
    if (all != want) return "all_gather on the split group wrong";
    if (sub.bytes_sent() != 2 * sizeof(int)) return "split child bytes_sent " + std::to_string(sub.bytes_sent());
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("join builds a group from independently started ranks and removes its segment", "[shm][join]") {
  const std::string name = unique_name("join");
  const auto verdicts =
      plait_test::run_ranks(mode::processes, 4, [&](plait::shm::communicator& launcher) -> std::string {
        auto comm = plait::shm::communicator::join(name, 3 - launcher.rank(), 4);
        if (comm.size() != 4 || comm.rank() != 3 - launcher.rank()) return "wrong rank or size";
        std::vector<int> mine{comm.rank()}, all(4);
        plait::all_gather<plait::ring>(comm, mine, all);
        if (all != std::vector<int>{0, 1, 2, 3}) return "all_gather on joined group wrong";
        // Rank 0 removes the name once all are attached, before it sends its shard.
        if (segment_exists(name)) return "segment still named after every rank joined";
        return {};
      });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE_FALSE(segment_exists(name));
}

TEST_CASE("join with an absent rank ends in a timeout and leaves no segment", "[shm][join][timeout]") {
  const std::string name = unique_name("absent");
  try {
    auto comm = plait::shm::communicator::join(name, 0, 2, 200ms);
    FAIL("join returned without the second rank");
  } catch (const plait::error& e) {
    CHECK(e.code() == plait::errc::timeout);
    CHECK_THAT(e.what(), Catch::Contains("1 of 2 ranks"));
  }
  REQUIRE_FALSE(segment_exists(name));
  // A rank > 0 whose rank 0 never comes times out too.
  REQUIRE_THROWS_MATCHES(
      plait::shm::communicator::join(name, 1, 2, 100ms), plait::error,
      Catch::Predicate<plait::error>([](const plait::error& e) { return e.code() == plait::errc::timeout; }));
}

TEST_CASE("join rejects bad names, ranks and sizes before touching shared memory", "[shm][join][bad_input]") {
  auto is_invalid =
      Catch::Predicate<plait::error>([](const plait::error& e) { return e.code() == plait::errc::invalid_argument; });
  REQUIRE_THROWS_MATCHES(plait::shm::communicator::join("a/b", 0, 2), plait::error, is_invalid);
  REQUIRE_THROWS_MATCHES(plait::shm::communicator::join("", 0, 2), plait::error, is_invalid);
  REQUIRE_THROWS_MATCHES(plait::shm::communicator::join("ok", 2, 2), plait::error, is_invalid);
  REQUIRE_THROWS_MATCHES(plait::shm::communicator::join("ok", 0, 0), plait::error, is_invalid);
}

TEST_CASE("a receive nobody answers times out naming rank, peer and operation, then poisons the communicator",
          "[shm][timeout]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    if (comm.rank() == 0) {
      // A slow peer: it wakes up after rank 1 gave up and sends its shard anyway.
      std::this_thread::sleep_for(400ms);
      std::vector<int> late{42};
      comm.isend(1, std::as_bytes(std::span(late)), 1);  // the collective's tag; completes into the slot
      return {};
    }
    comm.set_timeout(150ms);
    std::vector<int> mine{1}, all(2, -7);
    try {
      plait::all_gather<plait::ring>(comm, mine, all);
      return "all_gather returned without its peer";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::timeout) return std::string("wrong code: ") + e.what();
      const std::string text = e.what();
      for (const char* part : {"rank 1", "all_gather<ring>", "step 0", "peer 0"}) {
        if (text.find(part) == std::string::npos) return "message lacks '" + std::string(part) + "': " + text;
      }
      if (e.rank() != 1 || e.peer() != 0 || e.step() != 0) return "fields wrong: " + text;
    }
    std::this_thread::sleep_for(600ms);  // the late shard has arrived in the channel by now
    if (all[0] != -7) return "recv written after the timeout";
    try {
      comm.barrier();
      return "poisoned communicator accepted a barrier";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::timeout) return "poisoned call threw the wrong code";
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("messages whose tags or sizes disagree are reported, not mixed up", "[shm][protocol]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    std::vector<std::byte> buf(16);
    if (comm.rank() == 0) {
      comm.send(1, std::span(buf).first(8), 5);
      comm.send(1, std::span(buf).first(8), 6);
      return {};
    }
    try {
      comm.recv(0, std::span(buf).first(8), 6);
      return "a tag-5 message matched a tag-6 receive";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::transport) return std::string("tag mismatch code: ") + e.what();
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  const auto sized = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    std::vector<std::byte> buf(16);
    if (comm.rank() == 0) {
      comm.send(1, std::span(buf).first(8));
      return {};
    }
    try {
      comm.recv(0, buf);
      return "an 8-byte message filled a 16-byte receive";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) return std::string("size mismatch code: ") + e.what();
    }
    return {};
  });
  REQUIRE(plait_test::failures(sized) == "");
}

TEST_CASE("a rank that throws ends its peers' waits and its exception is rethrown", "[shm][failure]") {
  SECTION("threads") {
    REQUIRE_THROWS_WITH(plait::shm::run_threads(3,
                                                [](plait::shm::communicator& comm) {
                                                  if (comm.rank() == 2) throw std::runtime_error("boom");
                                                  std::vector<int> mine{1}, all(3);
                                                  plait::all_gather<plait::ring>(comm, mine, all);
                                                }),
                        "boom");
  }
  SECTION("processes: the child's code and message survive") {
    try {
      plait::shm::run_processes(3, [](plait::shm::communicator& comm) {
        if (comm.rank() == 1) throw plait::error(plait::errc::size_mismatch, "child says no", {1, "test"});
        std::vector<int> mine{1}, all(3);
        plait::all_gather<plait::ring>(comm, mine, all);
      });
      FAIL("run_processes returned");
    } catch (const plait::error& e) {
      CHECK(e.code() == plait::errc::size_mismatch);
      CHECK(e.rank() == 1);
      CHECK_THAT(e.what(), Catch::Contains("child says no"));
    }
  }
  SECTION("processes: a killed child is peer_lost for everyone, not a hang") {
    try {
      plait::shm::run_processes(3, [](plait::shm::communicator& comm) {
        if (comm.rank() == 0) raise(SIGKILL);
        std::vector<int> mine{1}, all(3);
        plait::all_gather<plait::ring>(comm, mine, all);
      });
      FAIL("run_processes returned");
    } catch (const plait::error& e) {
      CHECK(e.code() == plait::errc::peer_lost);
      CHECK(e.rank() == 0);
      CHECK_THAT(e.what(), Catch::Contains("signal 9"));
    }
  }
  SECTION("processes: every survivor's error names the killed rank as its peer, not the rank it waits for") {
    // Rank 2 waits for rank 1 in the ring, which waits for the dead rank 0.
    plait_test::verdicts results(3);
    try {
      plait::shm::run_processes(3, [&](plait::shm::communicator& comm) {
        if (comm.rank() == 0) raise(SIGKILL);
        std::vector<int> mine{1}, all(3);
        try {
          plait::all_gather<plait::ring>(comm, mine, all);
          results.set(comm.rank(), "the all-gather returned");
        } catch (const plait::error& e) {
          results.set(comm.rank(), e.peer() == 0 ? "" : "peer " + std::to_string(e.peer()) + ": " + e.what());
        }
      });
    } catch (const plait::error&) {
    }
    const auto verdicts = results.all();
    CHECK(verdicts[1] == "");
    CHECK(verdicts[2] == "");
  }
}

TEST_CASE("point-to-point rejects peers outside the group", "[shm][bad_input]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    std::vector<std::byte> buf(4);
    for (int peer : {-1, 2, 100}) {
      try {
        comm.send(peer, buf);
        return "send to " + std::to_string(peer) + " accepted";
      } catch (const plait::error& e) {
        if (e.code() != plait::errc::invalid_argument) return "wrong code";
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("run_threads and run_processes reject zero ranks", "[shm][bad_input]") {
  auto noop = [](plait::shm::communicator&) {};
  REQUIRE_THROWS_AS(plait::shm::run_threads(0, noop), plait::error);
  REQUIRE_THROWS_AS(plait::shm::run_processes(0, noop), plait::error);
  REQUIRE_THROWS_AS(plait::shm::run_threads(-3, noop), plait::error);
}

TEST_CASE("a killed process in a joined group is peer_lost for the survivors, and no segment remains",
          "[shm][join][failure]") {
  const std::string name = unique_name("killed");
  plait_test::verdicts results(3);
  try {
    plait::shm::run_processes(3, [&](plait::shm::communicator& launcher) {
      auto comm = plait::shm::communicator::join(name, launcher.rank(), 3, 5s);
      if (comm.rank() == 2) raise(SIGKILL);  // dies after joining, before the collective
      std::vector<int> mine{comm.rank()}, all(3);
      const auto start = std::chrono::steady_clock::now();
      try {
        plait::all_gather<plait::ring>(comm, mine, all);
        results.set(comm.rank(), "all_gather returned although rank 2 is dead");
      } catch (const plait::error& e) {
        const bool expected = e.code() == plait::errc::peer_lost || e.code() == plait::errc::timeout;
        const bool quick = std::chrono::steady_clock::now() - start < 6s;
        results.set(comm.rank(), expected && quick ? "" : std::string("unexpected: ") + e.what());
      }
    });
    FAIL("run_processes returned although a child was killed");
  } catch (const plait::error& e) {
    CHECK(e.code() == plait::errc::peer_lost);
  }
  const auto verdicts = results.all();
  CHECK(verdicts[0] == "");
  CHECK(verdicts[1] == "");
  REQUIRE_FALSE(segment_exists(name));
}

TEST_CASE("waits poll without yielding only while every rank has a core, and split children inherit that",
          "[shm][backoff]") {
  const int cpus = plait::detail::usable_cpus();
  const int ranks = GENERATE_COPY(1, cpus + 1);
  CAPTURE(cpus, ranks);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) -> std::string {
    const auto expected = ranks <= cpus ? std::chrono::nanoseconds(100ms) : std::chrono::nanoseconds::zero();
    if (comm.busy_poll() != expected) return "default busy_poll " + std::to_string(comm.busy_poll().count()) + " ns";
    comm.set_busy_poll(7ms);
    const plait::shm::communicator child = comm.split(0, comm.rank());
    if (child.busy_poll() != std::chrono::nanoseconds(7ms)) return "the split child did not inherit busy_poll";
    try {
      comm.set_busy_poll(-1ms);
      return "a negative busy_poll was accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) return std::string("wrong error: ") + e.what();
    }
    return comm.busy_poll() == std::chrono::nanoseconds(7ms) ? "" : "a refused busy_poll changed the setting";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a timeout ends a wait even inside its busy phase", "[shm][backoff][timeout]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    if (comm.rank() == 1) return {};  // never sends
    comm.set_busy_poll(std::chrono::seconds(60));
    comm.set_timeout(100ms);
    std::vector<std::byte> in(16);
    const auto start = std::chrono::steady_clock::now();
    try {
      comm.recv(1, in);
      return "the receive completed without a sender";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::timeout) return std::string("expected a timeout, got: ") + e.what();
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    return waited < 10s ? "" : "the timeout fired only after the busy phase";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a group confined to one CPU never busy-polls", "[shm][backoff]") {
  // In a forked child, so the affinity change stays there.
  const auto verdicts = plait_test::run_ranks(mode::processes, 1, [](plait::shm::communicator&) -> std::string {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return "cannot restrict the affinity";
    if (plait::detail::usable_cpus() != 1) return "usable_cpus() ignores the affinity mask";
    std::vector<std::int64_t> busy(2, -1);
    plait::shm::run_threads(2, [&](plait::shm::communicator& comm) {
      busy[static_cast<std::size_t>(comm.rank())] = comm.busy_poll().count();
    });
    return busy == std::vector<std::int64_t>{0, 0} ? "" : "two ranks on one CPU got a busy phase";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// hours::max() says "wait as long as it takes"; now + timeout used to wrap to
// the past, so the first wait timed out at once ("timed out after 9.22e+09 s").
TEST_CASE("with a timeout of hours::max() a collective waits for a peer that comes 2 s late", "[shm][timeout]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    comm.set_timeout(std::chrono::hours::max());
    if (comm.rank() == 1) std::this_thread::sleep_for(2s);
    std::vector<int> mine{comm.rank() + 10}, all(2);
    try {
      plait::all_gather<plait::ring>(comm, mine, all);
    } catch (const plait::error& e) {
      return e.what();
    }
    return all == std::vector<int>{10, 11} ? "" : "wrong result";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// plait-test-labels: quick shm sanitize
// plait-test-timeout: 120
// Group formation by `shm::communicator::join` among processes started by
// anyone: a rank claimed twice, a creator or a rank killed (SIGKILL) before
// the group forms, a process killed inside `allocate`, and a live group that a
// second rank 0 must not disturb. Each rank is a forked child (forked before
// any thread starts) that reports a verdict through shared memory; the main
// thread asserts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/harness.hpp"

using namespace std::chrono_literals;

namespace {

std::string unique_name(std::string_view what) {
  return "test-" + std::string(what) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

bool named_in_dev_shm(const std::string& entry) {
  const auto names = plait_test::plait_segments();
  return std::find(names.begin(), names.end(), entry) != names.end();
}

bool segment_exists(const std::string& group) { return named_in_dev_shm("plait-" + group); }

/// Entries of /dev/shm that start with `prefix`.
std::vector<std::string> entries_starting(const std::string& prefix) {
  std::vector<std::string> found;
  for (const std::string& name : plait_test::plait_segments()) {
    if (name.rfind(prefix, 0) == 0) found.push_back(name);
  }
  return found;
}

/// Forks a child that runs `body` and stores what it returns (or what it
/// threw) as verdict `slot`.
pid_t spawn(plait_test::verdicts& results, int slot, const std::function<std::string()>& body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    std::string verdict;
    try {
      verdict = body();
    } catch (const std::exception& e) {
      verdict = std::string("threw: ") + e.what();
    }
    results.set(slot, verdict);
    std::fflush(nullptr);
    _exit(0);
  }
  if (pid < 0) throw std::runtime_error("fork failed");
  return pid;
}

/// Waits for `pid` up to `limit`; kills it if it is still running then.
/// True when it ended by itself.
bool reap(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(2ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return false;
}

void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

/// Waits (in the test's own process, which never joins) until the group's
/// segment exists, is initialised and has `ranks` attached.
bool await_attached(const std::string& group, int size, std::uint32_t ranks) {
  namespace detail = plait::shm::detail;
  const auto until = std::chrono::steady_clock::now() + 20s;
  try {
    auto seg = detail::segment::open("/plait-" + group, detail::geometry{static_cast<std::uint32_t>(size)}, until,
                                     {-1, "test"});
    while (detail::atomic(seg->header().attached).load() < ranks) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(1ms);
    }
    return true;
  } catch (const plait::error&) {
    return false;
  }
}

std::string gather_ranks(plait::shm::communicator& comm) {
  std::vector<int> mine{comm.rank()}, all(static_cast<std::size_t>(comm.size()));
  plait::all_gather<plait::ring>(comm, mine, all);
  for (int r = 0; r < comm.size(); ++r) {
    if (all[static_cast<std::size_t>(r)] != r) return "all_gather wrong at " + std::to_string(r);
  }
  return {};
}

std::string join_and_gather(const std::string& group, int rank, int size, std::chrono::nanoseconds timeout) {
  auto comm = plait::shm::communicator::join(group, rank, size, timeout);
  return gather_ranks(comm);
}

}  // namespace

TEST_CASE("a second process claiming a rank of a forming group is refused at once, and the group still forms",
          "[shm][join]") {
  const std::string group = unique_name("claim");
  plait_test::verdicts results(4);
  const pid_t rank0 = spawn(results, 0, [&] { return join_and_gather(group, 0, 3, 10s); });
  const pid_t rank1 = spawn(results, 1, [&] { return join_and_gather(group, 1, 3, 10s); });
  REQUIRE(await_attached(group, 3, 2));
  const pid_t impostor = spawn(results, 3, [&]() -> std::string {
    const auto start = std::chrono::steady_clock::now();
    try {
      auto comm = plait::shm::communicator::join(group, 1, 3, 5s);
      return "join accepted a second rank 1";
    } catch (const plait::error& e) {
      const std::string text = e.what();
      if (e.code() != plait::errc::invalid_argument) return "wrong code: " + text;
      if (std::chrono::steady_clock::now() - start > 2s) return "refused only after waiting: " + text;
      if (text.find("rank 1 of group '" + group + "' is already taken by process " + std::to_string(rank1)) ==
          std::string::npos) {
        return "message does not name rank, group and holder: " + text;
      }
      return {};
    }
  });
  CHECK(reap(impostor, 8s));
  const pid_t rank2 = spawn(results, 2, [&] { return join_and_gather(group, 2, 3, 10s); });
  CHECK(reap(rank0, 15s));
  CHECK(reap(rank1, 15s));
  CHECK(reap(rank2, 15s));
  REQUIRE(plait_test::failures(results.all()) == "");
  REQUIRE_FALSE(segment_exists(group));
}

TEST_CASE("a rank whose claimant died while the group formed cannot be claimed again, and the group fails fast",
          "[shm][join][failure]") {
  const std::string group = unique_name("dead-claim");
  plait_test::verdicts results(2);
  const pid_t rank0 = spawn(results, 0, [&]() -> std::string {
    const auto start = std::chrono::steady_clock::now();
    try {
      auto comm = plait::shm::communicator::join(group, 0, 3, 30s);
      return "join returned although rank 1 died and rank 2 never came";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::peer_lost) return std::string("wrong code: ") + e.what();
      if (std::chrono::steady_clock::now() - start > 15s) return std::string("noticed late: ") + e.what();
      return {};
    }
  });
  const pid_t dead = spawn(results, 1, [&] {
    auto comm = plait::shm::communicator::join(group, 1, 3, 30s);
    return std::string("join returned for the rank that is killed");
  });
  REQUIRE(await_attached(group, 3, 2));
  // Rank 0 is stopped meanwhile, so it cannot give the group up (and remove
  // its name) before the second claim is made.
  kill(rank0, SIGSTOP);
  kill_and_reap(dead);
  results.set(1, "");
  try {
    auto comm = plait::shm::communicator::join(group, 1, 3, 2s);
    FAIL("a dead claimant's rank was claimed again");
  } catch (const plait::error& e) {
    CHECK(e.code() == plait::errc::peer_lost);
    CHECK_THAT(e.what(), Catch::Contains("rank 1 of group '" + group + "'") &&
                             Catch::Contains("process " + std::to_string(dead) + ", which has ended"));
  }
  kill(rank0, SIGCONT);
  CHECK(reap(rank0, 20s));
  REQUIRE(plait_test::failures(results.all()) == "");
  REQUIRE_FALSE(segment_exists(group));
}

TEST_CASE("a creator killed before the others attach leaves a segment the next join reclaims", "[shm][join][failure]") {
  // The dead group may have had another size than the next one.
  const int dead_size = GENERATE(2, 3);
  CAPTURE(dead_size);
  const std::string group = unique_name("dead-creator");
  plait_test::verdicts results(2);
  const pid_t creator = spawn(results, 0, [&] {
    auto comm = plait::shm::communicator::join(group, 0, dead_size, 30s);
    return std::string("join returned for the creator that is killed");
  });
  REQUIRE(await_attached(group, dead_size, 1));
  kill_and_reap(creator);
  REQUIRE(segment_exists(group));  // what SIGKILL leaves behind

  // A joiner does not attach to a dead creator's segment: it waits for a new one.
  try {
    auto comm = plait::shm::communicator::join(group, 1, 2, 300ms);
    FAIL("a joiner attached to the segment of a dead creator");
  } catch (const plait::error& e) {
    CHECK(e.code() == plait::errc::timeout);
    CHECK_THAT(e.what(), Catch::Contains("process " + std::to_string(creator)) && Catch::Contains("ended"));
  }

  // The next run, joiner first: rank 0 reclaims the name and the group forms.
  const pid_t rank1 = spawn(results, 1, [&] { return join_and_gather(group, 1, 2, 10s); });
  std::this_thread::sleep_for(50ms);
  const pid_t rank0 = spawn(results, 0, [&] { return join_and_gather(group, 0, 2, 10s); });
  CHECK(reap(rank0, 15s));
  CHECK(reap(rank1, 15s));
  REQUIRE(plait_test::failures(results.all()) == "");
  REQUIRE_FALSE(segment_exists(group));
}

TEST_CASE("a process killed inside allocate leaves a shared-buffer name that the next allocate removes",
          "[shm][join][allocate][failure]") {
  const std::string group = unique_name("dead-allocate");
  plait_test::verdicts results(2);
  const pid_t allocating = spawn(results, 0, [&] {
    auto comm = plait::shm::communicator::join(group, 0, 2, 30s);
    auto buffer = comm.allocate<int>(1000);  // waits for rank 1, which never allocates
    return std::string("allocate returned without rank 1");
  });
  const pid_t idle = spawn(results, 1, [&] {
    auto comm = plait::shm::communicator::join(group, 1, 2, 30s);
    pause();
    return std::string("woke up");
  });
  const std::string part_prefix = "plait-w" + std::to_string(allocating) + "-";
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (entries_starting(part_prefix).empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  kill_and_reap(allocating);
  kill_and_reap(idle);
  REQUIRE(entries_starting(part_prefix).size() == 1);  // what SIGKILL leaves behind

  const auto verdicts =
      plait_test::run_ranks(plait_test::mode::processes, 2, [](plait::shm::communicator& comm) -> std::string {
        auto buffer = comm.allocate<int>(10);
        buffer[0] = comm.rank();
        std::vector<int> all(2 * buffer.size());
        plait::all_gather<plait::ring>(comm, buffer, all);
        return all[0] == 0 && all[10] == 1 ? "" : "all_gather of shared buffers wrong";
      });
  REQUIRE(plait_test::failures(verdicts) == "");
  CHECK(entries_starting(part_prefix).empty());
  REQUIRE_FALSE(segment_exists(group));
}

TEST_CASE("a second rank 0 never removes a live group's segment: it fails naming the live creator",
          "[shm][join][bad_input]") {
  const std::string group = unique_name("live");
  plait_test::verdicts results(2);
  const pid_t rank0 = spawn(results, 0, [&] { return join_and_gather(group, 0, 2, 10s); });
  REQUIRE(await_attached(group, 2, 1));
  try {
    auto comm = plait::shm::communicator::join(group, 0, 2, 1s);
    FAIL("a second rank 0 joined a live group");
  } catch (const plait::error& e) {
    CHECK(e.code() == plait::errc::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("process " + std::to_string(rank0)) && Catch::Contains("running"));
  }
  REQUIRE(segment_exists(group));
  const pid_t rank1 = spawn(results, 1, [&] { return join_and_gather(group, 1, 2, 10s); });
  CHECK(reap(rank0, 15s));
  CHECK(reap(rank1, 15s));
  REQUIRE(plait_test::failures(results.all()) == "");
  REQUIRE_FALSE(segment_exists(group));
}

TEST_CASE("the sweep of shared-buffer names removes only plait's exact pattern of ended processes",
          "[shm][allocate][failure]") {
  const pid_t ended = fork();
  if (ended == 0) _exit(0);
  REQUIRE(ended > 0);
  waitpid(ended, nullptr, 0);
  const std::string hex = "0123456789abcdef0123456789abcdef";
  const std::string dead = "plait-w" + std::to_string(ended) + "-" + hex;
  const std::string live = "plait-w" + std::to_string(getpid()) + "-" + hex;
  const std::string longer = dead + "0";
  const std::string upper = "plait-w" + std::to_string(ended) + "-" + std::string(32, 'A');
  for (const std::string& name : {dead, live, longer, upper}) {
    const int fd = shm_open(("/" + name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    REQUIRE(fd >= 0);
    close(fd);
  }
  plait_test::verdicts results(1);
  // A fresh process: the sweep runs once per process.
  CHECK(reap(spawn(results, 0,
                   [] {
                     plait::shm::detail::remove_abandoned_parts();
                     return std::string();
                   }),
             10s));
  CHECK_FALSE(named_in_dev_shm(dead));
  CHECK(named_in_dev_shm(live));
  CHECK(named_in_dev_shm(longer));
  CHECK(named_in_dev_shm(upper));
  for (const std::string& name : {dead, live, longer, upper}) shm_unlink(("/" + name).c_str());
}

TEST_CASE("the leak check counts names left by this test's own rank processes, not by other tests' ended ones",
          "[shm][allocate][harness]") {
  // Other tests running alongside leave names of processes they killed on
  // purpose (as the allocate case above does); those are not this test's.
  const pid_t ended = fork();
  if (ended == 0) _exit(0);
  REQUIRE(ended > 0);
  waitpid(ended, nullptr, 0);
  // Not plait's exact pattern, so no concurrent allocate sweeps these away.
  auto leave = [](long pid) {
    const std::string name = "plait-w" + std::to_string(pid) + "-leak-check";
    const int fd = shm_open(("/" + name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) close(fd);
    return fd >= 0 ? name : std::string();
  };
  const std::string foreign = leave(ended);
  REQUIRE_FALSE(foreign.empty());
  const auto verdicts =
      plait_test::run_ranks(plait_test::mode::processes, 2, [&](plait::shm::communicator&) -> std::string {
        return leave(getpid()).empty() ? "could not leave a name" : "";
      });
  REQUIRE(plait_test::failures(verdicts) == "");
  const auto leaked = plait_test::leaked_objects("plait-w");
  const auto ours = std::count_if(leaked.begin(), leaked.end(),
                                  [](const std::string& name) { return name.ends_with("-leak-check"); });
  CHECK(std::find(leaked.begin(), leaked.end(), foreign) == leaked.end());
  CHECK(ours == 2);  // the two ranks' names
  shm_unlink(("/" + foreign).c_str());
  for (const std::string& name : leaked) {
    if (name.ends_with("-leak-check")) shm_unlink(("/" + name).c_str());
  }
}

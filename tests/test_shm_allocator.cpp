// plait-test-labels: quick shm sanitize
// plait-test-timeout: 300
// plait-test-optimization: -O1
// plait::shm::allocator<T> and comm.memory_resource(): containers in a rank's
// own shared-memory pool, which peers map the first time a message refers to
// it. Checked here: vectors that grow between collectives give what plain
// vectors give, on threads and processes for P = 1..8 and empty vectors, and
// their blocks are read in place (bytes_read_in_place); a segment created
// after the first collective is still read in place; freed memory is reused;
// pmr containers work the same; failures are clear errors; the allocator
// meets the standard's requirements; no name stays in /dev/shm, and names
// left by a process that ended are swept.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/deny_vm_readv.hpp"
#include "support/harness.hpp"

using plait_test::make_value;
using plait_test::mode;

namespace {

template <class T>
using shm_vector = std::vector<T, plait::shm::allocator<T>>;

template <class Range>
std::vector<float> to_vector(const Range& r) {
  return {r.begin(), r.end()};
}

/// Names of this process's pool segments in /dev/shm right now.
std::size_t own_pool_names() {
  const std::string prefix = "plait-p" + std::to_string(getpid()) + "-";
  std::size_t count = 0;
  for (const std::string& name : plait_test::plait_segments()) count += name.rfind(prefix, 0) == 0 ? 1 : 0;
  return count;
}

/// The bytes a ring all-gather reads in place when every block comes from
/// pool memory: every peer's block, once it is large enough.
std::uint64_t expected_in_place(const plait::shm::communicator& comm, std::size_t block_bytes) {
  return block_bytes >= 4096 ? static_cast<std::uint64_t>(comm.size() - 1) * block_bytes : 0;
}

/// Three rounds of: grow `mine` by push_back (reallocating), all-gather it
/// (ring) into a pool vector and the same values from plain vectors, compare
/// both with the reference, and check the in-place count; then an all-to-all
/// (pairwise) from a pool vector into a plain one.
std::string growing_vectors(plait::shm::communicator& comm, std::size_t n) {
  const int me = comm.rank();
  const auto ranks = static_cast<std::size_t>(comm.size());
  plait::shm::allocator<float> a{comm};
  shm_vector<float> mine(a);
  shm_vector<float> all(a);
  std::string verdict;
  for (const std::size_t size : {n / 4, n / 2, n}) {
    while (mine.size() < size) mine.push_back(make_value<float>(me, mine.size()));
    all.assign(size * ranks, -1.0F);
    const std::uint64_t before = comm.bytes_read_in_place();
    plait::all_gather<plait::ring>(comm, mine, all);
    const std::uint64_t read = comm.bytes_read_in_place() - before;

    const std::vector<float> plain_mine(mine.begin(), mine.end());
    std::vector<float> plain_all(size * ranks);
    plait::all_gather<plait::ring>(comm, plain_mine, plain_all);
    std::vector<float> want;
    for (std::size_t r = 0; r < ranks; ++r) {
      for (std::size_t i = 0; i < size; ++i) want.push_back(make_value<float>(static_cast<int>(r), i));
    }
    const std::string what = "all_gather of " + std::to_string(size) + " floats";
    verdict += plait_test::compare(to_vector(all), want, what + " from allocator vectors");
    verdict += plait_test::compare(plain_all, want, what + " from plain vectors");
    if (read != expected_in_place(comm, size * sizeof(float))) {
      verdict += "; " + what + " read " + std::to_string(read) + " bytes in place, expected " +
                 std::to_string(expected_in_place(comm, size * sizeof(float)));
    }
  }

  shm_vector<float> send(n * ranks, a);
  for (std::size_t d = 0; d < ranks; ++d) {
    for (std::size_t i = 0; i < n; ++i) send[d * n + i] = make_value<float>(me, i, static_cast<int>(d) + 1);
  }
  std::vector<float> received(n * ranks);
  const std::uint64_t before = comm.bytes_read_in_place();
  plait::all_to_all<plait::pairwise>(comm, send, received);
  std::vector<float> want;
  for (std::size_t s = 0; s < ranks; ++s) {
    for (std::size_t i = 0; i < n; ++i) want.push_back(make_value<float>(static_cast<int>(s), i, me + 1));
  }
  verdict += plait_test::compare(received, want, "all_to_all from an allocator vector");
  if (comm.bytes_read_in_place() - before != expected_in_place(comm, n * sizeof(float))) {
    verdict += "; all_to_all read " + std::to_string(comm.bytes_read_in_place() - before) + " bytes in place";
  }
  return verdict;
}

}  // namespace

TEST_CASE("vectors from plait::shm::allocator that grow between collectives match plain vectors and are read in place",
          "[shm][allocator]") {
  const mode m = GENERATE(mode::threads, mode::processes);
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer slows every access about tenfold: it looks for races,
  // which 2-4 ranks run through the same code as 5-8 (those run in the
  // default and asan builds).
  const int ranks = GENERATE(1, 2, 3, 4);
#else
  const int ranks = GENERATE(1, 2, 3, 4, 5, 7, 8);
#endif
  // Empty, under and over the in-place threshold, and past the first 1 MiB segment.
  const std::size_t n =
      GENERATE(std::size_t{0}, std::size_t{8}, std::size_t{4096}, std::size_t{12000}, std::size_t{1} << 19);
  CAPTURE(plait_test::to_string(m), ranks, n);
  const auto verdicts =
      plait_test::run_ranks(m, ranks, [n](plait::shm::communicator& comm) { return growing_vectors(comm, n); });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-p").empty());
}

TEST_CASE("a pool segment created after the first collective is still read in place", "[shm][allocator]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [m](plait::shm::communicator& comm) -> std::string {
    plait::shm::allocator<std::uint32_t> a{comm};
    const auto p = static_cast<std::size_t>(comm.size());
    shm_vector<std::uint32_t> small(2048, a);
    shm_vector<std::uint32_t> small_all(2048 * p, a);
    // A rank that stopped before a collective would leave its peers waiting:
    // a hang here names the late peer well inside the test's own timeout.
    comm.set_timeout(std::chrono::seconds(60));
    plait::all_gather<plait::ring>(comm, small, small_all);
    // Every rank takes part in every collective below; what went wrong before one is reported after it.
    std::string problem;
    if (a.resource().segment_count() != 1) problem = "the first segment was not the only one";
    // 4 MiB: more than the first segment holds, so a second one is created now.
    const std::size_t n = std::size_t{1} << 20;
    shm_vector<std::uint32_t> large(a);
    for (std::size_t i = 0; i < n; ++i) large.push_back(make_value<std::uint32_t>(comm.rank(), i));
    if (a.resource().segment_count() < 2) problem = "no new segment was created";
    // Threads share one address space: no segment needs a name, not even
    // for a moment (a peer thread may be creating one while this one looks).
    const std::size_t names = own_pool_names();
    if (m == mode::threads && names != 0) problem = "a pool of threads named its segments";
    if (m == mode::processes && names != a.resource().segment_count()) problem = "segment names are missing";
    std::vector<std::uint32_t> all(n * p);
    const std::uint64_t before = comm.bytes_read_in_place();
    plait::all_gather<plait::ring>(comm, large, all);
    if (!problem.empty()) return problem;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i] != make_value<std::uint32_t>(static_cast<int>(i / n), i % n)) return "the all_gather differs";
    }
    // Ring forwards from `all`, a plain vector: only the first step's block comes from the pool.
    if (comm.bytes_read_in_place() - before != n * sizeof(std::uint32_t)) {
      return "read " + std::to_string(comm.bytes_read_in_place() - before) + " bytes in place, expected " +
             std::to_string(n * sizeof(std::uint32_t));
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-p").empty());
}

TEST_CASE("a pool of threads never puts a name in /dev/shm even while it creates a segment", "[shm][allocator]") {
  // Once, a pool of threads created each segment under a name and removed
  // the name at once; a rank that looked at /dev/shm in between saw a name
  // (and a crash there would have leaked it). A watcher looks all the time
  // while pools of threads create segments.
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> seen{0};
  std::thread watcher([&] {
    while (!stop.load(std::memory_order_relaxed)) seen.fetch_add(own_pool_names(), std::memory_order_relaxed);
  });
  std::vector<std::string> verdicts;
  for (int round = 0; round < 100 && verdicts.empty(); ++round) {
    const auto v = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
      plait::shm::allocator<std::byte> a{comm};
      // Past the first 1 MiB segment: two segments per rank.
      const shm_vector<std::byte> first(std::size_t{1} << 19, std::byte{1}, a);
      const shm_vector<std::byte> second(std::size_t{1} << 20, std::byte{2}, a);
      return a.resource().segment_count() == 2 ? std::string{} : "expected two segments";
    });
    if (!plait_test::failures(v).empty()) verdicts = v;
  }
  stop = true;
  watcher.join();
  REQUIRE(plait_test::failures(verdicts) == "");
  CHECK(seen.load() == 0);
}

TEST_CASE("pool memory is read in place where process_vm_readv is refused", "[shm][allocator]") {
  const auto verdicts = plait_test::run_ranks(mode::processes, 3, [](plait::shm::communicator& comm) -> std::string {
    if (!plait_test::deny_process_vm_readv(EPERM)) return "cannot install the seccomp filter";
    const std::size_t n = std::size_t{1} << 16;
    plait::shm::allocator<float> a{comm};
    shm_vector<float> mine(a);
    for (std::size_t i = 0; i < n; ++i) mine.push_back(make_value<float>(comm.rank(), i));
    shm_vector<float> all(3 * n, a);
    plait::all_gather<plait::ring>(comm, mine, all);
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i] != make_value<float>(static_cast<int>(i / n), i % n)) return "the all_gather differs";
    }
    if (comm.bytes_read_in_place() != 2 * n * sizeof(float)) return "the peers' blocks were not read in place";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-p").empty());
}

TEST_CASE("an all-gather into a pool vector has its own shard written by the receiver", "[shm][allocator]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    const std::size_t n = std::size_t{1} << 17;  // 512 KiB: past copy_for_sender_bytes
    plait::shm::allocator<float> a{comm};
    shm_vector<float> mine(n, a);
    for (std::size_t i = 0; i < n; ++i) mine[i] = make_value<float>(comm.rank(), i);
    shm_vector<float> all(2 * n, a);
    plait::all_gather<plait::ring>(comm, mine, all);
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i] != make_value<float>(static_cast<int>(i / n), i % n)) return "the all_gather differs";
    }
    if (comm.bytes_read_in_place() != n * sizeof(float)) return "the peer's shard was not read in place";
    if (comm.bytes_copied_for_senders() != n * sizeof(float))
      return "wrote " + std::to_string(comm.bytes_copied_for_senders()) + " bytes of the sender's copy";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-p").empty());
}

TEST_CASE("memory given back to the pool is reused", "[shm][allocator]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 1, [](plait::shm::communicator& comm) -> std::string {
    std::string verdict;
    auto expect = [&verdict](bool holds, const char* what) { verdict += holds ? "" : std::string(what) + "; "; };
    plait::shm::memory_resource& pool = comm.memory_resource();
    void* first = pool.allocate(100000, 64);
    void* second = pool.allocate(5000, 8);
    expect(pool.bytes_in_use() == 100032 + 5056, "each request is rounded up to 64 bytes");
    pool.deallocate(first, 100000, 64);
    expect(pool.bytes_in_use() == 5056, "deallocate gives the bytes back");
    void* again = pool.allocate(100000, 64);
    expect(again == first, "first fit reuses the freed place");
    pool.deallocate(second, 5000, 8);
    pool.deallocate(again, 100000, 64);
    expect(pool.bytes_in_use() == 0, "everything given back");
    // Every free run merged back: an allocation of the whole first segment fits again.
    void* whole = pool.allocate(std::size_t{1} << 20, 64);
    expect(pool.segment_count() == 1, "free runs were not merged");
    pool.deallocate(whole, std::size_t{1} << 20, 64);
    void* zero = pool.allocate(0, 1);  // a unique pointer, like operator new(0)
    void* other_zero = pool.allocate(0, 1);
    expect(zero != nullptr && zero != other_zero, "zero-byte allocations are distinct pointers");
    void* page_aligned = pool.allocate(10, 4096);
    expect(reinterpret_cast<std::uintptr_t>(page_aligned) % 4096 == 0, "alignment 4096 is honoured");
    pool.deallocate(zero, 0, 1);
    pool.deallocate(other_zero, 0, 1);
    pool.deallocate(page_aligned, 10, 4096);
    expect(pool.bytes_in_use() == 0 && pool.segment_count() == 1, "one segment, empty, at the end");
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("std::pmr containers on comm.memory_resource() are read in place", "[shm][allocator]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    const std::size_t n = 3000;
    std::pmr::vector<float> mine(&comm.memory_resource());
    for (std::size_t i = 0; i < n; ++i) mine.push_back(make_value<float>(comm.rank(), i));
    std::pmr::vector<float> all(n * static_cast<std::size_t>(comm.size()), &comm.memory_resource());
    plait::all_gather<plait::ring>(comm, mine, all);
    std::vector<float> want;
    for (int r = 0; r < comm.size(); ++r) {
      for (std::size_t i = 0; i < n; ++i) want.push_back(make_value<float>(r, i));
    }
    std::string verdict = plait_test::compare(to_vector(all), want, "all_gather from pmr vectors");
    if (comm.bytes_read_in_place() != expected_in_place(comm, n * sizeof(float)))
      verdict += "; read " + std::to_string(comm.bytes_read_in_place()) + " bytes in place";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-p").empty());
}

TEST_CASE("a pool that cannot grow throws plait::error naming the rank, and an impossible count bad_array_new_length",
          "[shm][allocator]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    if (comm.rank() != 1) return {};
    std::string verdict;
    plait::shm::allocator<double> a{comm};
    try {
      (void)a.allocate(std::size_t{1} << 47);  // 2^50 bytes: no address space maps that much
      verdict += "allocating 2^50 bytes succeeded; ";
    } catch (const plait::error& e) {
      const std::string what = e.what();
      if (e.code() != plait::errc::transport || e.rank() != 1 || what.find("rank 1") == std::string::npos ||
          what.find("memory_resource::allocate") == std::string::npos ||
          what.find("pool segment") == std::string::npos) {
        verdict += "unclear error: " + what + "; ";
      }
    }
    try {
      (void)a.allocate(SIZE_MAX / 4);
      verdict += "an overflowing count was allocated; ";
    } catch (const std::bad_array_new_length&) {
    }
    // The pool is still usable.
    double* p = a.allocate(10);
    p[9] = 1.0;
    a.deallocate(p, 10);
    if (a.resource().bytes_in_use() != 0) verdict += "the pool is not empty after the failures";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("plait::shm::allocator meets the allocator requirements: rebinding, equality, propagation",
          "[shm][allocator]") {
  static_assert(std::is_same_v<std::allocator_traits<plait::shm::allocator<float>>::rebind_alloc<double>,
                               plait::shm::allocator<double>>);
  static_assert(std::allocator_traits<plait::shm::allocator<float>>::propagate_on_container_move_assignment::value);
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    std::string verdict;
    auto expect = [&verdict](bool holds, const char* what) { verdict += holds ? "" : std::string(what) + "; "; };
    plait::shm::allocator<float> a{comm};
    const plait::shm::allocator<double> rebound{a};
    const plait::shm::allocator<float> back{rebound};
    expect(a == rebound && back == a, "rebound copies compare equal");
    plait::shm::allocator<float> moved{std::move(a)};
    expect(moved == a, "a moved-from allocator still equals the new one");  // NOLINT(bugprone-use-after-move)
    expect(&moved.resource() == &comm.memory_resource(), "the allocator draws from comm.memory_resource()");
    plait::shm::communicator child = comm.split(0, comm.rank());
    const plait::shm::allocator<float> of_child{child};
    expect(!(of_child == moved), "another communicator's pool compares equal");
    expect(comm.memory_resource().is_equal(comm.memory_resource()) &&
               !comm.memory_resource().is_equal(*std::pmr::new_delete_resource()),
           "is_equal is identity");
    shm_vector<float> x(100, 1.0F, moved);
    shm_vector<float> y(moved);
    const float* data = x.data();
    y = std::move(x);
    expect(y.data() == data, "move assignment copied instead of taking the memory");
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a vector outlives its communicator: the memory stays, the names go", "[shm][allocator]") {
  const auto verdicts = plait_test::run_ranks(mode::processes, 2, [](plait::shm::communicator& comm) -> std::string {
    std::optional<shm_vector<float>> kept;
    {
      plait::shm::communicator child = comm.split(0, comm.rank());
      kept.emplace(5000, 2.0F, plait::shm::allocator<float>{child});
      if (own_pool_names() != 1) return "the pool's segment has no name while its communicator lives";
    }
    if (own_pool_names() != 0) return "a name stayed after the communicator ended";
    kept->push_back(3.0F);  // still memory of its own
    if ((*kept)[4999] != 2.0F || kept->back() != 3.0F) return "the vector's contents changed";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-p").empty());
}

TEST_CASE("a pool segment name left by a process that ended is removed by the next pool", "[shm][allocator]") {
  const pid_t ended = fork();
  if (ended == 0) _exit(0);
  REQUIRE(ended > 0);
  REQUIRE(waitpid(ended, nullptr, 0) == ended);
  // Whether the name was left, not whether it still exists: a test running
  // alongside may create a pool, and so sweep the abandoned name, any time.
  auto leave_name = [](long pid) {
    const std::string name = "/plait-p" + std::to_string(pid) + "-0123456789abcdef0123456789abcdef-1";
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    const bool left = fd >= 0 || errno == EEXIST;
    if (fd >= 0) close(fd);
    return std::pair{name, left};
  };
  auto exists = [](const std::string& name) {
    const int fd = shm_open(name.c_str(), O_RDONLY, 0);
    if (fd >= 0) close(fd);
    return fd >= 0;
  };
  const auto [abandoned, abandoned_left] = leave_name(ended);
  const auto [alive, alive_left] = leave_name(getpid());  // its creator still runs: left alone
  REQUIRE(abandoned_left);
  REQUIRE(alive_left);
  // A forked rank sweeps once in its own process, when its pool is created.
  const auto verdicts = plait_test::run_ranks(mode::processes, 2, [](plait::shm::communicator& comm) -> std::string {
    return comm.memory_resource().segment_count() == 0 ? "" : "a new pool has segments";
  });
  CHECK(plait_test::failures(verdicts) == "");
  CHECK_FALSE(exists(abandoned));
  CHECK(exists(alive));
  shm_unlink(abandoned.c_str());
  shm_unlink(alive.c_str());
}

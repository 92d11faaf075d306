// plait-test-labels: quick shm
// plait-test-timeout: 120
// The staging blocks a thread keeps between collectives (core/scratch.hpp,
// scratch_cache): a freed large block serves the next call of its size, the
// limits hold, small blocks stay with malloc, and a repeated all_reduce no
// longer faults its staging in on every call (it did: about 3x the call's
// time at 1 MiB, P = 2).
#include <sys/resource.h>

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.hpp"

using plait::detail::byte_buffer;
using plait::detail::scratch_cache;

TEST_CASE("a freed large staging block serves the next request of its size on the same thread", "[scratch]") {
  std::thread([] {
    const std::size_t bytes = std::size_t{1} << 20;
    const std::byte* first = nullptr;
    {
      const byte_buffer a(bytes);
      first = a.data();
    }
    CHECK(scratch_cache::kept_bytes() == bytes);
    const byte_buffer b(bytes / 2);  // a smaller request takes the kept block too
    CHECK(b.data() == first);
    CHECK(b.size() == bytes / 2);
    CHECK(scratch_cache::kept_bytes() == 0);
  }).join();
}

TEST_CASE("the kept blocks stay within their count and bytes and the smallest go first", "[scratch]") {
  std::thread([] {
    {
      std::vector<byte_buffer> many;
      for (std::size_t i = 1; i <= scratch_cache::most_blocks + 3; ++i) many.emplace_back(i * (std::size_t{64} << 10));
    }
    // The largest most_blocks were kept: blocks 4..11 of 64 KiB each times their index.
    std::size_t want = 0;
    for (std::size_t i = 4; i <= scratch_cache::most_blocks + 3; ++i) want += i * (std::size_t{64} << 10);
    CHECK(scratch_cache::kept_bytes() == want);
    {
      const byte_buffer huge(scratch_cache::most_bytes + 1);  // over the limit: never kept
    }
    CHECK(scratch_cache::kept_bytes() == want);
    {
      const byte_buffer big(scratch_cache::most_bytes - (std::size_t{64} << 10));  // room made by dropping small ones
    }
    CHECK(scratch_cache::kept_bytes() <= scratch_cache::most_bytes);
    CHECK(scratch_cache::kept_bytes() >= scratch_cache::most_bytes - (std::size_t{64} << 10));
  }).join();
}

TEST_CASE("small staging blocks are left to malloc", "[scratch]") {
  std::thread([] {
    { const byte_buffer small(scratch_cache::smallest - 1); }
    CHECK(scratch_cache::kept_bytes() == 0);
  }).join();
}

TEST_CASE("a repeated all_reduce of 1 MiB does not fault its staging in again on threads and processes", "[scratch]") {
  const plait_test::mode m = GENERATE(plait_test::mode::threads, plait_test::mode::processes);
  INFO(plait_test::to_string(m));
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    const std::size_t n = (std::size_t{1} << 20) / sizeof(float);
    std::vector<float> in(n, static_cast<float>(comm.rank() + 1)), out(n);
    plait::all_reduce<plait::ring>(comm, in, out, plait::sum{});  // the first call faults its staging in
    rusage before{};
    getrusage(RUSAGE_THREAD, &before);
    for (int call = 0; call < 8; ++call) plait::all_reduce<plait::ring>(comm, in, out, plait::sum{});
    rusage after{};
    getrusage(RUSAGE_THREAD, &after);
    if (out[0] != 3.0F || out[n - 1] != 3.0F) return "wrong sum";
    // Staging of 512 KiB faulted in afresh is 128 faults a call; a few
    // stray ones (the test's own stack, the kernel) are allowed.
    const long faults = after.ru_minflt - before.ru_minflt;
    if (faults > 64) return std::to_string(faults) + " page faults in 8 calls";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("an out-of-place all_reduce folds into its results and stages nothing on threads", "[scratch]") {
  // Threads read each other's buffers with plain loads, so arrivals fold
  // straight into the accumulators; with the accumulators in the results no
  // staging block is taken at all (before: one of 512 KiB per block, kept).
  const auto verdicts = plait_test::run_ranks(plait_test::mode::threads, 2, [](plait::shm::communicator& comm) {
    const std::size_t n = (std::size_t{1} << 20) / sizeof(float);
    std::vector<float> in(n, static_cast<float>(comm.rank() + 1)), out(n);
    const std::size_t kept_before = scratch_cache::kept_bytes();
    plait::all_reduce<plait::ring>(comm, in, out, plait::sum{});
    if (out[0] != 3.0F || out[n - 1] != 3.0F) return std::string("wrong sum");
    if (scratch_cache::kept_bytes() != kept_before) {
      return std::to_string(scratch_cache::kept_bytes() - kept_before) + " bytes of staging";
    }
    std::vector<float> in_place = in;  // in place still stages: later steps read the contributions
    plait::all_reduce<plait::ring>(comm, plait::in_place, in_place, plait::sum{});
    if (in_place[0] != 3.0F || in_place[n - 1] != 3.0F) return std::string("wrong sum in place");
    return std::string{};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// plait-test-labels: quick shm sanitize
// plait-test-also: header-only
// plait-test-timeout: 300
// plait-test-optimization: -O1
// The foundation's shared test body for all-gather on the shared-memory
// transport: threads and processes, P = 1..8, sizes 0, 1, odd and >= 8 MiB in
// total, element types of 1, 8 and 12 bytes, and in place.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "support/harness.hpp"

using plait_test::mode;

using plait_test::gather_and_check;

TEMPLATE_TEST_CASE("ring all-gather matches the serial reference on shm", "[all_gather][ring][shm]", std::uint8_t,
                   std::uint64_t, plait_test::triple) {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(range(1, 9));
  const std::size_t n = GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{37});
  CAPTURE(plait_test::to_string(m), ranks, n);
  const auto verdicts = plait_test::run_ranks(
      m, ranks, [&](plait::shm::communicator& comm) { return gather_and_check<TestType, plait::ring>(comm, n); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_TEST_CASE("ring all-gather moves at least 8 MiB in total", "[all_gather][ring][shm][large]", std::uint8_t,
                   std::uint64_t, plait_test::triple) {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  const std::size_t n = (std::size_t{8} << 20) / (sizeof(TestType) * static_cast<std::size_t>(ranks)) + 3;
  CAPTURE(plait_test::to_string(m), ranks, n);
  const auto verdicts = plait_test::run_ranks(
      m, ranks, [&](plait::shm::communicator& comm) { return gather_and_check<TestType, plait::ring>(comm, n); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("in-place ring all-gather keeps the own shard and fills the others", "[all_gather][ring][shm][in_place]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(range(1, 9));
  const std::size_t n = GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{1001});
  CAPTURE(plait_test::to_string(m), ranks, n);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) {
    const auto total = n * static_cast<std::size_t>(comm.size());
    std::vector<std::uint64_t> all(total, 0xdeadbeef);
    for (std::size_t i = 0; i < n; ++i)
      all[static_cast<std::size_t>(comm.rank()) * n + i] = plait_test::make_value<std::uint64_t>(comm.rank(), i);
    plait::all_gather<plait::ring>(comm, plait::in_place, all);
    std::vector<std::uint64_t> want;
    for (int r = 0; r < comm.size(); ++r) {
      for (std::size_t i = 0; i < n; ++i) want.push_back(plait_test::make_value<std::uint64_t>(r, i));
    }
    return plait_test::compare(all, want, "in-place all_gather");
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("all-gather accepts std::array, std::span and const sources", "[all_gather][shm][ranges]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) -> std::string {
    const std::array<int, 2> mine{comm.rank(), comm.rank() * 10};
    std::array<int, 6> all{};
    plait::all_gather<plait::ring>(comm, std::span<const int>(mine), std::span<int>(all));
    if (all != std::array<int, 6>{0, 0, 1, 10, 2, 20}) return "span all_gather wrong";
    std::vector<int> again(6);
    plait::all_gather<plait::ring>(comm, mine, again);
    if (!std::equal(again.begin(), again.end(), all.begin())) return "array/vector all_gather wrong";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("successive all-gathers on one communicator do not mix", "[all_gather][shm][tags]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 4, [](plait::shm::communicator& comm) -> std::string {
    for (int round = 0; round < 50; ++round) {
      std::vector<int> mine(static_cast<std::size_t>(round % 7), comm.rank() + round);
      std::vector<int> all(mine.size() * 4);
      plait::all_gather<plait::ring>(comm, mine, all);
      for (std::size_t i = 0; i < all.size(); ++i) {
        const int want = static_cast<int>(i / mine.size()) + round;
        if (all[i] != want) return "round " + std::to_string(round) + " element " + std::to_string(i) + " wrong";
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("bytes_sent counts exactly the ring all-gather's payload", "[all_gather][shm][bytes_sent]") {
  const int ranks = GENERATE(1, 2, 5);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [](plait::shm::communicator& comm) -> std::string {
    std::vector<std::uint64_t> mine(100), all(100 * static_cast<std::size_t>(comm.size()));
    plait::all_gather<plait::ring>(comm, mine, all);
    const std::uint64_t want = 800u * static_cast<std::uint64_t>(comm.size() - 1);
    if (comm.bytes_sent() != want)
      return "bytes_sent " + std::to_string(comm.bytes_sent()) + " != " + std::to_string(want);
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

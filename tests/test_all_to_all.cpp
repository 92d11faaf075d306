// plait-test-labels: quick shm sanitize
// plait-test-also: header-only
// plait-test-timeout: 300
// plait-test-optimization: -O1
// The foundation's shared test body for all-to-all on the shared-memory
// transport: threads and processes, P = 1..8, block sizes 0, 1, odd and >= 8
// MiB in total, element types of 1, 8 and 12 bytes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "support/harness.hpp"

using plait_test::mode;

using plait_test::exchange_and_check;

TEMPLATE_TEST_CASE("pairwise all-to-all matches the serial reference on shm", "[all_to_all][pairwise][shm]",
                   std::uint8_t, std::uint64_t, plait_test::triple) {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(range(1, 9));
  const std::size_t n = GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{37});
  CAPTURE(plait_test::to_string(m), ranks, n);
  const auto verdicts = plait_test::run_ranks(
      m, ranks, [&](plait::shm::communicator& comm) { return exchange_and_check<TestType, plait::pairwise>(comm, n); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_TEST_CASE("pairwise all-to-all moves at least 8 MiB in total", "[all_to_all][pairwise][shm][large]",
                   std::uint8_t, std::uint64_t, plait_test::triple) {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  const auto p = static_cast<std::size_t>(ranks);
  const std::size_t n = (std::size_t{8} << 20) / (sizeof(TestType) * p * p) + 1;
  CAPTURE(plait_test::to_string(m), ranks, n);
  const auto verdicts = plait_test::run_ranks(
      m, ranks, [&](plait::shm::communicator& comm) { return exchange_and_check<TestType, plait::pairwise>(comm, n); });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("bytes_sent counts exactly the pairwise all-to-all's payload", "[all_to_all][shm][bytes_sent]") {
  const int ranks = GENERATE(1, 3, 4);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [](plait::shm::communicator& comm) -> std::string {
    const auto p = static_cast<std::size_t>(comm.size());
    std::vector<std::uint32_t> send(10 * p), recv(10 * p);
    plait::all_to_all<plait::pairwise>(comm, send, recv);
    const std::uint64_t want = 40u * (p - 1);
    if (comm.bytes_sent() != want)
      return "bytes_sent " + std::to_string(comm.bytes_sent()) + " != " + std::to_string(want);
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

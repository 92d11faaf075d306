// plait-test-labels: full shm
// plait-test-timeout: 900
// Layouts on the shared-memory transport, the exhaustive sweep: every
// algorithm x along<0/1/2> (and in place) and x redistribute<1,0 / 0,1 / 0,0 /
// 2,2 / 2,0>, threads and processes, P = 1..8, every (send, recv) pair of
// dense, padded, interleaved and column-major views, zero-size and odd
// extents, 4- and 12-byte elements. test_layouts.cpp is the quick subset.
#include <catch2/catch.hpp>

#include <cstdint>

#include "support/algorithm_lists.hpp"
#include "support/harness.hpp"
#include "support/layout_sweep.hpp"

using plait_test::mode;

namespace {

const layout_sweep::plan full_plan{
    {{1, 1, 1}, {2, 3, 4}, {0, 3, 2}, {3, 0, 1}, {5, 1, 3}, {1, 7, 1}}, layout_sweep::every_pair(), true};

}  // namespace

TEMPLATE_LIST_TEST_CASE("every all-gather algorithm x along<D>, P = 1..8, every arrangement",
                        "[layout][along][shm][full]", plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(range(1, 9));
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) {
    return layout_sweep::gather_sweep<TestType, std::int32_t>(comm, full_plan) +
           layout_sweep::gather_sweep<TestType, plait_test::triple>(comm, full_plan);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("every all-to-all algorithm x redistribute<S, C>, P = 1..8, every arrangement",
                        "[layout][redistribute][shm][full]", plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(range(1, 9));
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) {
    return layout_sweep::exchange_sweep<TestType, std::int32_t>(comm, full_plan) +
           layout_sweep::exchange_sweep<TestType, plait_test::triple>(comm, full_plan);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

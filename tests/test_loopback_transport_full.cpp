// plait-test-labels: full
// plait-test-timeout: 900
// The loopback transport, the exhaustive sweep: every all-gather algorithm x
// along<0/1/2> (and in place) and every all-to-all algorithm x
// redistribute<S, C>, on rank-2 and rank-3 views, P = 1..8, every (send,
// recv) pair of dense, padded, interleaved and column-major views, zero-size
// and odd extents, 1-, 3-, 4-, 8- and 12-byte elements.
// test_loopback_transport.cpp is the quick subset and tests the transport's
// own promises.
#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>

#include "support/algorithm_lists.hpp"
#include "support/harness.hpp"
#include "support/layout_sweep.hpp"
#include "support/loopback_transport.hpp"

namespace {

const layout_sweep::plan full_plan{{{1, 1, 1}, {2, 3, 4}, {0, 3, 2}, {3, 0, 1}, {5, 1, 3}, {1, 7, 1}, {2, 2, 0}},
                                   layout_sweep::every_pair(),
                                   true,
                                   true};

}  // namespace

TEMPLATE_LIST_TEST_CASE("every all-gather algorithm x along<D> x arrangement x element type on the loopback, P = 1..8",
                        "[loopback][along][full]", plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const int ranks = GENERATE(range(1, 9));
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(ranks);
  const auto verdicts = loopback::run(ranks, [](loopback::communicator& comm) {
    return layout_sweep::gather_sweep<TestType, std::int32_t>(comm, full_plan) +
           layout_sweep::gather_sweep<TestType, plait_test::triple>(comm, full_plan) +
           layout_sweep::gather_sweep<TestType, plait_test::three_bytes>(comm, full_plan) +
           layout_sweep::gather_sweep<TestType, double>(comm, full_plan) +
           layout_sweep::gather_sweep<TestType, std::uint8_t>(comm, full_plan);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("every all-to-all algorithm x redistribute<S, C> x arrangement x element type on the loopback",
                        "[loopback][redistribute][full]", plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const int ranks = GENERATE(range(1, 9));
  CAPTURE(ranks);
  const auto verdicts = loopback::run(ranks, [](loopback::communicator& comm) {
    return layout_sweep::exchange_sweep<TestType, std::int32_t>(comm, full_plan) +
           layout_sweep::exchange_sweep<TestType, plait_test::triple>(comm, full_plan) +
           layout_sweep::exchange_sweep<TestType, plait_test::three_bytes>(comm, full_plan) +
           layout_sweep::exchange_sweep<TestType, double>(comm, full_plan) +
           layout_sweep::exchange_sweep<TestType, std::uint8_t>(comm, full_plan);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("every all-to-all algorithm moves 1-d ranges of many lengths on the loopback",
                        "[loopback][full]", plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const int ranks = GENERATE(range(1, 9));
  CAPTURE(ranks);
  const auto verdicts = loopback::run(ranks, [](loopback::communicator& comm) {
    std::string verdict;
    for (std::size_t n : {std::size_t{0}, std::size_t{2}, std::size_t{17}, std::size_t{1000}, std::size_t{4099}}) {
      verdict += plait_test::gather_and_check<plait_test::three_bytes, TestType>(comm, n);
      verdict += plait_test::gather_and_check<double, TestType>(comm, n);
      verdict += plait_test::exchange_and_check<plait_test::three_bytes, TestType>(comm, n);
      verdict += plait_test::exchange_and_check<double, TestType>(comm, n);
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

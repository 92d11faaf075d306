// plait-test-labels: quick shm
// plait-test-timeout: 300
// Reductions on the NVLink transport's host emulation: every algorithm that
// schedules them, blocking, nonblocking and persistent, P = 1..5, against a
// serial reference, with the copy engine allocating the run's memory. (The
// CUDA policy has no combine kernels yet: op/fold_run.hpp's static_assert
// stops a reduction on it at compile time.)
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <plait/plait.hpp>
#include <plait/transport/nvlink/host_emulation.hpp>

#include "support/algorithm_lists.hpp"
#include "support/harness.hpp"

using plait_test::mode;
using gpu_comm = plait::nvlink::emulated_communicator;

TEMPLATE_LIST_TEST_CASE("nvlink emulation: reductions equal a serial reference in every form", "[nvlink][reduce]",
                        plait_test::algorithms_for<plait::op::all_reduce<>>) {
  using Algorithm = TestType;
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& boot) -> std::string {
    gpu_comm gpu(boot, 0, {}, {2, 64});  // small slots: messages cross chunks
    const auto p = static_cast<std::size_t>(ranks);
    const std::size_t block = 37;
    std::vector<std::int64_t> send(block * p);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = static_cast<std::int64_t>(i * 31 + gpu.rank() * 7);
    const auto want = [&](std::size_t i) {
      std::int64_t total = 0;
      for (int r = 0; r < ranks; ++r) total += static_cast<std::int64_t>(i * 31 + r * 7);
      return total;
    };
    std::vector<std::int64_t> recv(send.size());
    const std::uint64_t allocations = gpu.copy_engine().allocations;
    plait::all_reduce<Algorithm>(gpu, send, recv, plait::sum{});
    for (std::size_t i = 0; i < recv.size(); ++i) {
      if (recv[i] != want(i)) return "all_reduce element " + std::to_string(i);
    }
    if (ranks > 1 && gpu.copy_engine().allocations == allocations) return "the run did not allocate through the engine";
    auto request = plait::iall_reduce<Algorithm>(gpu, send, recv, plait::max{});
    request.wait();
    if constexpr (plait_test::has_schedule<Algorithm, plait::op::reduce_scatter<>>) {
      std::vector<std::int64_t> part(block);
      auto persistent = plait::reduce_scatter_init<Algorithm>(gpu, send, part, plait::sum{});
      persistent.start();
      persistent.wait();
      for (std::size_t i = 0; i < block; ++i) {
        if (part[i] != want(static_cast<std::size_t>(gpu.rank()) * block + i)) return "reduce_scatter_init";
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

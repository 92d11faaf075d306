// plait-test-labels: quick shm
// plait-test-timeout: 300
// Nonblocking and persistent collectives on the NVLink transport's host
// emulation. The NVLink transport is stream-ordered: an i-form runs the
// collective as the blocking form does (which returns once its step is on the
// stream) and returns a complete request; a persistent start does the same.
// Results match the serial reference.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <plait/plait.hpp>
#include <plait/transport/nvlink/host_emulation.hpp>

#include "support/harness.hpp"
#include "support/in_flight_workload.hpp"

using plait_test::mode;
using gpu_comm = plait::nvlink::emulated_communicator;

TEST_CASE("nvlink emulation: i-forms and persistent collectives are stream-ordered and match the reference",
          "[nvlink][nonblocking]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& boot) -> std::string {
    gpu_comm gpu(boot, 0, {}, {2, 64});
    const int p = gpu.size();
    plait_test::gathered g(gpu.rank(), p, 9, 1);
    plait_test::exchanged e(gpu.rank(), p, 4, 2);
    auto r1 = plait::iall_gather<plait::ring>(gpu, g.send, g.recv);
    auto r2 = plait::iall_to_all<plait::pairwise>(gpu, e.send, e.recv);
    if (!r1.complete() || !r2.complete()) return "a stream-ordered request is not complete when returned";
    r2.wait();
    if (!r1.test()) return "test() on a complete request returned false";
    gpu.synchronize();
    if (g.recv != g.want) return "iall_gather differs from the reference";
    if (e.recv != e.want) return "iall_to_all differs from the reference";
    auto bound = plait::all_gather_init<plait::bruck>(gpu, g.send, g.recv);
    for (int round = 0; round < 3; ++round) {
      for (std::size_t i = 0; i < g.send.size(); ++i) g.send[i] = plait_test::in_flight_value(gpu.rank(), i, round);
      bound.start();
      bound.wait();
      gpu.synchronize();
      for (int r = 0; r < p; ++r) {
        for (std::size_t i = 0; i < g.send.size(); ++i) {
          if (g.recv[static_cast<std::size_t>(r) * g.send.size() + i] != plait_test::in_flight_value(r, i, round))
            return "persistent all_gather differs from the reference in round " + std::to_string(round);
        }
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// Overlapping communication with computation: every layer's weights are
// all-gathered from 1/P shards (FSDP/ZeRO-3), and the next layer's all-gather
// runs while this layer computes (examples/support/overlap_layers.hpp has the
// loop). Two processes on shared memory, verified against a serial
// computation; prints the step time blocking vs overlapped.
//
// On one node the copy itself needs a core: with every core computing there
// is nothing to overlap with, so expect a ratio near 1 here. Where a link and
// not a CPU moves the bytes, the same loop over MPI between two hosts
// (examples/overlap_prefetch_mpi.cpp, docs/performance.md) hides the transfer.
#include <plait/plait.hpp>

#include <cstdio>
#include <thread>

#include "support/overlap_layers.hpp"

int main() {
  plait::shm::run_processes(2, [](plait::shm::communicator& comm) {
    const overlap::shape s;
    const auto [blocking, overlapped] = overlap::compare(comm, s);
    if (comm.rank() == 0) {
      std::printf("overlap_prefetch: %zu layers of %zux%zu float weights, batch %zu, P=%d, %u cores\n", s.layers, s.d,
                  s.d, s.batch, comm.size(), std::thread::hardware_concurrency());
      std::printf("  step time blocking   %8.3f ms\n", blocking * 1e3);
      std::printf("  step time overlapped %8.3f ms  (%.2fx)\n", overlapped * 1e3, overlapped / blocking);
      std::printf("  results equal the serial reference in both modes\n");
    }
  });
  return 0;
}

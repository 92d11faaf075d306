// plait-example-needs: mpi
// The overlap loop of examples/overlap_prefetch.cpp over MPI: run it across
// two hosts (scripts/bench-overlap runs it on the emulated two hosts, with a
// rate-limited link) to see a transfer that a link, not a CPU, moves hidden
// behind the computation. Options: --layers N --d N --batch N --repeats N
// --look-every N (the computation calls test() every N x 64 rows of W)
// --idle-us N (each layer waits N us using no core instead of computing).
#include <plait/mpi.hpp>
#include <plait/plait.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "support/overlap_layers.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  overlap::shape s;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::size_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--layers") == 0) s.layers = value;
    if (std::strcmp(argv[i], "--d") == 0) s.d = value;
    if (std::strcmp(argv[i], "--batch") == 0) s.batch = value;
    if (std::strcmp(argv[i], "--repeats") == 0) s.repeats = value;
    if (std::strcmp(argv[i], "--look-every") == 0) s.look_every = static_cast<unsigned>(value < 1 ? 1 : value);
    if (std::strcmp(argv[i], "--idle-us") == 0) s.idle_us = value;
  }
  int status = 0;
  {
    plait::mpi::communicator comm(MPI_COMM_WORLD);
    try {
      const auto [blocking, overlapped] = overlap::compare(comm, s);
      if (comm.rank() == 0) {
        std::printf("overlap_prefetch_mpi: %zu layers of %zux%zu float weights (%zu KiB), batch %zu, P=%d\n", s.layers,
                    s.d, s.d, s.d * s.d * sizeof(float) / 1024, s.batch, comm.size());
        if (s.idle_us > 0) std::printf("  each layer idles %zu us instead of computing\n", s.idle_us);
        std::printf("  step time blocking   %9.3f ms\n", blocking * 1e3);
        std::printf("  step time overlapped %9.3f ms  (%.2fx)\n", overlapped * 1e3, overlapped / blocking);
        std::printf("  results equal the serial reference in both modes\n");
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "overlap_prefetch_mpi: %s\n", e.what());
      status = 1;
    }
  }
  MPI_Finalize();
  return status;
}

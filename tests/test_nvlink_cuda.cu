// plait-test-labels: quick
// plait-test-needs: cuda
// plait-test-timeout: 300
// The NVLink transport on real GPUs (plait::nvlink::communicator): every
// all-gather and all-to-all algorithm, a strided along<1> layout, small
// slots, and device-side errors, on 2-4 ranks as processes (CUDA IPC) and as
// threads (same process) sharing the visible GPUs. Compiled and linked with
// nvcc everywhere; the checks run when a GPU is present (probed in a forked
// child, so this process never initialises CUDA before forking ranks) and the
// test says it skipped otherwise. The protocol itself is tested on every
// machine by test_nvlink_emulation.cpp.
#include <catch2/catch.hpp>

#include "gpu/nvlink_checks.cuh"
#include "gpu/pack_checks.cuh"

static_assert(plait::transport<plait::nvlink::communicator>);
static_assert(std::is_same_v<plait::nvlink::communicator::memory_space, plait::device_memory>);
static_assert(!std::is_constructible_v<plait::nvlink::communicator, plait::shm::communicator&&, int, cudaStream_t>);

TEST_CASE("NVLink transport on GPUs: algorithms, layouts, IPC and same-process paths, device errors",
          "[nvlink][cuda]") {
  if (!gpu_checks::gpu_present()) {
    WARN("no CUDA device visible: NVLink GPU checks skipped (scripts/gpu-check runs them on a GPU machine)");
    return;
  }
  for (const auto& [name, check] : nvlink_checks::all()) {
    CAPTURE(name);
    CHECK(check() == "");
  }
}

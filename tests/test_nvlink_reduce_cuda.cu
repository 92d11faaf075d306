// plait-test-labels: quick
// plait-test-needs: cuda
// plait-test-timeout: 300
// Reductions on device buffers over the NVLink transport on real GPUs:
// reduce_scatter and all_reduce combining on the device (plait/cuda/combine.cuh)
// with every algorithm, several element types and reductions (ordered<sum>
// bit for bit), in place, nonblocking and persistent, on 2-4 ranks as
// processes and as threads, against a serial reference. Compiled and linked
// with nvcc everywhere; the checks run when a GPU is present and the test
// says it skipped otherwise (scripts/gpu-check runs the same checks). The
// combine functors themselves are tested on every machine by
// test_combine_thrust_cpp.cpp, the fold run by test_nvlink_reduce.cpp.
#include <catch2/catch.hpp>

#include "gpu/pack_checks.cuh"
#include "gpu/reduce_checks.cuh"

// Reductions a device cannot run are refused at compile time (a user
// reduction's callable is host code; CUDA device code has no long double).
static_assert(plait::detail::device_combinable<plait::sum, float>());
static_assert(plait::detail::device_combinable<plait::accumulate<float, plait::sum>, plait::bfloat16>());
static_assert(!plait::detail::device_combinable<plait::sum, long double>());
static_assert(!plait::detail::device_combinable<plait::user_reduction<int (*)(int, int), true>, int>());

TEST_CASE("NVLink transport on GPUs: reductions combine device buffers on the device", "[nvlink][cuda][reduce]") {
  if (!gpu_checks::gpu_present()) {
    WARN("no CUDA device visible: device reduction checks skipped (scripts/gpu-check runs them on a GPU machine)");
    return;
  }
  for (const auto& [name, check] : reduce_checks::all()) {
    CAPTURE(name);
    CHECK(check() == "");
  }
}

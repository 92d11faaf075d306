// plait-test-labels: quick
// plait-test-needs: cuda
// Device packing kernels (plait::device::pack / unpack) against the host
// packer. Compiled and linked with nvcc everywhere; the checks run when a GPU
// is present (probed in a forked child) and the test says it skipped otherwise.
#include <catch2/catch.hpp>

#include "gpu/pack_checks.cuh"

TEST_CASE("device pack and unpack kernels match the host packer", "[pack][cuda]") {
  if (!gpu_checks::gpu_present()) {
    WARN("no CUDA device visible: device packing checks skipped (scripts/gpu-check runs them on a GPU machine)");
    return;
  }
  for (const auto& [name, check] : gpu_checks::all()) {
    CAPTURE(name);
    CHECK(check() == "");
  }
}

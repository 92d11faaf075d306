// Standalone GPU check of reductions on device buffers over the NVLink
// transport for scripts/gpu-check (no Catch2 and no MPI there): runs every
// check in reduce_checks.cuh and prints `N passed, N failed`. Exits 0 when
// all pass; with no GPU it says so and exits 0 with nothing run.
#include <chrono>
#include <cstdio>

#include "pack_checks.cuh"  // gpu_checks::gpu_present
#include "reduce_checks.cuh"

int main() {
  if (!gpu_checks::gpu_present()) {
    std::printf("reduce_check: no CUDA device; nothing run\n0 passed, 0 failed\n");
    return 0;
  }
  int passed = 0;
  int failed = 0;
  for (const auto& [name, check] : reduce_checks::all()) {
    std::string verdict;
    const auto start = std::chrono::steady_clock::now();
    try {
      verdict = check();
    } catch (const std::exception& e) {
      verdict = std::string("threw: ") + e.what();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %s (%.1f s)%s\n", verdict.empty() ? "PASS" : "FAIL", name.c_str(), seconds,
                verdict.empty() ? "" : (" -- " + verdict).c_str());
    std::fflush(stdout);
    (verdict.empty() ? passed : failed) += 1;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

// Standalone GPU check of the NVLink transport for scripts/gpu-check (no
// Catch2 and no MPI there): runs every check in nvlink_checks.cuh (2-4 ranks
// as processes sharing the GPUs through CUDA IPC, then as threads of one
// process) and prints `N passed, N failed`. Exits 0 when all pass; with no GPU
// it says so and exits 0 with nothing run.
#include <chrono>
#include <cstdio>

#include "nvlink_checks.cuh"
#include "pack_checks.cuh"  // gpu_checks::gpu_present

int main() {
  if (!gpu_checks::gpu_present()) {
    std::printf("nvlink_check: no CUDA device; nothing run\n0 passed, 0 failed\n");
    return 0;
  }
  int passed = 0;
  int failed = 0;
  for (const auto& [name, check] : nvlink_checks::all()) {
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

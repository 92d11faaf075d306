// Standalone GPU check of device packing for scripts/gpu-check (no Catch2
// there): runs every check in pack_checks.cuh and prints `N passed, N failed`.
// Exits 0 when all pass; with no GPU it says so and exits 0 with nothing run.
#include <cstdio>

#include "pack_checks.cuh"

int main() {
  if (!gpu_checks::gpu_present()) {
    std::printf("pack_check: no CUDA device; nothing run\n0 passed, 0 failed\n");
    return 0;
  }
  int passed = 0;
  int failed = 0;
  for (const auto& [name, check] : gpu_checks::all()) {
    const std::string verdict = check();
    std::printf("%s: %s%s\n", verdict.empty() ? "PASS" : "FAIL", name.c_str(),
                verdict.empty() ? "" : (" -- " + verdict).c_str());
    (verdict.empty() ? passed : failed) += 1;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

// The loop every tests/gpu/*_check.cu program runs: each check once, timed,
// a thrown exception counted as its failure, one PASS/FAIL line per check,
// then the `N passed, N failed` line scripts/gpu-check sums. With no GPU it
// says so and runs nothing.
#pragma once

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pack_checks.cuh"  // gpu_checks::gpu_present

namespace gpu_checks {

/// Runs `checks` for the program `program`; the process's exit status: 0 when all pass.
inline int run_all(const char* program,
                   const std::vector<std::pair<std::string, std::function<std::string()>>>& checks) {
  if (!gpu_present()) {
    std::printf("%s: no CUDA device; nothing run\n0 passed, 0 failed\n", program);
    return 0;
  }
  int passed = 0;
  int failed = 0;
  for (const auto& [name, check] : checks) {
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

}  // namespace gpu_checks

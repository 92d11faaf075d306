// The decision every entry point makes first, and the wrapper that runs a
// served call: timing, the report's counters, exceptions turned into MPI
// errors.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "config.hpp"
#include "errors.hpp"
#include "report.hpp"
#include "state.hpp"

// The library's entry points are the only symbols it exports (the build
// hides the rest: plait's inline functions must not meet another plait in
// the application).
#define PLAIT_PMPI_EXPORT extern "C" __attribute__((visibility("default")))

namespace plait_pmpi {

/// Why `f` on `comm` passes to PMPI, from what every rank of `comm` agrees
/// on (the settings, agreed at MPI_Init; the communicator's kind; the
/// thread level), or nothing if it may be served. Local.
std::optional<reason> pass_reason(function f, MPI_Comm comm) noexcept;

/// Records the thread level MPI_Init_thread provided.
void set_thread_level(int provided) noexcept;

/// Runs a served call's body; a C++ exception becomes an MPI error on `comm`.
template <class Body>
int serve(function f, MPI_Comm comm, std::uint64_t bytes, Body&& body) noexcept {
  const auto start = std::chrono::steady_clock::now();
  try {
    body();
  } catch (...) {
    return report_current_exception(comm, name(f));
  }
  count_served(f, bytes, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return MPI_SUCCESS;
}

}  // namespace plait_pmpi

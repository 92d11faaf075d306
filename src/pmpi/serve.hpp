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
#include "tuning.hpp"

// The library's entry points are the only symbols it exports (the build
// hides the rest: plait's inline functions must not meet another plait in
// the application).
#define PLAIT_PMPI_EXPORT extern "C" __attribute__((visibility("default")))

namespace plait_pmpi {

/// Why `f` on `comm` passes to PMPI, from what every rank of `comm` agrees
/// on (the settings, agreed at MPI_Init; the communicator's kind), or
/// nothing if it may be served. Local.
std::optional<reason> pass_reason(function f, MPI_Comm comm) noexcept;

/// A call's sizes: what every rank of the communicator knows alike (the
/// tuning table decides from it) and this rank's payload (the report's).
struct call_bytes {
  std::uint64_t agreed = 0;
  std::uint64_t payload = 0;
};

/// What an entry point does with a call: pass it to PMPI (`why`, already
/// counted), serve it on `state`, or return `error` (a failure deciding).
struct decision {
  std::optional<reason> why;
  comm_state* state = nullptr;
  std::optional<int> error;
};

/// Why the tuning table passes `f` (auto mode) with `agreed_bytes` on
/// `state`'s communicator, or nothing if a row serves it.
std::optional<reason> table_reason(function f, const comm_state& state, std::uint64_t agreed_bytes) noexcept;

/// Whether the settings leave `f` to the tuning table (PLAIT_PMPI=auto).
bool decided_by_table(function f) noexcept;

/// The serve-or-pass decision every entry point makes first, from what
/// every rank of `comm` agrees on, in order: pass_reason; `more()` (a
/// reduction's datatype and op; it may throw); under auto, whether the table
/// serves `f` anywhere; the communicator's state (built on first use,
/// collectively: every rank reaches it alike); under auto, the table's row
/// for this shape and size. A pass is counted in the report here.
template <class More>
decision decide(function f, MPI_Comm comm, call_bytes bytes, More&& more) noexcept {
  decision d;
  d.why = pass_reason(f, comm);
  if (!d.why) {
    try {
      d.why = more();
    } catch (...) {
      d.error = report_current_exception(comm, name(f));
      return d;
    }
  }
  const bool by_table = decided_by_table(f);
  if (!d.why && by_table && !current_table().may_serve(f)) d.why = reason::table;
  if (!d.why) {
    d.state = state_of(comm);
    if (d.state == nullptr) d.why = reason::setup_failed;
  }
  if (!d.why && by_table) d.why = table_reason(f, *d.state, bytes.agreed);
  if (d.why) {
    d.state = nullptr;
    count_passed(f, *d.why, bytes.payload);
  }
  return d;
}

/// decide for a call with nothing more to check.
inline decision decide(function f, MPI_Comm comm, call_bytes bytes) noexcept {
  return decide(f, comm, bytes, [] { return std::optional<reason>{}; });
}

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

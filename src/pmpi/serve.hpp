// The decision every entry point makes first, and the wrapper that runs a
// served call: timing, the report's counters, exceptions turned into MPI
// errors.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

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
/// on (the library's teardown; the communicator's kind), or nothing if it
/// may be served. Local.
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

/// Why every call of `f` passes to PMPI whatever its arguments (its setting
/// is off, or auto and no row of the table serves `f`), or nothing: a few
/// loads, checked first, so that a call the library leaves to MPI costs next
/// to nothing over MPI's own (docs/pmpi.md, "Measured").
std::optional<reason> outright_pass(function f) noexcept;

/// The serve-or-pass decision every entry point makes first, from what
/// every rank of `comm` agrees on, cheapest first: outright_pass;
/// `sizes(payload)` (a call_bytes, the payload only if asked: only then are
/// the arguments looked at); under auto,
/// whether a row of the table serves `f` at this size for some shape;
/// pass_reason (skipped for a communicator this thread served on last,
/// known_state); `more()` (a reduction's datatype and op; it may throw); the
/// communicator's state (built on first use, collectively: every rank
/// reaches it alike); under auto, the table's row for this shape and size.
/// A pass is counted in the report here.
template <class Sizes, class More>
decision decide(function f, MPI_Comm comm, Sizes&& sizes, More&& more) noexcept {
  decision d;
  if (const std::optional<reason> why = outright_pass(f)) {
    d.why = why;
    // The payload is for the report alone: without one, a passed call queries nothing.
    count_passed(f, *why, current().report ? sizes(true).payload : 0);
    return d;
  }
  // The payload only with a report: a pass then costs the agreed size's queries alone.
  const call_bytes bytes = sizes(current().report);
  const bool by_table = decided_by_table(f);
  if (by_table && !current_table().may_serve(f, bytes.agreed)) d.why = reason::table;
  if (!d.why) {
    // A communicator served before needs no kind check.
    d.state = known_state(comm);
    if (d.state == nullptr) d.why = pass_reason(f, comm);
  }
  if (!d.why) {
    try {
      d.why = more();
    } catch (...) {
      d.error = report_current_exception(comm, name(f));
      return d;
    }
  }
  if (!d.why && d.state == nullptr) {
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
template <class Sizes>
decision decide(function f, MPI_Comm comm, Sizes&& sizes) noexcept {
  return decide(f, comm, std::forward<Sizes>(sizes), [] { return std::optional<reason>{}; });
}

/// The size of `comm` and this rank's place in it (0 if MPI cannot tell).
inline int size_of(MPI_Comm comm) noexcept {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  return size;
}
inline int rank_in(MPI_Comm comm) noexcept {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  return rank;
}

/// Runs a served call's body; a C++ exception becomes an MPI error on `comm`.
/// Timed and counted only for the report: two clock reads and three atomic
/// adds are a tenth of a small call.
template <class Body>
int serve(function f, MPI_Comm comm, std::uint64_t bytes, Body&& body) noexcept {
  const bool counted = current().report;
  const auto start = counted ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  try {
    body();
  } catch (...) {
    return report_current_exception(comm, name(f));
  }
  if (counted) {
    count_served(f, bytes, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return MPI_SUCCESS;
}

}  // namespace plait_pmpi

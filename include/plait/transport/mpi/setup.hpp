// Setup steps bounded by the timeout. MPI makes communicators only with
// blocking collectives (MPI_Comm_dup, MPI_Comm_split, MPI_Comm_split_type),
// which wait forever for a rank that never calls. So before each one, plait
// runs one nonblocking agreement polled until a deadline: every rank brings
// which setup call it makes and its verdict on its own arguments. A rank that
// rejects its arguments still joins, so every rank throws the same error
// naming it; ranks in different setup calls all throw naming both; a rank that
// never arrives leaves the others with errc::timeout instead of a hang. Once
// the agreement completes, every rank is known to be at the blocking call.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plait/core/backoff.hpp"
#include "plait/core/error.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/transport/mpi/error.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {
namespace detail {

/// The setup calls an agreement names, so that ranks in different ones
/// (which MPI would match as one collective, or hang on) are told apart.
enum class setup_call : int { communicator = 1, split, node_levels_shared, node_levels_named, node_local_shm };

/// How an error message names a setup call.
inline std::string_view setup_call_name(int call) noexcept {
  switch (static_cast<setup_call>(call)) {
    case setup_call::communicator: return "mpi::communicator(comm)";
    case setup_call::split: return "split(color, key)";
    case setup_call::node_levels_shared: return "node_levels(world)";
    case setup_call::node_levels_named: return "node_levels(world, node_id)";
    case setup_call::node_local_shm: return "node_local_shm(comm)";
  }
  return "an unknown call";
}

/// One rank's verdict on its own part of a setup step: code 0 when fine,
/// else a plait::errc and what this rank would have thrown.
struct setup_verdict {
  int code = 0;
  std::string message;

  /// The verdict of a rank that caught `e`.
  static setup_verdict of(const plait::error& e) { return {static_cast<int>(e.value()), e.detail()}; }
};

/// What an agreement ends with: every rank's value, or the error every rank
/// throws. `complete` is false when the exchange itself did not finish (a
/// timeout or an MPI failure): it may stay pending in MPI, where a collective
/// can be neither cancelled nor freed, so its communicator must not be used
/// for collectives again.
struct setup_outcome {
  bool complete = true;
  std::vector<int> values;
  std::optional<plait::error> failure;

  /// The values, or the failure thrown.
  std::vector<int> take() {
    if (failure) throw *failure;
    return std::move(values);
  }
};

/// Polls `request` (a nonblocking collective) until it completes (true) or
/// `until` passes (false: still pending). Yields from the start, then
/// sleeps: setup is not worth a core, and ranks may outnumber the cores.
/// MPI failures throw errc::transport.
inline bool complete_by(MPI_Request& request, deadline until, const error_context& at) {
  // MPI moves a nonblocking collective only while someone calls into it:
  // yield for long before sleeping, as waits do (communicator.hpp).
  plait::detail::backoff waiting(200000);
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", at);
    if (done != 0) return true;
    if (clock::now() >= until) return false;
    waiting.pause();
  }
}

/// The agreement before a blocking setup step on `comm` (collective over it):
/// an MPI_Iallgather of (call, verdict, value) from every rank, then, if some
/// rank refused, an MPI_Ibcast of the first such rank's message; each polled
/// for at most `timeout`. Every rank ends with the same outcome: ranks in
/// different calls (invalid_argument naming the first rank that differs from
/// rank 0 and both calls), else a refusal (the first refusing rank's code and
/// message, naming it and how many refused), else every rank's value.
inline setup_outcome agree(MPI_Comm comm, setup_call call, const setup_verdict& mine, int value,
                           std::chrono::nanoseconds timeout, const error_context& at) {
  setup_outcome out;
  // The exchange did not finish: it stays pending in MPI.
  const auto stalled = [&](std::string_view step) {
    out.complete = false;
    out.failure = plait::error(
        errc::timeout,
        plait::detail::concat({"not every rank reached ", setup_call_name(static_cast<int>(call)),
                               " within the timeout of ", plait::detail::seconds_text(timeout), " (", step,
                               "): a rank that skips it, fails before it or is in another collective on this "
                               "communicator leaves the others here; the exchange stays pending in MPI, so the "
                               "communicator must not be used for collectives again"}),
        at);
  };
  int rank = 0;
  int size = 0;
  try {
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", at);
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size", at);
    const int record[3] = {static_cast<int>(call), mine.code, value};
    std::vector<int> records(static_cast<std::size_t>(size) * 3);
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallgather(record, 3, MPI_INT, records.data(), 3, MPI_INT, comm, &request), "MPI_Iallgather", at);
    if (!complete_by(request, plait::detail::after(timeout), at)) {
      stalled("MPI_Iallgather");
      return out;
    }

    const auto field = [&](int r, int f) {
      return records[static_cast<std::size_t>(r) * 3 + static_cast<std::size_t>(f)];
    };
    for (int r = 1; r < size; ++r) {
      if (field(r, 0) != field(0, 0)) {
        out.failure =
            plait::error(errc::invalid_argument,
                         plait::detail::concat({"ranks are in different setup calls: rank 0 in ",
                                                setup_call_name(field(0, 0)), ", rank ", r, " in ",
                                                setup_call_name(field(r, 0)), "; every rank must make the same call"}),
                         {at.rank, at.operation, -1, r, at.parent_rank});
        return out;
      }
    }
    int first = -1;
    int refused = 0;
    for (int r = 0; r < size; ++r) {
      if (field(r, 1) == 0) continue;
      if (first < 0) first = r;
      ++refused;
    }
    if (first < 0) {
      out.values.resize(static_cast<std::size_t>(size));
      for (int r = 0; r < size; ++r) out.values[static_cast<std::size_t>(r)] = field(r, 2);
      return out;
    }

    // The refusing rank's own words, so every rank throws the same error.
    constexpr int message_bytes = 256;
    std::string text(message_bytes, '\0');
    if (rank == first) mine.message.copy(text.data(), message_bytes - 1);
    check(MPI_Ibcast(text.data(), message_bytes, MPI_CHAR, first, comm, &request), "MPI_Ibcast", at);
    if (!complete_by(request, plait::detail::after(timeout), at)) {
      stalled("MPI_Ibcast");
      return out;
    }
    if (const auto end = text.find('\0'); end != std::string::npos) text.resize(end);
    const int code = field(first, 1);
    const bool known = code >= static_cast<int>(errc::invalid_argument) && code <= static_cast<int>(errc::unsupported);
    out.failure =
        plait::error(known ? static_cast<errc>(code) : errc::transport,
                     plait::detail::concat(
                         {"rank ", first, ": ", text,
                          refused > 1 ? plait::detail::concat({" (", refused, " ranks refused)"}) : std::string()}),
                     {at.rank, at.operation, -1, first, at.parent_rank});
  } catch (const plait::error& e) {
    // MPI failed: what it left pending is unknown.
    out.complete = false;
    out.failure = e;
  }
  return out;
}

}  // namespace detail
}  // namespace mpi
}  // namespace v0
}  // namespace plait

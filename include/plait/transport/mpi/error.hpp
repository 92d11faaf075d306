// MPI return codes as plait errors. plait's duplicates of user communicators
// carry MPI_ERRORS_RETURN, so a failed MPI call comes back here instead of
// aborting the job, and the user sees a plait::error with MPI's own words.
#pragma once

#include <mpi.h>

#include <string>
#include <string_view>

#include "plait/core/error.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {
namespace detail {

/// MPI's description of `code`, with the number, for messages.
inline std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  std::string out;
  if (MPI_Error_string(code, text, &length) == MPI_SUCCESS && length > 0) {
    out.assign(text, static_cast<std::size_t>(length));
    out += " ";
  }
  out += "(MPI error " + std::to_string(code) + ")";
  return out;
}

/// The plait error class for an MPI error: a truncated receive is a size
/// mismatch between sender and receiver, everything else a transport failure.
inline errc classify(int code) noexcept {
  int error_class = MPI_ERR_OTHER;
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS) return errc::transport;
  return error_class == MPI_ERR_TRUNCATE ? errc::size_mismatch : errc::transport;
}

/// Throws the plait::error for a failed MPI call; does nothing on MPI_SUCCESS.
inline void check(int code, std::string_view call, const error_context& where) {
  if (code == MPI_SUCCESS) return;
  throw error(classify(code), std::string(call) + " failed: " + error_string(code), where);
}

/// True once MPI_Finalize has run: MPI handles must not be touched then.
inline bool finalized() noexcept {
  int done = 0;
  MPI_Finalized(&done);
  return done != 0;
}

}  // namespace detail
}  // namespace mpi
}  // namespace v0
}  // namespace plait

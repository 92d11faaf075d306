// MPI's error semantics for calls plait served: a C++ exception never leaves
// an entry point; it becomes an MPI error code of the library's own class,
// handed to the communicator's error handler as MPI would.
#pragma once

#include <mpi.h>

namespace plait_pmpi {

/// Reports the exception in flight (call only inside a catch block) through
/// PMPI_Comm_call_errhandler on `comm` and returns the code for the caller
/// to return (MPI_ERRORS_RETURN) — MPI_ERRORS_ARE_FATAL aborts inside.
int report_current_exception(MPI_Comm comm, const char* function) noexcept;

}  // namespace plait_pmpi

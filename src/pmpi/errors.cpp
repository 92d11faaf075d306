#include "errors.hpp"

#include <cstdio>
#include <exception>
#include <new>

#include "pmpi_mpi.hpp"

namespace plait_pmpi {
namespace {

// One MPI error class for the library and one code in it per plait::errc
// (1..6) plus one for anything else (index 0), registered at the first error
// (MPI_Add_error_class is local, so ranks need not agree on when).
constexpr int kinds = 7;
constexpr const char* kind_text[kinds] = {
    "plait_pmpi: internal error", "plait_pmpi: invalid argument",  "plait_pmpi: size mismatch", "plait_pmpi: timeout",
    "plait_pmpi: peer lost",      "plait_pmpi: transport failure", "plait_pmpi: unsupported"};

struct error_codes {
  int of[kinds];
};

error_codes register_codes() noexcept {
  error_codes codes{};
  int error_class = MPI_ERR_OTHER;
  if (PMPI_Add_error_class(&error_class) != MPI_SUCCESS) error_class = MPI_ERR_OTHER;
  for (int k = 0; k < kinds; ++k) {
    codes.of[k] = error_class;
    if (error_class != MPI_ERR_OTHER && PMPI_Add_error_code(error_class, &codes.of[k]) == MPI_SUCCESS) {
      PMPI_Add_error_string(codes.of[k], kind_text[k]);
    }
  }
  return codes;
}

int code_of(int kind) noexcept {
  // A function-local static: two threads failing at once (MPI_THREAD_MULTIPLE)
  // register the class once, and both see it registered.
  static const error_codes codes = register_codes();
  return codes.of[kind];
}

}  // namespace

int report_current_exception(MPI_Comm comm, const char* function) noexcept {
  int kind = 0;
  try {
    throw;
  } catch (const plait::error& e) {
    const int value = static_cast<int>(e.value());
    kind = value >= 1 && value < kinds ? value : 0;
    // MPI's error string is one per code; the detail (rank, peer, step) is
    // only in plait's message, so it goes to stderr once here.
    std::fprintf(stderr, "plait_pmpi: %s: %s\n", function, e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "plait_pmpi: %s: out of memory\n", function);
    PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
    return MPI_ERR_NO_MEM;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plait_pmpi: %s: %s\n", function, e.what());
  } catch (...) {
    std::fprintf(stderr, "plait_pmpi: %s: unknown exception\n", function);
  }
  const int code = code_of(kind);
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

}  // namespace plait_pmpi

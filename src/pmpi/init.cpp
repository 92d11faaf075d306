// MPI_Init, MPI_Init_thread and MPI_Finalize: the settings agreed once every
// rank has MPI, and plait's state gone before MPI is.
#include "serve.hpp"

using namespace plait_pmpi;

namespace {

void after_init() noexcept {
  agree(MPI_COMM_WORLD);
  load_tuning_table(MPI_COMM_WORLD);
}

}  // namespace

PLAIT_PMPI_EXPORT int MPI_Init(int* argc, char*** argv) {
  const int code = PMPI_Init(argc, argv);
  if (code == MPI_SUCCESS) after_init();
  return code;
}

PLAIT_PMPI_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int code = PMPI_Init_thread(argc, argv, required, provided);
  if (code == MPI_SUCCESS) after_init();
  return code;
}

PLAIT_PMPI_EXPORT int MPI_Finalize(void) {
  // MPI_COMM_WORLD's attributes are never deleted by MPI: plait's
  // communicators on it (and on any the program did not free) go here,
  // while MPI still runs. The report is collective over MPI_COMM_WORLD, as
  // MPI_Finalize is.
  teardown();
  print_report(MPI_COMM_WORLD);
  return PMPI_Finalize();
}

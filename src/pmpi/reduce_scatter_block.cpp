// MPI_Reduce_scatter_block: plait::reduce_scatter on the communicator's node levels.
#include <algorithm>
#include <span>
#include <vector>

#include "datatype.hpp"
#include "reduction_dispatch.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                                               MPI_Op op, MPI_Comm comm) {
  constexpr function f = function::reduce_scatter_block;
  std::optional<reason> why = pass_reason(f, comm);
  element_type e;
  if (!why) {
    try {
      e = element_of(datatype);
      why = reduction_pass_reason(e, op);
    } catch (...) {
      return report_current_exception(comm, name(f));
    }
  }
  comm_state* state = why ? nullptr : state_of(comm);
  if (!why && state == nullptr) why = reason::setup_failed;
  const std::uint64_t bytes = payload_bytes(recvcount, datatype);
  if (why) {
    count_passed(f, *why, bytes);
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  }
  int P = 0;
  PMPI_Comm_size(comm, &P);
  return serve(f, comm, bytes, [&] {
    visit_reduction(e, op, [&]<class T, class R>(std::type_identity<T>, R reduction, int scale) {
      const std::size_t n = static_cast<std::size_t>(recvcount) * static_cast<std::size_t>(scale);
      if (sendbuf == MPI_IN_PLACE) {
        // The input is all of recvbuf, the result its first block. Open MPI leaves the other
        // blocks as they were and programs check it (mpi4py's tests), while plait in place would
        // leave partials there: reduce out of place into scratch instead.
        const std::size_t total = n * static_cast<std::size_t>(P);
        std::vector<T> result(n);
        plait::reduce_scatter<reduction_algorithm>(
            *state->levels, std::span<const T>{static_cast<const T*>(recvbuf), total}, std::span<T>{result}, reduction);
        std::copy(result.begin(), result.end(), static_cast<T*>(recvbuf));
      } else {
        plait::reduce_scatter<reduction_algorithm>(
            *state->levels, std::span<const T>{static_cast<const T*>(sendbuf), n * static_cast<std::size_t>(P)},
            std::span<T>{static_cast<T*>(recvbuf), n}, reduction);
      }
    });
  });
}

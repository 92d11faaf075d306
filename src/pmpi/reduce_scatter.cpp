// MPI_Reduce_scatter: plait::reduce_scatter_v on the communicator's node levels.
#include <algorithm>
#include <span>
#include <vector>

#include "datatype.hpp"
#include "reduction_dispatch.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  constexpr function f = function::reduce_scatter;
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
  int P = 0;
  int rank = 0;
  PMPI_Comm_size(comm, &P);
  PMPI_Comm_rank(comm, &rank);
  const std::uint64_t bytes = payload_bytes(recvcounts[rank], datatype);
  if (why) {
    count_passed(f, *why, bytes);
    return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  }
  return serve(f, comm, bytes, [&] {
    visit_reduction(e, op, [&]<class T, class R>(std::type_identity<T>, R reduction, int scale) {
      // plait's counts are in T elements: each datatype element is `scale` of them.
      std::vector<std::size_t> counts(static_cast<std::size_t>(P));
      std::size_t total = 0;
      for (int i = 0; i < P; ++i) {
        counts[static_cast<std::size_t>(i)] = static_cast<std::size_t>(recvcounts[i]) * static_cast<std::size_t>(scale);
        total += counts[static_cast<std::size_t>(i)];
      }
      const std::size_t n = counts[static_cast<std::size_t>(rank)];
      if (sendbuf == MPI_IN_PLACE) {
        // The input is all of recvbuf, the result its start. Open MPI leaves the rest as it was
        // and programs check it (mpi4py's tests), while plait in place would leave partials
        // there: reduce out of place into scratch instead.
        std::vector<T> result(n);
        plait::reduce_scatter_v<reduction_algorithm>(*state->levels,
                                                     std::span<const T>{static_cast<const T*>(recvbuf), total},
                                                     std::span<T>{result}, counts, reduction);
        std::copy(result.begin(), result.end(), static_cast<T*>(recvbuf));
      } else {
        plait::reduce_scatter_v<reduction_algorithm>(*state->levels,
                                                     std::span<const T>{static_cast<const T*>(sendbuf), total},
                                                     std::span<T>{static_cast<T*>(recvbuf), n}, counts, reduction);
      }
    });
  });
}

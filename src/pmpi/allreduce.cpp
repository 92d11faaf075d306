// MPI_Allreduce: plait::all_reduce on the communicator's node levels.
#include <span>

#include "datatype.hpp"
#include "reduction_dispatch.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm) {
  constexpr function f = function::allreduce;
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
  const std::uint64_t bytes = payload_bytes(count, datatype);
  if (why) {
    count_passed(f, *why, bytes);
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  }
  return serve(f, comm, bytes, [&] {
    visit_reduction(e, op, [&]<class T, class R>(std::type_identity<T>, R reduction, int scale) {
      const std::size_t n = static_cast<std::size_t>(count) * static_cast<std::size_t>(scale);
      const std::span<T> recv{static_cast<T*>(recvbuf), n};
      if (sendbuf == MPI_IN_PLACE) {
        plait::all_reduce<reduction_algorithm>(*state->levels, plait::in_place, recv, reduction);
      } else {
        plait::all_reduce<reduction_algorithm>(*state->levels, std::span<const T>{static_cast<const T*>(sendbuf), n},
                                               recv, reduction);
      }
    });
  });
}

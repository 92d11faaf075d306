// MPI_Reduce_scatter_block: plait::reduce_scatter on the communicator's node levels.
#include <cstring>
#include <span>

#include "datatype.hpp"
#include "reduction_dispatch.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                                               MPI_Op op, MPI_Comm comm) {
  constexpr function f = function::reduce_scatter_block;
  const std::uint64_t bytes = payload_bytes(recvcount, datatype);
  element_type e;
  const decision d = decide_reduction(f, comm, {.agreed = bytes, .payload = bytes}, datatype, op, e);
  if (d.error) return *d.error;
  if (d.why) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  comm_state* state = d.state;
  int P = 0;
  int rank = 0;
  PMPI_Comm_size(comm, &P);
  PMPI_Comm_rank(comm, &rank);
  return serve(f, comm, bytes, [&] {
    visit_reduction(e, op, [&]<class T, class R>(std::type_identity<T>, R reduction, int scale) {
      const std::size_t n = static_cast<std::size_t>(recvcount) * static_cast<std::size_t>(scale);
      if (sendbuf == MPI_IN_PLACE) {
        // MPI keeps the result at the start of recvbuf; plait leaves it in block rank().
        const std::span<T> all{static_cast<T*>(recvbuf), n * static_cast<std::size_t>(P)};
        on_levels(*state, [&](auto& comm) {
          plait::reduce_scatter<reduction_algorithm>(comm, plait::in_place, all, reduction);
        });
        if (rank != 0 && n != 0)
          std::memmove(all.data(), all.data() + n * static_cast<std::size_t>(rank), n * sizeof(T));
      } else {
        const std::span<const T> all{static_cast<const T*>(sendbuf), n * static_cast<std::size_t>(P)};
        on_levels(*state, [&](auto& comm) {
          plait::reduce_scatter<reduction_algorithm>(comm, all, std::span<T>{static_cast<T*>(recvbuf), n}, reduction);
        });
      }
    });
  });
}

// MPI_Allreduce: plait::all_reduce on one node's shared-memory group, or
// node by node across nodes (node_aware.hpp).
#include <span>
#include <type_traits>

#include "datatype.hpp"
#include "node_aware.hpp"
#include "reduction_dispatch.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm) {
  constexpr function f = function::allreduce;
  element_type e;
  const decision d = decide_reduction(
      f, comm,
      [&](bool /*payload: the same*/) {
        const std::uint64_t bytes = payload_bytes(count, datatype);
        return call_bytes{bytes, bytes};
      },
      datatype, op, e);
  if (d.error) return *d.error;
  if (d.why) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  comm_state* state = d.state;
  const std::uint64_t bytes = payload_bytes(count, datatype);
  return serve(f, comm, bytes, [&] {
    visit_reduction(e, op, [&]<class T, class R>(std::type_identity<T>, R reduction, int scale) {
      const std::size_t n = static_cast<std::size_t>(count) * static_cast<std::size_t>(scale);
      const std::span<T> recv{static_cast<T*>(recvbuf), n};
      on_levels(*state, [&](auto& group) {
        const T* send = sendbuf == MPI_IN_PLACE ? nullptr : static_cast<const T*>(sendbuf);
        // Across nodes, arithmetic elements go node by node; the rest (pairs, user ops' blobs) flat.
        if constexpr (spans_nodes_v<decltype(group)> && std::is_arithmetic_v<T>) {
          if (all_reduce_by_nodes(group, send, recv, reduction)) return;
        }
        if (send == nullptr) {
          plait::all_reduce<reduction_algorithm>(group, plait::in_place, recv, reduction);
        } else {
          plait::all_reduce<reduction_algorithm>(group, std::span<const T>{send, n}, recv, reduction);
        }
      });
    });
  });
}

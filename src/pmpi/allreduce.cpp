// MPI_Allreduce: plait::all_reduce on one node's shared-memory group, or
// node by node across nodes (node_aware.hpp); a datatype with gaps packed
// (reduction_buffers.hpp).
#include <span>
#include <type_traits>
#include <vector>

#include "datatype.hpp"
#include "node_aware.hpp"
#include "reduction_buffers.hpp"
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
    visit_kernel_reduction(
        e, op, [&]<class T, class R>(std::type_identity<T>, const R& reduction, int scale, bool by_nodes) {
          const bool in_place = sendbuf == MPI_IN_PLACE;
          const std::size_t n = count_of(count) * static_cast<std::size_t>(scale);
          const std::span<T> recv = output_values<T>(e, recvbuf, count, n, in_place);
          const std::span<const T> send = in_place ? std::span<const T>{} : input_values<T>(e, sendbuf, count, n);
          on_levels(*state, [&](auto& group) {
            // Across nodes, arithmetic elements go node by node; the rest (pairs, user ops' blobs) flat.
            if constexpr (spans_nodes_v<decltype(group)>) {
              if (by_nodes && all_reduce_by_nodes(group, in_place ? nullptr : send.data(), recv, reduction)) return;
            }
            if (in_place) {
              plait::all_reduce<reduction_algorithm>(group, plait::in_place, recv, reduction);
            } else {
              plait::all_reduce<reduction_algorithm>(group, send, recv, reduction);
            }
          });
          finish_values(e, recv, recvbuf, count);
        });
  });
}

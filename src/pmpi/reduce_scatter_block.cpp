// MPI_Reduce_scatter_block: plait::reduce_scatter on one node's shared-memory
// group, or node by node across nodes (node_aware.hpp); a datatype with gaps
// packed (reduction_buffers.hpp).
#include <span>
#include <type_traits>
#include <vector>

#include "datatype.hpp"
#include "node_aware.hpp"
#include "reduction_buffers.hpp"
#include "reduction_dispatch.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                                               MPI_Op op, MPI_Comm comm) {
  constexpr function f = function::reduce_scatter_block;
  element_type e;
  const decision d = decide_reduction(
      f, comm,
      [&](bool /*payload: the same*/) {
        const std::uint64_t bytes = payload_bytes(recvcount, datatype);
        return call_bytes{bytes, bytes};
      },
      datatype, op, e);
  if (d.error) return *d.error;
  if (d.why) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  comm_state* state = d.state;
  const std::uint64_t bytes = payload_bytes(recvcount, datatype);
  const int P = size_of(comm);
  return serve(f, comm, bytes, [&] {
    visit_kernel_reduction(
        e, op, [&]<class T, class R>(std::type_identity<T>, const R& reduction, int scale, bool by_nodes) {
          // In place the input is all of recvbuf and the result its first block.
          const bool in_place = sendbuf == MPI_IN_PLACE;
          const std::size_t items = count_of(recvcount);
          const void* input = in_place ? recvbuf : sendbuf;
          const std::size_t n = items * static_cast<std::size_t>(scale);
          const std::span<const T> all = input_values<T>(
              e, input, recvcount * P, n * static_cast<std::size_t>(P));  // MPI counts are int: P * recvcount fits
          const reduce_scatter_result<T> result(e, recvbuf, recvcount, n, in_place);
          const std::span<T> mine = result.values();
          on_levels(*state, [&](auto& group) {
            // Across nodes, arithmetic elements go node by node; the rest (pairs, user ops' blobs) flat.
            if constexpr (spans_nodes_v<decltype(group)>) {
              if (by_nodes) {
                const std::vector<std::size_t> counts(static_cast<std::size_t>(P), n);
                if (reduce_scatter_by_nodes(group, all, mine, std::span<const std::size_t>{counts}, reduction)) return;
              }
            }
            plait::reduce_scatter<reduction_algorithm>(group, all, mine, reduction);
          });
          result.finish();
        });
  });
}

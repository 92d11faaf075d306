// MPI_Reduce_scatter: plait::reduce_scatter_v on one node's shared-memory
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

PLAIT_PMPI_EXPORT int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  constexpr function f = function::reduce_scatter;
  element_type e;
  // Every rank knows every count, so the total is agreed; this rank's part is its payload.
  const decision d = decide_reduction(
      f, comm,
      [&](bool payload) {
        return call_bytes{payload_bytes(count_sum(recvcounts, size_of(comm)), datatype),
                          payload ? payload_bytes(recvcounts[rank_in(comm)], datatype) : 0};
      },
      datatype, op, e);
  if (d.error) return *d.error;
  if (d.why) return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  comm_state* state = d.state;
  const int P = size_of(comm);
  const int rank = rank_in(comm);
  const std::uint64_t bytes = payload_bytes(recvcounts[rank], datatype);
  return serve(f, comm, bytes, [&] {
    visit_kernel_reduction(
        e, op, [&]<class T, class R>(std::type_identity<T>, const R& reduction, int scale, bool by_nodes) {
          // plait's counts are in T elements: each datatype element is `scale` of them.
          std::vector<std::size_t> counts(static_cast<std::size_t>(P));
          std::size_t total = 0;
          int total_items = 0;  // MPI's: the counts' sum fits an int (the send buffer holds it)
          for (int i = 0; i < P; ++i) {
            counts[static_cast<std::size_t>(i)] =
                static_cast<std::size_t>(recvcounts[i]) * static_cast<std::size_t>(scale);
            total += counts[static_cast<std::size_t>(i)];
            total_items += recvcounts[i];
          }
          const std::size_t n = counts[static_cast<std::size_t>(rank)];
          // In place the input is all of recvbuf and the result its start.
          const bool in_place = sendbuf == MPI_IN_PLACE;
          const std::span<const T> all = input_values<T>(e, in_place ? recvbuf : sendbuf, total_items, total);
          const reduce_scatter_result<T> result(e, recvbuf, recvcounts[rank], n, in_place);
          const std::span<T> mine = result.values();
          on_levels(*state, [&](auto& group) {
            // Across nodes, arithmetic elements go node by node; the rest (pairs, user ops' blobs) flat.
            if constexpr (spans_nodes_v<decltype(group)>) {
              if (by_nodes &&
                  reduce_scatter_by_nodes(group, all, mine, std::span<const std::size_t>{counts}, reduction)) {
                return;
              }
            }
            plait::reduce_scatter_v<reduction_algorithm>(group, all, mine, counts, reduction);
          });
          result.finish();
        });
  });
}

// MPI_Alltoallv: plait::all_to_all_v of bytes on the communicator's node
// levels; gapped displacements or a non-contiguous type are staged locally,
// but for datatypes with gaps that are boxes, in rank order, on one node:
// tensor views (box_views.hpp).
#include <optional>
#include <span>
#include <vector>

#include "blocks.hpp"
#include "box_views.hpp"
#include "datatype.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                    MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                    MPI_Datatype recvtype, MPI_Comm comm) {
  constexpr function f = function::alltoallv;
  // Each rank's counts are its own, so nothing size-dependent may decide
  // here: the table sees 0 agreed bytes (only its rows from 0 apply).
  const decision d = decide(f, comm, [&](bool payload) {
    return call_bytes{0, payload ? payload_bytes(count_sum(recvcounts, size_of(comm)), recvtype) : 0};
  });
  if (d.error) return *d.error;
  if (d.why) {
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  }
  comm_state* state = d.state;
  const int P = size_of(comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  v_call_blocks& blocks = blocks_of_this_thread();
  try {
    blocks_of(recvcounts, rdispls, recvtype, P, blocks.recv);
    if (!in_place) blocks_of(sendcounts, sdispls, sendtype, P, blocks.send);
  } catch (...) {
    return report_current_exception(comm, name(f));
  }
  const block_layout& recv_layout = blocks.recv;
  const block_layout& send_layout = in_place ? blocks.recv : blocks.send;
  return serve(f, comm, recv_layout.total, [&] {
    packing_scratch& kept = packing_scratch_of_this_thread();  // one thread-local lookup a call
    // As MPI_Allgatherv's: boxes with gaps in rank order go straight in and
    // out, on one node; in place, the send side is a packed copy.
    if (plait::shm::communicator* node = node_group(*state);
        node != nullptr && send_layout.in_order && recv_layout.in_order) {
      std::vector<std::byte>& scratch = kept.send;
      const auto recv_total = static_cast<std::size_t>(count_sum(recvcounts, P));
      const std::optional<box_views> v =
          in_place ? views_of(recvbuf, recv_total, recvtype, recvbuf, recv_total, recvtype, scratch, true)
                   : views_of(sendbuf, static_cast<std::size_t>(count_sum(sendcounts, P)), sendtype, recvbuf,
                              recv_total, recvtype, scratch);
      // In place, send_layout is recv_layout.
      const std::optional<std::vector<std::size_t>> send_counts =
          v ? slices_of(send_layout.bytes, v->slice_bytes) : std::nullopt;
      const std::optional<std::vector<std::size_t>> recv_counts =
          v ? slices_of(recv_layout.bytes, v->slice_bytes) : std::nullopt;
      if (send_counts && recv_counts) {
        plait::all_to_all_v(*node, *v->send, *send_counts, v->recv, *recv_counts);
        count_views();
        return;
      }
    }
    std::vector<std::byte>& send_scratch = kept.send;
    // In place, the blocks to send are the receive buffer's, copied out first.
    const std::span<const std::byte> send =
        in_place ? gather_blocks(recvbuf, recvcounts, rdispls, recvtype, recv_layout, send_scratch, true)
                 : gather_blocks(sendbuf, sendcounts, sdispls, sendtype, send_layout, send_scratch, false);
    std::vector<std::byte>& recv_scratch = kept.recv;
    const std::span<std::byte> recv = receive_blocks(recvbuf, recvtype, recv_layout, recv_scratch);
    on_levels(*state,
              [&](auto& group) { plait::all_to_all_v(group, send, send_layout.bytes, recv, recv_layout.bytes); });
    scatter_blocks(recv, recvbuf, recvcounts, rdispls, recvtype, recv_layout);
  });
}

// MPI_Allgatherv: plait::all_gather_v of bytes on the communicator's node
// levels; gapped displacements or a non-contiguous type are staged locally,
// but for datatypes with gaps that are boxes, in rank order, on one node:
// tensor views (box_views.hpp).
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "blocks.hpp"
#include "box_views.hpp"
#include "datatype.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  constexpr function f = function::allgatherv;
  // recvcounts and the type signature agree on every rank (so does their
  // total); displs need not.
  const decision d = decide(f, comm, [&](bool /*payload: the same*/) {
    const std::uint64_t total = payload_bytes(count_sum(recvcounts, size_of(comm)), recvtype);
    return call_bytes{total, total};
  });
  if (d.error) return *d.error;
  if (d.why) return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  comm_state* state = d.state;
  const int P = size_of(comm);
  const int rank = rank_in(comm);
  block_layout& layout = blocks_of_this_thread().recv;
  try {
    blocks_of(recvcounts, displs, recvtype, P, layout);
  } catch (...) {
    return report_current_exception(comm, name(f));
  }
  return serve(f, comm, layout.total, [&] {
    packing_scratch& kept = packing_scratch_of_this_thread();  // one thread-local lookup a call
    // Datatypes with gaps that are boxes go straight in and out where the
    // blocks lie in rank order, on one node (as MPI_Allgather's).
    if (plait::shm::communicator* node = node_group(*state); node != nullptr && layout.in_order) {
      std::vector<std::byte>& scratch = kept.send;
      const auto total = static_cast<std::size_t>(count_sum(recvcounts, P));
      const std::optional<box_views> v =
          views_of(sendbuf, count_of(sendcount), sendtype, recvbuf, total, recvtype, scratch);
      const std::optional<std::vector<std::size_t>> counts = v ? slices_of(layout.bytes, v->slice_bytes) : std::nullopt;
      if (counts) {
        if (v->send) {
          plait::all_gather_v(*node, *v->send, v->recv, *counts);
        } else {
          plait::all_gather_v(*node, plait::in_place, v->recv, *counts);
        }
        count_views();
        return;
      }
    }
    std::vector<std::byte>& recv_scratch = kept.recv;
    const std::span<std::byte> recv = receive_blocks(recvbuf, recvtype, layout, recv_scratch);
    const auto me = static_cast<std::size_t>(rank);
    if (sendbuf == MPI_IN_PLACE) {
      if (!layout.direct && layout.bytes[me] != 0) {
        std::vector<std::byte> mine;
        const type_layout t = layout_of(recvtype);
        const auto* own = static_cast<const std::byte*>(recvbuf) + static_cast<MPI_Aint>(displs[rank]) * t.extent;
        const std::span<const std::byte> b = gather_bytes(own, recvcounts[rank], recvtype, mine);
        std::memcpy(recv.data() + layout.offsets[me], b.data(), b.size());
      }
      on_levels(*state, [&](auto& group) { plait::all_gather_v(group, plait::in_place, recv, layout.bytes); });
    } else {
      std::vector<std::byte>& send_scratch = kept.send;
      const std::span<const std::byte> send = gather_bytes(sendbuf, sendcount, sendtype, send_scratch);
      on_levels(*state, [&](auto& group) { plait::all_gather_v(group, send, recv, layout.bytes); });
    }
    scatter_blocks(recv, recvbuf, recvcounts, displs, recvtype, layout);
  });
}

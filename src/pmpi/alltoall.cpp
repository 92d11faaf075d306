// MPI_Alltoall: plait::all_to_all of bytes on the communicator's node levels,
// or of tensor views where a datatype is a box with gaps (box_views.hpp).
#include <optional>
#include <span>
#include <vector>

#include "box_views.hpp"
#include "datatype.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  constexpr function f = function::alltoall;
  // One block's bytes: the same on every rank (type signatures match).
  const decision d = decide(f, comm, [&](bool payload) {
    const std::uint64_t block = payload_bytes(recvcount, recvtype);
    return call_bytes{block, payload ? block * static_cast<std::uint64_t>(size_of(comm)) : 0};
  });
  if (d.error) return *d.error;
  if (d.why) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  comm_state* state = d.state;
  const int P = size_of(comm);
  const std::uint64_t bytes = payload_bytes(recvcount, recvtype) * static_cast<std::uint64_t>(P);
  return serve(f, comm, bytes, [&] {
    packing_scratch& kept = packing_scratch_of_this_thread();  // one thread-local lookup a call
    // As MPI_Allgather's: boxes with gaps go straight in and out, on one node.
    if (plait::shm::communicator* node = node_group(*state)) {
      const bool in_place = sendbuf == MPI_IN_PLACE;
      std::vector<std::byte>& scratch = kept.send;
      const std::size_t elements = count_of(recvcount) * static_cast<std::size_t>(P);
      const std::optional<box_views> v =
          in_place ? views_of(recvbuf, elements, recvtype, recvbuf, elements, recvtype, scratch, true)
                   : views_of(sendbuf, count_of(sendcount) * static_cast<std::size_t>(P), sendtype, recvbuf, elements,
                              recvtype, scratch);
      if (v) {
        plait::all_to_all(*node, *v->send, v->recv);
        count_views();
        return;
      }
    }
    std::vector<std::byte>& send_scratch = kept.send;
    std::span<const std::byte> send;
    if (sendbuf == MPI_IN_PLACE) {
      // The receive buffer is also the send buffer: its blocks are copied
      // out first, since plait writes blocks while others are still to go.
      send = gather_bytes(recvbuf, recvcount * P, recvtype, send_scratch);
      if (send.data() != send_scratch.data()) {
        send_scratch.assign(send.begin(), send.end());
        send = send_scratch;
      }
    } else {
      send = gather_bytes(sendbuf, sendcount * P, sendtype, send_scratch);
    }
    std::vector<std::byte>& recv_scratch = kept.recv;
    const std::span<std::byte> recv = receive_bytes(recvbuf, recvcount * P, recvtype, recv_scratch);
    on_levels(*state, [&](auto& group) { plait::all_to_all(group, send, recv); });
    if (recv.data() == recv_scratch.data() && !recv.empty()) scatter_bytes(recv, recvbuf, recvcount * P, recvtype);
  });
}

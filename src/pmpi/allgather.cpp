// MPI_Allgather: plait::all_gather of bytes on the communicator's node levels,
// or of tensor views where a datatype is a box with gaps (box_views.hpp).
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "box_views.hpp"
#include "datatype.hpp"
#include "serve.hpp"

using namespace plait_pmpi;

PLAIT_PMPI_EXPORT int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  constexpr function f = function::allgather;
  // Only what every rank agrees on decides: recvcount x size(recvtype) is
  // the same everywhere (type signatures match); layouts differ freely.
  const decision d = decide(f, comm, [&](bool payload) {
    const std::uint64_t block = payload_bytes(recvcount, recvtype);
    return call_bytes{block, payload ? block * static_cast<std::uint64_t>(size_of(comm)) : 0};
  });
  if (d.error) return *d.error;
  if (d.why) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  comm_state* state = d.state;
  const int P = size_of(comm);
  const int rank = rank_in(comm);
  const std::size_t block = payload_bytes(recvcount, recvtype);
  const std::uint64_t bytes = block * static_cast<std::size_t>(P);
  return serve(f, comm, bytes, [&] {
    packing_scratch& kept = packing_scratch_of_this_thread();  // one thread-local lookup a call
    // Datatypes with gaps that are boxes go straight in and out, on one node
    // (plait's two-level collectives take contiguous data only).
    if (plait::shm::communicator* node = node_group(*state)) {
      std::vector<std::byte>& scratch = kept.send;
      const std::optional<box_views> v = views_of(sendbuf, count_of(sendcount), sendtype, recvbuf,
                                                  count_of(recvcount) * static_cast<std::size_t>(P), recvtype, scratch);
      if (v) {
        if (v->send) {
          plait::all_gather(*node, *v->send, v->recv);
        } else {
          plait::all_gather(*node, plait::in_place, v->recv);
        }
        count_views();
        return;
      }
    }
    std::vector<std::byte>& recv_scratch = kept.recv;
    const std::span<std::byte> recv =
        receive_bytes(recvbuf, recvcount * P, recvtype, recv_scratch);  // MPI counts are int: P * recvcount fits
    const bool staged = recv.data() == recv_scratch.data() && !recv.empty();
    if (sendbuf == MPI_IN_PLACE) {
      if (staged) {
        // This rank's block is in the application's layout: pack it into place first.
        std::vector<std::byte> mine;
        const type_layout t = layout_of(recvtype);
        const auto* own = static_cast<const std::byte*>(recvbuf) + static_cast<MPI_Aint>(rank) * recvcount * t.extent;
        const std::span<const std::byte> b = gather_bytes(own, recvcount, recvtype, mine);
        std::memcpy(recv.data() + static_cast<std::size_t>(rank) * block, b.data(), b.size());
      }
      on_levels(*state, [&](auto& group) { plait::all_gather(group, plait::in_place, recv); });
    } else {
      std::vector<std::byte>& send_scratch = kept.send;
      const std::span<const std::byte> send = gather_bytes(sendbuf, sendcount, sendtype, send_scratch);
      on_levels(*state, [&](auto& group) { plait::all_gather(group, send, recv); });
    }
    if (staged) scatter_bytes(recv, recvbuf, recvcount * P, recvtype);
  });
}

// The gathers' and all-to-alls' buffers as plait tensor views, where a
// datatype is a box (type_box.hpp) with gaps: plait then reads the
// application's send buffer and writes its receive buffer in place, run by
// run (from and into the peers' shared slots), where the byte path packs
// with PMPI_Pack into scratch and unpacks from it.
//
// A view is (elements, the element's box dimensions..., run) in bytes. plait
// needs send and recv of the same shape past the first dimension; where
// the two datatypes' boxes differ (MPI only asks for equal type signatures),
// a side without gaps takes the other's shape, and otherwise the send side
// is packed and takes the receive side's.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "pmpi_mpi.hpp"
#include "type_box.hpp"

namespace plait_pmpi {

/// The views' rank: the elements, box_dims, the run.
inline constexpr std::size_t box_view_rank = box_dims + 2;
using box_view = plait::tensor_view<std::byte, box_view_rank>;
using const_box_view = plait::tensor_view<const std::byte, box_view_rank>;

/// A call's two buffers as views with the same shape past the first
/// dimension. `send` is empty in place.
struct box_views {
  std::optional<const_box_view> send;
  box_view recv;
  std::size_t slice_bytes = 0;  ///< bytes of data in one slice of the first dimension, on either side
};

/// The views for `send_elements` of `sendtype` at `sendbuf` (MPI_IN_PLACE:
/// none) and `recv_elements` of `recvtype` at `recvbuf`, when the receive
/// datatype or the send one is a box with gaps, so that the byte path would
/// pack, and the receive payload is at least PLAIT_PMPI_VIEWS_FROM; nothing otherwise (then the byte path runs: it
/// moves contiguous data straight, and packs what is not a box). `scratch` holds the send side where it is packed;
/// `pack_send`: always (an in-place all-to-all, whose send side is the receive buffer). Local: each rank decides for
/// its own buffers, and the bytes plait moves are the same either way.
std::optional<box_views> views_of(const void* sendbuf, std::size_t send_elements, MPI_Datatype sendtype, void* recvbuf,
                                  std::size_t recv_elements, MPI_Datatype recvtype, std::vector<std::byte>& scratch,
                                  bool pack_send = false);

/// A v call's blocks of `block_bytes` bytes (block_layout::bytes) in slices
/// of `slice_bytes`, as plait's v forms take them for views; nothing if one
/// is not a whole number of slices (then the byte path runs).
std::optional<std::vector<std::size_t>> slices_of(std::span<const std::size_t> block_bytes, std::size_t slice_bytes);

}  // namespace plait_pmpi

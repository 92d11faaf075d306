#include "box_views.hpp"

#include <array>
#include <span>

#include "config.hpp"
#include "datatype.hpp"

namespace plait_pmpi {
namespace {

using extents = std::array<std::size_t, box_view_rank>;

/// Bytes of data in one element of `box`.
std::size_t element_bytes(const type_box& box) {
  std::size_t bytes = box.run;
  for (const std::size_t e : box.extent) bytes *= e;
  return bytes;
}

/// plait's test for a destination, which it would fail on this rank alone.
bool names_each_byte_once(const extents& extent, const extents& stride) {
  std::array<std::size_t, box_view_rank> scratch{};
  return plait::detail::box_repeat_dimension(1, extent.data(), stride.data(), box_view_rank, scratch.data()) ==
         box_view_rank;
}

/// `elements` elements of a datatype whose box is `box`, at `buffer`.
template <class Byte>
std::optional<plait::tensor_view<Byte, box_view_rank>> view_of(Byte* buffer, std::size_t elements,
                                                               const type_box& box) {
  const extents extent{elements, box.extent[0], box.extent[1], box.extent[2], box.run};
  const extents stride{static_cast<std::size_t>(box.type_extent), box.stride[0], box.stride[1], box.stride[2], 1};
  if (!names_each_byte_once(extent, stride)) return std::nullopt;
  return plait::tensor_view<Byte, box_view_rank>(buffer + box.offset, extent, stride);
}

/// `bytes` contiguous bytes at `data` in the shape of elements of `box`.
template <class Byte>
std::optional<plait::tensor_view<Byte, box_view_rank>> reshaped(Byte* data, std::size_t bytes, const type_box& box) {
  const std::size_t each = element_bytes(box);
  if (each == 0 || bytes % each != 0) return std::nullopt;  // signatures that do not match: the byte path reports it
  return plait::tensor_view<Byte, box_view_rank>(data,
                                                 {bytes / each, box.extent[0], box.extent[1], box.extent[2], box.run});
}

}  // namespace

std::optional<box_views> views_of(const void* sendbuf, std::size_t send_elements, MPI_Datatype sendtype, void* recvbuf,
                                  std::size_t recv_elements, MPI_Datatype recvtype, std::vector<std::byte>& scratch,
                                  bool pack_send) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const type_facts recv_facts = facts_of(recvtype);
  const type_layout& recv_layout = recv_facts.layout;
  const std::optional<type_box> recv_box = recv_layout.contiguous ? std::nullopt : recv_facts.box;
  if (!recv_layout.contiguous && !recv_box) return std::nullopt;  // not a box: unpacked by the byte path
  const std::size_t recv_bytes = recv_layout.size * recv_elements;
  if (recv_bytes == 0 || recv_bytes < current().views_from) return std::nullopt;
  auto* recv_data = static_cast<std::byte*>(recvbuf);
  if (in_place) {
    if (!recv_box) return std::nullopt;
    std::optional<box_view> recv = view_of(recv_data, recv_elements, *recv_box);
    if (!recv) return std::nullopt;
    return box_views{std::nullopt, *recv, element_bytes(*recv_box)};
  }
  const type_facts send_facts = facts_of(sendtype);
  const type_layout& send_layout = send_facts.layout;
  const std::optional<type_box> send_box = send_layout.contiguous || pack_send ? std::nullopt : send_facts.box;
  const std::size_t send_bytes = send_layout.size * send_elements;
  const auto* send_data = static_cast<const std::byte*>(sendbuf);
  if (!recv_box) {
    // The receive side is one run: it takes the send side's shape, if that is a box.
    if (!send_box) return std::nullopt;
    std::optional<box_view> recv = reshaped(recv_data + recv_layout.true_lb, recv_bytes, *send_box);
    std::optional<const_box_view> send = view_of(send_data, send_elements, *send_box);
    if (!recv || !send) return std::nullopt;
    return box_views{send, *recv, element_bytes(*send_box)};
  }
  std::optional<box_view> recv = view_of(recv_data, recv_elements, *recv_box);
  if (!recv) return std::nullopt;
  std::optional<const_box_view> send;
  if (send_box && send_box->same_shape(*recv_box)) send = view_of(send_data, send_elements, *send_box);
  if (!send && send_layout.contiguous && !pack_send) {
    send = reshaped(send_data + send_layout.true_lb, send_bytes, *recv_box);
  } else if (!send) {
    // Another shape, not a box, or a box that names a byte twice (MPI allows
    // it on the send side): packed, then in the receive side's shape.
    std::span<const std::byte> packed =
        gather_bytes(sendbuf, static_cast<int>(send_elements), sendtype, scratch);  // MPI counts are int
    if (packed.data() != scratch.data()) {
      scratch.assign(packed.begin(), packed.end());
      packed = scratch;
    }
    send = reshaped(packed.data(), packed.size(), *recv_box);
  }
  if (!send) return std::nullopt;
  return box_views{send, *recv, element_bytes(*recv_box)};
}

std::optional<std::vector<std::size_t>> slices_of(std::span<const std::size_t> block_bytes, std::size_t slice_bytes) {
  if (slice_bytes == 0) return std::nullopt;
  std::vector<std::size_t> slices(block_bytes.size());
  for (std::size_t i = 0; i < slices.size(); ++i) {
    if (block_bytes[i] % slice_bytes != 0) return std::nullopt;
    slices[i] = block_bytes[i] / slice_bytes;
  }
  return slices;
}

}  // namespace plait_pmpi

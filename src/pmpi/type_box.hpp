// An MPI datatype as a box of bytes, for plait's tensor layouts: the
// datatypes whose data is a regular grid of equal runs (named and
// contiguous ones, vector, hvector, subarray, resized and dups of them,
// nested) are read from their envelopes into at most box_dims strided
// dimensions around one run, so that plait moves them straight from and
// into the application's buffer instead of through PMPI_Pack/Unpack.
// Anything else (struct, indexed, darray, negative strides) is not a box,
// and is packed as before; so is a box whose views name a byte twice
// (box_views.cpp).
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <optional>

namespace plait_pmpi {

/// The most strided dimensions one element's box may keep (besides its run).
inline constexpr std::size_t box_dims = 3;

/// One element of a datatype as bytes: `extent[d]` steps of `stride[d]`
/// bytes, outermost first, around a run of `run` contiguous bytes, starting
/// `offset` bytes from the element's address. Unused outer dimensions have
/// extent 1.
struct type_box {
  std::ptrdiff_t offset = 0;
  std::array<std::size_t, box_dims> extent{1, 1, 1};
  std::array<std::size_t, box_dims> stride{0, 0, 0};
  std::size_t run = 0;
  MPI_Aint type_extent = 0;  ///< the datatype's extent: the stride between elements

  /// Whether an element's data is one run (a contiguous or named type, or one
  /// with gaps only around its data).
  [[nodiscard]] bool one_run() const noexcept { return extent == std::array<std::size_t, box_dims>{1, 1, 1}; }
  /// Whether two boxes have the same shape (extents and run; strides may differ).
  [[nodiscard]] bool same_shape(const type_box& other) const noexcept {
    return extent == other.extent && run == other.run;
  }
};

/// `type` as a box, or nothing if its data is not one (then it is packed).
/// Reads the type's envelope and contents (local).
std::optional<type_box> box_of(MPI_Datatype type);

}  // namespace plait_pmpi

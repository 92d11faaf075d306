#include "type_box.hpp"

#include <utility>
#include <vector>

#include "datatype.hpp"
#include "pmpi_mpi.hpp"

namespace plait_pmpi {
namespace {

/// A box while it is read: any number of dimensions, outermost first,
/// strides in bytes and possibly negative until the end.
struct raw_box {
  std::ptrdiff_t offset = 0;
  std::vector<std::pair<std::size_t, std::ptrdiff_t>> dims;  ///< (extent, stride)
  std::size_t run = 0;
};

/// A datatype's constructor arguments (MPI_Type_get_contents); frees the
/// derived types it was handed when it goes.
struct contents {
  int combiner = MPI_COMBINER_NAMED;
  std::vector<int> integers;
  std::vector<MPI_Aint> addresses;
  std::vector<MPI_Datatype> types;

  explicit contents(MPI_Datatype type) {
    int ni = 0;
    int na = 0;
    int nt = 0;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nt, &combiner) != MPI_SUCCESS) {
      combiner = -1;
      return;
    }
    if (combiner == MPI_COMBINER_NAMED) return;
    integers.resize(static_cast<std::size_t>(ni));
    addresses.resize(static_cast<std::size_t>(na));
    types.resize(static_cast<std::size_t>(nt));
    if (PMPI_Type_get_contents(type, ni, na, nt, integers.data(), addresses.data(), types.data()) != MPI_SUCCESS) {
      combiner = -1;
      types.clear();
    }
  }
  ~contents() {
    for (MPI_Datatype& t : types) {
      int ni = 0;
      int na = 0;
      int nt = 0;
      int c = MPI_COMBINER_NAMED;
      if (PMPI_Type_get_envelope(t, &ni, &na, &nt, &c) == MPI_SUCCESS && c != MPI_COMBINER_NAMED) PMPI_Type_free(&t);
    }
  }
  contents(const contents&) = delete;
  contents& operator=(const contents&) = delete;
};

MPI_Aint extent_of(MPI_Datatype type) {
  MPI_Aint lb = 0;
  MPI_Aint extent = 0;
  if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS) return -1;
  return extent;
}

/// `inner` repeated along the given dimensions (outermost first).
raw_box repeated(raw_box inner, std::initializer_list<std::pair<std::size_t, std::ptrdiff_t>> outer) {
  inner.dims.insert(inner.dims.begin(), outer.begin(), outer.end());
  return inner;
}

/// One element of `type` as a raw box, or nothing (a constructor that is
/// not a grid, or a query that failed).
std::optional<raw_box> read_box(MPI_Datatype type) {  // NOLINT(misc-no-recursion): types nest
  const contents c(type);
  if (c.combiner == MPI_COMBINER_NAMED) {
    // A named type's data is one run when it has no holes (MPI_SHORT_INT
    // has). Read here, not through layout_of, which asks box_of of a named
    // type it does not keep.
    int size = 0;
    MPI_Aint true_lb = 0;
    MPI_Aint true_extent = 0;
    if (PMPI_Type_size(type, &size) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(type, &true_lb, &true_extent) != MPI_SUCCESS || true_extent != size) {
      return std::nullopt;
    }
    return raw_box{true_lb, {}, static_cast<std::size_t>(size)};
  }
  if (c.types.size() != 1) return std::nullopt;  // struct, or a failed query
  const MPI_Datatype base_type = c.types[0];
  std::optional<raw_box> base = read_box(base_type);
  if (!base) return std::nullopt;
  const MPI_Aint base_extent = extent_of(base_type);
  const std::vector<int>& i = c.integers;
  switch (c.combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:  // the data stays where it is; only the extent changes
      return base;
    case MPI_COMBINER_CONTIGUOUS: return repeated(std::move(*base), {{count_of(i[0]), base_extent}});
    case MPI_COMBINER_VECTOR:
      return repeated(std::move(*base), {{count_of(i[0]), i[2] * base_extent}, {count_of(i[1]), base_extent}});
    case MPI_COMBINER_HVECTOR:
      return repeated(std::move(*base), {{count_of(i[0]), c.addresses[0]}, {count_of(i[1]), base_extent}});
    case MPI_COMBINER_SUBARRAY: {
      // integers: ndims, sizes[ndims], subsizes[ndims], starts[ndims], order.
      const std::size_t n = count_of(i[0]);
      const int* sizes = &i[1];
      const int* subsizes = sizes + n;
      const int* starts = subsizes + n;
      const bool fortran = starts[n] == MPI_ORDER_FORTRAN;
      std::vector<std::pair<std::size_t, std::ptrdiff_t>> dims(n);
      std::ptrdiff_t step = base_extent;
      std::ptrdiff_t offset = 0;
      for (std::size_t k = 0; k < n; ++k) {  // innermost first: the array's dimension d, kept outermost first
        const std::size_t d = fortran ? k : n - 1 - k;
        dims[n - 1 - k] = {count_of(subsizes[d]), step};
        offset += static_cast<std::ptrdiff_t>(starts[d]) * step;
        step *= sizes[d];
      }
      base->dims.insert(base->dims.begin(), dims.begin(), dims.end());
      base->offset += offset;
      return base;
    }
    default: return std::nullopt;
  }
}

/// Drops extent-1 dimensions, folds inner dimensions into the run and merges
/// neighbours, as plait's regions do; nothing if a stride is negative or
/// more than box_dims dimensions remain. A grid that names a byte twice is
/// still a box: box_views.cpp asks plait's rule of each whole view.
std::optional<type_box> normalized(raw_box raw, MPI_Aint type_extent) {
  std::vector<std::pair<std::size_t, std::ptrdiff_t>> dims;
  for (const auto& d : raw.dims) {
    if (d.first == 0) return std::nullopt;  // no data: the callers' byte path handles empty calls
    if (d.first != 1) dims.push_back(d);
  }
  while (!dims.empty() && dims.back().second == static_cast<std::ptrdiff_t>(raw.run)) {
    raw.run *= dims.back().first;
    dims.pop_back();
  }
  for (std::size_t k = dims.size(); k-- > 1;) {
    if (dims[k - 1].second == static_cast<std::ptrdiff_t>(dims[k].first) * dims[k].second) {
      dims[k].first *= dims[k - 1].first;
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(k - 1));
    }
  }
  if (raw.run == 0 || dims.size() > box_dims) return std::nullopt;
  for (const auto& d : dims) {
    if (d.second <= 0) return std::nullopt;
  }
  type_box box;
  box.offset = raw.offset;
  box.run = raw.run;
  box.type_extent = type_extent;
  const std::size_t unused = box_dims - dims.size();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    box.extent[unused + k] = dims[k].first;
    box.stride[unused + k] = static_cast<std::size_t>(dims[k].second);
  }
  return box;
}

}  // namespace

std::optional<type_box> box_of(MPI_Datatype type) {
  const MPI_Aint extent = extent_of(type);
  if (extent <= 0) return std::nullopt;
  std::optional<raw_box> raw = read_box(type);
  if (!raw) return std::nullopt;
  return normalized(std::move(*raw), extent);
}

}  // namespace plait_pmpi

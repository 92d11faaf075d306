// What the library needs to know about an MPI datatype: where `count`
// elements' bytes lie (one contiguous range, or packed through PMPI_Pack),
// and, for reductions, which plait element type they are.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "type_box.hpp"

namespace plait_pmpi {

/// The layout of `count` elements of a datatype at a buffer.
struct type_layout {
  std::size_t size = 0;     ///< bytes of data per element (PMPI_Type_size)
  MPI_Aint extent = 0;      ///< stride between elements
  MPI_Aint true_lb = 0;     ///< offset of the first data byte
  bool contiguous = false;  ///< elements abut without gaps: count elements are count * size bytes at true_lb
};

/// What the library reads of a datatype: its layout, and its box where it
/// has gaps or is derived (nothing if its data is no box).
struct type_facts {
  type_layout layout;
  std::optional<type_box> box;
};

/// `type`'s facts (local; no rank's decision depends on them), read once:
/// a named type's kept for the run, a derived type's in an attribute on it
/// that MPI deletes with the type.
type_facts facts_of(MPI_Datatype type);

/// facts_of(type).layout.
type_layout layout_of(MPI_Datatype type);

/// The bytes of `count` elements of `type` at `buffer` as one range: the
/// buffer itself when contiguous, else packed into `scratch`.
std::span<const std::byte> gather_bytes(const void* buffer, int count, MPI_Datatype type,
                                        std::vector<std::byte>& scratch);

/// Where to receive `count` elements of `type` at `buffer` as bytes: the
/// buffer itself when contiguous, else `scratch` (then scatter_bytes puts
/// them in place).
std::span<std::byte> receive_bytes(void* buffer, int count, MPI_Datatype type, std::vector<std::byte>& scratch);

/// A thread's buffers for packing a call's send and receive sides, kept
/// from call to call: a fresh megabyte per call costs its page faults again
/// (a 1 MiB MPI_Allreduce through new buffers took 1.3-1.4 ms against 0.12
/// ms through the same ones; docs/pmpi.md). A served call never nests
/// another on its thread (the library's own MPI calls go to PMPI_*).
struct packing_scratch {
  std::vector<std::byte> send;
  std::vector<std::byte> recv;
};
packing_scratch& packing_scratch_of_this_thread() noexcept;

/// Unpacks bytes received into scratch (by receive_bytes) into `buffer`.
void scatter_bytes(std::span<const std::byte> bytes, void* buffer, int count, MPI_Datatype type);

/// count x size(type) bytes (0 if MPI cannot tell): the report's payload,
/// and the tuning table's size where every rank knows the count.
std::uint64_t payload_bytes(long long count, MPI_Datatype type) noexcept;

/// An MPI count as a size (a negative one, which MPI forbids, as 0).
inline std::size_t count_of(int n) noexcept { return n < 0 ? 0 : static_cast<std::size_t>(n); }

/// counts[0] + ... + counts[P - 1], in a type that does not overflow.
long long count_sum(const int* counts, int P) noexcept;

/// The element kinds reductions are served on, by width and class. The pair
/// classes are MPI_2INT, MPI_SHORT_INT, MPI_LONG_INT (integer value) and
/// MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_DOUBLE_INT (floating value), for
/// MPI_MINLOC/MAXLOC.
enum class element_class {
  none,
  signed_integer,
  unsigned_integer,
  floating,
  complex_floating,  ///< C's, C++'s and Fortran's complex types: two floating values, as std::complex
  logical,
  byte,
  integer_pair,
  floating_pair
};
struct element_type {
  element_class kind = element_class::none;
  int width = 0;                          ///< bytes per element of the base type (of a pair's value)
  int per_item = 0;                       ///< base elements per datatype element (derived types)
  MPI_Datatype type = MPI_DATATYPE_NULL;  ///< the datatype itself (user ops get it)
  MPI_Aint extent = 0;                    ///< its extent
  int contiguous_bytes = 0;               ///< its size if laid out without gaps, else 0 (user ops)
  MPI_Aint true_lb = 0;                   ///< where its data starts in an element
};

/// Whether `e` is one of MPI's pair types (MPI_MINLOC/MAXLOC's): read
/// where it lies as plait::value_index, whose padding its holes are.
inline bool is_pair(const element_type& e) noexcept {
  return e.kind == element_class::integer_pair || e.kind == element_class::floating_pair;
}

/// The element type of a reduction's datatype: a predefined type
/// reductions take, or a derived type all of whose data is one such type
/// (contiguous, vector, subarray, indexed, struct, ...; pairs only in
/// contiguous and dup chains), with per_item of it per element; else none.
/// Decided from the type's definition, which MPI asks every rank of a
/// reduction to pass alike.
element_type element_of(MPI_Datatype type);

}  // namespace plait_pmpi

// Predefined MPI_Ops on the element types the library maps, as plait
// reductions: visit(std::type_identity<T>{}, reduction, scale) runs the
// call on T, `scale` T elements per datatype element. Signed sums and
// products run on the unsigned type of the same width (two's complement
// wraps alike, and plait's sum computes in unsigned anyway); bitwise ops run
// on bytes; logical ops on the widths of C_BOOL/char and int. Anything else
// is not served (returns false), decided from the op and the datatype's
// definition, which every rank shares.
#pragma once

#include <cstdint>
#include <type_traits>

#include "datatype.hpp"
#include "pmpi_mpi.hpp"

namespace plait_pmpi {

/// Reductions run node-aware: inside the node over shared memory, across
/// nodes among local rank 0s (docs/reductions.md, "On a two_level").
/// plait::automatic on node_levels would run them flat over MPI on world(),
/// since no cost model compares the two routes for reductions yet.
using reduction_algorithm = plait::hierarchical<plait::automatic, plait::automatic>;

template <class R, class Visit>
bool visit_unsigned(const element_type& e, Visit& visit) {
  switch (e.width) {
    case 1: visit(std::type_identity<std::uint8_t>{}, R{}, e.per_item); return true;
    case 2: visit(std::type_identity<std::uint16_t>{}, R{}, e.per_item); return true;
    case 4: visit(std::type_identity<std::uint32_t>{}, R{}, e.per_item); return true;
    case 8: visit(std::type_identity<std::uint64_t>{}, R{}, e.per_item); return true;
    default: return false;
  }
}

template <class R, class Visit>
bool visit_signed(const element_type& e, Visit& visit) {
  switch (e.width) {
    case 1: visit(std::type_identity<std::int8_t>{}, R{}, e.per_item); return true;
    case 2: visit(std::type_identity<std::int16_t>{}, R{}, e.per_item); return true;
    case 4: visit(std::type_identity<std::int32_t>{}, R{}, e.per_item); return true;
    case 8: visit(std::type_identity<std::int64_t>{}, R{}, e.per_item); return true;
    default: return false;
  }
}

template <class R, class Visit>
bool visit_floating(const element_type& e, Visit& visit) {
  if (e.width == 4) {
    visit(std::type_identity<float>{}, R{}, e.per_item);
    return true;
  }
  if (e.width == 8) {
    visit(std::type_identity<double>{}, R{}, e.per_item);
    return true;
  }
  return false;
}

/// Sum and product: integers as unsigned, floats as themselves.
template <class R, class Visit>
bool visit_arithmetic(const element_type& e, Visit& visit) {
  if (e.kind == element_class::signed_integer || e.kind == element_class::unsigned_integer) {
    return visit_unsigned<R>(e, visit);
  }
  return e.kind == element_class::floating && visit_floating<R>(e, visit);
}

/// Minimum and maximum: signedness matters.
template <class R, class Visit>
bool visit_ordered(const element_type& e, Visit& visit) {
  if (e.kind == element_class::signed_integer) return visit_signed<R>(e, visit);
  if (e.kind == element_class::unsigned_integer) return visit_unsigned<R>(e, visit);
  return e.kind == element_class::floating && visit_floating<R>(e, visit);
}

template <class R, class Visit>
bool visit_logical(const element_type& e, Visit& visit) {
  const bool takes = e.kind == element_class::signed_integer || e.kind == element_class::unsigned_integer ||
                     e.kind == element_class::logical;
  if (!takes) return false;
  if (e.width == 1) {
    visit(std::type_identity<std::uint8_t>{}, R{}, e.per_item);
    return true;
  }
  if (e.width == 4) {
    visit(std::type_identity<std::uint32_t>{}, R{}, e.per_item);
    return true;
  }
  return false;
}

template <class R, class Visit>
bool visit_bitwise(const element_type& e, Visit& visit) {
  const bool takes = e.kind == element_class::signed_integer || e.kind == element_class::unsigned_integer ||
                     e.kind == element_class::byte;
  if (!takes) return false;
  visit(std::type_identity<std::uint8_t>{}, R{}, e.per_item * e.width);
  return true;
}

/// Runs `visit` for `op` on `e`; false (nothing run) when not served.
template <class Visit>
bool visit_reduction(const element_type& e, MPI_Op op, Visit&& visit) {
  if (e.kind == element_class::none) return false;
  if (op == MPI_SUM) return visit_arithmetic<plait::sum>(e, visit);
  if (op == MPI_PROD) return visit_arithmetic<plait::prod>(e, visit);
  if (op == MPI_MIN) return visit_ordered<plait::min>(e, visit);
  if (op == MPI_MAX) return visit_ordered<plait::max>(e, visit);
  if (op == MPI_LAND) return visit_logical<plait::logical_and>(e, visit);
  if (op == MPI_LOR) return visit_logical<plait::logical_or>(e, visit);
  if (op == MPI_LXOR) return visit_logical<plait::logical_xor>(e, visit);
  if (op == MPI_BAND) return visit_bitwise<plait::bit_and>(e, visit);
  if (op == MPI_BOR) return visit_bitwise<plait::bit_or>(e, visit);
  if (op == MPI_BXOR) return visit_bitwise<plait::bit_xor>(e, visit);
  return false;
}

/// Whether visit_reduction would run something for `op` on `e` (the serve
/// decision, made before any state exists).
inline bool reduction_served(const element_type& e, MPI_Op op) {
  return visit_reduction(e, op, [](auto, auto, int) {});
}

}  // namespace plait_pmpi

// MPI_Ops as plait reductions: visit(std::type_identity<T>{}, reduction,
// scale) runs the call on T, `scale` T elements per datatype element.
// Predefined ops on the mapped types: signed sums and products run on the
// unsigned type of the same width (two's complement wraps alike, and plait's
// sum computes in unsigned anyway), bitwise ops on bytes, logical ops on the
// widths of C_BOOL/char and int, MINLOC/MAXLOC on value_index; user ops on
// byte blobs through PMPI_Reduce_local. Anything else is not served
// (returns false), decided from the op and the datatype's definition, which
// every rank shares.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "datatype.hpp"
#include "pmpi_mpi.hpp"
#include "report.hpp"
#include "serve.hpp"

namespace plait_pmpi {

/// Reductions run plait::automatic: on one node on the node's shared-memory
/// group (on_levels), across nodes flat over MPI on world() (no cost model
/// compares flat and hierarchical routes for reductions yet;
/// hierarchical<automatic, automatic> measured 2-5x slower than flat at
/// P = 2, docs/pmpi.md).
using reduction_algorithm = plait::automatic;

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
  // MPI_LONG_DOUBLE is C's long double, where that fills 16 bytes (x86-64's
  // 80-bit format and its padding, or a quad): plait adds it as C does.
  if (e.width == 16 && sizeof(long double) == 16) {
    visit(std::type_identity<long double>{}, R{}, e.per_item);
    return true;
  }
  return false;
}

/// Sum and product of complex numbers: std::complex has C's and Fortran's
/// layout (real, then imaginary), and g++ multiplies it as C does _Complex
/// (Annex G's infinities and NaNs). MPI_C_LONG_DOUBLE_COMPLEX is C's long
/// double _Complex, where a long double fills 16 bytes (as MPI_LONG_DOUBLE).
template <class R, class Visit>
bool visit_complex(const element_type& e, Visit& visit) {
  if (e.width == 8) {
    visit(std::type_identity<std::complex<float>>{}, R{}, e.per_item);
    return true;
  }
  if (e.width == 16) {
    visit(std::type_identity<std::complex<double>>{}, R{}, e.per_item);
    return true;
  }
  if (e.width == 32 && sizeof(long double) == 16) {
    visit(std::type_identity<std::complex<long double>>{}, R{}, e.per_item);
    return true;
  }
  return false;
}

/// Sum and product: integers as unsigned, floats and complex numbers as themselves.
template <class R, class Visit>
bool visit_arithmetic(const element_type& e, Visit& visit) {
  if (e.kind == element_class::signed_integer || e.kind == element_class::unsigned_integer) {
    return visit_unsigned<R>(e, visit);
  }
  if (e.kind == element_class::complex_floating) return visit_complex<R>(e, visit);
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

/// MPI_MINLOC/MAXLOC on MPI's pair types as plait::value_index<T>, when
/// MPI's layout is the C struct's (the extent says; the value comes first).
template <class R, class Visit>
bool visit_pair(const element_type& e, Visit& visit) {
  const auto run = [&]<class T>(std::type_identity<T>) {
    if (e.extent != static_cast<MPI_Aint>(sizeof(plait::value_index<T>)) * e.per_item) return false;
    visit(std::type_identity<plait::value_index<T>>{}, R{}, e.per_item);
    return true;
  };
  if (e.kind == element_class::integer_pair) {
    if (e.width == 2) return run(std::type_identity<std::int16_t>{});
    if (e.width == 4) return run(std::type_identity<std::int32_t>{});
    if (e.width == 8) return run(std::type_identity<std::int64_t>{});
  } else if (e.kind == element_class::floating_pair) {
    if (e.width == 4) return run(std::type_identity<float>{});
    if (e.width == 8) return run(std::type_identity<double>{});
    // MPI_LONG_DOUBLE_INT, where a long double fills 16 bytes (as MPI_LONG_DOUBLE).
    if (e.width == 16 && sizeof(long double) == 16) return run(std::type_identity<long double>{});
  }
  return false;
}

/// Bytes of one datatype element, as one trivially copyable value: what a
/// user op's elements travel as.
template <std::size_t N>
struct blob {
  std::byte bytes[N];
};

/// A user MPI_Op, one element at a time through PMPI_Reduce_local (no MPI
/// call hands out an op's function): f(a, b) = a op b, `a` the lower ranks'
/// partial, which MPI passes as invec. MPI_Op_commutative tells plait
/// whether it may combine in any order. Elements of 1, 2, 4, 8, 12 or 16
/// bytes laid out without gaps (the widths a blob is instantiated for).
template <class Visit>
bool visit_user(const element_type& e, MPI_Op op, Visit& visit) {
  int commutative = 0;
  if (PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS) return false;
  const auto run = [&]<std::size_t N>(std::integral_constant<std::size_t, N>) {
    const MPI_Datatype type = e.type;
    const auto f = [type, op](const blob<N>& a, const blob<N>& b) {
      blob<N> result = b;
      PMPI_Reduce_local(&a, &result, 1, type, op);
      return result;
    };
    if (commutative != 0) {
      visit(std::type_identity<blob<N>>{}, plait::reduction(f, plait::associative, plait::commutative), 1);
    } else {
      visit(std::type_identity<blob<N>>{}, plait::reduction(f, plait::associative), 1);
    }
    return true;
  };
  switch (e.contiguous_bytes) {
    case 1: return run(std::integral_constant<std::size_t, 1>{});
    case 2: return run(std::integral_constant<std::size_t, 2>{});
    case 4: return run(std::integral_constant<std::size_t, 4>{});
    case 8: return run(std::integral_constant<std::size_t, 8>{});
    case 12: return run(std::integral_constant<std::size_t, 12>{});
    case 16: return run(std::integral_constant<std::size_t, 16>{});
    default: return false;
  }
}

/// Whether `op` is one of MPI's own.
inline bool predefined(MPI_Op op) {
  return op == MPI_SUM || op == MPI_PROD || op == MPI_MIN || op == MPI_MAX || op == MPI_LAND || op == MPI_LOR ||
         op == MPI_LXOR || op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR || op == MPI_MINLOC || op == MPI_MAXLOC ||
         op == MPI_REPLACE || op == MPI_NO_OP;
}

/// Runs `visit` for `op` on `e`; false (nothing run) when not served.
template <class Visit>
bool visit_reduction(const element_type& e, MPI_Op op, Visit&& visit) {
  if (!predefined(op)) return visit_user(e, op, visit);
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
  if (op == MPI_MINLOC) return visit_pair<plait::minloc>(e, visit);
  if (op == MPI_MAXLOC) return visit_pair<plait::maxloc>(e, visit);
  return false;
}

/// Runs `run` for `op` on `e`, as visit_reduction picks it, with the
/// reduction carried as its kernel (plait::detail::kernel_reduction) on
/// elements of its width: run(std::type_identity<blob<W>>{}, reduction,
/// scale, by_nodes). Each function's collectives are then instantiated once
/// per element width and order, not once per (type, op) pair, while every
/// combine runs the pair's own loops. Instantiated per pair, the three
/// reduction files took 63, 65 and 62 s to compile; so, 37, 33 and 35 s.
/// `by_nodes`: the elements are arithmetic, which node_aware.hpp's
/// reductions serve (pairs, complex numbers and user ops' blobs run flat).
/// The reduction handed to `run` points at the one visit_reduction made,
/// which lives until `run` returns.
template <class Run>
bool visit_kernel_reduction(const element_type& e, MPI_Op op, Run&& run) {
  return visit_reduction(e, op, [&]<class T, class R>(std::type_identity<T>, const R& reduction, int scale) {
    run(std::type_identity<blob<sizeof(T)>>{}, plait::detail::kernel_reduction_for<T>(reduction), scale,
        std::is_arithmetic_v<T>);
  });
}

/// Why a reduction passes to PMPI, or nothing if it is served (the serve
/// decision, made before any state exists, from the op and the datatype's
/// definition only).
inline std::optional<reason> reduction_pass_reason(const element_type& e, MPI_Op op) {
  if (visit_reduction(e, op, [](auto, auto, int) {})) return std::nullopt;
  if (!predefined(op)) return reason::datatype;  // a user op on elements it cannot carry
  return e.kind == element_class::none ? reason::datatype : reason::op;
}

/// decide() for a reduction: its datatype must map to a plait element type
/// (stored in `e`) and its op to a plait reduction on it; both are defined
/// alike on every rank.
template <class Sizes>
decision decide_reduction(function f, MPI_Comm comm, Sizes&& sizes, MPI_Datatype datatype, MPI_Op op,
                          element_type& e) noexcept {
  return decide(f, comm, std::forward<Sizes>(sizes), [&] {
    e = element_of(datatype);
    return reduction_pass_reason(e, op);
  });
}

}  // namespace plait_pmpi

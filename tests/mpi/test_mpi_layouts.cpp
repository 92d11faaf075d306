// Every algorithm x layout over the MPI transport, against a serial
// reference: along<0..2> (and in place) for all-gather, redistribute<S, C> for
// all-to-all, with strided (padded) sources and destinations, odd extents and
// zero-size tensors. Padding must never be written.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "plait/mpi.hpp"

namespace {

using extents3 = std::array<std::size_t, 3>;
constexpr std::uint32_t guard = 0xfeedf00d;
constexpr std::size_t pad = 2;

std::uint32_t value(int rank, std::size_t a, std::size_t b, std::size_t c) {
  return static_cast<std::uint32_t>((rank + 1) * 1000003 + a * 10007 + b * 101 + c);
}

/// A padded row-major tensor: each innermost row is followed by `pad` guard elements.
struct padded {
  extents3 shape;
  std::vector<std::uint32_t> storage;
  explicit padded(extents3 s) : shape(s), storage(s[0] * s[1] * (s[2] + pad), guard) {}
  plait::tensor_view<std::uint32_t, 3> view() {
    const std::size_t row = shape[2] + pad;
    return {storage.data(), shape, {shape[1] * row, row, 1}};
  }
  std::uint32_t& at(std::size_t a, std::size_t b, std::size_t c) {
    return storage[(a * shape[1] + b) * (shape[2] + pad) + c];
  }
  [[nodiscard]] bool guards_intact() const {
    const std::size_t row = shape[2] + pad;
    for (std::size_t r = 0; r < shape[0] * shape[1]; ++r)
      for (std::size_t c = shape[2]; c < row; ++c)
        if (storage[r * row + c] != guard) return false;
    return true;
  }
};

template <class A, std::size_t D>
bool gather_along(plait::mpi::communicator& comm, extents3 e, bool in_place) {
  const int P = comm.size();
  const int me = comm.rank();
  extents3 big = e;
  big[D] *= static_cast<std::size_t>(P);
  padded mine(e), all(big);
  for (std::size_t a = 0; a < e[0]; ++a)
    for (std::size_t b = 0; b < e[1]; ++b)
      for (std::size_t c = 0; c < e[2]; ++c) {
        mine.at(a, b, c) = value(me, a, b, c);
        if (in_place) {
          extents3 i{a, b, c};
          i[D] += static_cast<std::size_t>(me) * e[D];
          all.at(i[0], i[1], i[2]) = value(me, a, b, c);
        }
      }
  if (in_place) {
    plait::all_gather<A, plait::along<D>>(comm, plait::in_place, all.view());
  } else {
    plait::all_gather<A, plait::along<D>>(comm, plait::tensor_view<const std::uint32_t, 3>(mine.view()), all.view());
  }
  for (std::size_t a = 0; a < big[0]; ++a)
    for (std::size_t b = 0; b < big[1]; ++b)
      for (std::size_t c = 0; c < big[2]; ++c) {
        extents3 i{a, b, c};
        const int source = static_cast<int>(i[D] / e[D]);
        i[D] %= e[D];
        if (all.at(a, b, c) != value(source, i[0], i[1], i[2])) return false;
      }
  return all.guards_intact() && mine.guards_intact();
}

template <class A, std::size_t S, std::size_t C>
bool redistribute(plait::mpi::communicator& comm, extents3 block) {
  const auto P = static_cast<std::size_t>(comm.size());
  const int me = comm.rank();
  extents3 in_shape = block;
  in_shape[S] *= P;
  extents3 out_shape = block;
  out_shape[C] *= P;
  if (S == C) out_shape = in_shape;
  padded send(in_shape), recv(out_shape);
  for (std::size_t a = 0; a < in_shape[0]; ++a)
    for (std::size_t b = 0; b < in_shape[1]; ++b)
      for (std::size_t c = 0; c < in_shape[2]; ++c) send.at(a, b, c) = value(me, a, b, c);
  plait::all_to_all<A, plait::redistribute<S, C>>(comm, send.view(), recv.view());
  for (std::size_t a = 0; a < out_shape[0]; ++a)
    for (std::size_t b = 0; b < out_shape[1]; ++b)
      for (std::size_t c = 0; c < out_shape[2]; ++c) {
        extents3 j{a, b, c};
        const int sender = static_cast<int>(j[C] / block[C]);
        j[C] %= block[C];
        j[S] += static_cast<std::size_t>(me) * block[S];
        if (recv.at(a, b, c) != value(sender, j[0], j[1], j[2])) return false;
      }
  return recv.guards_intact();
}

}  // namespace

TEST_CASE("mpi all-gather along every dimension matches the serial reference for every algorithm",
          "[mpi][layout][along]") {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  for (plait::algorithm_id id : plait::all_algorithm_ids) {
    if (!plait::supports<plait::op::all_gather>(id, comm.size())) continue;
    for (const extents3& e : {extents3{3, 5, 7}, extents3{1, 2, 1}, extents3{2, 0, 3}}) {
      for (bool in_place : {false, true}) {
        CAPTURE(plait::to_string(id), e[0], e[1], e[2], in_place);
        const bool ok = plait::visit_algorithm(id, [&](auto tag) {
          using A = typename decltype(tag)::type;
          if constexpr (plait::schedules<A, plait::op::all_gather>) {
            return gather_along<A, 0>(comm, e, in_place) && gather_along<A, 1>(comm, e, in_place) &&
                   gather_along<A, 2>(comm, e, in_place);
          } else {
            return true;
          }
        });
        PLAIT_REQUIRE_ALL(ok);
      }
    }
  }
}

TEST_CASE("mpi all-to-all with redistribute matches the serial reference for every algorithm",
          "[mpi][layout][redistribute]") {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  for (plait::algorithm_id id : plait::all_algorithm_ids) {
    const bool exchanges = plait::visit_algorithm(
        id, [](auto tag) { return plait::schedules<typename decltype(tag)::type, plait::op::all_to_all>; });
    if (!exchanges) continue;
    for (const extents3& block : {extents3{2, 3, 5}, extents3{1, 1, 3}, extents3{0, 2, 2}}) {
      CAPTURE(plait::to_string(id), block[0], block[1], block[2]);
      const bool ok = plait::visit_algorithm(id, [&](auto tag) {
        using A = typename decltype(tag)::type;
        if constexpr (plait::schedules<A, plait::op::all_to_all>) {
          return redistribute<A, 1, 0>(comm, block) && redistribute<A, 0, 1>(comm, block) &&
                 redistribute<A, 2, 2>(comm, block) && redistribute<A, 0, 2>(comm, block);
        } else {
          return false;
        }
      });
      PLAIT_REQUIRE_ALL(ok);
    }
  }
}

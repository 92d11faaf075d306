// Reduction calls that cannot work stop the compiler at the public entry
// (plait::all_reduce, plait::reduce_scatter) with one static_assert that
// says why: an algorithm that cannot keep the order the reduction needs
// (plait::ordered<...> under ring, recursive_doubling, recursive_halving or
// tree; a reduction not declared commutative under ring), whose note names
// the algorithm, the order and in works_with<...> the algorithms that can; an
// algorithm with no reduce-scatter schedule; a bundle of reductions against
// one buffer, a bundle of another size or plait::in_place; on a two_level, a
// flat algorithm without a whole communicator and ordered over levels that
// cannot keep the left fold; and a reduction that does not take the element
// type. Each case also bounds the diagnostic's length (max-lines): one
// static_assert and its instantiation chain, which is longer where the check
// sits deeper (reduce_scatter's schedule check, in fold_collective) or the header is first
// reached deep in plait.hpp's includes (reductions.hpp: clang prints 12 "In
// file included from" lines). The regexes accept g++'s (plait::v0::ring,
// message then note) and clang's (plait::ring, the requirement before the
// message) spelling.
// ordered<> on floats under -ffast-math is not here: the runner passes no
// per-case flags, and reduction_fail.cpp tests it at the value level.
// With no case selected the fixture compiles: the valid neighbours below.
// The expect-error lines are regexes matched one line each, so clang-format
// must not reflow them.
// clang-format off
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <plait/plait.hpp>

namespace {

/// 2x2 integer matrices under multiplication: associative, not commutative.
struct mat2 {
  std::int64_t a, b, c, d;
};
constexpr mat2 multiply(const mat2& x, const mat2& y) {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}

[[maybe_unused]] void use(plait::shm::communicator& comm, plait::shm::communicator& intra,
                          plait::shm::communicator& inter) {
  const auto p = static_cast<std::size_t>(comm.size());
  std::vector<float> send(4 * p);
  std::vector<float> recv(4 * p);
  std::vector<float> block(4);
  std::vector<double> send_d(4 * p);
  std::vector<double> recv_d(4 * p);
  std::vector<mat2> matrices(4 * p);
  const auto product = plait::reduction(multiply, plait::associative);

  // The valid neighbours of the cases below.
  plait::all_reduce<plait::ring>(comm, send, recv, plait::sum{});
  plait::all_reduce<plait::direct>(comm, send, recv, plait::ordered<plait::sum>{});
  plait::all_reduce<plait::chain>(comm, plait::in_place, recv, plait::ordered<plait::sum>{});
  plait::all_reduce(comm, send, recv, plait::ordered<plait::sum>{});
  plait::all_reduce<plait::recursive_doubling>(comm, send, recv, plait::max{});
  plait::all_reduce<plait::tree>(comm, plait::in_place, matrices, product);
  plait::all_reduce<plait::recursive_doubling>(comm, plait::in_place, matrices, product);
  plait::all_reduce<plait::recursive_halving>(comm, plait::in_place, matrices, product);
  plait::reduce_scatter<plait::recursive_halving>(comm, send, block, plait::sum{});
  std::vector<std::uint32_t> bits(4);
  plait::all_reduce<plait::ring>(comm, plait::in_place, bits, plait::bit_xor{});
  plait::reduce_scatter<plait::ring>(comm, send, block, plait::avg{});
  plait::reduce_scatter<plait::tree>(comm, send, block, plait::sum{});
  plait::reduce_scatter<plait::chain>(comm, send, block, plait::ordered<plait::sum>{});
  plait::reduce_scatter<plait::direct>(comm, plait::in_place, send, plait::ordered<plait::avg>{});
  plait::all_reduce<plait::ring>(comm, plait::bundle(send, send_d), plait::bundle(recv, recv_d), plait::sum{});
  plait::two_level levels{intra, inter};
  plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, block, recv);
  plait::all_reduce<plait::hierarchical<plait::ring, plait::ring>>(levels, send, recv, plait::sum{});
  plait::all_reduce<plait::hierarchical<plait::direct, plait::chain>>(levels, send, recv, plait::ordered<plait::sum>{});
  plait::reduce_scatter(levels, send, block, plait::avg{});
  const std::array<std::size_t, 2> shape{2, 2 * p};
  plait::all_reduce<plait::ring, plait::along<1>>(comm, plait::tensor_view<const float, 2>(send.data(), shape),
                                                  plait::tensor_view<float, 2>(recv.data(), shape), plait::sum{});
  plait::all_reduce<plait::direct, plait::along<0>>(comm, plait::in_place,
                                                    plait::tensor_view<float, 2>(recv.data(), shape), plait::sum{});

// expect-error(ring_ordered): (plait: this algorithm cannot keep the order this reduction needs.*keeps_order_of<plait::[v0:]*ring, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>|keeps_order_of<plait::[v0:]*ring, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>.*plait: this algorithm cannot keep the order this reduction needs)
// max-lines(ring_ordered): 20
#if defined(PLAIT_CASE_ring_ordered)
  plait::all_reduce<plait::ring>(comm, send, recv, plait::ordered<plait::sum>{});
#endif

// expect-error(recursive_doubling_ordered): (plait: this algorithm cannot keep the order this reduction needs.*keeps_order_of<plait::[v0:]*recursive_doubling, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>|keeps_order_of<plait::[v0:]*recursive_doubling, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>.*plait: this algorithm cannot keep the order this reduction needs)
// max-lines(recursive_doubling_ordered): 20
#if defined(PLAIT_CASE_recursive_doubling_ordered)
  plait::all_reduce<plait::recursive_doubling>(comm, send, recv, plait::ordered<plait::sum>{});
#endif

// expect-error(recursive_halving_ordered): (plait: this algorithm cannot keep the order this reduction needs.*keeps_order_of<plait::[v0:]*recursive_halving, plait::[v0:]*op::reduce_scatter<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>|keeps_order_of<plait::[v0:]*recursive_halving, plait::[v0:]*op::reduce_scatter<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>.*plait: this algorithm cannot keep the order this reduction needs)
// max-lines(recursive_halving_ordered): 20
#if defined(PLAIT_CASE_recursive_halving_ordered)
  plait::reduce_scatter<plait::recursive_halving>(comm, send, block, plait::ordered<plait::sum>{});
#endif

// expect-error(tree_ordered): (plait: this algorithm cannot keep the order this reduction needs.*keeps_order_of<plait::[v0:]*tree, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>|keeps_order_of<plait::[v0:]*tree, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>.*plait: this algorithm cannot keep the order this reduction needs)
// max-lines(tree_ordered): 20
#if defined(PLAIT_CASE_tree_ordered)
  plait::all_reduce<plait::tree>(comm, plait::in_place, recv, plait::ordered<plait::sum>{});
#endif

// expect-error(tree_ordered_reduce_scatter): (plait: this algorithm cannot keep the order this reduction needs.*keeps_order_of<plait::[v0:]*tree, plait::[v0:]*op::reduce_scatter<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>|keeps_order_of<plait::[v0:]*tree, plait::[v0:]*op::reduce_scatter<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>.*plait: this algorithm cannot keep the order this reduction needs)
// max-lines(tree_ordered_reduce_scatter): 20
#if defined(PLAIT_CASE_tree_ordered_reduce_scatter)
  plait::reduce_scatter<plait::tree>(comm, send, block, plait::ordered<plait::avg>{});
#endif

// expect-error(ring_non_commutative): (plait: this algorithm cannot keep the order this reduction needs.*keeps_order_of<plait::[v0:]*ring, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::rank>, plait::[v0:]*works_with<plait::[v0:]*tree, plait::[v0:]*recursive_doubling, plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*recursive_halving, plait::[v0:]*automatic>|keeps_order_of<plait::[v0:]*ring, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::rank>, plait::[v0:]*works_with<plait::[v0:]*tree, plait::[v0:]*recursive_doubling, plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*recursive_halving, plait::[v0:]*automatic>.*plait: this algorithm cannot keep the order this reduction needs)
// max-lines(ring_non_commutative): 20
#if defined(PLAIT_CASE_ring_non_commutative)
  plait::all_reduce<plait::ring>(comm, plait::in_place, matrices, product);
#endif

// expect-error(recursive_doubling_reduce_scatter): (plait: this algorithm has no schedule for this operation.*has_schedule_for<plait::[v0:]*recursive_doubling, plait::[v0:]*op::reduce_scatter<plait::[v0:]*op::fold_order::any>, plait::[v0:]*works_with<plait::[v0:]*ring, plait::[v0:]*tree, plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*recursive_halving, plait::[v0:]*automatic>|has_schedule_for<plait::[v0:]*recursive_doubling, plait::[v0:]*op::reduce_scatter<plait::[v0:]*op::fold_order::any>, plait::[v0:]*works_with<plait::[v0:]*ring, plait::[v0:]*tree, plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*recursive_halving, plait::[v0:]*automatic>.*plait: this algorithm has no schedule for this operation)
// max-lines(recursive_doubling_reduce_scatter): 25
#if defined(PLAIT_CASE_recursive_doubling_reduce_scatter)
  plait::reduce_scatter<plait::recursive_doubling>(comm, send, block, plait::sum{});
#endif

// expect-error(bundle_and_one_buffer): plait: a bundle of reductions takes a bundle on both sides
// max-lines(bundle_and_one_buffer): 20
#if defined(PLAIT_CASE_bundle_and_one_buffer)
  plait::all_reduce<plait::ring>(comm, plait::bundle(send, send_d), recv, plait::sum{});
#endif

// expect-error(bundle_member_counts): plait: send and recv bundles must have the same number of members
// max-lines(bundle_member_counts): 20
#if defined(PLAIT_CASE_bundle_member_counts)
  plait::all_reduce<plait::ring>(comm, plait::bundle(send, send_d), plait::bundle(recv), plait::sum{});
#endif

// expect-error(bundle_in_place): plait: a bundle of reductions takes a bundle on both sides \(plait::in_place does not take one\)
// max-lines(bundle_in_place): 20
#if defined(PLAIT_CASE_bundle_in_place)
  plait::all_reduce<plait::ring>(comm, plait::in_place, plait::bundle(recv, recv_d), plait::sum{});
#endif

// expect-error(flat_on_two_level): plait: a flat algorithm cannot run on a plait::two_level without a communicator over all its ranks
// max-lines(flat_on_two_level): 20
#if defined(PLAIT_CASE_flat_on_two_level)
  plait::all_reduce<plait::ring>(levels, send, recv, plait::sum{});
#endif

// expect-error(ordered_on_ring_levels): (plait: hierarchical<Inner, Outer>: Inner \(the intra-node level's algorithm\) has no schedule for this operation.*inner_level_has_schedule_for<plait::[v0:]*ring, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>|inner_level_has_schedule_for<plait::[v0:]*ring, plait::[v0:]*op::all_reduce<plait::[v0:]*op::fold_order::left>, plait::[v0:]*works_with<plait::[v0:]*direct, plait::[v0:]*chain, plait::[v0:]*automatic>.*plait: hierarchical<Inner, Outer>: Inner \(the intra-node level's algorithm\) has no schedule for this operation)
// max-lines(ordered_on_ring_levels): 20
#if defined(PLAIT_CASE_ordered_on_ring_levels)
  plait::all_reduce<plait::hierarchical<plait::ring, plait::ring>>(levels, send, recv, plait::ordered<plait::sum>{});
#endif

// expect-error(all_reduce_along_out_of_range): plait: the layout names a dimension the view does not have
// max-lines(all_reduce_along_out_of_range): 40
#if defined(PLAIT_CASE_all_reduce_along_out_of_range)
  plait::all_reduce<plait::ring, plait::along<2>>(comm, plait::tensor_view<const float, 2>(send.data(), shape),
                                                  plait::tensor_view<float, 2>(recv.data(), shape), plait::sum{});
#endif

// expect-error(all_reduce_along_on_two_level): plait: reductions on a plait::two_level take 1-D contiguous ranges \(or bundles of them\) with plait::contiguous; tensor layouts run flat on the whole communicator
// max-lines(all_reduce_along_on_two_level): 40
#if defined(PLAIT_CASE_all_reduce_along_on_two_level)
  plait::all_reduce<plait::hierarchical<plait::ring, plait::ring>, plait::along<0>>(
      levels, plait::tensor_view<const float, 2>(send.data(), shape), plait::tensor_view<float, 2>(recv.data(), shape),
      plait::sum{});
#endif

// expect-error(bit_xor_on_float): plait::bit_and, bit_or and bit_xor accept integral types and std::byte \(not floating types\)
// max-lines(bit_xor_on_float): 35
#if defined(PLAIT_CASE_bit_xor_on_float)
  plait::all_reduce<plait::ring>(comm, send, recv, plait::bit_xor{});
#endif
}

}  // namespace

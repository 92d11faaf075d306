// Two-level compositions that cannot work stop the compiler at the public
// entry (plait::all_gather, plait::all_to_all) with one static_assert that
// names the combination: hierarchical on a single transport, a flat
// algorithm on a two_level without a whole communicator, an Inner or Outer
// without a schedule for the operation, hierarchical<> nested, arguments
// that hierarchical does not take (tensor views, other layouts, in_place);
// and a two_level of a temporary, which would dangle. The v forms and
// bundles, in every form, compile on a plain two_level (the valid
// neighbours below). Each case also bounds the diagnostic's length (max-lines).
// The expect-error lines are regexes matched one line each, so clang-format
// must not reflow them.
// clang-format off
#include <cstddef>
#include <vector>

#include <plait/plait.hpp>

namespace {

[[maybe_unused]] void use(plait::shm::communicator& world, plait::shm::communicator& intra,
                          plait::shm::communicator& inter) {
  plait::two_level levels{intra, inter};
  std::vector<float> send(4);
  std::vector<float> recv(4 * static_cast<std::size_t>(levels.size()));
  float raw[2][8] = {};
  plait::tensor_view<float, 2> tensor(&raw[0][0], {2, 8});
  // The valid neighbours of the cases below.
  plait::all_gather<plait::hierarchical<plait::ring, plait::recursive_doubling>>(levels, send, recv);
  plait::all_to_all<plait::hierarchical<plait::pairwise, plait::bruck>>(levels, send, recv);
  plait::all_gather<plait::automatic>(levels, send, recv);
  plait::all_gather<plait::ring>(world, send, recv);
  std::vector<int> counts(static_cast<std::size_t>(levels.size()), 4);
  std::vector<float> other(recv.size());
  plait::all_gather_v<plait::hierarchical<plait::ring, plait::direct>>(levels, send, recv, counts);
  plait::all_gather_v(levels, send, recv, counts);
  plait::all_to_all_v<plait::hierarchical<plait::pairwise, plait::pairwise>>(levels, recv, counts, other, counts);
  plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, plait::bundle(send, send),
                                                                    plait::bundle(recv, recv));
  plait::all_to_all_v(levels, plait::bundle(recv), counts, plait::bundle(other), counts);
  auto started = plait::iall_gather_v(levels, send, recv, counts);
  auto bound = plait::all_to_all_v_init<plait::hierarchical<plait::direct, plait::direct>>(levels, recv, counts, other,
                                                                                          counts);
  (void)tensor;

// expect-error(hierarchical_on_one_transport): plait: hierarchical<Inner, Outer> runs on a plait::two_level communicator, not on a single transport
// max-lines(hierarchical_on_one_transport): 20
#if defined(PLAIT_CASE_hierarchical_on_one_transport)
  plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(world, send, recv);
#endif

// expect-error(flat_on_two_level): plait: a flat algorithm cannot run on a plait::two_level without a communicator over all its ranks
// max-lines(flat_on_two_level): 20
#if defined(PLAIT_CASE_flat_on_two_level)
  plait::all_gather<plait::ring>(levels, send, recv);
#endif

// expect-error(inner_without_all_to_all): plait: hierarchical<Inner, Outer>: Inner \(the intra-node level's algorithm\) has no schedule for this operation.*inner_level_has_schedule_for<plait::v0::tree, plait::v0::op::all_to_all, plait::v0::works_with<plait::v0::ring, plait::v0::pairwise, plait::v0::bruck, plait::v0::direct, plait::v0::automatic>
// max-lines(inner_without_all_to_all): 20
#if defined(PLAIT_CASE_inner_without_all_to_all)
  plait::all_to_all<plait::hierarchical<plait::tree, plait::pairwise>>(levels, send, recv);
#endif

// expect-error(outer_without_all_to_all): plait: hierarchical<Inner, Outer>: Outer \(the inter-node level's algorithm\) has no schedule for this operation.*outer_level_has_schedule_for<
// max-lines(outer_without_all_to_all): 20
#if defined(PLAIT_CASE_outer_without_all_to_all)
  plait::all_to_all<plait::hierarchical<plait::pairwise, plait::recursive_doubling>>(levels, send, recv);
#endif

// expect-error(nested_hierarchical): plait: hierarchical<Inner, Outer> has two levels only
// max-lines(nested_hierarchical): 20
#if defined(PLAIT_CASE_nested_hierarchical)
  plait::all_gather<plait::hierarchical<plait::hierarchical<plait::ring, plait::ring>, plait::ring>>(levels, send, recv);
#endif

// expect-error(hierarchical_tensor): plait: hierarchical<Inner, Outer> runs all_gather and all_to_all on 1-D contiguous ranges
// max-lines(hierarchical_tensor): 20
#if defined(PLAIT_CASE_hierarchical_tensor)
  plait::all_gather<plait::hierarchical<plait::ring, plait::ring>, plait::along<1>>(levels, tensor, tensor);
#endif

// expect-error(hierarchical_v_in_place): plait: hierarchical<Inner, Outer> runs all_gather and all_to_all on 1-D contiguous ranges
// max-lines(hierarchical_v_in_place): 20
#if defined(PLAIT_CASE_hierarchical_v_in_place)
  plait::all_gather_v<plait::hierarchical<plait::ring, plait::ring>>(levels, plait::in_place, recv, counts);
#endif

// expect-error(hierarchical_bundle_of_tensors): plait: hierarchical<Inner, Outer> runs all_gather and all_to_all on 1-D contiguous ranges
// max-lines(hierarchical_bundle_of_tensors): 20
#if defined(PLAIT_CASE_hierarchical_bundle_of_tensors)
  plait::all_gather<plait::hierarchical<plait::ring, plait::ring>>(levels, plait::bundle(tensor), plait::bundle(tensor));
#endif

// expect-error(temporary_level): use of deleted function
#if defined(PLAIT_CASE_temporary_level)
  plait::two_level dangling{plait::shm::communicator{}, inter};
#endif
}

}  // namespace

// Layout misuse must fail to compile with a message that says what is wrong:
// a dimension beyond the view's rank (the instantiation shows Dim and Rank),
// a layout for the wrong operation, mismatched element types or ranks, and a
// read-only destination. The last three stop at the public entry, in one
// short message (max-lines).
//
// expect-error(along_out_of_range): plait: the layout names a dimension the view does not have
// expect-error(redistribute_out_of_range): plait: the layout names a dimension the view does not have
// expect-error(redistribute_for_all_gather): plait: this layout does not fit this operation
// expect-error(along_for_all_to_all): plait: this layout does not fit this operation
// expect-error(element_mismatch): plait: send and recv must hold the same element type
// max-lines(element_mismatch): 20
// expect-error(rank_mismatch): plait: send and recv views must have the same rank
// max-lines(rank_mismatch): 20
// expect-error(const_recv): plait: recv must be writable
// max-lines(const_recv): 20
#include <plait/plait.hpp>

void fixture(plait::shm::communicator& comm, float* a, float* b) {
  plait::tensor_view<const float, 2> send(a, {2, 3});
  plait::tensor_view<float, 2> recv(b, {2, 12});
  // The valid neighbours of every case below.
  plait::all_gather<plait::ring, plait::along<1>>(comm, send, recv);
  plait::all_to_all<plait::pairwise, plait::redistribute<1, 0>>(comm, send, plait::tensor_view<float, 2>(b, {8, 1}));
#if defined(PLAIT_CASE_along_out_of_range)
  plait::all_gather<plait::ring, plait::along<2>>(comm, send, recv);
#endif
#if defined(PLAIT_CASE_redistribute_out_of_range)
  plait::all_to_all<plait::pairwise, plait::redistribute<0, 2>>(comm, send, recv);
#endif
#if defined(PLAIT_CASE_redistribute_for_all_gather)
  plait::all_gather<plait::ring, plait::redistribute<1, 0>>(comm, send, recv);
#endif
#if defined(PLAIT_CASE_along_for_all_to_all)
  plait::all_to_all<plait::pairwise, plait::along<0>>(comm, send, recv);
#endif
#if defined(PLAIT_CASE_element_mismatch)
  int ints[24] = {};
  plait::all_gather<plait::ring, plait::along<1>>(comm, send, plait::tensor_view<int, 2>(ints, {2, 12}));
#endif
#if defined(PLAIT_CASE_rank_mismatch)
  plait::all_gather<plait::ring, plait::along<1>>(comm, send, plait::tensor_view<float, 3>(b, {2, 12, 1}));
#endif
#if defined(PLAIT_CASE_const_recv)
  plait::all_gather<plait::ring, plait::along<1>>(comm, send, plait::tensor_view<const float, 2>(b, {2, 12}));
#endif
}

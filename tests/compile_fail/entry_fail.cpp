// Mistakes at the public entry (plait::all_gather, plait::all_to_all) must
// stop the compiler with one static_assert that says what is accepted, not a
// list of the layouts' make_plan overloads: a communicator that is not a
// transport, a const recv, a range that is not contiguous, element types that
// differ, an argument that is neither a range nor a view, in_place for an
// all-to-all. Each case also bounds the diagnostic's length (max-lines).
// The expect-error lines are regexes matched one line each, so clang-format
// must not reflow them.
// clang-format off
#include <cstddef>
#include <list>
#include <span>
#include <string>
#include <vector>

#include <plait/plait.hpp>

namespace {

/// Something passed where a communicator belongs.
struct not_a_communicator {
  [[nodiscard]] int rank() const { return 0; }
  [[nodiscard]] int size() const { return 1; }
};

/// A would-be transport that opts in but has no isend.
struct transport_without_isend {
  using transport_concept = plait::transport_tag;
  using memory_space = plait::host_memory;
  struct request {};
  [[nodiscard]] int rank() const { return 0; }
  [[nodiscard]] int size() const { return 1; }
};

[[maybe_unused]] void use(plait::shm::communicator& comm, not_a_communicator& stranger,
                          transport_without_isend& half_transport) {
  std::vector<float> send(4);
  std::vector<float> recv(4 * static_cast<std::size_t>(comm.size()));
  const std::vector<float> read_only(recv.size());
  std::list<float> linked(4);
  std::vector<int> ints(recv.size());
  float raw[2][8] = {};
  plait::tensor_view<float, 2> tensor(&raw[0][0], {2, 8});
  // The valid neighbours of the cases below.
  plait::all_gather<plait::ring>(comm, send, recv);
  plait::all_gather<plait::ring>(comm, std::span<const float>(send), recv);
  plait::all_gather<plait::ring>(comm, plait::in_place, recv);
  plait::all_to_all<plait::pairwise>(comm, read_only, recv);
  plait::all_gather<plait::ring, plait::along<1>>(comm, plait::tensor_view<const float, 2>(&raw[0][0], {2, 4}), tensor);
  (void)stranger;
  (void)half_transport;

// expect-error(not_a_transport): plait: this communicator type is not a transport plait can run collectives on: pass a plait::shm::communicator
// max-lines(not_a_transport): 20
#if defined(PLAIT_CASE_not_a_transport)
  plait::all_gather<plait::ring>(stranger, send, recv);
#endif

// expect-error(transport_without_isend): plait: transport lacks `request isend\(int peer, std::span<const std::byte>, int tag\)`
// max-lines(transport_without_isend): 20
#if defined(PLAIT_CASE_transport_without_isend)
  plait::all_to_all<plait::pairwise>(half_transport, send, recv);
#endif

// expect-error(const_communicator): plait: the communicator is const
// max-lines(const_communicator): 20
#if defined(PLAIT_CASE_const_communicator)
  const plait::shm::communicator& frozen = comm;
  plait::all_gather<plait::ring>(frozen, send, recv);
#endif

// expect-error(const_recv_range): plait: recv must be writable: pass a range of non-const elements
// max-lines(const_recv_range): 20
#if defined(PLAIT_CASE_const_recv_range)
  plait::all_gather<plait::ring>(comm, send, read_only);
#endif

// expect-error(const_recv_span): plait: recv must be writable: pass a range of non-const elements
// max-lines(const_recv_span): 20
#if defined(PLAIT_CASE_const_recv_span)
  plait::all_to_all<plait::pairwise>(comm, send, std::span<const float>(recv));
#endif

// expect-error(const_recv_view): plait: recv must be writable: pass a view of non-const elements
// max-lines(const_recv_view): 20
#if defined(PLAIT_CASE_const_recv_view)
  plait::all_gather<plait::ring, plait::along<1>>(comm, tensor, plait::tensor_view<const float, 2>(&raw[0][0], {2, 8}));
#endif

// expect-error(list_send): plait: send and recv must be contiguous ranges .* this range is not contiguous
// max-lines(list_send): 20
#if defined(PLAIT_CASE_list_send)
  plait::all_gather<plait::ring>(comm, linked, recv);
#endif

// expect-error(list_recv): plait: send and recv must be contiguous ranges .* this range is not contiguous
// max-lines(list_recv): 20
#if defined(PLAIT_CASE_list_recv)
  plait::all_to_all<plait::pairwise>(comm, send, linked);
#endif

// expect-error(element_mismatch): plait: send and recv must hold the same element type
// max-lines(element_mismatch): 20
#if defined(PLAIT_CASE_element_mismatch)
  plait::all_gather<plait::ring>(comm, send, ints);
#endif

// expect-error(element_mismatch_view): plait: send and recv must hold the same element type
// max-lines(element_mismatch_view): 20
#if defined(PLAIT_CASE_element_mismatch_view)
  plait::all_to_all<plait::pairwise>(comm, ints, tensor);
#endif

// expect-error(not_a_range): plait: send and recv must each be a contiguous range .* or a tensor view
// max-lines(not_a_range): 20
#if defined(PLAIT_CASE_not_a_range)
  plait::all_gather<plait::ring>(comm, send, 42);
#endif

// expect-error(not_trivially_copyable): plait: the elements of a range must be trivially copyable
// max-lines(not_trivially_copyable): 20
#if defined(PLAIT_CASE_not_trivially_copyable)
  std::vector<std::string> words(4);
  plait::all_gather<plait::ring>(comm, words, recv);
#endif

// expect-error(in_place_all_to_all): plait: plait::in_place is for all_gather only
// max-lines(in_place_all_to_all): 20
#if defined(PLAIT_CASE_in_place_all_to_all)
  plait::all_to_all<plait::pairwise>(comm, plait::in_place, recv);
#endif

// expect-error(split_all_gather_not_a_transport): plait: this communicator type is not a transport plait can run collectives on: pass a plait::shm::communicator
// max-lines(split_all_gather_not_a_transport): 20
#if defined(PLAIT_CASE_split_all_gather_not_a_transport)
  auto boundary = plait::split_all_gather<plait::ring, plait::along<0>>(stranger, comm);
  (void)boundary;
#endif
}

}  // namespace

int main() { return 0; }

// Mistakes with nonblocking and persistent collectives stop the compiler at
// the public entry with one message: a transport that cannot have
// collectives in flight (no test_all, no progress engine), and a temporary
// container that the request would keep referring to after it is gone, and
// a type that is not a communicator at all (the message says what to pass).
// The expect-error lines are regexes matched one line each, so clang-format
// must not reflow them.
// clang-format off
#include <cstddef>
#include <span>
#include <vector>

#include <plait/plait.hpp>

#include "../support/loopback_transport.hpp"

namespace {

/// Something passed where a communicator belongs.
struct not_a_communicator {
  [[nodiscard]] int rank() const { return 0; }
  [[nodiscard]] int size() const { return 1; }
};

[[maybe_unused]] void use(plait::shm::communicator& comm, loopback::communicator& loop, not_a_communicator& stranger) {
  std::vector<float> send(4);
  std::vector<float> recv(4 * static_cast<std::size_t>(comm.size()));
  // The valid neighbours of the cases below: lvalues and views may be kept.
  auto a = plait::iall_gather<plait::ring>(comm, send, recv);
  auto b = plait::iall_gather<plait::ring>(comm, std::span<const float>(send), std::span<float>(recv));
  auto c = plait::all_to_all_init<plait::pairwise>(comm, recv, recv);
  auto d = plait::iall_gather(comm, plait::in_place, recv);
  plait::all_gather<plait::ring>(loop, send, recv);  // the blocking form works on the loopback transport
  (void)loop;
  (void)stranger;

// expect-error(no_test_all): plait: nonblocking and persistent collectives need a transport derived from
// max-lines(no_test_all): 20
#if defined(PLAIT_CASE_no_test_all)
  auto r = plait::iall_gather<plait::ring>(loop, send, recv);
#endif

// expect-error(temporary_recv): plait: a nonblocking or persistent collective refers to its buffers after the call returns
// max-lines(temporary_recv): 20
#if defined(PLAIT_CASE_temporary_recv)
  auto r = plait::iall_gather<plait::ring>(comm, send, std::vector<float>(8));
#endif

// expect-error(temporary_send): plait: a nonblocking or persistent collective refers to its buffers after the call returns
// max-lines(temporary_send): 20
#if defined(PLAIT_CASE_temporary_send)
  auto p = plait::all_gather_init<plait::ring>(comm, std::vector<float>(4), recv);
#endif

// expect-error(iall_gather_not_a_transport): plait: this communicator type is not a transport plait can run collectives on: pass a plait::shm::communicator, plait::mpi::communicator or plait::nvlink::communicator, or a plait::two_level or plait::mpi::node_levels of them
// max-lines(iall_gather_not_a_transport): 20
#if defined(PLAIT_CASE_iall_gather_not_a_transport)
  auto r = plait::iall_gather<plait::ring>(stranger, send, recv);
#endif

// expect-error(all_to_all_v_init_not_a_transport): plait: this communicator type is not a transport plait can run collectives on
// max-lines(all_to_all_v_init_not_a_transport): 20
#if defined(PLAIT_CASE_all_to_all_v_init_not_a_transport)
  std::vector<int> counts(1, 4);
  auto p = plait::all_to_all_v_init<plait::pairwise>(stranger, send, counts, recv, counts);
#endif
}

}  // namespace

int main() { return 0; }

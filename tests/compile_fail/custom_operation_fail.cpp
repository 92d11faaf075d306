// An operation and an algorithm of the tests' own (tests/support/custom_operation.hpp)
// get the diagnostics the built-ins get, naming them: an algorithm without a
// schedule for the operation lists what has one (nothing built in schedules
// it), and the test's algorithm on a built-in operation lists the built-ins.
// With no case selected the fixture compiles: the valid calls below.
// The expect-error lines are regexes matched one line each, so clang-format
// must not reflow them.
// clang-format off
#include <cstdint>
#include <vector>

#include "../support/custom_operation.hpp"

[[maybe_unused]] void use(plait::shm::communicator& comm) {
  std::vector<std::uint32_t> send(4), recv(4), all(4 * static_cast<std::size_t>(comm.size()));
  plait::run_collective<custom::shift, custom::shift_once>(comm, send, recv);
  auto r = plait::start_collective<custom::shift, custom::shift_once>(comm, send, recv);

// expect-error(ring_on_shift): plait: this algorithm has no schedule for this operation.*has_schedule_for<plait::v0::ring, custom::shift, plait::v0::works_with<> ?>
// max-lines(ring_on_shift): 30
#if defined(PLAIT_CASE_ring_on_shift)
  plait::run_collective<custom::shift, plait::ring>(comm, send, recv);
#endif

// expect-error(shift_once_on_all_to_all): plait: this algorithm has no schedule for this operation.*has_schedule_for<custom::shift_once, plait::v0::op::all_to_all, plait::v0::works_with<plait::v0::ring, plait::v0::pairwise, plait::v0::bruck, plait::v0::direct, plait::v0::automatic> ?>
#if defined(PLAIT_CASE_shift_once_on_all_to_all)
  plait::all_to_all<custom::shift_once>(comm, all, all);
#endif

// expect-error(persistent_shift_of_a_temporary): plait: a nonblocking or persistent collective refers to its buffers after the call returns
#if defined(PLAIT_CASE_persistent_shift_of_a_temporary)
  auto p = plait::init_collective<custom::shift, custom::shift_once>(comm, std::vector<std::uint32_t>(4), recv);
#endif
}

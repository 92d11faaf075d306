// Combinations with no schedule are compile errors whose note names the
// combination and lists what works, taken from the algorithm registry
// (algorithm/select.hpp, check_algorithm; algorithm/registry.hpp).
// With no case selected the fixture compiles: the valid calls below.
// The expect-error lines are regexes matched one line each, so clang-format
// must not reflow them.
// clang-format off
#include <cstdint>
#include <vector>

#include <plait/plait.hpp>

namespace {

/// A user algorithm that only knows the all-gather.
struct gather_only {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_gather, int rank, int size) {
    return plait::ring::plan(plait::op::all_gather{}, rank, size);
  }
};

/// Not an algorithm at all: no opt-in tag.
struct not_an_algorithm {};

[[maybe_unused]] void use(plait::shm::communicator& comm) {
  std::vector<std::uint32_t> send(4);
  std::vector<std::uint32_t> recv(4 * static_cast<std::size_t>(comm.size()));
  plait::all_gather<plait::tree>(comm, send, recv);
  plait::all_gather<gather_only>(comm, send, recv);
  plait::all_to_all<plait::bruck>(comm, recv, recv);

// expect-error(tree_all_to_all): plait: this algorithm has no schedule for this operation.*has_schedule_for<plait::v0::tree, plait::v0::op::all_to_all, plait::v0::works_with<plait::v0::ring, plait::v0::pairwise, plait::v0::bruck, plait::v0::direct, plait::v0::automatic>
#if defined(PLAIT_CASE_tree_all_to_all)
  plait::all_to_all<plait::tree>(comm, send, recv);
#endif

// expect-error(neighbor_exchange_all_to_all): plait: this algorithm has no schedule for this operation.*has_schedule_for<plait::v0::neighbor_exchange, plait::v0::op::all_to_all, plait::v0::works_with<plait::v0::ring, plait::v0::pairwise, plait::v0::bruck, plait::v0::direct, plait::v0::automatic>
#if defined(PLAIT_CASE_neighbor_exchange_all_to_all)
  plait::all_to_all<plait::neighbor_exchange>(comm, send, recv);
#endif

// expect-error(recursive_doubling_all_to_all): plait: this algorithm has no schedule for this operation.*has_schedule_for<plait::v0::recursive_doubling, plait::v0::op::all_to_all, plait::v0::works_with<plait::v0::ring, plait::v0::pairwise, plait::v0::bruck, plait::v0::direct, plait::v0::automatic>
#if defined(PLAIT_CASE_recursive_doubling_all_to_all)
  plait::all_to_all<plait::recursive_doubling>(comm, send, recv);
#endif

// expect-error(user_algorithm_all_to_all): plait: this algorithm has no schedule for this operation \(it lacks `static constexpr plait::schedule plan\(Op, int rank, int size\)`\).*has_schedule_for<.anonymous.::gather_only, plait::v0::op::all_to_all, plait::v0::works_with<plait::v0::ring, plait::v0::pairwise, plait::v0::bruck, plait::v0::direct, plait::v0::automatic>
#if defined(PLAIT_CASE_user_algorithm_all_to_all)
  plait::all_to_all<gather_only>(comm, send, recv);
#endif

// expect-error(not_an_algorithm): plait: the Algorithm argument is not an algorithm
#if defined(PLAIT_CASE_not_an_algorithm)
  plait::all_gather<not_an_algorithm>(comm, send, recv);
#endif

// expect-error(automatic_with_bad_tuning): plait: automatic_with<Tuning> needs `static constexpr plait::cost_model cost_model\(\)`
#if defined(PLAIT_CASE_automatic_with_bad_tuning)
  struct no_model {};
  plait::all_gather<plait::automatic_with<no_model>>(comm, send, recv);
#endif
}

}  // namespace

int main() {}

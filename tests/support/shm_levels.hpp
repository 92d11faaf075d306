// Two shm levels that also offer their whole group as world(), as
// plait::mpi::node_levels does: what the forms need on a two_level to run
// what hierarchical<...> has no routes for (v forms, bundles, an operation
// of one's own) flat.
#pragma once

#include <plait/plait.hpp>

namespace plait_test {

struct shm_levels : plait::two_level<plait::shm::communicator, plait::shm::communicator> {
  shm_levels(plait::shm::communicator& intra, plait::shm::communicator& inter, plait::shm::communicator& whole)
      : two_level(intra, inter), whole_(&whole) {}
  [[nodiscard]] plait::shm::communicator& world() const noexcept { return *whole_; }

 private:
  plait::shm::communicator* whole_;
};

}  // namespace plait_test

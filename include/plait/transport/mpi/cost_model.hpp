// What plait::automatic assumes about the MPI transport: the parameters of
// core/cost_model.hpp that plait::mpi::communicator::cost_model() returns.
#pragma once

#include "plait/core/cost_model.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {
namespace detail {

/// A step costs more than in shared memory: every message above MPI's eager
/// limit is a rendezvous (request, reply, completion) driven by polling, 10 us
/// per step covers that within a node and on a fast network; posting a
/// request costs about 1 us. Messages of one step progress together in MPI at
/// almost no loss: a receiver copies (or its network delivers) the same bytes
/// whether they come in one step or several, so contention is 0.0005 per
/// concurrent message (0.05 in shared memory). Measured at P = 4, Open MPI
/// (docs/performance.md): posting everything at once (direct) ran 1.17-1.25x
/// native at 4-64 MiB all-gathers where recursive doubling ran 0.92-0.96x,
/// and 1.01-1.16x against ring's 0.85-0.97x for all-to-all; a contention of 0.02 picks
/// those multi-step algorithms from 1-4 MiB blocks. The small term still
/// prefers few-step algorithms for many peers (recursive doubling from 1 MiB
/// blocks at P = 16, at every size at P = 64). Bytes and packing at 10 GB/s.
/// An automatic_with<Tuning> overrides it.
inline constexpr plait::cost_model mpi_cost_model{
    .alpha = 10e-6, .alpha_message = 1e-6, .beta = 1e-10, .contention = 0.0005, .beta_pack = 1e-10};

}  // namespace detail
}  // namespace mpi
}  // namespace v0
}  // namespace plait

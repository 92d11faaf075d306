// What plait::automatic assumes about the MPI transport
// (algorithm/automatic.hpp): plait::mpi::communicator::cost_model() returns it.
#pragma once

#include "plait/algorithm/automatic.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {
namespace detail {

/// A step costs more than in shared memory: every message above MPI's eager
/// limit is a rendezvous (request, reply, completion) driven by polling, 10 us
/// per step covers that within a node and on a fast network; posting a
/// request costs about 1 us. Messages of one step progress together in MPI
/// and share the link at little loss (contention 0.02, against 0.05 in shared
/// memory). Bytes and packing at 10 GB/s. So automatic posts everything at
/// once (direct) up to a few hundred KiB per block at small P, and moves each
/// byte once in few steps (recursive doubling, ring, pairwise-like shifted
/// exchange) beyond, as MPI libraries' own tuned collectives do. An
/// automatic_with<Tuning> overrides it.
inline constexpr plait::cost_model mpi_cost_model{
    .alpha = 10e-6, .alpha_message = 1e-6, .beta = 1e-10, .contention = 0.02, .beta_pack = 1e-10};

}  // namespace detail
}  // namespace mpi
}  // namespace v0
}  // namespace plait

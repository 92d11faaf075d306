// A shared-memory group per node, bootstrapped from MPI: an MPI code gets
// plait's shm transport among the ranks that share a node with one call,
// without agreeing on a segment name by hand.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

#include "plait/core/error.hpp"
#include "plait/transport/mpi/communicator.hpp"
#include "plait/transport/mpi/error.hpp"
#include "plait/transport/mpi/setup.hpp"
#include "plait/transport/shm/communicator.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {

/// The ranks of `comm` that share this node's memory, joined as a
/// plait::shm::communicator (collective over `comm`). Node ranks follow the
/// order of `comm`'s ranks. The node's first rank picks an unguessable segment
/// name (128 random bits) and broadcasts it, so no other user can predict and
/// pre-create the segment; the shm group inherits comm.timeout() and
/// comm.busy_poll() (whether its waits may spin first). Each step waits at
/// most comm.timeout(): a rank of `comm` that does not call it leaves the
/// others with errc::timeout and `comm` poisoned.
///   plait::mpi::communicator world{MPI_COMM_WORLD};
///   auto node = plait::mpi::node_local_shm(world);
///   plait::all_gather<plait::ring>(node, mine, node_all);
inline shm::communicator node_local_shm(communicator& comm) {
  const error_context at{comm.rank(), "node_local_shm", -1, -1};
  if (!comm) throw error(errc::invalid_argument, "called on a null communicator", at);
  if (comm.poisoned()) throw error(errc::invalid_argument, "the communicator is poisoned by an earlier failure", at);
  // MPI_Comm_split_type blocks until every rank calls it: agree first.
  (void)detail::setup_access::agree(comm, detail::setup_call::node_local_shm, {}, "node_local_shm");

  MPI_Comm node = MPI_COMM_NULL;
  detail::check(MPI_Comm_split_type(comm.native_handle(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node),
                "MPI_Comm_split_type", at);
  // Free the node communicator on every path out, including a throw.
  struct node_guard {
    MPI_Comm* handle;
    ~node_guard() {
      if (*handle != MPI_COMM_NULL && !detail::finalized()) MPI_Comm_free(handle);
    }
  } guard{&node};
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);

  int node_rank = 0;
  int node_size = 0;
  detail::check(MPI_Comm_rank(node, &node_rank), "MPI_Comm_rank", at);
  detail::check(MPI_Comm_size(node, &node_size), "MPI_Comm_size", at);

  constexpr int hex_digits = 32;
  std::string name(hex_digits, '0');
  if (node_rank == 0) {
    static constexpr char hex[] = "0123456789abcdef";
    std::random_device entropy;
    for (int word = 0; word < hex_digits / 8; ++word) {
      auto bits = static_cast<std::uint32_t>(entropy());
      for (int digit = 0; digit < 8; ++digit, bits >>= 4) {
        name[static_cast<std::size_t>(word * 8 + digit)] = hex[bits & 0xF];
      }
    }
  }
  detail::check(MPI_Bcast(name.data(), hex_digits, MPI_CHAR, 0, node), "MPI_Bcast", at);

  shm::communicator group = shm::communicator::join(
      "mpi-" + name, node_rank, node_size, std::chrono::duration_cast<std::chrono::nanoseconds>(comm.timeout()));
  // comm decided from the whole node whether a waiter may spin; the shm
  // group would decide from this process's affinity mask, which a launcher
  // that binds each rank to one core leaves at one CPU.
  group.set_busy_poll(comm.busy_poll());
  return group;
}

}  // namespace mpi
}  // namespace v0
}  // namespace plait

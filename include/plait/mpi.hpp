// <plait/mpi.hpp>: plait over MPI. Everything in <plait/plait.hpp> plus
// plait::mpi::communicator, a transport over MPI point-to-point that runs
// every plait algorithm and layout across nodes, and
// plait::mpi::node_local_shm, the shared-memory transport among the ranks of
// one node, and plait::mpi::node_levels, the node (shm) and the nodes (MPI)
// as the two levels of a plait::two_level for hierarchical collectives.
// Needs an MPI implementation (link plait::mpi in CMake).
#pragma once

#include "plait/plait.hpp"

#include "plait/levels/mpi/node_levels.hpp"
#include "plait/levels/mpi/node_local.hpp"
#include "plait/transport/mpi/communicator.hpp"
#include "plait/transport/mpi/error.hpp"
#include "plait/transport/mpi/request.hpp"

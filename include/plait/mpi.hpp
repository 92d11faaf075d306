// <plait/mpi.hpp>: plait over MPI. Everything in <plait/plait.hpp> plus
// plait::mpi::communicator, a transport over MPI point-to-point that runs
// every plait algorithm and layout across nodes. Needs an MPI implementation
// (link plait::mpi in CMake).
#pragma once

#include "plait/transport/mpi/communicator.hpp"
#include "plait/transport/mpi/error.hpp"

// oneCCL, Intel's collectives library in its CPU build, as a column of
// plait-bench beside the native MPI (`--oneccl`): the strongest CPU
// reductions a user could pick instead of MPI's (issue 30). Compiled only
// where CMake was given a oneCCL (PLAIT_BENCH_ONECCL_ROOT; `scripts/bench
// --oneccl` installs one). The interface names no oneCCL type, so
// plait-bench.cpp compiles the same with or without it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace plait {
inline namespace v0 {
namespace bench::oneccl {

/// A oneCCL communicator over the ranks of an MPI communicator.
class library {
 public:
  /// Collective over `comm`: rank 0 creates oneCCL's key-value store and its
  /// address reaches the other ranks by MPI_Bcast (oneCCL's documented
  /// bootstrap beside MPI).
  explicit library(MPI_Comm comm);
  ~library();
  library(const library&) = delete;
  library& operator=(const library&) = delete;

  /// One call of `op` as plait-bench sizes it: `recv_bytes` is the receive
  /// buffer's size; float sum for reduce_scatter and all_reduce, bytes for
  /// all_gather and all_to_all, out of place. Empty for any other operation
  /// (oneCCL has no bundles; its v-forms are not measured).
  [[nodiscard]] std::function<void()> bind(const std::string& op, const void* send, void* recv,
                                           std::size_t recv_bytes) const;

  /// oneCCL's version and the settings that decide how it runs here (ATL
  /// transport, libfabric provider, worker offload, yield), for the
  /// report's header.
  [[nodiscard]] static std::string description();

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace bench::oneccl
}  // namespace v0
}  // namespace plait

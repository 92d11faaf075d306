// The memory a schedule's run allocates, packs and copies in: the
// transport's copy engine when it has one (device memory: the NVLink
// transport), else host memory (detail::host_engine). Used by the executor's
// runs, the placing one (op/executor.hpp) and the folding one (op/fold_run.hpp).
#pragma once

#include <cstddef>

#include "plait/core/region.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// Allocation, packing and local copies in host memory (buffers uninitialised:
/// the executor writes every byte before it reads it).
struct host_engine {
  using buffer = byte_buffer;
  buffer allocate(std::size_t bytes) { return buffer(bytes); }
  void pack(const region& src, std::byte* dst) { plait::pack(src, dst); }
  void unpack(const std::byte* src, const region& dst) { plait::unpack(src, dst); }
  void copy(const region& src, const region& dst) { plait::copy(src, dst); }
};

/// The transport's engine if it has one, else `host`.
template <class Comm>
auto& engine_for(Comm& comm, host_engine& host) {
  if constexpr (has_copy_engine<Comm>) {
    return comm.copy_engine();
  } else {
    return host;
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

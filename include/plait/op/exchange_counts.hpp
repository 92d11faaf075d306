// plait::exchange_counts: the count exchange every MoE dispatch starts with.
// Each rank knows how many elements it sends to each rank; this returns how
// many each rank sends to it, ready for all_to_all_v's recv_counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "plait/algorithm/pairwise.hpp"
#include "plait/core/error.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/counts.hpp"
#include "plait/op/all_to_all.hpp"
#include "plait/op/uneven.hpp"

namespace plait {
inline namespace v0 {

/// recv_counts[i] = rank i's send_counts[rank()]: one all-to-all of one
/// 8-byte count per rank pair (pairwise; payload in bytes_sent()). Collective.
/// `send_counts`: one non-negative count per rank, any contiguous range of an
/// integral type (errc::invalid_argument otherwise, before anything moves).
template <transport Comm, class Counts>
std::vector<std::size_t> exchange_counts(Comm& comm, const Counts& send_counts) {
  detail::check_counts_type<Counts>();
  static_assert(std::is_same_v<typename Comm::memory_space, host_memory>,
                "plait: exchange_counts needs a transport of host memory (shm, mpi); on a device transport "
                "exchange the counts over its bootstrap communicator");
  const detail::call_site at{comm.rank(), comm.size(), "exchange_counts"};
  detail::checked_counts counts;
  detail::read_counts(send_counts, at, "send_counts", 1, counts);
  std::vector<std::uint64_t> out(counts.count.begin(), counts.count.end());
  std::vector<std::uint64_t> in(out.size());
  try {
    all_to_all<pairwise>(comm, out, in);
  } catch (const error& e) {
    // Errors name the call the user made; the all-to-all it runs stays in parentheses.
    throw e.within({at.rank, at.operation});
  }
  return {in.begin(), in.end()};
}

}  // namespace v0
}  // namespace plait

// What a combining receive does with the bytes that arrive (the transport
// capability combines_on_receive, core/transport.hpp): the reduction's fold
// run (op/fold_run.hpp) hands it the operand the arriving partial meets and
// the combine, and the transport combines each piece where it can read it (a
// slot of the channel, a peer's mapped buffer, a cache-sized piece read from
// another process; on the NVLink transport, inside the step that receives it)
// instead of landing the whole message in staging first.
#pragma once

#include <cstddef>

namespace plait {
inline namespace v0 {
namespace detail {
struct reduction_kernel;
}  // namespace detail

/// How a combining receive folds its message into its destination `into`:
/// into[i] = arriving[i] op held[i] (arriving on the left) or held[i] op
/// arriving[i], over any whole number of elements at a time.
struct receive_combine {
  /// The other operand, as long as the message; may be `into` itself.
  const std::byte* held = nullptr;
  /// Whether the arriving partial is the left operand (the lower ranks' side).
  bool arriving_left = false;
  /// Bytes of one element: the transport combines whole multiples of it.
  std::size_t granule = 1;
  /// out = left op right over `bytes` bytes (a multiple of granule); out is
  /// exactly left or right, or disjoint from both.
  void (*combine)(const void* context, const std::byte* left, const std::byte* right, std::byte* out,
                  std::size_t bytes) = nullptr;
  /// Passed to combine (the reduction's plan).
  const void* context = nullptr;
  /// The reduction on one element type (reduction/kernel.hpp), for a
  /// transport that combines in device code: its `device` table holds what
  /// the device runs, its `state` the reduction value. Null when the plan has
  /// none (a bundle mixing element types, which no transport combines on receive).
  const detail::reduction_kernel* kernel = nullptr;
};

}  // namespace v0
}  // namespace plait

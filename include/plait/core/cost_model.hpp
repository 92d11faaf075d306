// The alpha-beta cost model's parameters: what plait::automatic
// (algorithm/automatic.hpp) assumes about a transport. In core because a
// transport states its own parameters (a static cost_model()) without
// depending on the algorithms that read them.
#pragma once

#include <cstddef>
#include <ostream>

#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {

/// Alpha-beta parameters. With m = max(sends, receives) messages in a step,
/// a step costs
///   alpha + alpha_message·(sends + receives posted)
///         + beta·max(bytes sent, bytes received)·(1 + contention·(m - 1))
///         + beta_pack·(bytes of scattered messages, both sides)
/// and a schedule costs the sum of its steps. Sends and receives overlap (full
/// duplex), so only the larger direction counts; messages of one step share
/// the link or memory port, and each one beyond the first costs `contention`
/// of the bandwidth term extra (incast, buffer pressure); a message whose block
/// ids are not one increasing run is packed and unpacked through staging by
/// the executor, which beta_pack charges. A step with a message of at least
/// `rendezvous_bytes` costs `alpha_rendezvous` more, once: the transport
/// hands such messages over by rendezvous (shm's single copy: the receiver
/// reads the sender's buffer, and the sender waits for it), a round trip
/// more than a message that fits its buffers. A received message of several
/// blocks that fold costs `beta_staged` per byte more: the fold run lands it
/// in staging and combines it after the step (op/fold_run.hpp), where a
/// one-block message folds as it arrives.
struct cost_model {
  double alpha = 2e-6;            ///< seconds per step: post, synchronise, wait for completion
  double alpha_message = 0.5e-6;  ///< seconds per message posted (send or receive)
  double beta = 1e-10;            ///< seconds per byte moved (1 / bandwidth; 10 GB/s)
  double contention = 0.05;       ///< extra fraction of the bandwidth term per concurrent message beyond one
  double beta_pack = 1e-10;       ///< seconds per byte packed into or unpacked from staging
  /// Bytes from which a message goes by rendezvous (default: none does).
  std::size_t rendezvous_bytes = static_cast<std::size_t>(-1);
  double alpha_rendezvous = 0;  ///< seconds per step with a rendezvous message
  double beta_staged = 0;       ///< seconds per byte of a several-block message that folds

  /// Equal when every parameter is.
  constexpr bool operator==(const cost_model&) const = default;
};

/// Writes the parameters with their units: {alpha 2e-06 s, ...}.
PLAIT_DECL std::ostream& operator<<(std::ostream& out, const cost_model& m);

/// Generic parameters: a shared-memory node (microsecond synchronisation, ~10 GB/s copies).
inline constexpr cost_model default_cost_model{};

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/cost_model.ipp"
#endif

// Defines the stream output of cost_model (see plait/core/cost_model.hpp).
#pragma once

#include <ostream>

#include "plait/core/config.hpp"
#include "plait/core/cost_model.hpp"

namespace plait {
inline namespace v0 {

PLAIT_DECL std::ostream& operator<<(std::ostream& out, const cost_model& m) {
  return out << "{alpha " << m.alpha << " s, alpha_message " << m.alpha_message << " s, beta " << m.beta
             << " s/B, contention " << m.contention << ", beta_pack " << m.beta_pack << " s/B";
  if (m.alpha_rendezvous != 0) {
    out << ", alpha_rendezvous " << m.alpha_rendezvous << " s from " << m.rendezvous_bytes << " B";
  }
  if (m.beta_staged != 0) out << ", beta_staged " << m.beta_staged << " s/B";
  return out << "}";
}

}  // namespace v0
}  // namespace plait

// The blocking point-to-point calls every transport offers over its
// nonblocking ones, written once: a transport derives from
// blocking_calls<itself> (no virtual call) and gets wait(request), send and
// recv, each bounded by the communicator's timeout like wait_all.
#pragma once

#include <cstddef>
#include <span>

#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {

/// wait, send and recv for a transport `Derived` with isend, irecv and
/// wait_all(std::span<request>) (deadline: now + its timeout()).
template <class Derived>
class blocking_calls {
 public:
  /// Completes one request (now + timeout()).
  template <class Request>
  void wait(Request r) {
    self().wait_all(std::span<Request>(&r, 1));
  }
  /// Blocking send: isend, then wait.
  void send(int peer, std::span<const std::byte> bytes, int tag = user_tag) { wait(self().isend(peer, bytes, tag)); }
  /// Blocking receive of exactly bytes.size() bytes: irecv, then wait.
  void recv(int peer, std::span<std::byte> bytes, int tag = user_tag) { wait(self().irecv(peer, bytes, tag)); }

 private:
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
};

}  // namespace v0
}  // namespace plait

// A collective call left mid-way by an exception of the rank's own code: a
// user reduction or plan that threw, an allocation that failed. Its
// transfers are still pending and its peers wait for bytes this rank will
// not send, so the run tells the transport (abandons_calls,
// core/transport.hpp) before the exception goes on to the caller.
// plait::error is not such an exception: the transport threw it, or the
// executor after checking the call, and either already did what is needed.
#pragma once

#include <string_view>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// Inside a handler of the exception that left a call: the error the
/// communicator records and its peers quote (errc::invalid_argument), with
/// the exception's what() where it has one. abandon_call locates it at this
/// rank with this rank as its peer too: the fault is its own.
PLAIT_DECL error abandoned_call_error(const error_context& at);

/// Inside a handler of an exception other than plait::error: tells `comm`
/// that this rank leaves the call `operation` at `step`. Out of memory even
/// for the message, it terminates: no later call could be trusted.
template <class Comm>
[[gnu::cold]] void abandon_call(Comm& comm, std::string_view operation, int step) noexcept {
  if constexpr (abandons_calls<Comm>)
    comm.abandon_call(abandoned_call_error({comm.rank(), operation, step, comm.rank()}));
}

/// `work()` (a run of the call `operation`); an exception other than
/// plait::error abandons the call at step `step()` first, and goes on.
template <class Comm, class Step, class Work>
decltype(auto) abandoning_on_throw(Comm& comm, std::string_view operation, Step&& step, Work&& work) {
  try {
    return work();
  } catch (const error&) {
    throw;
  } catch (...) {
    abandon_call(comm, operation, step());
    throw;
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/abandon.ipp"
#endif

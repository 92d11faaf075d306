// Starting groups: plait::shm::run_threads (ranks are threads of this process)
// and plait::shm::run_processes (ranks are forked children). Both create a
// private segment whose name is removed before any rank runs.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/segment.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

namespace detail {
PLAIT_DECL void check_group_size(int ranks, std::string_view operation);

/// Copies `text` into `to` (`capacity` bytes), cut short and terminated.
PLAIT_DECL void copy_text(char* to, std::size_t capacity, std::string_view text);

/// Writes how `rank` failed into its record, for the parent to rethrow.
PLAIT_DECL void record_failure(const segment& seg, int rank, std::exception_ptr failure);

/// "rank N failed: what": the short reason the group's failure record keeps.
PLAIT_DECL std::string failure_reason(int rank, std::exception_ptr failure) noexcept;

/// Rebuilds a child's failure from its record. The record lives in shared
/// memory, so every field is checked before use.
PLAIT_DECL error recorded_failure(const rank_record& shared, int rank);

/// A rank's body, type-erased without allocating: `call(fn, comm)` runs the
/// user's callable that `fn` leads to. The templates below make one, and all
/// the work (segment, threads or children, reaping, rethrow) is in one
/// non-template function, compiled once (impl/run.ipp).
struct rank_function {
  void* fn;
  void (*call)(void* fn, communicator& comm);
  void operator()(communicator& comm) const { call(fn, comm); }
};

/// Erases `*fn`: `fn` is a pointer to the callable (to a function, for a
/// plain function; so `fn` itself, an object, is what `rank_function::fn`
/// points to). It must outlive the call that uses the result. The callable
/// is called as an lvalue, as `fn(comm)` in the template would.
template <class F>
rank_function erase_rank_function(F*& fn) noexcept {
  return {static_cast<void*>(&fn), [](void* p, communicator& comm) { (**static_cast<F**>(p))(comm); }};
}

/// What shm::run_threads and shm::run_processes do, for a type-erased body.
PLAIT_DECL void run_threads(int ranks, rank_function fn);
PLAIT_DECL void run_processes(int ranks, rank_function fn);
}  // namespace detail

/// Runs fn(communicator&) on `ranks` threads of this process, one rank each.
/// If a rank throws, the group is marked failed (its peers' waits end with
/// errc::peer_lost) and the first exception is rethrown once all ranks end.
template <class Fn>
void run_threads(int ranks, Fn&& fn) {
  auto* callable = std::addressof(fn);
  detail::run_threads(ranks, detail::erase_rank_function(callable));
}

/// Runs fn(communicator&) in `ranks` forked child processes, one rank each, and
/// waits for them. Fork before starting threads or CUDA in the parent. A
/// child's failure (an exception, or death by a signal) marks the group failed
/// and is rethrown here with the child's code and message; a child's other
/// state (memory, Catch2 results) does not come back.
template <class Fn>
void run_processes(int ranks, Fn&& fn) {
  auto* callable = std::addressof(fn);
  detail::run_processes(ranks, detail::erase_rank_function(callable));
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/transport/shm/impl/run.ipp"
#endif

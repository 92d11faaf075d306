// Defines the out-of-line parts of plait/transport/shm/run.hpp: the work of
// run_threads and run_processes (segment, threads or forked children,
// reaping, rethrow), behind their thin templates, and the failure records.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/run.hpp"
#include "plait/transport/shm/segment.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

namespace detail {
PLAIT_DECL void check_group_size(int ranks, std::string_view operation) {
  if (ranks < 1 || ranks > max_ranks) {
    throw error(errc::invalid_argument,
                "a group needs 1 to " + std::to_string(max_ranks) + " ranks, not " + std::to_string(ranks),
                {-1, operation});
  }
}

PLAIT_DECL void copy_text(char* to, std::size_t capacity, std::string_view text) {
  const std::size_t n = std::min(text.size(), capacity - 1);
  std::memcpy(to, text.data(), n);
  to[n] = '\0';
}

/// Writes how `rank` failed into its record, for the parent to rethrow.
PLAIT_DECL void record_failure(const segment& seg, int rank, std::exception_ptr failure) {
  rank_record& r = seg.record(rank);
  try {
    std::rethrow_exception(failure);
  } catch (const error& e) {
    r.code = static_cast<std::int32_t>(e.value());
    r.step = e.step();
    r.peer = e.peer();
    copy_text(r.operation, sizeof r.operation, e.operation());
    copy_text(r.detail, sizeof r.detail, e.detail());
  } catch (const std::exception& e) {
    r.code = static_cast<std::int32_t>(errc::transport);
    r.step = -1;
    r.peer = -1;
    copy_text(r.operation, sizeof r.operation, "");
    copy_text(r.detail, sizeof r.detail, std::string("exception: ") + e.what());
  } catch (...) {
    r.code = static_cast<std::int32_t>(errc::transport);
    r.step = -1;
    r.peer = -1;
    copy_text(r.operation, sizeof r.operation, "");
    copy_text(r.detail, sizeof r.detail, "unknown exception");
  }
}

/// "rank N failed: what", for the group's failure record.
PLAIT_DECL std::string failure_reason(int rank, std::exception_ptr failure) noexcept {
  try {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(failure);
    } catch (const error& e) {
      what = e.detail();
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    return "rank " + std::to_string(rank) + " failed: " + what;
  } catch (...) {  // out of memory: no reason, the mark alone
    return {};
  }
}

/// Rebuilds a child's failure from its record. The record lives in shared
/// memory, so every field is checked before use.
PLAIT_DECL error recorded_failure(const rank_record& shared, int rank) {
  const rank_record r = shared;  // a snapshot: the child could still be writing
  errc code = errc::transport;
  if (r.code >= static_cast<int>(errc::invalid_argument) && r.code <= static_cast<int>(errc::unsupported)) {
    code = static_cast<errc>(r.code);
  }
  const std::string operation(r.operation, strnlen(r.operation, sizeof r.operation));
  const std::string detail(r.detail, strnlen(r.detail, sizeof r.detail));
  return error(code, detail.empty() ? "failed without a message" : detail, {rank, operation, r.step, r.peer});
}

PLAIT_DECL void run_threads(int ranks, rank_function fn) {
  detail::check_group_size(ranks, "run_threads");
  // A bad PLAIT_* value fails here, once, before any rank starts.
  const auto timeout = plait::detail::read_environment({-1, "run_threads"}).timeout;
  auto seg = detail::segment::create_private(detail::geometry{static_cast<std::uint32_t>(ranks)}, {-1, "run_threads"});
  // Every rank is a thread of this process: known before any starts, so a
  // rank's first message does not take a process's path (chunks, the sender
  // copying for itself) because its peer's thread has not run yet.
  for (int rank = 0; rank < ranks; ++rank) seg->mark_local(rank);
  std::exception_ptr first;
  std::mutex first_lock;
  auto body = [&](int rank) {
    try {
      communicator comm(seg, rank, timeout);
      fn(comm);
    } catch (...) {
      const bool was_first = seg->mark_failed(rank, failure_reason(rank, std::current_exception()));
      std::lock_guard lock(first_lock);
      if (was_first || !first) first = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(ranks));
  try {
    for (int rank = 0; rank < ranks; ++rank) threads.emplace_back(body, rank);
  } catch (...) {
    // The running ranks end with peer_lost.
    seg->mark_failed(static_cast<int>(threads.size()),
                     "rank " + std::to_string(threads.size()) + "'s thread could not be started");
    for (auto& t : threads) t.join();
    throw error(errc::transport, "cannot start " + std::to_string(ranks) + " threads", {-1, "run_threads"});
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

PLAIT_DECL void run_processes(int ranks, rank_function fn) {
  detail::check_group_size(ranks, "run_processes");
  // In the parent, before any fork: a bad PLAIT_* value is one error, not one per child.
  const auto timeout = plait::detail::read_environment({-1, "run_processes"}).timeout;
  auto seg =
      detail::segment::create_private(detail::geometry{static_cast<std::uint32_t>(ranks)}, {-1, "run_processes"});
  std::fflush(nullptr);  // or buffered output would be written once per child
  std::vector<pid_t> children;
  for (int rank = 0; rank < ranks; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      int status = 0;
      try {
        communicator comm(seg, rank, timeout);
        fn(comm);
      } catch (...) {
        detail::record_failure(*seg, rank, std::current_exception());
        seg->mark_failed(rank, failure_reason(rank, std::current_exception()));
        status = 1;
      }
      std::fflush(nullptr);
      _exit(status);  // no atexit handlers or destructors of the parent's objects in the child
    }
    if (pid < 0) {
      const std::string reason = std::strerror(errno);
      seg->mark_failed(rank, "rank " + std::to_string(rank) + "'s process could not be forked: " + reason);
      for (pid_t child : children) waitpid(child, nullptr, 0);
      throw error(errc::transport, "fork failed for rank " + std::to_string(rank) + ": " + reason,
                  {-1, "run_processes"});
    }
    children.push_back(pid);
  }
  // Reap children as they end; a child that dies without reporting (a signal,
  // _exit elsewhere) is marked failed here so its peers stop waiting for it.
  std::vector<bool> done(children.size(), false);
  std::size_t remaining = children.size();
  std::vector<std::string> deaths(children.size());
  while (remaining > 0) {
    bool reaped = false;
    for (std::size_t rank = 0; rank < children.size(); ++rank) {
      if (done[rank]) continue;
      int status = 0;
      const pid_t result = waitpid(children[rank], &status, WNOHANG);
      if (result == 0 || (result < 0 && errno == EINTR)) continue;
      done[rank] = true;
      --remaining;
      reaped = true;
      const bool clean = result > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
      const bool reported =
          result > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 1 && seg->record(static_cast<int>(rank)).code != 0;
      if (!clean && !reported) {
        deaths[rank] =
            result > 0 && WIFSIGNALED(status) ? "process was killed by signal " + std::to_string(WTERMSIG(status)) +
                                                    " (" + strsignal(WTERMSIG(status)) + ")"
            : result > 0 && WIFEXITED(status)
                ? "process exited with status " + std::to_string(WEXITSTATUS(status)) + " without an exception"
                : "process ended abnormally";
        // The dead rank is the one to blame: every survivor's peer() names it.
        seg->mark_failed(static_cast<int>(rank), "rank " + std::to_string(rank) + ": " + deaths[rank],
                         static_cast<int>(rank));
      }
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The group's first failure, if that child reported it or died; else any
  // child that did. A child that caught its own failure and ended cleanly
  // (its mark still ended its peers' waits) is no failure of the run.
  auto failed_here = [&](int rank) {
    return !deaths[static_cast<std::size_t>(rank)].empty() || seg->record(rank).code != 0;
  };
  int failed = seg->failed_rank();
  if (failed < 0 || failed >= ranks || !failed_here(failed)) {
    failed = -1;
    for (int rank = 0; rank < ranks && failed < 0; ++rank) {
      if (failed_here(rank)) failed = rank;
    }
  }
  if (failed < 0) return;
  const auto index = static_cast<std::size_t>(failed);
  if (!deaths[index].empty()) throw error(errc::peer_lost, deaths[index], {failed, "run_processes"});
  throw detail::recorded_failure(seg->record(failed), failed);
}
}  // namespace detail

}  // namespace shm
}  // namespace v0
}  // namespace plait

// A minimal complete plait transport: ranks are threads of one process, and
// a message is a copy of the sender's bytes left in the receiver's mailbox.
// It is written only against the transport concept (core/transport.hpp) and
// uses nothing of plait's shm, MPI or NVLink code, so every algorithm, layout
// and operation running on it (tests/test_loopback_transport.cpp) shows that a
// new transport is only point-to-point moves. Read it as the model for writing
// one: everything here is what the executor needs, and nothing more.
//
//   auto results = loopback::run(4, [](loopback::communicator& comm) {
//     plait::all_gather<plait::ring>(comm, mine, all);
//     return ...;   // one result per rank, returned in rank order
//   });
//
// Matching: the k-th message rank a sends to rank b with tag t is the k-th
// receive rank b posts from rank a with tag t (both sides count), so messages
// with the same tag match in posting order whatever order they are waited in.
// Sends complete at once (the bytes are copied when posted); receives complete
// inside wait_all, on the receiver's own thread, so a receive abandoned after
// an error never writes into its buffer.
#pragma once

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <plait/core/error.hpp>
#include <plait/core/timeout.hpp>
#include <plait/core/transport.hpp>

namespace loopback {

/// What the ranks of one group share: a mailbox per (sender, receiver) pair,
/// a barrier, and whether a rank has failed. One mutex guards it all, and
/// every change wakes every waiter: simple, and waits sleep instead of spin,
/// so more ranks than cores still progress.
class fabric {
 public:
  explicit fabric(int size)
      : size_(size), mailboxes_(static_cast<std::size_t>(size) * static_cast<std::size_t>(size)) {}

  struct message {
    int tag;
    std::uint64_t sequence;  // among messages of this tag between the two ranks
    std::vector<std::byte> bytes;
  };

  [[nodiscard]] int size() const { return size_; }

  /// A rank threw: every wait of the others ends with errc::peer_lost.
  void fail(int rank) {
    const std::lock_guard lock(mutex_);
    if (failed_rank_ < 0) failed_rank_ = rank;
    changed_.notify_all();
  }

 private:
  friend class communicator;

  std::list<message>& mailbox(int from, int to) {
    return mailboxes_[static_cast<std::size_t>(to) * static_cast<std::size_t>(size_) + static_cast<std::size_t>(from)];
  }

  int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::list<message>> mailboxes_;
  int failed_rank_ = -1;
  int barrier_arrived_ = 0;
  std::uint64_t barrier_generation_ = 0;
};

/// One rank's view of a fabric: a plait transport.
class communicator {
 public:
  using transport_concept = plait::transport_tag;
  using memory_space = plait::host_memory;

  /// A posted send (complete from the start) or receive (complete once
  /// wait_all has copied its message in).
  struct request {
    bool done = true;
    int peer = -1;
    int tag = 0;
    std::uint64_t sequence = 0;
    std::span<std::byte> into;
  };

  communicator(fabric& shared, int rank) : fabric_(&shared), rank_(rank) {}
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  communicator(communicator&&) = default;
  communicator& operator=(communicator&&) = default;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return fabric_->size(); }
  [[nodiscard]] plait::clock::duration timeout() const { return timeout_; }
  void set_timeout(plait::clock::duration timeout) { timeout_ = timeout; }
  [[nodiscard]] std::uint64_t bytes_sent() const { return bytes_sent_; }

  /// The same sequence on every rank (each collective call takes one), never
  /// plait::user_tag, wrapping before int overflows.
  int next_tag() {
    last_tag_ = last_tag_ == INT_MAX ? plait::user_tag + 1 : last_tag_ + 1;
    return last_tag_;
  }

  request isend(int peer, std::span<const std::byte> bytes, int tag = plait::user_tag) {
    check_usable(peer, "isend");
    const std::uint64_t sequence = sends_posted_[{peer, tag}]++;
    {
      const std::lock_guard lock(fabric_->mutex_);
      fabric_->mailbox(rank_, peer).push_back({tag, sequence, {bytes.begin(), bytes.end()}});
      fabric_->changed_.notify_all();
    }
    bytes_sent_ += bytes.size();
    return {};
  }

  request irecv(int peer, std::span<std::byte> bytes, int tag = plait::user_tag) {
    check_usable(peer, "irecv");
    return {false, peer, tag, receives_posted_[{peer, tag}]++, bytes};
  }

  /// Completes every receive among `requests` or throws: errc::timeout at
  /// `until`, errc::peer_lost once a rank has failed, errc::size_mismatch for
  /// a message whose length differs from its receive's.
  void wait_all(std::span<request> requests, plait::deadline until) {
    check_usable(rank_, "wait_all");
    std::unique_lock lock(fabric_->mutex_);
    for (;;) {
      const request* waiting = nullptr;  // the first receive whose message has not arrived
      for (request& r : requests) {
        if (!r.done && !take_message(r) && waiting == nullptr) waiting = &r;
      }
      if (waiting == nullptr) return;
      if (fabric_->failed_rank_ >= 0) {
        poisoned_ = true;
        plait::detail::fail(plait::errc::peer_lost, {"rank ", fabric_->failed_rank_, " failed"},
                            {rank_, "wait_all", -1, waiting->peer});
      }
      if (plait::clock::now() >= until) {
        poisoned_ = true;
        plait::detail::fail(plait::errc::timeout,
                            {"timed out waiting for ", waiting->into.size(), " bytes with tag ", waiting->tag,
                             " from rank ", waiting->peer, " (timeout ", plait::detail::seconds_text(timeout_), ")"},
                            {rank_, "wait_all", -1, waiting->peer});
      }
      fabric_->changed_.wait_until(lock, until);
    }
  }

  void send(int peer, std::span<const std::byte> bytes, int tag = plait::user_tag) {
    request r = isend(peer, bytes, tag);
    wait_all(std::span(&r, 1), plait::detail::after(timeout_));
  }
  void recv(int peer, std::span<std::byte> bytes, int tag = plait::user_tag) {
    request r = irecv(peer, bytes, tag);
    wait_all(std::span(&r, 1), plait::detail::after(timeout_));
  }

  void barrier() {
    check_usable(rank_, "barrier");
    std::unique_lock lock(fabric_->mutex_);
    const std::uint64_t generation = fabric_->barrier_generation_;
    if (++fabric_->barrier_arrived_ == size()) {
      fabric_->barrier_arrived_ = 0;
      ++fabric_->barrier_generation_;
      fabric_->changed_.notify_all();
      return;
    }
    const plait::deadline until = plait::detail::after(timeout_);
    while (fabric_->barrier_generation_ == generation) {
      if (fabric_->failed_rank_ >= 0) {
        poisoned_ = true;
        plait::detail::fail(plait::errc::peer_lost, {"rank ", fabric_->failed_rank_, " failed"}, {rank_, "barrier"});
      }
      if (fabric_->changed_.wait_until(lock, until) == std::cv_status::timeout &&
          fabric_->barrier_generation_ == generation) {
        poisoned_ = true;
        plait::detail::fail(plait::errc::timeout, {"timed out after ", plait::detail::seconds_text(timeout_)},
                            {rank_, "barrier"});
      }
    }
  }

 private:
  /// With the fabric locked: copies r's message in if it has arrived.
  bool take_message(request& r) {
    auto& box = fabric_->mailbox(r.peer, rank_);
    for (auto m = box.begin(); m != box.end(); ++m) {
      if (m->tag != r.tag || m->sequence != r.sequence) continue;
      if (m->bytes.size() != r.into.size()) {
        plait::detail::fail(
            plait::errc::size_mismatch,
            {"a message of ", m->bytes.size(), " bytes arrived for a receive of ", r.into.size(), " bytes"},
            {rank_, "wait_all", -1, r.peer});
      }
      if (!m->bytes.empty()) std::memcpy(r.into.data(), m->bytes.data(), m->bytes.size());
      box.erase(m);
      r.done = true;
      return true;
    }
    return false;
  }

  void check_usable(int peer, const char* operation) const {
    if (poisoned_) {
      plait::detail::fail(plait::errc::peer_lost, {"the communicator is unusable after an earlier timeout or failure"},
                          {rank_, operation});
    }
    if (peer < 0 || peer >= size()) {
      plait::detail::fail(plait::errc::invalid_argument, {"peer ", peer, " is not a rank of this group of ", size()},
                          {rank_, operation, -1, peer});
    }
  }

  fabric* fabric_;
  int rank_;
  plait::clock::duration timeout_ = plait::detail::default_timeout();
  std::uint64_t bytes_sent_ = 0;
  int last_tag_ = plait::user_tag;
  bool poisoned_ = false;
  // Messages posted so far by (peer, tag): an entry per pair ever used, which
  // a test's short-lived communicator can afford.
  std::map<std::pair<int, int>, std::uint64_t> sends_posted_;
  std::map<std::pair<int, int>, std::uint64_t> receives_posted_;
};

static_assert(plait::transport<communicator>);

/// Runs fn(comm) on `ranks` threads, each with its own communicator over one
/// fabric, and returns their results in rank order. A rank that throws marks
/// the fabric failed (the others' waits end with errc::peer_lost); once every
/// thread has ended, the first exception thrown is rethrown.
template <class Fn>
auto run(int ranks, Fn&& fn) {
  using result = std::invoke_result_t<Fn&, communicator&>;
  static_assert(!std::is_void_v<result>, "loopback::run: fn must return a value per rank");
  static_assert(!std::is_same_v<result, bool>,
                "loopback::run: return something other than bool: std::vector<bool> packs the ranks' results "
                "into shared words, which their threads would write at once");
  if (ranks < 1) plait::detail::fail(plait::errc::invalid_argument, {"loopback::run: ", ranks, " ranks"});
  fabric shared(ranks);
  std::vector<result> results(static_cast<std::size_t>(ranks));
  std::mutex first_error_mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        communicator comm(shared, r);
        results[static_cast<std::size_t>(r)] = fn(comm);
      } catch (...) {
        {
          const std::lock_guard lock(first_error_mutex);
          if (!first_error) first_error = std::current_exception();
        }
        shared.fail(r);
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
  return results;
}

}  // namespace loopback

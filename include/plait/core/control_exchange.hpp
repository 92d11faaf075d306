// A control exchange on any transport, from its point-to-point calls alone:
// every rank's small host record reaches every rank, directly (one message
// each way per pair, under a tag taken for it with a control stamp), and the
// traffic is taken out of bytes_sent(). What the layers under op/ use where
// they need a little collective of their own (the two_level's census, the
// NVLink bootstrap's records), so they need no algorithm, layout or operation. While collectives are in
// flight on the communicator it goes through its progress engine, behind or
// beside them, as a blocking collective does (op/execute.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "plait/core/call_stamp.hpp"
#include "plait/core/error.hpp"
#include "plait/core/progress_engine.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// The direct all-gather of one control exchange, as the progress engine
/// sees it: posted at its first move (its deadline counts from then, now +
/// timeout()), complete once every message is.
template <class Comm>
class control_gather : public pending_collective {
 public:
  /// `all` holds size() records of mine.size() bytes, rank r's at r x mine.size().
  control_gather(Comm& comm, std::span<const std::byte> mine, std::span<std::byte> all, int tag)
      : pending_collective(&advance_one, &finish_one), comm_(comm), mine_(mine), all_(all), tag_(tag) {}

  /// Completes the exchange in the transport's own wait.
  void wait() {
    post();
    comm_.wait_all(std::span(requests_), until_);
  }

  /// The bytes its sends added to bytes_sent() (0 before it posts): its own
  /// only, though collectives in flight may send meanwhile.
  [[nodiscard]] std::uint64_t sent() const noexcept { return sent_; }

 private:
  void post() {
    if (posted_) return;
    posted_ = true;
    const std::uint64_t before = comm_.bytes_sent();
    const int size = comm_.size();
    requests_.reserve(2 * static_cast<std::size_t>(size));
    for (int peer = 0; peer < size; ++peer) {
      const std::span<std::byte> theirs = all_.subspan(static_cast<std::size_t>(peer) * mine_.size(), mine_.size());
      if (peer == comm_.rank()) {
        std::copy(mine_.begin(), mine_.end(), theirs.begin());
        continue;
      }
      requests_.push_back(comm_.irecv(peer, theirs, tag_));
      requests_.push_back(comm_.isend(peer, mine_, tag_));
    }
    sent_ = comm_.bytes_sent() - before;  // counted as the sends are posted
    until_ = after(comm_.timeout());
  }

  static bool advance_one(pending_collective& c) {
    auto& self = static_cast<control_gather&>(c);
    if constexpr (tests_requests<Comm>) {
      self.post();
      return self.comm_.test_all(std::span(self.requests_), self.until_);
    } else {
      self.wait();
      return true;
    }
  }
  static void finish_one(pending_collective& c) { static_cast<control_gather&>(c).wait(); }

  Comm& comm_;
  std::span<const std::byte> mine_;
  std::span<std::byte> all_;
  int tag_;
  bool posted_ = false;
  std::uint64_t sent_ = 0;
  deadline until_{};
  std::vector<typename Comm::request> requests_;
};

/// Every rank's `mine` (the same size on every rank) into `all`, rank r's at
/// r x mine.size(), over `comm`: a collective of the whole group. `stamp`
/// names the exchange to transports that carry stamps (use call_kind::control),
/// `operation` names it in errors. A transport whose buffers are not host
/// memory exchanges the records its own way (exchange_control).
template <class Comm>
void control_all_gather(Comm& comm, std::span<const std::byte> mine, std::span<std::byte> all, call_stamp stamp,
                        std::string_view operation) {
  if constexpr (exchanges_control<Comm>) {
    comm.exchange_control(mine, all);
  } else {
    const int tag = take_tag(comm, stamp);
    control_gather<Comm> run(comm, mine, all, tag);
    try {
      bool done = false;
      if constexpr (has_progress_engine<Comm> && tests_requests<Comm>) {
        if (progress_engine* engine = comm.active_progress()) {
          {
            auto held = engine->lock();
            engine->enqueue(run);
          }
          struct withdraw_on_exit {  // it lives on this stack frame: never left in the queue
            progress_engine& engine;
            pending_collective& run;
            ~withdraw_on_exit() {
              auto held = engine.lock();
              engine.withdraw(run);
            }
          } guard{*engine, run};
          wait_in_engine(*engine, run, comm.busy_poll());
          done = true;
        }
      }
      if (!done) run.wait();
    } catch (const error& e) {
      throw e.within({comm.rank(), operation, -1, -1});
    }
    if constexpr (discounts_control_bytes<Comm>) comm.discount_control_bytes(run.sent());
  }
}

/// control_all_gather of one trivially copyable value per rank: `all[r]` is rank r's.
template <class Comm, class T>
void control_all_gather(Comm& comm, std::span<const T> mine, std::span<T> all, call_stamp stamp,
                        std::string_view operation) {
  control_all_gather(comm, std::as_bytes(mine), std::as_writable_bytes(all), stamp, operation);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

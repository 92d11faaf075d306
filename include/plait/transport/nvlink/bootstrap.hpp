// The NVLink communicator's bootstrap: the shm or MPI communicator it was
// created over, behind a type-erased face. Over it go only small host
// records (staging-area and buffer records, check mode's signatures, as
// all-gathers), barriers and splits; payload never does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "plait/core/call_stamp.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {
namespace detail {

/// The bootstrap communicator behind a type-erased face: the NVLink
/// communicator only exchanges small host records over it, barriers and splits.
class bootstrap_link {
 public:
  virtual ~bootstrap_link() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// Every rank's `mine` (same size everywhere) into `all`, in rank order.
  virtual void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  virtual void barrier() = 0;
  /// The bootstrap's split; null for plait::no_group.
  virtual std::unique_ptr<bootstrap_link> split(int color, int key) = 0;
};

template <class Comm>
class bootstrap_over;

/// Refers to a user's communicator (which must outlive the NVLink communicator).
template <class Comm>
class bootstrap_ref : public bootstrap_link {
 public:
  explicit bootstrap_ref(Comm& comm) : comm_(&comm) {}
  [[nodiscard]] int rank() const override { return comm_->rank(); }
  [[nodiscard]] int size() const override { return comm_->size(); }
  void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    // A control exchange: a bootstrap whose messages carry call stamps refuses a collective's in its place.
    const int tag = plait::detail::take_tag(*comm_, call_stamp::of(call_kind::control, "nvlink records"));
    const int n = comm_->size();
    std::vector<typename Comm::request> requests;
    const std::uint64_t before = comm_->bytes_sent();
    for (int peer = 0; peer < n; ++peer) {
      std::span<std::byte> theirs = all.subspan(static_cast<std::size_t>(peer) * mine.size(), mine.size());
      if (peer == comm_->rank()) {
        std::copy(mine.begin(), mine.end(), theirs.begin());
        continue;
      }
      requests.push_back(comm_->irecv(peer, theirs, tag));
      requests.push_back(comm_->isend(peer, mine, tag));
    }
    comm_->wait_all(std::span(requests), plait::detail::after(comm_->timeout()));
    if constexpr (requires { comm_->discount_control_bytes(std::uint64_t{}); }) {
      comm_->discount_control_bytes(comm_->bytes_sent() - before);  // handles are control traffic
    }
  }
  void barrier() override { comm_->barrier(); }
  std::unique_ptr<bootstrap_link> split(int color, int key) override {
    Comm child = comm_->split(color, key);
    if (color == no_group) return nullptr;
    return std::make_unique<bootstrap_over<Comm>>(std::move(child));
  }

 protected:
  Comm* comm_;
};

/// Owns a communicator that split() made.
template <class Comm>
class bootstrap_over : public bootstrap_ref<Comm> {
 public:
  explicit bootstrap_over(Comm&& comm) : bootstrap_ref<Comm>(owned_), owned_(std::move(comm)) { this->comm_ = &owned_; }

 private:
  Comm owned_;
};

}  // namespace detail
}  // namespace nvlink
}  // namespace v0
}  // namespace plait

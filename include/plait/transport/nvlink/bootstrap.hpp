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
#include "plait/core/control_exchange.hpp"
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
    static constexpr call_stamp records = call_stamp::of(call_kind::control, "nvlink records");
    plait::detail::control_all_gather(*comm_, mine, all, records, "nvlink bootstrap");
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

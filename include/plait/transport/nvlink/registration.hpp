// The handle register_buffer returns: a live registration of a user buffer
// for zero-copy on an NVLink communicator. It reaches the communicator's
// endpoint through a shared link that the endpoint clears when it goes, so
// a handle outliving its communicator is empty, not dangling.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "plait/transport/nvlink/endpoint.hpp"
#include "plait/transport/nvlink/protocol.hpp"
#include "plait/transport/nvlink/registry.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {

template <class Ops>
class basic_communicator;

namespace detail {

/// A live registration (see basic_communicator::register_buffer), known to
/// users as basic_communicator<Ops>::registration. Move-only; destruction is
/// collective. Empty once moved from, reset, or its communicator is gone.
template <class Ops>
class registration_handle {
 public:
  registration_handle() = default;
  registration_handle(registration_handle&& other) noexcept
      : link_(std::move(other.link_)), serial_(std::exchange(other.serial_, 0)) {}
  registration_handle& operator=(registration_handle&& other) noexcept {
    if (this != &other) {
      reset();
      link_ = std::move(other.link_);
      serial_ = std::exchange(other.serial_, 0);
    }
    return *this;
  }
  registration_handle(const registration_handle&) = delete;
  registration_handle& operator=(const registration_handle&) = delete;
  ~registration_handle() { reset(); }

  /// Unregisters now (collective): peers unmap the buffer.
  void reset() noexcept {
    if (link_ && *link_ != nullptr && serial_ != 0) (*link_)->remove_registration(serial_);
    link_.reset();
    serial_ = 0;
  }

  /// Live: registered with a communicator that still exists.
  explicit operator bool() const noexcept { return find() != nullptr; }
  /// The registered bytes (empty if this rank registered nothing).
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    const registered_buffer* r = find();
    return r != nullptr ? std::span<const std::byte>(r->data, r->bytes) : std::span<const std::byte>{};
  }
  /// Other ranks that read this buffer directly (the rest get its bytes through staging).
  [[nodiscard]] int zero_copy_peers() const noexcept {
    const registered_buffer* r = find();
    if (r == nullptr || r->id >= max_registrations) return 0;
    return std::popcount(r->readers) - 1;  // ourselves always
  }

 private:
  friend class nvlink::basic_communicator<Ops>;
  registration_handle(std::shared_ptr<endpoint<Ops>*> link, std::uint64_t serial)
      : link_(std::move(link)), serial_(serial) {}
  const registered_buffer* find() const noexcept {
    return link_ && *link_ != nullptr ? (*link_)->registry.find(serial_) : nullptr;
  }

  std::shared_ptr<endpoint<Ops>*> link_;
  std::uint64_t serial_ = 0;
};

}  // namespace detail
}  // namespace nvlink
}  // namespace v0
}  // namespace plait

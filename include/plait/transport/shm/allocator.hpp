// plait::shm::allocator<T> — a standard allocator over a rank's shared-memory
// pool (memory_resource.hpp), so that an ordinary container lives where the
// peers of a shm communicator read it in place:
//
//   plait::shm::allocator<float> a{comm};
//   std::vector<float, plait::shm::allocator<float>> v(n, a);
//   plait::all_gather(comm, v, all);   // the peers memcpy straight out of v
//
// Not collective: each rank allocates (and its vectors grow) on its own.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>

#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/memory_resource.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

/// A standard allocator of T from the shared-memory pool of one rank of a
/// shm communicator (comm.memory_resource()). Copies and rebound copies
/// share the pool and compare equal; allocators of different pools (another
/// communicator, another rank) do not. Holds the pool alive: containers may
/// outlive the communicator, but their memory is then no longer read in place.
/// Throws std::bad_array_new_length when n * sizeof(T) overflows, and
/// plait::error (errc::transport) when the pool cannot grow.
template <class T>
class allocator {
  static_assert(std::is_trivially_copyable_v<T>,
                "plait::shm::allocator<T> needs a trivially copyable T: its bytes are read by other processes");

 public:
  /// The element type.
  using value_type = T;
  /// Containers move and swap the allocator with their contents: the memory stays in its pool.
  using propagate_on_container_move_assignment = std::true_type;
  /// As for move assignment.
  using propagate_on_container_swap = std::true_type;

  /// An allocator from `comm`'s pool (created on first use).
  explicit allocator(communicator& comm) : pool_(comm.shared_memory_resource()) {}
  /// A copy draws from the same pool. (Moving copies too: a moved-from
  /// allocator must still equal the new one.)
  allocator(const allocator&) noexcept = default;
  /// Draws from `other`'s pool from now on.
  allocator& operator=(const allocator&) noexcept = default;
  /// The same pool, for another element type (rebind).
  template <class U>
  allocator(const allocator<U>& other) noexcept : pool_(other.pool_) {}  // NOLINT(google-explicit-constructor)

  /// n T, aligned for T and to at least 64 bytes, uninitialised.
  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(pool_->allocate(n * sizeof(T), alignof(T)));
  }
  /// Returns what allocate(n) gave to the pool.
  void deallocate(T* p, std::size_t n) noexcept { pool_->deallocate(p, n * sizeof(T), alignof(T)); }

  /// The pool this allocator draws from.
  [[nodiscard]] shm::memory_resource& resource() const noexcept { return *pool_; }

  /// Equal when both draw from the same pool.
  template <class U>
  friend bool operator==(const allocator& a, const allocator<U>& b) noexcept {
    return &a.resource() == &b.resource();
  }

 private:
  template <class U>
  friend class allocator;  // rebinding copies the pool
  std::shared_ptr<shm::memory_resource> pool_;
};

}  // namespace shm
}  // namespace v0
}  // namespace plait

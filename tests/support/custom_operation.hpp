// An operation and an algorithm of a test's own, defined here and nowhere
// in include/: a collective permute by one (rank r sends its block to rank
// r + 1 and receives rank r - 1's, mod P) and a one-step algorithm for it.
// What an operation takes: its tag with the description the engine reads
// (core/operation.hpp), make_plan / make_v_plan for plait::contiguous (found
// by argument-dependent lookup), and an algorithm with a plan for it.
// tests/test_custom_operation.cpp runs every form of it;
// tests/compile_fail/custom_operation_fail.cpp checks the diagnostics.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <plait/plait.hpp>

namespace custom {

/// The operation: block j is rank j's; rank r ends with block r - 1 (mod P).
struct shift {
  static constexpr std::string_view name = "shift";
  static constexpr std::string_view v_name = "shift_v";
  static constexpr plait::call_kind kind = static_cast<plait::call_kind>(plait::first_custom_call_kind + 7);
  static constexpr plait::call_kind v_kind = static_cast<plait::call_kind>(plait::first_custom_call_kind + 8);
  static constexpr bool allows_in_place = false;
  static constexpr int v_count_arrays = 1;  // shift_v: every rank's block length
  static constexpr std::string_view contiguous_as = "contiguous";
  static constexpr int contiguous_as_parameters = 0;

  static constexpr int blocks(int size) noexcept { return size; }
  static constexpr bool holds_initially(int rank, int block, int /*size*/) noexcept { return block == rank; }
  static constexpr bool needs_finally(int rank, int block, int size) noexcept {
    return block == (rank + size - 1) % size;
  }
};

/// The algorithm: one step, each rank to its right-hand neighbour.
struct shift_once {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr std::string_view name = "shift_once";
  static constexpr plait::schedule plan(shift, int rank, int size) {
    plait::schedule s;
    if (size > 1) {
      const int left = (rank + size - 1) % size;
      s.next_step().send((rank + 1) % size, {rank}).recv(left, {left});
    }
    return s;
  }
};
static_assert(plait::verify<shift_once, shift>(1) && plait::verify<shift_once, shift>(2) &&
              plait::verify<shift_once, shift>(7));

/// The block plan of shift over contiguous buffers: this rank's block is
/// `send`, its left neighbour's lands in `recv`; block j is sizes[j] bytes.
class shift_plan {
 public:
  shift_plan(std::span<const std::byte> send, std::span<std::byte> recv, std::vector<std::size_t> sizes, int rank)
      : send_(send), recv_(recv), sizes_(std::move(sizes)), rank_(rank) {}
  [[nodiscard]] std::size_t block_bytes(int block) const { return sizes_[static_cast<std::size_t>(block)]; }
  [[nodiscard]] bool has_location(int block) const { return block == rank_ || block == left(); }
  [[nodiscard]] plait::region location(int block) const {
    if (block == left()) return plait::region::contiguous(recv_.data(), recv_.size());
    return plait::region::contiguous(const_cast<std::byte*>(send_.data()), send_.size());
  }
  void prepare() const {  // one rank: its own block is the one it needs
    if (left() == rank_ && !send_.empty()) std::memcpy(recv_.data(), send_.data(), send_.size());
  }

 private:
  [[nodiscard]] int left() const {
    return (rank_ + static_cast<int>(sizes_.size()) - 1) % static_cast<int>(sizes_.size());
  }
  std::span<const std::byte> send_;
  std::span<std::byte> recv_;
  std::vector<std::size_t> sizes_;
  int rank_;
};

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}
template <class T>
std::span<std::byte> bytes_of(std::vector<T>& v) {
  return std::as_writable_bytes(std::span(v));
}

/// shift of equal blocks (plait::contiguous).
template <class T>
shift_plan make_plan(plait::contiguous, shift, const plait::detail::call_site& at, const std::vector<T>& send,
                     std::vector<T>& recv) {
  if (send.size() != recv.size()) {
    at.fail(plait::errc::size_mismatch, {"send holds ", send.size(), " elements and recv ", recv.size()});
  }
  return {bytes_of(send), bytes_of(recv),
          std::vector<std::size_t>(static_cast<std::size_t>(at.size), send.size() * sizeof(T)), at.rank};
}

/// shift_v: rank j's block holds counts[j] elements.
template <class T>
shift_plan make_v_plan(plait::contiguous, shift, const plait::detail::call_site& at, const std::vector<T>& send,
                       std::vector<T>& recv, const std::vector<int>& counts) {
  const auto p = static_cast<std::size_t>(at.size);
  if (counts.size() != p) at.fail(plait::errc::invalid_argument, {"counts has ", counts.size(), " entries"});
  const auto left = (static_cast<std::size_t>(at.rank) + p - 1) % p;
  if (send.size() != static_cast<std::size_t>(counts[static_cast<std::size_t>(at.rank)]) ||
      recv.size() != static_cast<std::size_t>(counts[left])) {
    at.fail(plait::errc::size_mismatch, {"send or recv disagrees with counts"});
  }
  std::vector<std::size_t> sizes(p);
  for (std::size_t j = 0; j < p; ++j) sizes[j] = static_cast<std::size_t>(counts[j]) * sizeof(T);
  return {bytes_of(send), bytes_of(recv), std::move(sizes), at.rank};
}

}  // namespace custom

// Fold plans: what a reduction's layout hands the executor's fold run
// (op/fold_run.hpp). Block b is block_bytes(b) bytes; this rank's own
// contribution to it lies at contribution(b) (the send buffer, or the one
// buffer of an in-place call) and, for the blocks it ends with, the result
// goes to result(b). kernel() combines, prepares and finishes elements.
// The blocks are cut on element boundaries: an all-reduce of N elements on P
// ranks has P blocks of N/P elements, the first N mod P one element longer.
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <span>
#include <utility>

#include "plait/core/region.hpp"
#include "plait/layout/block_plan.hpp"
#include "plait/reduction/kernel.hpp"

namespace plait {
inline namespace v0 {

/// What the fold run needs of a reduction's plan.
template <class P>
concept fold_plan = block_plan<P> && requires(const P& plan, int block) {
  { plan.contribution(block) } -> std::same_as<region>;
  { plan.has_result(block) } -> std::convertible_to<bool>;
  { plan.result(block) } -> std::same_as<region>;
  { plan.kernel() } -> std::same_as<const detail::reduction_kernel&>;
  { plan.ranks() } -> std::convertible_to<int>;
};

namespace detail {

/// A reduction value the plan keeps alive for its kernel: stateless
/// reductions need nothing (the kernel points at a shared instance); the
/// others are copied once, so that a nonblocking or persistent call may be
/// given a temporary (plait::premul_sum(0.5)).
class kept_reduction {
 public:
  kept_reduction() = default;
  template <class T, class Reduction>
  static kept_reduction of(const Reduction& r) {
    kept_reduction kept;
    if constexpr (std::is_empty_v<Reduction> && std::is_trivially_default_constructible_v<Reduction>) {
      kept.kernel_ = kernel_for<T>(r);
    } else {
      auto copy = std::make_shared<const Reduction>(r);
      kept.kernel_ = kernel_for<T>(*copy);
      kept.owner_ = std::move(copy);
    }
    return kept;
  }
  [[nodiscard]] const reduction_kernel& kernel() const noexcept { return kernel_; }

 private:
  reduction_kernel kernel_;
  std::shared_ptr<const void> owner_;  // shared: plans are copied into requests
};

/// A reduction over contiguous buffers: `contributions` holds P blocks
/// (reduce_scatter) or the whole data cut into P blocks (all_reduce), and
/// `results` receives this rank's block (reduce_scatter) or every block
/// (all_reduce). In place, both are the one buffer.
class contiguous_fold_plan {
 public:
  /// `elements` counts the elements of the whole data (P blocks); `all_results`:
  /// every block has a result (all_reduce) or only this rank's (reduce_scatter,
  /// whose `results` then holds that block alone unless in place).
  contiguous_fold_plan(std::span<const std::byte> contributions, std::span<std::byte> results, std::size_t elements,
                       kept_reduction reduction, int rank, int size, bool all_results, bool in_place)
      : contributions_(contributions),
        results_(results),
        elements_(elements),
        reduction_(std::move(reduction)),
        rank_(rank),
        size_(size),
        all_results_(all_results),
        in_place_(in_place) {}

  [[nodiscard]] std::size_t block_bytes(int block) const { return elements_in(block) * element_bytes(); }
  [[nodiscard]] region contribution(int block) const {
    return region::contiguous(const_cast<std::byte*>(contributions_.data()) + offset(block), block_bytes(block));
  }
  [[nodiscard]] bool has_result(int block) const { return all_results_ || block == rank_; }
  [[nodiscard]] region result(int block) const {
    const std::size_t at = all_results_ || in_place_ ? offset(block) : 0;
    return region::contiguous(results_.data() + at, block_bytes(block));
  }
  [[nodiscard]] const reduction_kernel& kernel() const noexcept { return reduction_.kernel(); }
  [[nodiscard]] int ranks() const noexcept { return size_; }

  // As a block plan (the engine's launches take any): a fold run locates
  // nothing through these, and has no local copies to make first.
  [[nodiscard]] bool has_location(int /*block*/) const { return false; }
  [[nodiscard]] region location(int /*block*/) const { return {}; }
  void prepare() const {}

 private:
  [[nodiscard]] std::size_t element_bytes() const noexcept { return reduction_.kernel().element_bytes; }
  [[nodiscard]] std::size_t elements_in(int block) const {
    const auto p = static_cast<std::size_t>(size_);
    return elements_ / p + (static_cast<std::size_t>(block) < elements_ % p ? 1 : 0);
  }
  [[nodiscard]] std::size_t offset(int block) const {
    const auto p = static_cast<std::size_t>(size_);
    const auto b = static_cast<std::size_t>(block);
    return (b * (elements_ / p) + std::min(b, elements_ % p)) * element_bytes();
  }

  std::span<const std::byte> contributions_;
  std::span<std::byte> results_;
  std::size_t elements_;
  kept_reduction reduction_;
  int rank_;
  int size_;
  bool all_results_;
  bool in_place_;
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

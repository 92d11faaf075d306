// Fold plans: what a reduction's layout hands the executor's fold run
// (op/fold_run.hpp). The run sees blocks as bytes and asks the plan for
// everything that depends on element types: block b's own contribution
// (read where it lies when that is possible, else copied and prepared, as
// premul_sum's scale needs), the combine of two partials of block b, and the
// result (written and finished, as avg's division needs).
//
// Who does that work is the caller's `folds`: host_folds below (the host
// kernel's functions, host memory), or a copy engine that folds on its
// device (the CUDA NVLink transport's: the same steps as kernels on its
// stream, device memory). The plan decides what runs, in which order; the
// folds only run it.
//
// A plan is one or more members, each a buffer of one element type with its
// reduction kernel: a bundle (a DDP bucket of several tensors and types in
// one all-reduce) has several, and block b is the members' blocks b end to
// end. A member's data is cut into P blocks on element boundaries: evenly
// (an all-reduce of N elements: N/P each, the first N mod P one longer; a
// reduce-scatter's P equal blocks) or by counts (reduce_scatter_v).
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/core/region.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/stream_copy.hpp"
#include "plait/layout/block_plan.hpp"
#include "plait/reduction/kernel.hpp"

namespace plait {
inline namespace v0 {

namespace detail {

/// Who runs a plan's element work on host memory: the host kernel's own
/// functions. An engine that folds on its device has the same members
/// (allocate's buffer has data()), each enqueued on its stream.
struct host_folds {
  byte_buffer allocate(std::size_t bytes) { return byte_buffer(bytes); }
  void copy_bytes(std::byte* to, const std::byte* from, std::size_t bytes) {
    if (bytes != 0 && to != from) detail::copy_bytes(to, from, bytes);
  }
  void pack(const region& src, std::byte* dst) { plait::pack(src, dst); }
  void unpack(const std::byte* src, const region& dst) { plait::unpack(src, dst); }
  void combine(const reduction_kernel& k, const std::byte* left, const std::byte* right, std::byte* out,
               std::size_t elements) {
    k.combine(k.state, left, right, out, elements);
  }
  void prepare(const reduction_kernel& k, const std::byte* in, std::byte* out, std::size_t elements) {
    k.prepare(k.state, in, out, elements);
  }
  void finish(const reduction_kernel& k, std::byte* data, std::size_t elements, int ranks) {
    k.finish(k.state, data, elements, ranks);
  }
  void to_wire(const reduction_kernel& k, const std::byte* in, std::byte* out, std::size_t elements) {
    k.to_wire(in, out, elements);
  }
  void from_wire(const reduction_kernel& k, const std::byte* in, std::byte* out, std::size_t elements) {
    k.from_wire(in, out, elements);
  }
};

}  // namespace detail

/// What the fold run needs of a reduction's plan (see the top of this header).
template <class P>
concept fold_plan = block_plan<P> &&
    requires(const P& plan, int block, std::byte* out, const std::byte* in, detail::host_folds& on) {
  { plan.contribution_as_is(block) } -> std::same_as<const std::byte*>;
  plan.read_contribution(block, out, on);
  plan.combine(block, in, in, out, on);
  { plan.has_result(block) } -> std::convertible_to<bool>;
  plan.write_result(block, in, on);
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
  /// The same reduction's device launchers (an engine that folds on its device sets them).
  void run_on_device(const device_reduction* device) noexcept { kernel_.device = device; }

 private:
  reduction_kernel kernel_;
  std::shared_ptr<const void> owner_;  // shared: plans are copied into requests
};

/// One buffer of a fold plan: `contributions` holds this rank's data (P
/// blocks), `results` receives this rank's block (`all_results` false:
/// reduce_scatter; in place, the block's place in `contributions`) or every
/// block (all_reduce). `offsets` (P + 1 element offsets) cuts the blocks by
/// counts; empty, evenly. A tensor layout (along<D>) gives each block's
/// region in `blocks` instead, and the results' regions: this rank's in
/// `own_result` (reduce_scatter), every block's in `result_blocks`
/// (all_reduce).
struct fold_member {
  std::span<const std::byte> contributions;
  std::span<std::byte> results;
  std::size_t elements = 0;
  kept_reduction reduction;
  std::vector<std::size_t> offsets;
  int rank = 0;
  int size = 1;
  bool all_results = true;
  bool in_place = false;
  std::vector<region> blocks;         // tensor layouts: block b's contribution, else empty
  region own_result;                  // tensor layouts: where this rank's block goes
  std::vector<region> result_blocks;  // tensor layouts of all_reduce: where block b's result goes
  // elements / size and elements % size, set by cut_evenly() (fold_plan_of
  // calls it): a small call asks for blocks' bounds a dozen times, and each
  // division costs more than the rest of the lookup.
  std::size_t block_elements = 0;
  std::size_t extra_elements = 0;

  void cut_evenly() noexcept {
    const auto p = static_cast<std::size_t>(size);
    block_elements = elements / p;
    extra_elements = elements % p;
  }
  [[nodiscard]] const reduction_kernel& kernel() const noexcept { return reduction.kernel(); }
  [[nodiscard]] std::size_t first_element(int block) const {
    const auto b = static_cast<std::size_t>(block);
    if (!offsets.empty()) return offsets[b];
    return b * block_elements + std::min(b, extra_elements);
  }
  [[nodiscard]] std::size_t elements_in(int block) const {
    if (!blocks.empty()) return blocks[static_cast<std::size_t>(block)].bytes() / kernel().element_bytes;
    return first_element(block + 1) - first_element(block);
  }
  /// Bytes of `block` as it travels and combines (widened, for plait::accumulate).
  [[nodiscard]] std::size_t bytes_in(int block) const { return elements_in(block) * kernel().wire_bytes; }
  [[nodiscard]] bool widened() const noexcept { return kernel().to_wire != nullptr; }
  /// Where this rank's contribution to `block` lies.
  [[nodiscard]] region contribution(int block) const {
    if (!blocks.empty()) return blocks[static_cast<std::size_t>(block)];
    return region::contiguous(
        const_cast<std::byte*>(contributions.data()) + first_element(block) * kernel().element_bytes,
        elements_in(block) * kernel().element_bytes);
  }
  /// Where `block`'s result goes (a block this rank ends with).
  [[nodiscard]] region result(int block) const {
    if (!result_blocks.empty()) return result_blocks[static_cast<std::size_t>(block)];
    if (!blocks.empty()) return own_result;
    const std::size_t at = all_results || in_place ? first_element(block) * kernel().element_bytes : 0;
    return region::contiguous(results.data() + at, elements_in(block) * kernel().element_bytes);
  }
};

/// A plan's blocks as one run of bytes (fold_plan_of::as_whole_run).
struct whole_run {
  bool usable = false;
  const std::byte* contributions = nullptr;
  std::byte* results = nullptr;
  std::size_t bytes = 0;
};

/// A fold plan of `Members` members (one, or a bundle's).
template <std::size_t Members>
class fold_plan_of {
 public:
  explicit fold_plan_of(std::array<fold_member, Members> members) : members_(std::move(members)) {
    for (fold_member& m : members_) m.cut_evenly();
  }
  /// One member, made by `make()` where it stays: moving one cost a 64-byte
  /// all_reduce about 65 instructions (three vectors and a shared pointer
  /// moved, then destroyed empty).
  template <std::invocable Make>
  requires(Members == 1) fold_plan_of(std::in_place_t /*in_place*/, Make&& make)
      : members_{std::forward<Make>(make)()} {
    members_[0].cut_evenly();
  }

  [[nodiscard]] std::size_t block_bytes(int block) const {
    std::size_t bytes = 0;
    for (const fold_member& m : members_) bytes += m.bytes_in(block);
    return bytes;
  }
  /// The own contribution to `block` where it lies, when the run may read it
  /// there (one member, nothing to prepare); else null.
  [[nodiscard]] const std::byte* contribution_as_is(int block) const {
    if constexpr (Members == 1) {
      const fold_member& m = members_[0];
      if (m.kernel().prepare == nullptr && !m.widened()) {
        const region at = m.contribution(block);
        if (at.is_contiguous()) return at.data;
      }
    }
    (void)block;
    return nullptr;
  }
  /// Where `block`'s result lies, when the run may fold the block there
  /// (one member, out of place, a result of the block's wire type in
  /// contiguous memory: write_result then only finishes it); else null. In
  /// place it would overwrite contributions that later steps still read.
  [[nodiscard]] std::byte* result_as_is(int block) const {
    if constexpr (Members == 1) {
      const fold_member& m = members_[0];
      if (!m.in_place && !m.widened() && has_result(block)) {
        const region at = m.result(block);
        if (at.is_contiguous()) return at.data;
      }
    }
    (void)block;
    return nullptr;
  }
  /// The own contribution to `block`, prepared, into `out` (block_bytes(block) bytes).
  template <class Folds>
  void read_contribution(int block, std::byte* out, Folds& on) const {
    for (const fold_member& m : members_) {
      const std::size_t bytes = m.bytes_in(block);
      if (bytes == 0) continue;
      const region at = m.contribution(block);
      if (m.widened()) {
        if (at.is_contiguous()) {
          on.to_wire(m.kernel(), at.data, out, m.elements_in(block));
        } else {
          auto packed = on.allocate(at.bytes());
          on.pack(at, packed.data());
          on.to_wire(m.kernel(), packed.data(), out, m.elements_in(block));
        }
      } else if (at.is_contiguous()) {
        on.copy_bytes(out, at.data, bytes);
      } else {
        on.pack(at, out);
      }
      if (m.kernel().prepare != nullptr) on.prepare(m.kernel(), out, out, m.elements_in(block));
      out += bytes;
    }
  }
  /// out = left op right over `block`'s members; out may be left or right.
  template <class Folds>
  void combine(int block, const std::byte* left, const std::byte* right, std::byte* out, Folds& on) const {
    for (const fold_member& m : members_) {
      const std::size_t bytes = m.bytes_in(block);
      if (bytes == 0) continue;
      on.combine(m.kernel(), left, right, out, m.elements_in(block));
      left += bytes;
      right += bytes;
      out += bytes;
    }
  }
  /// Bytes of one element as partials combine, when a block may be combined
  /// a part at a time (one member: a bundle's block mixes element types);
  /// else 0. The fold run's combining receives need it.
  [[nodiscard]] std::size_t combine_granule() const {
    if constexpr (Members == 1) {
      return members_[0].kernel().wire_bytes;
    } else {
      return 0;
    }
  }
  /// out = left op right over the first `bytes` bytes (a multiple of
  /// combine_granule()); any part of any block, the combine being elementwise.
  void combine_part(const std::byte* left, const std::byte* right, std::byte* out, std::size_t bytes) const
      requires(Members == 1) {
    const reduction_kernel& k = members_[0].kernel();
    k.combine(k.state, left, right, out, bytes / k.wire_bytes);
  }
  /// The reduction combine_part runs, as bytes: a transport that combines in
  /// device code reads its device table and value from it.
  [[nodiscard]] const reduction_kernel* combine_kernel() const noexcept requires(Members == 1) {
    return &members_[0].kernel();
  }
  /// Every block of an all-reduce end to end, where a fold that takes them
  /// all at once (op/slot_run.hpp's one round) may read and write them as
  /// one run: one member cut evenly, contiguous (no tensor layout's
  /// blocks), nothing to prepare or widen; else not usable.
  [[nodiscard]] whole_run as_whole_run() const requires(Members == 1) {
    const fold_member& m = members_[0];
    if (!m.all_results || !m.blocks.empty() || !m.result_blocks.empty() || !m.offsets.empty() ||
        m.kernel().prepare != nullptr || m.widened()) {
      return {};
    }
    return {true, m.contributions.data(), m.results.data(), m.elements * m.kernel().element_bytes};
  }
  /// Finishes a whole run's combined results in place (avg's division).
  void finish_whole_run(std::byte* results, std::size_t bytes) const requires(Members == 1) {
    const fold_member& m = members_[0];
    const reduction_kernel& k = m.kernel();
    if (k.finish != nullptr) k.finish(k.state, results, bytes / k.element_bytes, m.size);
  }
  [[nodiscard]] bool has_result(int block) const { return members_[0].all_results || block == members_[0].rank; }
  /// `block`'s combined bytes into the results, finished (avg divides
  /// before a widened result is rounded back).
  template <class Folds>
  void write_result(int block, const std::byte* from, Folds& on) const {
    for (const fold_member& m : members_) {
      const std::size_t bytes = m.bytes_in(block);
      if (bytes == 0) continue;
      const region to = m.result(block);
      const reduction_kernel& k = m.kernel();
      const std::size_t n = m.elements_in(block);
      if (!m.widened() && to.is_contiguous()) {
        if (to.data != from) on.copy_bytes(to.data, from, bytes);  // equal: folded there (result_as_is)
        if (k.finish != nullptr) on.finish(k, to.data, n, m.size);
      } else if (!m.widened() && k.finish == nullptr) {
        on.unpack(from, to);  // nothing to finish: straight into the strided result, no copy first
      } else {
        auto finished = on.allocate(bytes);
        on.copy_bytes(finished.data(), from, bytes);
        if (k.finish != nullptr) on.finish(k, finished.data(), n, m.size);
        decltype(finished) rounded;
        if (m.widened()) {
          rounded = on.allocate(n * k.element_bytes);
          on.from_wire(k, finished.data(), rounded.data(), n);
        }
        const std::byte* result = m.widened() ? rounded.data() : finished.data();
        if (to.is_contiguous()) {
          on.copy_bytes(to.data, result, n * k.element_bytes);
        } else {
          on.unpack(result, to);
        }
      }
      from += bytes;
    }
  }
  [[nodiscard]] int ranks() const noexcept { return members_[0].size; }
  /// The member buffers, for check mode and the call stamp.
  [[nodiscard]] const std::array<fold_member, Members>& members() const noexcept { return members_; }
  /// Attaches member `member`'s device launchers (see kept_reduction::run_on_device).
  void run_on_device(std::size_t member, const device_reduction* device) noexcept {
    members_[member].reduction.run_on_device(device);
  }

  // As a block plan (the engine's launches take any): a fold run locates
  // nothing through these, and has no local copies to make first.
  [[nodiscard]] bool has_location(int /*block*/) const { return false; }
  [[nodiscard]] region location(int /*block*/) const { return {}; }
  void prepare() const {}

 private:
  std::array<fold_member, Members> members_;
};

/// The plan of one buffer.
using contiguous_fold_plan = fold_plan_of<1>;

}  // namespace detail
}  // namespace v0
}  // namespace plait

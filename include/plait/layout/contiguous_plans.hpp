// Block plans over contiguous byte buffers: the all-gather plan (blocks of any
// size, laid end to end in recv) and the all-to-all plan (P equal blocks in
// send and in recv). Layouts of contiguous data reduce to these.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>

#include "plait/core/operation.hpp"
#include "plait/core/region.hpp"
#include "plait/core/stream_copy.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// Copies between host regions: what prepare() does when the executor does
/// not hand a plan a transport's copy (device transports do). A large
/// contiguous copy (the own shard or block into the result) streams past the
/// caches (core/stream_copy.hpp).
struct host_copy {
  void operator()(const region& src, const region& dst) const {
    if (src.is_contiguous() && dst.is_contiguous()) return copy_bytes(dst.data, src.data, src.bytes());
    plait::copy(src, dst);
  }
};

/// all-gather of equal shards: block j occupies recv[j * shard, (j + 1) * shard).
/// (Uneven blocks go through region plans: tensor_gather_plan.)
class gather_plan {
 public:
  /// `own` is this rank's shard, or an empty span with in_place.
  gather_plan(std::span<const std::byte> own, std::span<std::byte> recv, std::size_t shard, int rank, bool in_place)
      : own_(own), recv_(recv), shard_(shard), rank_(rank), in_place_(in_place) {}

  [[nodiscard]] std::size_t block_bytes(int /*block*/) const { return shard_; }
  [[nodiscard]] bool has_location(int /*block*/) const { return true; }
  [[nodiscard]] region location(int block) const {
    return region::contiguous(recv_.data() + static_cast<std::size_t>(block) * shard_, shard_);
  }
  /// Local copies before the schedule, done by `copy(src, dst)` on regions.
  template <class Copy>
  void prepare(Copy&& copy) const {
    if (!in_place_ && !own_.empty()) {
      copy(region::contiguous(const_cast<std::byte*>(own_.data()), own_.size()), location(rank_));
    }
  }
  void prepare() const { prepare(host_copy{}); }
  /// The copy prepare() makes (own shard into the result), which a transport
  /// with isend_with_copy may take over with the shard's first send.
  [[nodiscard]] int own_copy_block() const { return in_place_ || own_.empty() ? -1 : rank_; }
  void prepare_without_own_copy() const {}  // that copy is all prepare() does
  /// Where a message that carries only `block` reads it: this rank's own
  /// shard straight from the send buffer (not the copy prepare() just wrote
  /// into recv, which is still dirty in this core's cache).
  [[nodiscard]] region send_location(int block) const {
    if (block == rank_ && !in_place_) return region::contiguous(const_cast<std::byte*>(own_.data()), own_.size());
    return location(block);
  }

 private:
  std::span<const std::byte> own_;
  std::span<std::byte> recv_;
  std::size_t shard_;
  int rank_;
  bool in_place_;
};

/// all-to-all: block (s, d) is send slot d on rank s and recv slot s on rank d.
class exchange_plan {
 public:
  exchange_plan(std::span<const std::byte> send, std::span<std::byte> recv, std::size_t block, int rank, int size)
      : send_(send), recv_(recv), block_(block), rank_(rank), size_(size) {}

  [[nodiscard]] std::size_t block_bytes(int /*block*/) const { return block_; }
  [[nodiscard]] bool has_location(int block) const {
    return op::all_to_all::source(block, size_) == rank_ || op::all_to_all::destination(block, size_) == rank_;
  }
  [[nodiscard]] region location(int block) const {
    const auto slot = [this](int index) { return static_cast<std::size_t>(index) * block_; };
    if (op::all_to_all::destination(block, size_) == rank_) {
      return region::contiguous(recv_.data() + slot(op::all_to_all::source(block, size_)), block_);
    }
    // Held initially; the executor only reads it.
    return region::contiguous(const_cast<std::byte*>(send_.data()) + slot(op::all_to_all::destination(block, size_)),
                              block_);
  }
  template <class Copy>
  void prepare(Copy&& copy) const {
    if (block_ == 0) return;
    const auto at = static_cast<std::size_t>(rank_) * block_;
    copy(region::contiguous(const_cast<std::byte*>(send_.data()) + at, block_),
         region::contiguous(recv_.data() + at, block_));
  }
  void prepare() const { prepare(host_copy{}); }

 private:
  std::span<const std::byte> send_;
  std::span<std::byte> recv_;
  std::size_t block_;
  int rank_;
  int size_;
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

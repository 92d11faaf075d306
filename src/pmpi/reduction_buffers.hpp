// A reduction's buffers as plait takes them: arrays of T where they lie when
// the datatype's elements abut (read at its true lower bound) or it is a
// pair type (whose holes are value_index's padding); otherwise packed with
// PMPI_Pack into the thread's scratch, and the result unpacked with
// PMPI_Unpack after the call. Decided by the datatype alone, which MPI asks
// every rank of a reduction to pass alike, so every rank takes the same way.
//
// Not as plait::tensor_views through all_reduce and reduce_scatter along<0>,
// as the gathers move boxes (box_views.hpp): measured at P = 2 on a vector
// of 64-byte runs 128 bytes apart, views took 0.9x the packed time at 4
// KiB, 0.8x at 64 KiB, but 1.26x at 256 KiB, 1.9x at 1 MiB and 1.15x at 4
// MiB (docs/pmpi.md): a strided fold stages every block (the own
// contribution packed, the accumulators apart from the result, the result
// unpacked) where the contiguous one folds straight into the result.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include "datatype.hpp"
#include "pmpi_mpi.hpp"

namespace plait_pmpi {

/// `bytes` as `n` values of T, checked: a datatype whose size is not n T's is not served this way.
template <class T, class Byte>
auto values_of(std::span<Byte> bytes, std::size_t n) {
  using value = std::conditional_t<std::is_const_v<Byte>, const T, T>;
  if (bytes.size() != n * sizeof(T)) {
    throw plait::error(plait::errc::unsupported, "a reduction's datatype is not whole elements of its type", {});
  }
  return std::span<value>{reinterpret_cast<value*>(bytes.data()), n};
}

/// Whether buffers of `e`'s datatype are read and written where they lie
/// (else packed into the thread's scratch): its elements abut, or it is a
/// pair type.
inline bool in_place_values(const element_type& e) noexcept { return is_pair(e) || e.contiguous_bytes != 0; }

/// `count` elements of `e`'s datatype at `buffer` as `n` values of T to
/// read: the buffer (a pair type's as it lies, another at its true lower
/// bound), or a packed copy in the thread's send scratch, looked up only
/// then (a small call's time is the library's own work).
template <class T>
std::span<const T> input_values(const element_type& e, const void* buffer, int count, std::size_t n) {
  if (in_place_values(e)) {
    return {reinterpret_cast<const T*>(static_cast<const std::byte*>(buffer) + (is_pair(e) ? 0 : e.true_lb)), n};
  }
  return values_of<T>(gather_bytes(buffer, count, e.type, packing_scratch_of_this_thread().send), n);
}

/// The same, to write a result into (`holds_input`: read first, in place):
/// the buffer, or the thread's receive scratch, which finish_values then
/// unpacks into it.
template <class T>
std::span<T> output_values(const element_type& e, void* buffer, int count, std::size_t n, bool holds_input) {
  if (in_place_values(e)) {
    return {reinterpret_cast<T*>(static_cast<std::byte*>(buffer) + (is_pair(e) ? 0 : e.true_lb)), n};
  }
  std::vector<std::byte>& scratch = packing_scratch_of_this_thread().recv;
  if (holds_input) {
    const std::span<const std::byte> in = gather_bytes(buffer, count, e.type, scratch);
    return values_of<T>(std::span<std::byte>{const_cast<std::byte*>(in.data()), in.size()}, n);
  }
  return values_of<T>(receive_bytes(buffer, count, e.type, scratch), n);
}

/// Unpacks `values` into `buffer` where output_values put them in scratch.
template <class T>
void finish_values(const element_type& e, std::span<T> values, void* buffer, int count) {
  if (!in_place_values(e) && !values.empty()) scatter_bytes(std::as_bytes(values), buffer, count, e.type);
}

/// Where a reduce-scatter writes this rank's block of `n` values of T, and
/// how it reaches `buffer` (`count` elements of `e`'s datatype). Out of
/// place: output_values and finish_values. In place (MPI_IN_PLACE) the
/// input is the whole buffer and the result belongs at its start; Open MPI
/// leaves the rest as it was and programs check it (mpi4py's tests), where
/// plait in place would leave partials there. So the call reduces out of
/// place into the thread's receive scratch (free: a packed input is in the
/// send one), and finish() copies or unpacks the block from there.
template <class T>
class reduce_scatter_result {
 public:
  reduce_scatter_result(const element_type& e, void* buffer, int count, std::size_t n, bool in_place)
      : e_(e), buffer_(buffer), count_(count), in_place_(in_place) {
    if (in_place) {
      std::vector<std::byte>& scratch = packing_scratch_of_this_thread().recv;
      scratch.resize(n * sizeof(T));
      values_ = {reinterpret_cast<T*>(scratch.data()), n};
    } else {
      values_ = output_values<T>(e, buffer, count, n, false);
    }
  }

  /// The block plait writes.
  std::span<T> values() const noexcept { return values_; }

  /// Puts the block where MPI's caller expects it, once plait returned.
  void finish() const {
    if (!in_place_) {
      finish_values(e_, values_, buffer_, count_);
    } else if (in_place_values(e_)) {
      std::copy(values_.begin(), values_.end(), output_values<T>(e_, buffer_, count_, values_.size(), false).begin());
    } else if (!values_.empty()) {
      scatter_bytes(std::as_bytes(values_), buffer_, count_, e_.type);
    }
  }

 private:
  const element_type& e_;
  void* buffer_;
  int count_;
  bool in_place_;
  std::span<T> values_;
};

}  // namespace plait_pmpi

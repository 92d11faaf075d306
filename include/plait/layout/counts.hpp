// Counts for the uneven ("v") collectives: one per rank, any contiguous range
// of an integral type, in elements (1-D) or slices of the layout's dimension
// (tensors). Read and checked here, before any byte moves: a wrong number of
// counts, a negative count or a total that overflows is
// errc::invalid_argument naming the count.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ranges>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "plait/core/error.hpp"
#include "plait/layout/contiguous.hpp"

namespace plait {
inline namespace v0 {

/// What a v-form takes as counts: a contiguous, sized range of an integral
/// type other than bool and the character types (std::vector<int>,
/// std::array<std::int64_t, P>, std::span<const std::size_t>, ...).
template <class R>
concept count_range = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                      std::integral<std::remove_cv_t<std::ranges::range_value_t<R>>> &&
                      !std::same_as<std::remove_cv_t<std::ranges::range_value_t<R>>, bool> &&
                      !std::same_as<std::remove_cv_t<std::ranges::range_value_t<R>>, char> &&
                      !std::same_as<std::remove_cv_t<std::ranges::range_value_t<R>>, char8_t>;

namespace detail {

/// Counts read and checked (read_counts fills one): one std::size_t per
/// rank, their running offsets (offset[j] = counts[0] + ... + counts[j -
/// 1]), their sum and the largest. Up to held_ranks ranks sit in the object
/// itself: two reads of a small call's counts allocated four vectors, 15 %
/// of a 64-byte MPI_Alltoallv's instructions through libplait_pmpi.
/// Neither copied nor moved: count and offset point into it.
class checked_counts {
 public:
  checked_counts() = default;
  checked_counts(const checked_counts&) = delete;
  checked_counts& operator=(const checked_counts&) = delete;
  ~checked_counts() = default;

  std::span<std::size_t> count;
  std::span<std::size_t> offset;
  std::size_t total = 0;
  std::size_t largest = 0;

  /// Room for `n` ranks' counts and offsets, their values unset.
  void resize(std::size_t n) {
    std::size_t* at = held_.data();
    if (2 * n > held_.size()) {
      heap_.resize(2 * n);
      at = heap_.data();
    }
    count = {at, n};
    offset = {at + n, n};
  }

 private:
  static constexpr std::size_t held_ranks = 16;
  std::array<std::size_t, 2 * held_ranks> held_;  // written before read (resize, then read_counts)
  std::vector<std::size_t> heap_;
};

/// `counts` read into `out`, for `at.size` ranks, where one count is
/// `unit` elements (the product of the other extents for tensors). `which`
/// names the argument in messages ("recv_counts").
template <count_range Counts>
void read_counts(const Counts& counts, const call_site& at, std::string_view which, std::size_t unit,
                 checked_counts& out) {
  const std::size_t n = std::ranges::size(counts);
  if (n != static_cast<std::size_t>(at.size)) {
    at.fail(errc::invalid_argument,
            {which, " holds ", n, " counts, but the communicator has ", at.size, " ranks: one count per rank"});
  }
  out.resize(n);
  out.total = 0;
  out.largest = 0;
  const auto* values = std::ranges::data(counts);
  // Elements, not counts, must fit: a count times its unit is what a buffer holds.
  const std::size_t most =
      unit == 0 ? std::numeric_limits<std::size_t>::max() : std::numeric_limits<std::size_t>::max() / unit;
  for (std::size_t j = 0; j < n; ++j) {
    const auto value = values[j];
    if constexpr (std::is_signed_v<std::remove_cv_t<std::ranges::range_value_t<Counts>>>) {
      if (value < 0) at.fail(errc::invalid_argument, {which, "[", j, "] is ", value, "; counts must not be negative"});
    }
    const auto c = static_cast<std::uintmax_t>(value);
    if (c > most || out.total > most - c) {
      at.fail(errc::invalid_argument, {which, ": the counts add up to more than a buffer can hold (overflow at ", which,
                                       "[", j, "] = ", c, ")"});
    }
    out.count[j] = static_cast<std::size_t>(c);
    out.offset[j] = out.total;
    out.total += out.count[j];
    if (out.count[j] > out.largest) out.largest = out.count[j];
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

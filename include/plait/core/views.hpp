// What users pass as data: contiguous ranges of trivially copyable elements
// (tensor views are in core/tensor_view.hpp), viewed as bytes as early as
// possible so the executor compiles once; and the public entry's checks of
// both kinds, one message per kind of mistake.
#pragma once

#include <cstddef>
#include <functional>
#include <ranges>
#include <span>
#include <type_traits>

#include "plait/core/tensor_view.hpp"

namespace plait {
inline namespace v0 {

/// Marks an in-place all-gather: this rank's shard is already in its slice of recv.
struct in_place_t {
  explicit in_place_t() = default;
};
/// Pass as the send argument of an all-gather whose shard already sits in its slice of recv.
inline constexpr in_place_t in_place{};

/// Any contiguous, sized range of trivially copyable elements (std::vector,
/// std::array, std::span, C arrays; const or not).
template <class R>
concept send_range = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
    std::is_trivially_copyable_v<std::ranges::range_value_t<R>>;

/// A send_range whose elements can be written.
template <class R>
concept recv_range = send_range<R> && !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

namespace detail {
template <class R>
std::span<const std::byte> const_bytes(R&& range) {
  const auto* data = std::ranges::data(range);
  return {reinterpret_cast<const std::byte*>(data), std::ranges::size(range) * sizeof(*data)};
}
template <class R>
std::span<std::byte> mutable_bytes(R&& range) {
  auto* data = std::ranges::data(range);
  return {reinterpret_cast<std::byte*>(data), std::ranges::size(range) * sizeof(*data)};
}

/// Which argument of a collective a check is about; the instantiation that
/// fails names it.
enum class argument { send, recv };

/// False for every X: a static_assert on it fails only in the branch that
/// instantiates it.
template <class X>
inline constexpr bool not_an_accepted_argument = false;

/// The element type of an accepted data argument (a send_range or an
/// mdspan-like view), cv removed. Built from the traits the layouts use too,
/// so the entry's check adds little to a file's compile time.
template <class X>
struct element_of {
  using type = std::remove_cv_t<std::ranges::range_value_t<X>>;
};
template <class X>
requires mdspan_like<X>
struct element_of<X> {
  using type = std::remove_cv_t<view_element<X>>;
};

/// One data argument as the public functions see it: a tensor view (any
/// mdspan-like type) or a contiguous, sized range of trivially copyable
/// elements, writable when it is recv. Stops at the first mistake, with one
/// message that says what is accepted. True when X is accepted.
template <class X, argument Which>
consteval bool check_data_argument() {
  constexpr bool writable_needed = Which == argument::recv;
  if constexpr (mdspan_like<X>) {
    using element = view_element<X>;
    if constexpr (!std::is_trivially_copyable_v<std::remove_cv_t<element>>) {
      static_assert(not_an_accepted_argument<X>,
                    "plait: the elements of a view must be trivially copyable: collectives move them as bytes");
    } else if constexpr (writable_needed && std::is_const_v<element>) {
      static_assert(not_an_accepted_argument<X>,
                    "plait: recv must be writable: pass a view of non-const elements (plait::tensor_view<T, Rank>, "
                    "not tensor_view<const T, Rank>); only send may be const");
    } else {
      return true;
    }
  } else if constexpr (Which == argument::send ? send_range<X> : recv_range<X>) {
    return true;  // the common case first, with the concepts the layouts check too
  } else if constexpr (std::ranges::range<X>) {
    if constexpr (!std::ranges::contiguous_range<X>) {
      static_assert(not_an_accepted_argument<X>,
                    "plait: send and recv must be contiguous ranges (std::vector, std::array, std::span, a C array) "
                    "or tensor views (plait::tensor_view, any mdspan-like type); this range is not contiguous "
                    "(std::list, std::deque, a filtered view): copy it into a std::vector");
    } else if constexpr (!std::ranges::sized_range<X>) {
      static_assert(not_an_accepted_argument<X>,
                    "plait: a contiguous range passed to a collective must know its size (std::ranges::size)");
    } else if constexpr (!std::is_trivially_copyable_v<std::ranges::range_value_t<X>>) {
      static_assert(not_an_accepted_argument<X>,
                    "plait: the elements of a range must be trivially copyable: collectives move them as bytes");
    } else {
      static_assert(not_an_accepted_argument<X>,
                    "plait: recv must be writable: pass a range of non-const elements (std::vector<T>&, "
                    "std::span<T>), not a const one; only send may be const");
    }
  } else {
    static_assert(not_an_accepted_argument<X>,
                  "plait: send and recv must each be a contiguous range (std::vector, std::array, std::span, a C "
                  "array) or a tensor view (plait::tensor_view, any mdspan-like type); see X and Which in this "
                  "instantiation");
  }
  return false;
}

/// The data arguments of a collective, checked at its public entry before
/// any overload of the layouts is tried. `send` may be plait::in_place where
/// InPlaceAllowed. True when both are accepted and hold the same element type.
template <class Send, class Recv, bool InPlaceAllowed>
consteval bool check_data_arguments() {
  constexpr bool in_place = std::is_same_v<std::remove_cvref_t<Send>, in_place_t>;
  if constexpr (in_place && !InPlaceAllowed) {
    static_assert(not_an_accepted_argument<Send>,
                  "plait: plait::in_place is for all_gather only: all_to_all needs a send buffer");
    return false;
  } else if constexpr (in_place) {
    return check_data_argument<Recv, argument::recv>();
  } else {
    // Both sides are checked, so one compile reports a mistake on each.
    constexpr bool send_ok = check_data_argument<Send, argument::send>();
    constexpr bool recv_ok = check_data_argument<Recv, argument::recv>();
    if constexpr (!send_ok || !recv_ok) {
      return false;
    } else if constexpr (!std::is_same_v<typename element_of<Send>::type, typename element_of<Recv>::type>) {
      static_assert(not_an_accepted_argument<Send>,
                    "plait: send and recv must hold the same element type (const aside; see Send and Recv in this "
                    "instantiation)");
      return false;
    } else if constexpr (mdspan_like<Send> && mdspan_like<Recv>) {
      if constexpr (view_rank<Send> != view_rank<Recv>) {
        static_assert(not_an_accepted_argument<Send>,
                      "plait: send and recv views must have the same rank (see Send and Recv in this instantiation)");
        return false;
      } else {
        return true;
      }
    } else {
      // A range against a view is a 1-d tensor: the layout checks that pair.
      return true;
    }
  }
}

/// a x b into `out`, or true when it overflows (then `out` is unchanged).
/// Portable where __builtin_mul_overflow is not (nvcc's front end, MSVC).
constexpr bool mul_overflows(std::size_t a, std::size_t b, std::size_t& out) noexcept {
  if (a != 0 && b > static_cast<std::size_t>(-1) / a) return true;
  out = a * b;
  return false;
}
/// a + b into `out`, or true when it overflows.
constexpr bool add_overflows(std::size_t a, std::size_t b, std::size_t& out) noexcept {
  if (b > static_cast<std::size_t>(-1) - a) return true;
  out = a + b;
  return false;
}

/// True when the two byte ranges share at least one byte.
inline bool overlap(std::span<const std::byte> a, std::span<const std::byte> b) noexcept {
  if (a.empty() || b.empty()) return false;
  const auto* a0 = a.data();
  const auto* b0 = b.data();
  return std::less<>{}(a0, b0 + b.size()) && std::less<>{}(b0, a0 + a.size());
}
}  // namespace detail

}  // namespace v0
}  // namespace plait

// What a call stamp says about a collective's elements (core/call_stamp.hpp):
// their class and size in one byte, so that ranks that move the same bytes as
// different element types (8 int8 against 2 float) fail instead of reading
// each other's bytes as their own. The one place that maps a type to it.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace plait {
inline namespace v0 {

/// The class of an element type, as a call stamp carries it.
enum class element_class : std::uint8_t {
  none = 0,              ///< no element type: a control exchange, user point-to-point
  signed_integer = 1,    ///< std::is_integral and signed (char where it is signed)
  unsigned_integer = 2,  ///< std::is_integral and unsigned, bool aside
  floating = 3,          ///< IEEE binary: float, double, plait::half, std::float16_t, ...
  brain_floating = 4,    ///< plait::bfloat16
  boolean = 5,           ///< bool
  bytes = 6,             ///< any other trivially copyable type (a struct, an enum, std::byte): its size only
  mixed = 7,             ///< a bundle whose members differ (their types are in the stamp's digest)
};

/// A type may name its class with a static member
/// `static constexpr plait::element_class plait_element_class` (plait::half
/// and plait::bfloat16 do); part of the type, so every translation unit agrees.
template <class T>
concept names_element_class = requires {
  { T::plait_element_class } -> std::convertible_to<element_class>;
};

/// The element types of a bundle's members, in order.
template <class... T>
struct element_pack {};

namespace detail {
template <class T>
constexpr element_class element_class_of() noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (names_element_class<U>) {
    return U::plait_element_class;
  } else if constexpr (std::is_same_v<U, bool>) {
    return element_class::boolean;
  } else if constexpr (std::is_floating_point_v<U>) {
    return element_class::floating;
  } else if constexpr (std::is_integral_v<U>) {
    return std::is_signed_v<U> ? element_class::signed_integer : element_class::unsigned_integer;
  } else {
    return element_class::bytes;
  }
}

/// The size field of an element code: the size in bytes up to 31, else 0
/// (the stamp's digest then carries the exact size).
constexpr std::uint8_t element_size_field(std::size_t size) noexcept {
  return size < 32 ? static_cast<std::uint8_t>(size) : std::uint8_t{0};
}

template <class T>
struct element_code_of {
  static constexpr std::uint8_t value =
      static_cast<std::uint8_t>(static_cast<unsigned>(element_class_of<T>()) << 5 | element_size_field(sizeof(T)));
};
template <class T, class... Rest>
struct element_code_of<element_pack<T, Rest...>> {
  static constexpr bool alike = ((element_code_of<T>::value == element_code_of<Rest>::value) && ...);
  static constexpr std::uint8_t value =
      alike ? element_code_of<T>::value : static_cast<std::uint8_t>(static_cast<unsigned>(element_class::mixed) << 5);
};
}  // namespace detail

/// The element byte of a call stamp for T (or an element_pack): the class in
/// bits 5-7, the size in bits 0-4 (0: 32 bytes or more, or a mixed bundle).
template <class T>
inline constexpr std::uint8_t element_code = detail::element_code_of<T>::value;

/// The class an element byte carries.
constexpr element_class element_class_in(std::uint8_t code) noexcept { return static_cast<element_class>(code >> 5); }
/// The size an element byte carries (0: 32 bytes or more, mixed, or none).
constexpr std::size_t element_size_in(std::uint8_t code) noexcept { return code & 0x1fu; }

}  // namespace v0
}  // namespace plait

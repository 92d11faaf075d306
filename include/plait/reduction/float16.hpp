// 16-bit floating-point storage types: plait::bfloat16 (8 exponent bits, 7
// mantissa bits: float's range at lower precision) and plait::half (IEEE 754
// binary16: 5 exponent bits, 10 mantissa bits). They are what a reduction
// moves and stores; they do no arithmetic of their own, so that no expression
// silently computes at 16-bit precision.
//
// Accumulation rule (every built-in reduction): combining two 16-bit values
// converts both to float, combines them in float, and rounds the result back
// to 16 bits once per combine, round-to-nearest-even. A reduction over P ranks
// therefore rounds P - 1 times, as NCCL's does; it is not a float accumulator.
//
// Conversions are written with integer arithmetic only, so they do not depend
// on the floating-point environment (rounding mode, flush-to-zero) and are
// usable in constant expressions.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "plait/core/element_kind.hpp"

namespace plait {
inline namespace v0 {

/// bfloat16: the upper 16 bits of an IEEE 754 float (sign, 8 exponent bits, 7
/// mantissa bits). A storage type: convert to float to compute.
class bfloat16 {
 public:
  /// What a call stamp says of it (core/element_kind.hpp).
  static constexpr element_class plait_element_class = element_class::brain_floating;
  /// Positive zero, so that value-initialised buffers read as zeros.
  constexpr bfloat16() noexcept = default;

  /// Rounds `value` to the nearest bfloat16, ties to even. NaN stays NaN (made
  /// quiet, sign kept); values past the largest finite bfloat16 round to
  /// infinity as round-to-nearest requires. Explicit: it loses precision.
  constexpr explicit bfloat16(float value) noexcept : bits_(round(std::bit_cast<std::uint32_t>(value))) {}

  /// The value with this bit pattern (sign, exponent, mantissa), for tests and
  /// for data that arrives as raw bits.
  static constexpr bfloat16 from_bits(std::uint16_t bits) noexcept {
    bfloat16 result;
    result.bits_ = bits;
    return result;
  }

  /// The bit pattern: compare these when a test means "the same bits" (NaN
  /// payloads, the sign of zero), not "the same number".
  constexpr std::uint16_t bits() const noexcept { return bits_; }

  /// The exact float value (every bfloat16 is a float). Explicit, so that
  /// arithmetic on 16-bit values is always visibly done in float.
  constexpr explicit operator float() const noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits_) << 16);
  }

  /// Compares as numbers do, through float: NaN is unequal to everything,
  /// itself included, and -0 equals +0. Use bits() for bitwise equality.
  friend constexpr bool operator==(bfloat16 a, bfloat16 b) noexcept {
    return static_cast<float>(a) == static_cast<float>(b);
  }

 private:
  // Round-to-nearest-even on the 16 bits dropped; a carry into the exponent
  // is the correct result (up to infinity).
  static constexpr std::uint16_t round(std::uint32_t x) noexcept {
    if ((x & 0x7fffffffu) > 0x7f800000u) {
      return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // NaN: quiet, so it cannot become infinity
    }
    const std::uint32_t lsb = (x >> 16) & 1u;
    return static_cast<std::uint16_t>((x + 0x7fffu + lsb) >> 16);
  }

  std::uint16_t bits_ = 0;
};

/// half: IEEE 754 binary16 (sign, 5 exponent bits, 10 mantissa bits; largest
/// finite value 65504, subnormals down to 2^-24). A storage type: convert to
/// float to compute.
class half {
 public:
  /// What a call stamp says of it (core/element_kind.hpp).
  static constexpr element_class plait_element_class = element_class::floating;
  /// Positive zero, so that value-initialised buffers read as zeros.
  constexpr half() noexcept = default;

  /// Rounds `value` to the nearest half, ties to even, subnormals included.
  /// NaN stays NaN (made quiet, sign kept); values from 65520 up (the midpoint
  /// between 65504 and 2^16) round to infinity. Explicit: it loses precision
  /// and range.
  constexpr explicit half(float value) noexcept : bits_(round(std::bit_cast<std::uint32_t>(value))) {}

  /// The value with this bit pattern (sign, exponent, mantissa), for tests and
  /// for data that arrives as raw bits.
  static constexpr half from_bits(std::uint16_t bits) noexcept {
    half result;
    result.bits_ = bits;
    return result;
  }

  /// The bit pattern: compare these when a test means "the same bits" (NaN
  /// payloads, the sign of zero), not "the same number".
  constexpr std::uint16_t bits() const noexcept { return bits_; }

  /// The exact float value (every half is a float, subnormals included).
  /// Explicit, so that arithmetic on 16-bit values is always visibly done in
  /// float.
  constexpr explicit operator float() const noexcept { return std::bit_cast<float>(widen(bits_)); }

  /// Compares as numbers do, through float: NaN is unequal to everything,
  /// itself included, and -0 equals +0. Use bits() for bitwise equality.
  friend constexpr bool operator==(half a, half b) noexcept { return static_cast<float>(a) == static_cast<float>(b); }

 private:
  static constexpr std::uint16_t round(std::uint32_t x) noexcept {
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t magnitude = x & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {
      // NaN: quiet, with the top of the payload kept.
      return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x03ffu));
    }
    if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520, or infinity
    if (magnitude >= 0x38800000u) {
      // Normal: rebias the exponent (127 -> 15) and round off 13 mantissa
      // bits; a carry into the exponent is the correct result.
      const std::uint32_t lsb = (magnitude >> 13) & 1u;
      const std::uint32_t rounded = magnitude + 0x0fffu + lsb - (static_cast<std::uint32_t>(127 - 15) << 23);
      return static_cast<std::uint16_t>(sign | (rounded >> 13));
    }
    // Subnormal half (or zero): the result is magnitude / 2^-24 rounded to an
    // integer. Below 2^-25 (exponent field 102) it rounds to zero; exactly
    // 2^-25 is a tie that goes to the even zero.
    const std::uint32_t exponent = magnitude >> 23;
    if (exponent < 102) return sign;
    const std::uint32_t mantissa = (magnitude & 0x007fffffu) | 0x00800000u;  // value = mantissa * 2^(exponent - 150)
    const std::uint32_t shift = 126 - exponent;                              // 14..24
    std::uint32_t result = mantissa >> shift;
    const std::uint32_t half_bit = (mantissa >> (shift - 1)) & 1u;
    const bool below = (mantissa & ((1u << (shift - 1)) - 1u)) != 0;
    if (half_bit != 0 && (below || (result & 1u) != 0)) ++result;  // may carry into the smallest normal: correct
    return static_cast<std::uint16_t>(sign | result);
  }

  static constexpr std::uint32_t widen(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    std::uint32_t mantissa = h & 0x03ffu;
    if (exponent == 0x1f) return sign | 0x7f800000u | (mantissa << 13);  // infinity, or NaN with its payload
    if (exponent != 0) return sign | ((exponent + 112) << 23) | (mantissa << 13);
    if (mantissa == 0) return sign;
    // Subnormal: normalise, as float has the exponent range for it.
    std::uint32_t float_exponent = 113;  // 2^-14, the exponent of the smallest normal half
    while ((mantissa & 0x0400u) == 0) {
      mantissa <<= 1;
      --float_exponent;
    }
    return sign | (float_exponent << 23) | ((mantissa & 0x03ffu) << 13);
  }

  std::uint16_t bits_ = 0;
};

static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16>);
static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half>);

namespace detail {
/// True for plait's 16-bit floating-point storage types, which combine through
/// float (the accumulation rule above).
template <class T>
inline constexpr bool is_float16_v = std::is_same_v<T, bfloat16> || std::is_same_v<T, half>;
}  // namespace detail

}  // namespace v0
}  // namespace plait

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
// Conversions are written with integer arithmetic and exact float steps only
// (see half's), so they do not depend on the floating-point environment
// (rounding mode, flush-to-zero) and are usable in constant expressions.
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
  // is the correct result (up to infinity). Both results are computed and
  // one selected, so that a loop of conversions vectorises.
  static constexpr std::uint16_t round(std::uint32_t x) noexcept {
    const std::uint32_t lsb = (x >> 16) & 1u;
    const std::uint32_t rounded = (x + 0x7fffu + lsb) >> 16;
    const std::uint32_t quiet = (x >> 16) | 0x0040u;  // NaN: quiet, so it cannot become infinity
    return static_cast<std::uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
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
  // Both conversions compute every case's result and select one, with no
  // loop and no variable shift, so that a loop of them vectorises. The
  // subnormal cases use the float unit for exact steps only (an integer below
  // 2^24 to float, a truncating conversion back, a subtraction of two floats
  // within a factor of 2): none rounds or meets a denormal, so the rounding
  // mode and flush-to-zero cannot change them.
  static constexpr std::uint16_t round(std::uint32_t x) noexcept {
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t magnitude = x & 0x7fffffffu;
    // NaN: quiet, with the top of the payload kept.
    const std::uint32_t nan = sign | 0x7e00u | ((magnitude >> 13) & 0x03ffu);
    const std::uint32_t infinity = sign | 0x7c00u;  // from 65520 up, or infinity
    // Normal: rebias the exponent (127 -> 15) and round off 13 mantissa bits;
    // a carry into the exponent is the correct result.
    const std::uint32_t lsb = (magnitude >> 13) & 1u;
    const std::uint32_t normal =
        sign | ((magnitude + 0x0fffu + lsb - (static_cast<std::uint32_t>(127 - 15) << 23)) >> 13);
    // Subnormal half (or zero): magnitude / 2^-24 rounded to an integer, ties
    // to even. Scaled by 2^24 through the exponent field (magnitude is below
    // 2^-14 here, so the scaled value is below 1024 and a normal float), split
    // into its integer part and the exact fraction. A float subnormal scales
    // to a wrong but tiny value that rounds to zero all the same; a tie at
    // 2^-25 goes to the even zero; a carry into the smallest normal is correct.
    const std::uint32_t small = choose(magnitude < 0x38800000u, magnitude, 0u);
    const float scaled = std::bit_cast<float>(small + (24u << 23));
    const auto whole = static_cast<std::int32_t>(scaled);
    const float fraction = scaled - static_cast<float>(whole);
    // fraction is not negative: its bits order as its values (0x3f000000 is 0.5).
    const std::uint32_t fraction_bits = std::bit_cast<std::uint32_t>(fraction);
    const std::uint32_t odd = static_cast<std::uint32_t>(whole) & 1u;
    const std::uint32_t up = static_cast<std::uint32_t>(fraction_bits > 0x3f000000u) |
                             (static_cast<std::uint32_t>(fraction_bits == 0x3f000000u) & odd);
    const std::uint32_t subnormal = sign | (static_cast<std::uint32_t>(whole) + up);
    const std::uint32_t finite = choose(magnitude >= 0x38800000u, normal, subnormal);
    const std::uint32_t not_nan = choose(magnitude >= 0x477ff000u, infinity, finite);
    return static_cast<std::uint16_t>(choose(magnitude > 0x7f800000u, nan, not_nan));
  }

  static constexpr std::uint32_t widen(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    const std::uint32_t mantissa = h & 0x03ffu;
    const std::uint32_t special = sign | 0x7f800000u | (mantissa << 13);  // infinity, or NaN with its payload
    const std::uint32_t normal = sign | ((exponent + 112) << 23) | (mantissa << 13);
    // Subnormal: mantissa * 2^-24, a normal float: the mantissa converted as
    // an integer (exactly), with 24 taken off its exponent.
    const std::uint32_t as_float =
        std::bit_cast<std::uint32_t>(static_cast<float>(static_cast<std::int32_t>(mantissa)));
    const std::uint32_t subnormal = sign | choose(mantissa != 0, as_float - (24u << 23), 0u);
    const std::uint32_t finite = choose(exponent != 0, normal, subnormal);
    return choose(exponent == 0x1f, special, finite);
  }

  // `yes` when `condition`, else `no`, as masks rather than a conditional
  // expression: g++ otherwise moves the float steps only one case uses into
  // a branch of their own, which it then will not if-convert (a float
  // conversion "could trap" under -ftrapping-math), and the loop stays scalar.
  static constexpr std::uint32_t choose(bool condition, std::uint32_t yes, std::uint32_t no) noexcept {
    const std::uint32_t mask = 0u - static_cast<std::uint32_t>(condition);
    return (yes & mask) | (no & ~mask);
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

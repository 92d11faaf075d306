// Reductions are values: plait::sum{}, plait::premul_sum(0.5),
// plait::reduction(f, plait::associative), plait::ordered<plait::sum>{}. Each
// built-in says which element types it accepts (`accepts<T>`), combines two
// elements (operator()), and may prepare each rank's input or finish the
// result. The collective engine does not use them directly but through their
// type-erased kernel (plait/reduction/kernel.hpp); a type a reduction does not
// accept is a compile error whose message names the reduction and what it
// accepts (detail::check_reduction).
//
// Rules every built-in keeps:
// - Integers: sum and prod wrap modulo 2^N, signed types included (computed in
//   the unsigned type, so there is no undefined behaviour on overflow).
// - min and max: a NaN operand wins (the result is NaN: the left operand when
//   both are NaN), so a NaN anywhere is never silently dropped; -0 is less
//   than +0 (min(-0, +0) = -0 and max(-0, +0) = +0 in either order), so the
//   result does not depend on which rank's value came first.
// - plait::bfloat16 and plait::half combine through float, rounding back once
//   per combine (plait/reduction/float16.hpp).
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "plait/reduction/float16.hpp"

namespace plait {
inline namespace v0 {

/// What plait::minloc and plait::maxloc reduce: a value and where it came from
/// (a rank, an element index: the caller's choice).
template <class T>
struct value_index {
  /// The value compared.
  T value;
  /// Its index; of equal values the result keeps the lower index, as MPI_MINLOC
  /// and MPI_MAXLOC do.
  int index;
  /// Member-wise, comparing `value` as numbers compare (NaN != NaN).
  friend constexpr bool operator==(const value_index&, const value_index&) = default;
};

namespace detail {

/// Opt-in marker of the reduction values below (`using reduction_concept =
/// detail::reduction_tag;`), so that a bare callable is never mistaken for one.
struct reduction_tag {};

template <class>
inline constexpr bool dependent_false_v = false;

template <class T>
inline constexpr bool is_value_index_v = false;
template <class T>
inline constexpr bool is_value_index_v<value_index<T>> = true;

/// The floating-point element types: ordered<> refuses them under -ffast-math,
/// and avg and premul_sum accept only them.
template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_float16_v<T>;

/// Arithmetic types that sum, prod, min and max take as numbers (bool is a
/// truth value: logical_* and bit_* take it).
template <class T>
inline constexpr bool is_number_v = (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) || is_float16_v<T>;

/// The integer type an integral T computes sum and prod in: unsigned, so that
/// overflow wraps instead of being undefined, and at least unsigned int, so
/// that a small type's promotion to int cannot overflow either.
template <class T>
using wrap_type = std::common_type_t<std::make_unsigned_t<T>, unsigned int>;

/// Whether a float or double is a NaN, as a quiet (unordered) compare that
/// g++ if-converts: it neither if-converts nor vectorises the same rule
/// written as `a != a`, nor on the bit patterns.
template <class T>
constexpr bool unordered(const T& x) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_isnan(x);
#else
  return x != x;
#endif
}

/// The NaN rule of arithmetic() below: `a` when it is a NaN, else `b` when it
/// is one, else `result`, as selects of values already computed (no branch),
/// so that a loop of combines vectorises.
template <class T>
constexpr T nan_wins(const T& a, const T& b, const T& result) {
  if constexpr (is_float16_v<T>) {
    // Exponent all ones, mantissa nonzero: bfloat16 above 0x7f80, half above 0x7c00.
    constexpr std::uint16_t infinity = std::is_same_v<T, bfloat16> ? 0x7f80u : 0x7c00u;
    const std::uint16_t x = a.bits();
    const std::uint16_t y = b.bits();
    // Masks, not a conditional expression: g++ would move the float add and
    // the rounding into the branch that uses them, and not vectorise.
    const auto mask = [](bool nan) { return static_cast<std::uint16_t>(0u - static_cast<unsigned>(nan)); };
    const std::uint16_t x_nan = mask((x & 0x7fffu) > infinity);
    const std::uint16_t y_nan = static_cast<std::uint16_t>(mask((y & 0x7fffu) > infinity) & ~x_nan);
    const std::uint16_t neither = static_cast<std::uint16_t>(~(x_nan | y_nan));
    return T::from_bits(static_cast<std::uint16_t>((x & x_nan) | (y & y_nan) | (result.bits() & neither)));
  } else {
    return unordered(a) ? a : (unordered(b) ? b : result);
  }
}

/// a op b with integer wrap, 16-bit floats through float, others as T does.
/// A floating NaN operand is the result as it is, the left one when both
/// are: given two NaNs the hardware keeps the payload of the operand that
/// comes first, and a compiler may swap the operands of a commutative add
/// in one loop and not in another, so two ranks combining the same partials
/// (recursive doubling: one writes over its left operand, the other over its
/// right) could otherwise keep different NaNs.
template <class T, class Op>
constexpr T arithmetic(const T& a, const T& b, Op op) {
  if constexpr (is_float16_v<T>) {
    return nan_wins(a, b, T(op(static_cast<float>(a), static_cast<float>(b))));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(op(static_cast<wrap_type<T>>(a), static_cast<wrap_type<T>>(b)));
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return nan_wins(a, b, T(op(a, b)));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
    return op(a, b);
  } else {
    return static_cast<T>(op(a, b));
  }
}

/// x < y for the element types min and max take (16-bit floats through float).
template <class T>
constexpr bool less(const T& x, const T& y) {
  if constexpr (is_float16_v<T>) {
    return static_cast<float>(x) < static_cast<float>(y);
  } else {
    return static_cast<bool>(x < y);
  }
}

/// Whether x is a NaN; only floating types have them.
template <class T>
constexpr bool is_nan(const T& x) {
  if constexpr (is_floating_v<T>) {
    return !(x == x);
  } else {
    return false;
  }
}

/// Whether x has its sign bit set (told apart only for zeros, where the
/// comparisons above cannot). Through the bits where it can, so that min and
/// max stay usable in constant expressions.
template <class T>
constexpr bool sign_bit(const T& x) {
  if constexpr (is_float16_v<T>) {
    return (x.bits() & 0x8000u) != 0;
  } else if constexpr (std::is_same_v<T, float>) {
    return (std::bit_cast<std::uint32_t>(x) >> 31) != 0;
  } else if constexpr (std::is_same_v<T, double>) {
    return (std::bit_cast<std::uint64_t>(x) >> 63) != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::signbit(x);
  } else {
    return false;
  }
}

/// min (Max = false) or max (Max = true) under the NaN and signed-zero rules.
template <bool Max, class T>
constexpr T extreme(const T& a, const T& b) {
  if constexpr (is_float16_v<T> || std::is_same_v<T, float> || std::is_same_v<T, double>) {
    // Every case's result is computed and one selected, with no branch, so
    // that a loop of them vectorises. Equal operands differ at most as -0
    // and +0: min takes the negative one, max the other.
    const T equal = sign_bit(a) == Max ? b : a;
    const T if_b_less = Max ? a : b;
    const T if_a_less = Max ? b : a;
    const T b_less_or_equal = less(b, a) ? if_b_less : equal;
    return nan_wins(a, b, less(a, b) ? if_a_less : b_less_or_equal);
  } else if constexpr (is_floating_v<T>) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    if (less(a, b)) return Max ? b : a;
    if (less(b, a)) return Max ? a : b;
    return sign_bit(a) == Max ? b : a;
  } else if constexpr (Max) {
    return less(a, b) ? b : a;  // one select: integer loops vectorise
  } else {
    return less(b, a) ? b : a;
  }
}

/// minloc (Max = false) or maxloc (Max = true): the value as min or max give
/// it; of equal values (or two NaNs) the lower index.
template <bool Max, class T>
constexpr value_index<T> extreme_index(const value_index<T>& a, const value_index<T>& b) {
  const bool a_nan = is_nan(a.value);
  const bool b_nan = is_nan(b.value);
  if (a_nan != b_nan) return a_nan ? a : b;
  if (!a_nan) {
    if (less(a.value, b.value)) return Max ? b : a;
    if (less(b.value, a.value)) return Max ? a : b;
  }
  return {extreme<Max>(a.value, b.value), a.index < b.index ? a.index : b.index};
}

/// Whether `+` or `*` on a class type gives a T back: user number types (a
/// fixed-point type, std::complex) take sum and prod this way.
template <class T>
concept addable = requires(const T& a, const T& b) {
  { a + b } -> std::convertible_to<T>;
};
template <class T>
concept multipliable = requires(const T& a, const T& b) {
  { a* b } -> std::convertible_to<T>;
};
template <class T>
concept ordered_by_less = requires(const T& a, const T& b) {
  { a < b } -> std::convertible_to<bool>;
};

}  // namespace detail

/// Elementwise sum. Integers wrap (signed ones too); 16-bit floats through
/// float. Accepts numbers (not bool), plait::bfloat16, plait::half and class
/// types whose `a + b` converts to T.
struct sum {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "sum";
  /// Rank order does not matter (up to floating-point rounding).
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = detail::is_number_v<T> || (std::is_class_v<T> && detail::addable<T>);
  /// a + b.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const {
    return detail::arithmetic(a, b, [](const auto& x, const auto& y) { return x + y; });
  }
};

/// Elementwise product. Integers wrap (signed ones too); 16-bit floats through
/// float. Accepts numbers (not bool), plait::bfloat16, plait::half and class
/// types whose `a * b` converts to T.
struct prod {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "prod";
  /// Rank order does not matter (up to floating-point rounding).
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = detail::is_number_v<T> || (std::is_class_v<T> && detail::multipliable<T>);
  /// a * b.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const {
    return detail::arithmetic(a, b, [](const auto& x, const auto& y) { return x * y; });
  }
};

/// Elementwise minimum. A NaN operand wins (the result is NaN); min(-0, +0) is
/// -0 in either order. Accepts numbers (not bool), plait::bfloat16,
/// plait::half and class types with `a < b`.
struct min {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "min";
  /// Exactly commutative: the result never depends on rank order.
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = detail::is_number_v<T> || (std::is_class_v<T> && detail::ordered_by_less<T>);
  /// The smaller of a and b (a when they are equal), under the rules above.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return detail::extreme<false>(a, b); }
};

/// Elementwise maximum. A NaN operand wins (the result is NaN); max(-0, +0) is
/// +0 in either order. Accepts what plait::min accepts.
struct max {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "max";
  /// Exactly commutative: the result never depends on rank order.
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = min::accepts<T>;
  /// The larger of a and b (a when they are equal), under the rules above.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return detail::extreme<true>(a, b); }
};

/// Elementwise mean: the sum over ranks (as plait::sum combines it), divided
/// once by the number of ranks at the end. Floating types only (float, double,
/// long double, plait::bfloat16, plait::half): an integer mean would need a
/// rounding rule and a sum that cannot wrap, so for integers reduce with
/// plait::sum and divide as the application needs.
struct avg {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "avg";
  /// Rank order does not matter (up to floating-point rounding).
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = detail::is_floating_v<T>;
  /// a + b, as plait::sum.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return sum{}(a, b); }
  /// The final result: total / ranks (16-bit floats divide in float and round
  /// once).
  template <class T>
  requires accepts<T>
  constexpr T finish(const T& total, int ranks) const {
    if constexpr (detail::is_float16_v<T>) {
      return T(static_cast<float>(total) / static_cast<float>(ranks));
    } else {
      return total / static_cast<T>(ranks);
    }
  }
};

/// Sum of scaled inputs: each rank's input is multiplied by `scale` once,
/// before it enters any combine, and the products are summed as plait::sum
/// does; the result is scale * (x0 + x1 + ...) up to rounding (NCCL's
/// ncclRedOpCreatePreMulSum). Floating types only. float is scaled in double
/// and rounded once; 16-bit floats are scaled in float (with the scale rounded
/// to float) and rounded once.
struct premul_sum {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "premul_sum";
  /// Rank order does not matter (up to floating-point rounding).
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = detail::is_floating_v<T>;

  /// The factor every input is multiplied by.
  double scale = 1.0;

  /// The reduction that multiplies each input by `factor` before summing.
  constexpr explicit premul_sum(double factor) noexcept : scale(factor) {}

  /// a + b, as plait::sum (the inputs are already scaled).
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return sum{}(a, b); }
  /// One rank's input element, scaled.
  template <class T>
  requires accepts<T>
  constexpr T prepare(const T& x) const {
    if constexpr (detail::is_float16_v<T>) {
      return T(static_cast<float>(x) * static_cast<float>(scale));
    } else if constexpr (std::is_same_v<T, long double>) {
      return x * static_cast<long double>(scale);
    } else {
      return static_cast<T>(static_cast<double>(x) * scale);
    }
  }
};

/// Elementwise logical and: 1 when both are nonzero, else 0. Integral types and
/// bool.
struct logical_and {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "logical_and";
  /// Exactly commutative.
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = std::is_integral_v<T>;
  /// T(a != 0 && b != 0).
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a != T(0) && b != T(0)); }
};

/// Elementwise logical or: 1 when either is nonzero, else 0. Integral types and
/// bool.
struct logical_or {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "logical_or";
  /// Exactly commutative.
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = std::is_integral_v<T>;
  /// T(a != 0 || b != 0).
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a != T(0) || b != T(0)); }
};

/// Elementwise logical exclusive or: 1 when exactly one is nonzero, else 0.
/// Integral types and bool.
struct logical_xor {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "logical_xor";
  /// Exactly commutative.
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = std::is_integral_v<T>;
  /// T((a != 0) != (b != 0)).
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return static_cast<T>((a != T(0)) != (b != T(0))); }
};

/// Elementwise bitwise and. Integral types (bool included) and std::byte.
struct bit_and {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "bit_and";
  /// Exactly commutative.
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = std::is_integral_v<T> || std::is_same_v<T, std::byte>;
  /// a & b.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a & b); }
};

/// Elementwise bitwise or. Integral types (bool included) and std::byte.
struct bit_or {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "bit_or";
  /// Exactly commutative.
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = bit_and::accepts<T>;
  /// a | b.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a | b); }
};

/// Elementwise bitwise exclusive or. Integral types (bool included) and
/// std::byte.
struct bit_xor {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "bit_xor";
  /// Exactly commutative.
  static constexpr bool commutative = true;
  /// The element types it accepts.
  template <class T>
  static constexpr bool accepts = bit_and::accepts<T>;
  /// a ^ b.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a ^ b); }
};

/// The minimum value and its index, over plait::value_index<T> only (T as
/// plait::min accepts it, with its NaN and signed-zero rules). Of equal values
/// the lower index wins, as MPI_MINLOC; a NaN value wins over numbers.
struct minloc {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "minloc";
  /// Exactly commutative.
  static constexpr bool commutative = true;
  /// The element types it accepts: value_index<T> with T as plait::min takes.
  template <class T>
  static constexpr bool accepts = [] {
    if constexpr (detail::is_value_index_v<T>) {
      return min::accepts<decltype(T::value)>;
    } else {
      return false;
    }
  }();
  /// The pair with the smaller value; of equal values, the lower index.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return detail::extreme_index<false>(a, b); }
};

/// The maximum value and its index, over plait::value_index<T> only (T as
/// plait::max accepts it, with its NaN and signed-zero rules). Of equal values
/// the lower index wins, as MPI_MAXLOC; a NaN value wins over numbers.
struct maxloc {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "maxloc";
  /// Exactly commutative.
  static constexpr bool commutative = true;
  /// The element types it accepts: value_index<T> with T as plait::max takes.
  template <class T>
  static constexpr bool accepts = minloc::accepts<T>;
  /// The pair with the larger value; of equal values, the lower index.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return detail::extreme_index<true>(a, b); }
};

/// The declaration plait::reduction requires: the user promises that
/// f(f(a, b), c) == f(a, f(b, c)), which every algorithm but a chain relies on.
struct associative_t {
  /// Explicit, so that `{}` cannot stand in for the promise.
  explicit associative_t() = default;
};
/// The associativity promise, passed to plait::reduction.
inline constexpr associative_t associative{};

/// The optional declaration that f(a, b) == f(b, a); without it plait keeps
/// rank order (the lower rank's partial on the left).
struct commutative_t {
  /// Explicit, so that `{}` cannot stand in for the promise.
  explicit commutative_t() = default;
};
/// The commutativity promise, passed to plait::reduction.
inline constexpr commutative_t commutative{};

/// A user reduction: a callable T(T, T) declared associative, and commutative
/// when Commutative. Made by plait::reduction.
template <class F, bool Commutative>
struct user_reduction {
  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// The name diagnostics and the kernel show.
  static constexpr std::string_view name = "user reduction";
  /// As declared to plait::reduction.
  static constexpr bool commutative = Commutative;
  /// The element types it accepts: those f combines into a T.
  template <class T>
  static constexpr bool accepts = std::is_invocable_r_v<T, const F&, const T&, const T&>;

  /// The callable; a combine calls it as f(left, right), left the lower ranks'.
  F f;

  /// f(a, b) as a T.
  template <class T>
  requires accepts<T>
  constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(f(a, b)); }
};

/// Wraps `f`, a callable T(T, T), as an associative, non-commutative reduction:
/// plait keeps rank order, the lower rank's partial on the left.
template <class F>
constexpr user_reduction<std::decay_t<F>, false> reduction(F&& f, associative_t) {
  return {std::forward<F>(f)};
}

/// Wraps `f`, a callable T(T, T), as an associative and commutative reduction,
/// which lets algorithms combine partials in any order.
template <class F>
constexpr user_reduction<std::decay_t<F>, true> reduction(F&& f, associative_t, commutative_t) {
  return {std::forward<F>(f)};
}

/// Any other declaration: a compile error that says which forms exist.
template <class F, class... Declarations>
constexpr user_reduction<std::decay_t<F>, false> reduction(F&& f, Declarations...) {
  static_assert(detail::dependent_false_v<F>,
                "plait::reduction: a user reduction must be declared associative: write "
                "plait::reduction(f, plait::associative) or, when f(a, b) == f(b, a) too, "
                "plait::reduction(f, plait::associative, plait::commutative)");
  return {std::forward<F>(f)};
}

namespace detail {
/// A type that says it is a plait reduction.
template <class R>
concept reduction_value = requires {
  typename R::reduction_concept;
  requires std::same_as<typename R::reduction_concept, reduction_tag>;
};

/// "ordered<" + R::name + ">" as a constant, so that ordered's name is as
/// static as the built-ins' (the kernel keeps a string_view to it).
template <class R>
struct ordered_name {
  static constexpr std::string_view prefix = "ordered<";
  static constexpr auto storage = [] {
    std::array<char, prefix.size() + R::name.size() + 1> text{};
    std::size_t at = 0;
    for (char c : prefix) text[at++] = c;
    for (char c : R::name) text[at++] = c;
    text[at] = '>';
    return text;
  }();
  static constexpr std::string_view value{storage.data(), storage.size()};
};
}  // namespace detail

/// The exact left fold over ranks, ((x0 op x1) op x2) op ..., for every
/// element: the same bits on every rank, algorithm, transport and run. Only
/// algorithms that can keep that order accept it; under -ffast-math
/// (__FAST_MATH__) a floating element type is a compile error, because the
/// compiler may then reassociate the combine itself.
template <class R>
struct ordered {
  static_assert(detail::reduction_value<R>,
                "plait::ordered<R>: R must be a plait reduction (plait::sum, plait::max, ..., or the type of "
                "plait::reduction(f, plait::associative))");

  /// The reduction folded.
  R reduction;

  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// "ordered<" R's name ">", for diagnostics and the kernel.
  static constexpr std::string_view name = detail::ordered_name<R>::value;
  /// As R: ordered changes the order combines run in, not what they compute.
  static constexpr bool commutative = R::commutative;
  /// What R accepts, less floating types under -ffast-math.
  template <class T>
  static constexpr bool accepts = [] {
#if defined(__FAST_MATH__)
    if constexpr (detail::is_floating_v<T>) {
      return false;
    } else if constexpr (detail::is_value_index_v<T>) {
      if constexpr (detail::is_floating_v<decltype(T::value)>) return false;
    }
#endif
    return R::template accepts<T>;
  }();
};

namespace detail {
/// " in float" / " in double" after R's name, as a constant (see ordered_name).
template <class Acc, class R>
struct accumulated_name {
  static constexpr std::string_view suffix = std::is_same_v<Acc, float> ? " in float" : " in double";
  static constexpr auto storage = [] {
    std::array<char, R::name.size() + suffix.size()> text{};
    std::size_t at = 0;
    for (char c : R::name) text[at++] = c;
    for (char c : suffix) text[at++] = c;
    return text;
  }();
  static constexpr std::string_view value{storage.data(), storage.size()};
};
}  // namespace detail

/// R over 16-bit floats (or float) accumulated in the wider Acc (float or
/// double) across hops: each rank's input is widened once, partials travel
/// and combine as Acc, and the result is rounded to the element type once,
/// at the end. Partials on the wire are Acc: twice the bytes of the 16-bit
/// data (bytes_sent counts them), one rounding instead of one per combine.
///   plait::all_reduce(comm, grads_bf16, sum_bf16, plait::accumulate<float, plait::sum>{});
template <class Acc, class R>
struct accumulate {
  static_assert(std::is_same_v<Acc, float> || std::is_same_v<Acc, double>,
                "plait::accumulate<Acc, R>: Acc is float or double");
  static_assert(detail::reduction_value<R>, "plait::accumulate<Acc, R>: R must be a plait reduction");

  /// The reduction, run on Acc.
  R reduction;
  /// The type partials travel and combine as.
  using accumulator = Acc;

  /// Marks a plait reduction.
  using reduction_concept = detail::reduction_tag;
  /// R's name and the accumulator's: "sum in float".
  static constexpr std::string_view name = detail::accumulated_name<Acc, R>::value;
  /// As R.
  static constexpr bool commutative = R::commutative;
  /// Element types narrower than Acc that convert to it exactly (the 16-bit
  /// floats for float; those and float for double), where R accepts Acc.
  template <class T>
  static constexpr bool accepts =
      (detail::is_float16_v<T> || (std::is_same_v<T, float> && sizeof(Acc) > 4)) && R::template accepts<Acc>;
};

namespace detail {
template <class R>
inline constexpr bool is_user_reduction_v = false;
template <class F, bool Commutative>
inline constexpr bool is_user_reduction_v<user_reduction<F, Commutative>> = true;
}  // namespace detail

/// Whether R is a plait reduction value (a built-in, plait::reduction(...) or
/// plait::ordered<...>).
template <class R>
inline constexpr bool is_reduction_v = detail::reduction_value<R>;

/// Whether reduction R combines elements of type T: T is trivially copyable
/// (combined as bytes) and R accepts it.
template <class R, class T>
concept reduction_accepts = is_reduction_v<R> && std::is_trivially_copyable_v<T> && R::template accepts<T>;

/// Whether R asks for the exact left fold over ranks (plait::ordered<...>).
template <class R>
inline constexpr bool is_ordered_v = false;
/// plait::ordered<R> does.
template <class R>
inline constexpr bool is_ordered_v<ordered<R>> = true;

/// Whether R accumulates in a wider type (plait::accumulate<Acc, ...>).
template <class R>
inline constexpr bool is_accumulated_v = false;
/// plait::accumulate<Acc, R> does.
template <class Acc, class R>
inline constexpr bool is_accumulated_v<accumulate<Acc, R>> = true;

/// Whether R's result does not depend on the order ranks are combined in:
/// built-ins yes, user reductions as declared, ordered<R> as R.
template <class R>
inline constexpr bool is_commutative_v = R::commutative;

namespace detail {

/// Fails to compile, with a message naming R and what it accepts, unless R is
/// a reduction that accepts T. The engine's public entry points call it first,
/// so that a wrong type gives one clear line instead of an overload dump.
template <class R, class T>
consteval void check_reduction() {
  if constexpr (!std::is_trivially_copyable_v<T>) {
    static_assert(dependent_false_v<T>,
                  "plait: a reduction's element type must be trivially copyable (elements are combined as bytes)");
  } else if constexpr (!is_reduction_v<R>) {
    static_assert(dependent_false_v<R>,
                  "plait: this is not a plait reduction: use a built-in (plait::sum, plait::max, ...) or wrap a "
                  "callable T(T, T) as plait::reduction(f, plait::associative) (add plait::commutative if it is); a "
                  "user reduction must be declared associative");
  } else if constexpr (is_ordered_v<R>) {
    using inner = decltype(std::declval<R&>().reduction);
    if constexpr (is_ordered_v<inner>) {
      static_assert(dependent_false_v<R>, "plait::ordered<plait::ordered<R>>: write plait::ordered<R>");
    } else if constexpr (inner::template accepts<T> && !R::template accepts<T>) {
      static_assert(dependent_false_v<T>,
                    "plait::ordered promises the same bits on every run, which -ffast-math (__FAST_MATH__) cannot "
                    "keep for floating-point elements: the compiler may reassociate and contract the combine; build "
                    "this file without -ffast-math, or drop plait::ordered");
    } else {
      check_reduction<inner, T>();
    }
  } else if constexpr (R::template accepts<T>) {
    // Accepted.
  } else if constexpr (is_accumulated_v<R>) {
    static_assert(dependent_false_v<T>,
                  "plait::accumulate<Acc, R> widens plait::bfloat16 and plait::half (and float, for double) to Acc, "
                  "and R must accept Acc");
  } else if constexpr (std::is_same_v<R, sum>) {
    static_assert(dependent_false_v<T>,
                  "plait::sum accepts arithmetic types (not bool), plait::bfloat16, plait::half, and class types "
                  "whose a + b converts to T");
  } else if constexpr (std::is_same_v<R, prod>) {
    static_assert(dependent_false_v<T>,
                  "plait::prod accepts arithmetic types (not bool), plait::bfloat16, plait::half, and class types "
                  "whose a * b converts to T");
  } else if constexpr (std::is_same_v<R, min> || std::is_same_v<R, max>) {
    static_assert(dependent_false_v<T>,
                  "plait::min and plait::max accept arithmetic types (not bool), plait::bfloat16, plait::half, and "
                  "class types with a < b");
  } else if constexpr (std::is_same_v<R, avg>) {
    static_assert(dependent_false_v<T>,
                  "plait::avg accepts floating types only (float, double, long double, plait::bfloat16, plait::half); "
                  "for integers use plait::sum and divide");
  } else if constexpr (std::is_same_v<R, premul_sum>) {
    static_assert(dependent_false_v<T>,
                  "plait::premul_sum accepts floating types only (float, double, long double, plait::bfloat16, "
                  "plait::half)");
  } else if constexpr (std::is_same_v<R, logical_and> || std::is_same_v<R, logical_or> ||
                       std::is_same_v<R, logical_xor>) {
    static_assert(dependent_false_v<T>,
                  "plait::logical_and, logical_or and logical_xor accept integral types and bool (the result is 0 or "
                  "1)");
  } else if constexpr (std::is_same_v<R, bit_and> || std::is_same_v<R, bit_or> || std::is_same_v<R, bit_xor>) {
    static_assert(dependent_false_v<T>,
                  "plait::bit_and, bit_or and bit_xor accept integral types and std::byte (not floating types)");
  } else if constexpr (std::is_same_v<R, minloc> || std::is_same_v<R, maxloc>) {
    static_assert(dependent_false_v<T>,
                  "plait::minloc and plait::maxloc accept only plait::value_index<T> {T value; int index;}, with T "
                  "as plait::min accepts");
  } else if constexpr (is_user_reduction_v<R>) {
    static_assert(dependent_false_v<T>,
                  "plait::reduction(f, ...): f must be callable as f(const T&, const T&) and return a T (or a type "
                  "that converts to T)");
  } else {
    static_assert(dependent_false_v<T>, "plait: this reduction does not accept this element type");
  }
}

}  // namespace detail

}  // namespace v0
}  // namespace plait

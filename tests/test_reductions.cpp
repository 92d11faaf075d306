// plait-test-labels: quick
// plait-test-also: avx2
// The reduction values and their type-erased kernels, without any transport:
// every built-in on every element type it accepts matches a serial reference
// folded over "ranks"; integers wrap; min and max keep their NaN and
// signed-zero rules in either order; bfloat16 and half convert with
// round-to-nearest-even against a brute-force nearest-value reference; and
// the kernel's prepare, finish, aliasing and flags are what the engine relies
// on. The diagnostics for types a reduction refuses are checked by
// tests/compile_fail/reduction_fail.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>
#include <type_traits>
#include <vector>

#include "plait/reduction/float16.hpp"
#include "plait/reduction/kernel.hpp"
#include "plait/reduction/reductions.hpp"

namespace {

using plait::bfloat16;
using plait::half;
using plait::value_index;
using plait::detail::kernel_for;
using plait::detail::reduction_kernel;

constexpr int ranks = 5;
constexpr std::size_t elements = 67;  // odd, so no vector width divides it

/// The engine's use of a kernel, serially: prepare every rank's input, fold
/// left over ranks (rank 0's partial on the left), finish once.
template <class T, class R>
std::vector<T> fold_with_kernel(const R& r, std::vector<std::vector<T>> inputs) {
  const reduction_kernel k = kernel_for<T>(r);
  REQUIRE(k.element_bytes == sizeof(T));
  const std::size_t n = inputs.front().size();
  for (auto& input : inputs) {
    if (k.prepare) {
      auto* bytes = reinterpret_cast<std::byte*>(input.data());
      k.prepare(k.state, bytes, bytes, n);
    }
  }
  std::vector<T> acc = inputs.front();
  for (std::size_t p = 1; p < inputs.size(); ++p) {
    auto* left = reinterpret_cast<std::byte*>(acc.data());
    k.combine(k.state, left, reinterpret_cast<const std::byte*>(inputs[p].data()), left, n);
  }
  if (k.finish) k.finish(k.state, reinterpret_cast<std::byte*>(acc.data()), n, static_cast<int>(inputs.size()));
  return acc;
}

/// The same fold written out with `op` on elements (the serial reference).
template <class T, class Op>
std::vector<T> fold_serially(const std::vector<std::vector<T>>& inputs, Op op) {
  std::vector<T> acc = inputs.front();
  for (std::size_t p = 1; p < inputs.size(); ++p) {
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = op(acc[i], inputs[p][i]);
  }
  return acc;
}

/// Equal bit patterns (so NaN == NaN and -0 != +0).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// Integer inputs with the extremes mixed in, so sums and products overflow.
template <class T>
std::vector<std::vector<T>> integer_inputs() {
  std::mt19937_64 random(42);
  const std::array<T, 5> special = {std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(0), T(1),
                                    static_cast<T>(-1)};
  std::vector<std::vector<T>> inputs(ranks, std::vector<T>(elements));
  for (int p = 0; p < ranks; ++p) {
    for (std::size_t i = 0; i < elements; ++i) {
      inputs[p][i] = (i + static_cast<std::size_t>(p)) % 4 == 0 ? special[(i / 4 + static_cast<std::size_t>(p)) % 5]
                                                                : static_cast<T>(random());
    }
  }
  return inputs;
}

/// Floating inputs in [-4, 4), exact in every type, with zeros of both signs.
template <class T>
std::vector<std::vector<T>> floating_inputs() {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> steps(-64, 63);
  std::vector<std::vector<T>> inputs(ranks, std::vector<T>(elements));
  for (int p = 0; p < ranks; ++p) {
    for (std::size_t i = 0; i < elements; ++i) {
      float x = static_cast<float>(steps(random)) / 16.0f;
      if (i % 11 == 0) x = (p % 2 == 0) ? -0.0f : 0.0f;
      inputs[p][i] = T(x);
    }
  }
  return inputs;
}

/// a op b computed in wide unsigned arithmetic, then cut to T: the wrapped
/// result, written independently of the implementation.
template <class T>
T wrapped_sum(T a, T b) {
  return static_cast<T>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
template <class T>
T wrapped_prod(T a, T b) {
  return static_cast<T>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

template <class T>
T as(float x) {
  return T(x);
}

template <class T>
float to_float(T x) {
  return static_cast<float>(x);
}

/// `k` on `left` and `right` the three ways the engine calls it: out of
/// place, over the left operand, over the right; every buffer at an odd
/// byte offset. The three results, in that order.
template <class T>
std::array<std::vector<T>, 3> combine_three_ways(const reduction_kernel& k, const std::vector<T>& left,
                                                 const std::vector<T>& right) {
  const std::size_t n = left.size();
  const std::size_t bytes = n * sizeof(T);
  std::vector<std::byte> a(bytes + 1), b(bytes + 1), out(bytes + 1);
  const auto load = [&] {
    std::memcpy(a.data() + 1, left.data(), bytes);
    std::memcpy(b.data() + 1, right.data(), bytes);
  };
  const auto result = [&](const std::vector<std::byte>& from) {
    std::vector<T> got(n);
    std::memcpy(got.data(), from.data() + 1, bytes);
    return got;
  };
  load();
  k.combine(k.state, a.data() + 1, b.data() + 1, out.data() + 1, n);
  k.combine(k.state, a.data() + 1, b.data() + 1, a.data() + 1, n);
  std::array<std::vector<T>, 3> results{result(out), result(a), {}};
  load();
  k.combine(k.state, a.data() + 1, b.data() + 1, b.data() + 1, n);
  results[2] = result(b);
  return results;
}

}  // namespace

TEMPLATE_TEST_CASE("every integer reduction matches a serial reference, wrapping on overflow", "[reduction][integer]",
                   std::int8_t, std::uint8_t, std::int16_t, std::int32_t, std::int64_t, unsigned, std::uint64_t) {
  using T = TestType;
  const auto inputs = integer_inputs<T>();
  auto truth = [](T x) { return x != T(0); };

  CHECK(fold_with_kernel(plait::sum{}, inputs) == fold_serially(inputs, wrapped_sum<T>));
  CHECK(fold_with_kernel(plait::prod{}, inputs) == fold_serially(inputs, wrapped_prod<T>));
  CHECK(fold_with_kernel(plait::min{}, inputs) == fold_serially(inputs, [](T a, T b) { return std::min(a, b); }));
  CHECK(fold_with_kernel(plait::max{}, inputs) == fold_serially(inputs, [](T a, T b) { return std::max(a, b); }));
  CHECK(fold_with_kernel(plait::logical_and{}, inputs) ==
        fold_serially(inputs, [&](T a, T b) { return T(truth(a) && truth(b) ? 1 : 0); }));
  CHECK(fold_with_kernel(plait::logical_or{}, inputs) ==
        fold_serially(inputs, [&](T a, T b) { return T(truth(a) || truth(b) ? 1 : 0); }));
  CHECK(fold_with_kernel(plait::logical_xor{}, inputs) ==
        fold_serially(inputs, [&](T a, T b) { return T(truth(a) != truth(b) ? 1 : 0); }));
  CHECK(fold_with_kernel(plait::bit_and{}, inputs) == fold_serially(inputs, [](T a, T b) { return T(a & b); }));
  CHECK(fold_with_kernel(plait::bit_or{}, inputs) == fold_serially(inputs, [](T a, T b) { return T(a | b); }));
  CHECK(fold_with_kernel(plait::bit_xor{}, inputs) == fold_serially(inputs, [](T a, T b) { return T(a ^ b); }));
}

TEST_CASE("built-in reductions combine elements in constant expressions", "[reduction]") {
  STATIC_REQUIRE(plait::sum{}(2, 3) == 5);
  STATIC_REQUIRE(plait::sum{}(std::numeric_limits<int>::max(), 1) == std::numeric_limits<int>::min());
  STATIC_REQUIRE(plait::max{}(1.0f, 2.0f) == 2.0f);
  STATIC_REQUIRE(std::bit_cast<std::uint64_t>(plait::min{}(0.0, -0.0)) == std::bit_cast<std::uint64_t>(-0.0));
  STATIC_REQUIRE(plait::bit_xor{}(std::byte{0x0f}, std::byte{0xff}) == std::byte{0xf0});
  STATIC_REQUIRE(plait::minloc{}(value_index<int>{3, 7}, value_index<int>{3, 2}).index == 2);
  STATIC_REQUIRE(plait::sum{}(half(1.0f), half(2.0f)).bits() == half(3.0f).bits());
}

TEST_CASE("signed sum and prod wrap instead of overflowing", "[reduction][integer]") {
  CHECK(plait::sum{}(std::numeric_limits<int>::max(), 1) == std::numeric_limits<int>::min());
  CHECK(plait::sum{}(std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}) ==
        std::numeric_limits<std::int64_t>::max());
  CHECK(plait::prod{}(std::int8_t{16}, std::int8_t{16}) == std::int8_t{0});
  CHECK(plait::prod{}(std::int8_t{-128}, std::int8_t{-1}) == std::int8_t{-128});
  // 32767 * 32767 overflows int after promotion: the product must still be exact mod 2^16.
  CHECK(plait::prod{}(std::int16_t{32767}, std::int16_t{32767}) == std::int16_t{1});
  CHECK(plait::prod{}(std::uint16_t{65535}, std::uint16_t{65535}) == std::uint16_t{1});
  CHECK(plait::prod{}(std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}) ==
        std::numeric_limits<std::int64_t>::min());

  // The same through a kernel, as the engine runs it.
  const std::vector<std::vector<int>> inputs = {{std::numeric_limits<int>::max()}, {1}};
  CHECK(fold_with_kernel(plait::sum{}, inputs) == std::vector<int>{std::numeric_limits<int>::min()});
}

TEMPLATE_TEST_CASE("a long integer sum and product wrap in every lane of every block and the remainder",
                   "[reduction][integer][alias]", std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t,
                   std::uint32_t, std::int64_t, std::uint64_t) {
  using T = TestType;
  // 1001 elements at an odd byte offset: whole blocks of the kernel's vector
  // path (128 bytes, 256 under AVX-512), then a remainder; the extremes
  // mixed in so that sums and products wrap in every lane position.
  constexpr std::size_t n = 1001;
  std::vector<T> left(n), right(n);
  std::mt19937_64 random(11);
  const std::array<T, 4> special = {std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(0),
                                    static_cast<T>(-1)};
  for (std::size_t i = 0; i < n; ++i) {
    left[i] = i % 5 == 0 ? special[i / 5 % 4] : static_cast<T>(random());
    right[i] = i % 7 == 0 ? special[i / 7 % 4] : static_cast<T>(random());
  }
  const auto check = [&](const auto& r, auto rule) {
    std::vector<T> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = rule(left[i], right[i]);
    for (const std::vector<T>& got : combine_three_ways(kernel_for<T>(r), left, right)) CHECK(got == expected);
  };
  check(plait::sum{}, wrapped_sum<T>);
  check(plait::prod{}, wrapped_prod<T>);
}

TEMPLATE_TEST_CASE("every floating reduction matches a serial reference bit for bit", "[reduction][floating]", float,
                   double, bfloat16, half) {
  using T = TestType;
  const auto inputs = floating_inputs<T>();
  // The reference: plain float or double arithmetic, 16-bit types through float.
  auto arith = [](auto op) {
    return [op](T a, T b) {
      if constexpr (plait::detail::is_float16_v<T>) {
        return T(op(to_float(a), to_float(b)));
      } else {
        return static_cast<T>(op(a, b));
      }
    };
  };
  auto plus = [](auto a, auto b) { return a + b; };
  auto times = [](auto a, auto b) { return a * b; };

  CHECK(same_bits(fold_with_kernel(plait::sum{}, inputs), fold_serially(inputs, arith(plus))));
  CHECK(same_bits(fold_with_kernel(plait::prod{}, inputs), fold_serially(inputs, arith(times))));

  // min and max on these inputs (no NaN): the smaller, -0 below +0.
  auto key = [](T x) { return std::pair(to_float(x), !std::signbit(to_float(x))); };
  CHECK(same_bits(fold_with_kernel(plait::min{}, inputs),
                  fold_serially(inputs, [&](T a, T b) { return key(b) < key(a) ? b : a; })));
  CHECK(same_bits(fold_with_kernel(plait::max{}, inputs),
                  fold_serially(inputs, [&](T a, T b) { return key(a) < key(b) ? b : a; })));

  std::vector<T> mean = fold_serially(inputs, arith(plus));
  for (T& x : mean) {
    if constexpr (plait::detail::is_float16_v<T>) {
      x = T(to_float(x) / static_cast<float>(ranks));
    } else {
      x = x / static_cast<T>(ranks);
    }
  }
  CHECK(same_bits(fold_with_kernel(plait::avg{}, inputs), mean));

  std::vector<std::vector<T>> scaled = inputs;
  for (auto& input : scaled) {
    for (T& x : input) {
      if constexpr (plait::detail::is_float16_v<T>) {
        x = T(to_float(x) * 0.375f);
      } else {
        x = static_cast<T>(static_cast<double>(x) * 0.375);
      }
    }
  }
  CHECK(same_bits(fold_with_kernel(plait::premul_sum(0.375), inputs), fold_serially(scaled, arith(plus))));
}

TEMPLATE_TEST_CASE("min and max propagate NaN in either order", "[reduction][floating][nan]", float, double, bfloat16,
                   half) {
  using T = TestType;
  const T nan = as<T>(std::numeric_limits<float>::quiet_NaN());
  const T one = as<T>(1.0f);
  CHECK(std::isnan(to_float(plait::min{}(nan, one))));
  CHECK(std::isnan(to_float(plait::min{}(one, nan))));
  CHECK(std::isnan(to_float(plait::max{}(nan, one))));
  CHECK(std::isnan(to_float(plait::max{}(one, nan))));
  CHECK(std::isnan(to_float(plait::min{}(nan, nan))));
  // Once a NaN is in, it stays: a fold over ranks ends NaN wherever it entered.
  const std::vector<std::vector<T>> inputs = {{one}, {nan}, {as<T>(-2.0f)}};
  CHECK(std::isnan(to_float(fold_with_kernel(plait::min{}, inputs)[0])));
  CHECK(std::isnan(to_float(fold_with_kernel(plait::max{}, inputs)[0])));
}

TEMPLATE_TEST_CASE("min of -0 and +0 is -0 and max is +0, in either order", "[reduction][floating][zero]", float,
                   double, bfloat16, half) {
  using T = TestType;
  const T minus = as<T>(-0.0f);
  const T plus = as<T>(0.0f);
  CHECK(std::signbit(to_float(plait::min{}(minus, plus))));
  CHECK(std::signbit(to_float(plait::min{}(plus, minus))));
  CHECK_FALSE(std::signbit(to_float(plait::max{}(minus, plus))));
  CHECK_FALSE(std::signbit(to_float(plait::max{}(plus, minus))));
  CHECK(std::signbit(to_float(plait::min{}(minus, minus))));
  CHECK_FALSE(std::signbit(to_float(plait::max{}(plus, plus))));
}

namespace {

/// Every non-negative finite value of a 16-bit type, ascending (bit patterns
/// 0 .. largest finite are ascending in value).
template <class T>
std::vector<double> finite_values(std::uint16_t largest) {
  std::vector<double> values;
  for (std::uint32_t b = 0; b <= largest; ++b) values.push_back(to_float(T::from_bits(static_cast<std::uint16_t>(b))));
  return values;
}

/// The nearest 16-bit value to x by search (ties to the even bit pattern);
/// `overflow` is the midpoint between the largest finite value and the next
/// power of two, from which round-to-nearest gives infinity.
template <class T>
std::uint16_t nearest_by_search(float x, const std::vector<double>& values, double overflow, std::uint16_t inf) {
  const auto sign = static_cast<std::uint16_t>(std::signbit(x) ? 0x8000u : 0u);
  const double magnitude = std::fabs(static_cast<double>(x));
  if (magnitude >= overflow) return static_cast<std::uint16_t>(sign | inf);
  auto above = std::lower_bound(values.begin(), values.end(), magnitude);
  if (above == values.end()) return static_cast<std::uint16_t>(sign | (values.size() - 1));
  auto index = static_cast<std::uint16_t>(above - values.begin());
  if (*above != magnitude && index > 0) {
    const double up = *above - magnitude;
    const double down = magnitude - values[index - 1u];
    if (down < up || (down == up && (index & 1u) != 0)) --index;
  }
  return static_cast<std::uint16_t>(sign | index);
}

/// Checks T(x) against the search for x, the midpoints between neighbours
/// (the ties), the floats just either side of them, and a sweep of float bit
/// patterns.
template <class T>
void check_rounding(std::uint16_t largest, std::uint16_t inf) {
  const std::vector<double> values = finite_values<T>(largest);
  const double overflow = (values.back() + std::ldexp(1.0, std::ilogb(values.back()) + 1)) / 2.0;
  auto check = [&](float x) {
    const std::uint16_t got = T(x).bits();
    const std::uint16_t want = nearest_by_search<T>(x, values, overflow, inf);
    if (got != want) {
      CAPTURE(x, got, want);
      CHECK(got == want);
      return false;
    }
    return true;
  };
  bool ok = true;
  for (std::size_t k = 0; k + 1 < values.size() && ok; ++k) {
    const auto mid = static_cast<float>((values[k] + values[k + 1]) / 2.0);  // exact in float
    REQUIRE(static_cast<double>(mid) == (values[k] + values[k + 1]) / 2.0);
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f), static_cast<float>(values[k])}) {
      ok = check(x) && check(-x) && ok;
    }
  }
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32) && ok; bits += 65521) {
    const auto x = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    if (!std::isnan(x)) ok = check(x) && ok;
  }
  CHECK(ok);
}

}  // namespace

TEST_CASE("bfloat16 rounds to nearest, ties to even, and round-trips every value", "[reduction][float16]") {
  CHECK(bfloat16(1.0f).bits() == 0x3f80);
  CHECK(bfloat16(1.0f + 0x1p-8f).bits() == 0x3f80);  // tie: down to even
  CHECK(bfloat16(1.0f + 0x3p-8f).bits() == 0x3f82);  // tie: up to even
  CHECK(bfloat16(1.0f + 0x1p-8f + 0x1p-20f).bits() == 0x3f81);
  CHECK(bfloat16(std::numeric_limits<float>::max()).bits() == 0x7f80);  // overflow to infinity
  CHECK(bfloat16(-std::numeric_limits<float>::infinity()).bits() == 0xff80);
  CHECK(bfloat16(-0.0f).bits() == 0x8000);
  CHECK(std::isnan(to_float(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(to_float(bfloat16(std::bit_cast<float>(0x7f800001u)))));  // a NaN whose payload is all dropped
  CHECK(std::isnan(to_float(bfloat16(-std::numeric_limits<float>::quiet_NaN()))));
  CHECK((bfloat16(-std::numeric_limits<float>::quiet_NaN()).bits() & 0x8000) != 0);

  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto x = bfloat16::from_bits(static_cast<std::uint16_t>(b));
    const bfloat16 back(to_float(x));
    if (std::isnan(to_float(x))) {
      REQUIRE(std::isnan(to_float(back)));
    } else {
      REQUIRE(back.bits() == b);
    }
  }
  check_rounding<bfloat16>(0x7f7f, 0x7f80);
}

TEST_CASE("half rounds to nearest, ties to even, subnormals included, and round-trips every value",
          "[reduction][float16]") {
  CHECK(half(1.0f).bits() == 0x3c00);
  CHECK(half(1.0f + 0x1p-11f).bits() == 0x3c00);  // tie: down to even
  CHECK(half(1.0f + 0x3p-11f).bits() == 0x3c02);  // tie: up to even
  CHECK(half(65504.0f).bits() == 0x7bff);
  CHECK(half(65519.0f).bits() == 0x7bff);
  CHECK(half(65520.0f).bits() == 0x7c00);  // the midpoint to 2^16 rounds to even: infinity
  CHECK(half(-1e6f).bits() == 0xfc00);
  CHECK(half(std::numeric_limits<float>::infinity()).bits() == 0x7c00);
  CHECK(half(0x1p-14f).bits() == 0x0400);      // smallest normal
  CHECK(half(0x1p-24f).bits() == 0x0001);      // smallest subnormal
  CHECK(half(0x1p-25f).bits() == 0x0000);      // tie with zero: even
  CHECK(half(0x1.8p-25f).bits() == 0x0001);    // above the tie
  CHECK(half(0x3p-25f).bits() == 0x0002);      // tie between 1 and 2 (x 2^-24): even
  CHECK(half(0x1.ffcp-15f).bits() == 0x0400);  // 1023.5 x 2^-24: tie carries into the smallest normal
  CHECK(half(-0x1p-24f).bits() == 0x8001);     // the sign survives the underflow
  CHECK(half(std::numeric_limits<float>::denorm_min()).bits() == 0x0000);
  CHECK(to_float(half::from_bits(0x0001)) == 0x1p-24f);
  CHECK(to_float(half::from_bits(0x03ff)) == 0x3ffp-24f);
  CHECK(to_float(half::from_bits(0x7bff)) == 65504.0f);
  CHECK(std::isnan(to_float(half(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(to_float(half(std::bit_cast<float>(0x7f800001u)))));  // payload below half's bits: still NaN
  CHECK(std::isnan(to_float(half::from_bits(0x7c01))));

  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto x = half::from_bits(static_cast<std::uint16_t>(b));
    const half back(to_float(x));
    if (std::isnan(to_float(x))) {
      REQUIRE(std::isnan(to_float(back)));
    } else {
      REQUIRE(back.bits() == b);
    }
  }
  check_rounding<half>(0x7bff, 0x7c00);
}

TEST_CASE("16-bit floats compare as numbers, and their bits tell zeros and NaNs apart", "[reduction][float16]") {
  CHECK(half(-0.0f) == half(0.0f));
  CHECK(half(-0.0f).bits() != half(0.0f).bits());
  const half nan(std::numeric_limits<float>::quiet_NaN());
  CHECK_FALSE(nan == nan);
  CHECK(nan.bits() == nan.bits());
  CHECK(bfloat16(2.0f) == bfloat16(2.0f));
  CHECK(bfloat16(2.0f) != bfloat16(3.0f));
  STATIC_REQUIRE(sizeof(half) == 2);
  STATIC_REQUIRE(sizeof(bfloat16) == 2);
  STATIC_REQUIRE(std::is_trivially_copyable_v<half>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<bfloat16>);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<float, half>);  // explicit both ways
  STATIC_REQUIRE_FALSE(std::is_convertible_v<half, float>);
  STATIC_REQUIRE(half(1.5f).bits() == 0x3e00);  // usable in constant expressions
  STATIC_REQUIRE(static_cast<float>(bfloat16::from_bits(0x4040)) == 3.0f);
}

TEST_CASE("16-bit floats combine through float and round once per combine", "[reduction][float16]") {
  // 2048 + 1 is not a half (spacing 2 there): the float sum 2049 rounds to even, 2048.
  CHECK(plait::sum{}(half(2048.0f), half(1.0f)).bits() == half(2048.0f).bits());
  // 2048 + 3 = 2051 rounds to 2052 (tie to even).
  CHECK(plait::sum{}(half(2048.0f), half(3.0f)).bits() == half(2052.0f).bits());
  // Products overflow to infinity as a half, though float holds them.
  CHECK(plait::prod{}(half(256.0f), half(256.0f)).bits() == 0x7c00);
  // bfloat16 keeps float's range: the same product is exact.
  CHECK(static_cast<float>(plait::prod{}(bfloat16(256.0f), bfloat16(256.0f))) == 65536.0f);
}

TEMPLATE_TEST_CASE("minloc and maxloc keep the lower index on ties", "[reduction][loc]", int, float, half) {
  using V = TestType;
  using P = value_index<V>;
  auto v = [](int x) { return V(static_cast<float>(x)); };
  const plait::minloc lo;
  const plait::maxloc hi;
  CHECK(lo(P{v(3), 5}, P{v(3), 2}).index == 2);
  CHECK(lo(P{v(3), 2}, P{v(3), 5}).index == 2);
  CHECK(hi(P{v(3), 5}, P{v(3), 2}).index == 2);
  CHECK(hi(P{v(3), 2}, P{v(3), 5}).index == 2);
  CHECK(lo(P{v(4), 0}, P{v(3), 9}).index == 9);
  CHECK(hi(P{v(4), 9}, P{v(3), 0}).index == 9);
  CHECK(lo(P{v(4), 0}, P{v(3), 9}).value == v(3));

  // Over ranks, with the value each rank holds: the minimum 1 is at ranks 1 and 3.
  const std::vector<std::vector<P>> inputs = {{{v(2), 0}}, {{v(1), 1}}, {{v(7), 2}}, {{v(1), 3}}, {{v(7), 4}}};
  CHECK(fold_with_kernel(lo, inputs)[0].index == 1);
  CHECK(fold_with_kernel(hi, inputs)[0].index == 2);
  if constexpr (!std::is_same_v<V, int>) {
    const V nan(std::numeric_limits<float>::quiet_NaN());
    CHECK(lo(P{v(1), 0}, P{nan, 4}).index == 4);
    CHECK(hi(P{nan, 4}, P{v(1), 0}).index == 4);
    CHECK(lo(P{nan, 6}, P{nan, 4}).index == 4);
    CHECK(std::signbit(to_float(lo(P{V(0.0f), 1}, P{V(-0.0f), 2}).value)));
    CHECK(lo(P{V(0.0f), 1}, P{V(-0.0f), 2}).index == 1);
  }
}

namespace {

/// A 2x2 integer matrix: its product is associative but not commutative.
struct mat2 {
  std::int64_t a, b, c, d;
  friend bool operator==(const mat2&, const mat2&) = default;
};

mat2 multiply(const mat2& x, const mat2& y) {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}

std::vector<std::vector<mat2>> matrix_inputs() {
  std::vector<std::vector<mat2>> inputs(ranks, std::vector<mat2>(elements));
  for (int p = 0; p < ranks; ++p) {
    for (std::size_t i = 0; i < elements; ++i) {
      const auto k = static_cast<std::int64_t>(i) + p;
      inputs[p][i] = {1 + k % 3, k % 2, p, 1 + (k % 5)};
    }
  }
  return inputs;
}

}  // namespace

TEST_CASE("a user matrix-product reduction is non-commutative and folds in rank order", "[reduction][user]") {
  const auto product =
      plait::reduction([](const mat2& x, const mat2& y) { return multiply(x, y); }, plait::associative);
  STATIC_REQUIRE_FALSE(plait::is_commutative_v<decltype(product)>);
  STATIC_REQUIRE(plait::reduction_accepts<decltype(product), mat2>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<decltype(product), int>);

  const reduction_kernel k = kernel_for<mat2>(product);
  CHECK_FALSE(k.commutative);
  CHECK_FALSE(k.ordered);
  CHECK(k.name == "user reduction");
  CHECK(k.prepare == nullptr);
  CHECK(k.finish == nullptr);

  const auto inputs = matrix_inputs();
  const auto want = fold_serially(inputs, multiply);
  CHECK(fold_with_kernel(product, inputs) == want);
  // The order is the one asked for: the reverse fold differs.
  auto reversed = inputs;
  std::reverse(reversed.begin(), reversed.end());
  CHECK(fold_serially(reversed, multiply) != want);

  const auto declared = plait::reduction([](int x, int y) { return x + y; }, plait::associative, plait::commutative);
  STATIC_REQUIRE(plait::is_commutative_v<decltype(declared)>);
  CHECK(kernel_for<int>(declared).commutative);
}

TEST_CASE("a user reduction with state keeps it through the kernel", "[reduction][user]") {
  int modulus = 7;  // captured by value: the kernel must point at this reduction's copy
  const auto add_mod =
      plait::reduction([modulus](int x, int y) { return (x + y) % modulus; }, plait::associative, plait::commutative);
  const std::vector<std::vector<int>> inputs = {{5, 6}, {4, 6}, {3, 6}};
  CHECK(fold_with_kernel(add_mod, inputs) == std::vector<int>{5, 4});
}

TEST_CASE("premul_sum scales each input once in prepare, before any combine", "[reduction][premul_sum]") {
  const plait::premul_sum r(0.5);
  const reduction_kernel k = kernel_for<double>(r);
  REQUIRE(k.prepare != nullptr);
  CHECK(k.finish == nullptr);
  CHECK(k.name == "premul_sum");

  std::vector<double> in = {2.0, -6.0, 1.0};
  std::vector<double> out(3);
  k.prepare(k.state, reinterpret_cast<const std::byte*>(in.data()), reinterpret_cast<std::byte*>(out.data()), 3);
  CHECK(out == std::vector<double>{1.0, -3.0, 0.5});
  k.prepare(k.state, reinterpret_cast<const std::byte*>(in.data()), reinterpret_cast<std::byte*>(in.data()), 3);
  CHECK(in == out);  // in place

  // Combines are plain sums: the scale is not applied again.
  k.combine(k.state, reinterpret_cast<const std::byte*>(out.data()), reinterpret_cast<const std::byte*>(out.data()),
            reinterpret_cast<std::byte*>(out.data()), 3);
  CHECK(out == std::vector<double>{2.0, -6.0, 1.0});

  const std::vector<std::vector<half>> halves = {{half(3.0f)}, {half(5.0f)}};
  CHECK(fold_with_kernel(plait::premul_sum(0.25), halves)[0].bits() == half(2.0f).bits());
}

TEST_CASE("avg sums and then divides once by the rank count in finish", "[reduction][avg]") {
  const reduction_kernel k = kernel_for<float>(plait::avg{});
  CHECK(k.prepare == nullptr);
  REQUIRE(k.finish != nullptr);
  std::vector<float> data = {10.0f, -3.0f};
  k.finish(k.state, reinterpret_cast<std::byte*>(data.data()), 2, 4);
  CHECK(data == std::vector<float>{2.5f, -0.75f});

  const std::vector<std::vector<double>> inputs = {{1.0}, {2.0}, {6.0}};
  CHECK(fold_with_kernel(plait::avg{}, inputs) == std::vector<double>{3.0});
  const std::vector<std::vector<bfloat16>> halves = {{bfloat16(1.0f)}, {bfloat16(2.0f)}};
  CHECK(fold_with_kernel(plait::avg{}, halves)[0].bits() == bfloat16(1.5f).bits());
}

TEST_CASE("a combine may write over its left or its right input, or into a third array", "[reduction][alias]") {
  SECTION("sum on int") {
    std::vector<int> left = {1, 2, 3}, right = {10, 20, 30};
    const reduction_kernel k = kernel_for<int>(plait::sum{});
    k.combine(k.state, reinterpret_cast<const std::byte*>(left.data()),
              reinterpret_cast<const std::byte*>(right.data()), reinterpret_cast<std::byte*>(left.data()), 3);
    CHECK(left == std::vector<int>{11, 22, 33});
    k.combine(k.state, reinterpret_cast<const std::byte*>(left.data()),
              reinterpret_cast<const std::byte*>(right.data()), reinterpret_cast<std::byte*>(right.data()), 3);
    CHECK(right == std::vector<int>{21, 42, 63});
  }
  SECTION("a non-commutative matrix product keeps left on the left either way") {
    const auto product = plait::reduction(multiply, plait::associative);
    const reduction_kernel k = kernel_for<mat2>(product);
    const mat2 x{1, 2, 3, 4}, y{0, 1, 1, 0};
    std::vector<mat2> left = {x}, right = {y};
    k.combine(k.state, reinterpret_cast<const std::byte*>(left.data()),
              reinterpret_cast<const std::byte*>(right.data()), reinterpret_cast<std::byte*>(right.data()), 1);
    CHECK(right[0] == multiply(x, y));
    right = {y};
    k.combine(k.state, reinterpret_cast<const std::byte*>(left.data()),
              reinterpret_cast<const std::byte*>(right.data()), reinterpret_cast<std::byte*>(left.data()), 1);
    CHECK(left[0] == multiply(x, y));
    left = {x};
    std::vector<mat2> out(1);
    k.combine(k.state, reinterpret_cast<const std::byte*>(left.data()),
              reinterpret_cast<const std::byte*>(right.data()), reinterpret_cast<std::byte*>(out.data()), 1);
    CHECK(out[0] == multiply(x, y));
    CHECK(multiply(x, y) != multiply(y, x));
  }
  SECTION("sum on half") {
    std::vector<half> left = {half(1.0f), half(2.0f)}, right = {half(0.5f), half(0.25f)};
    const reduction_kernel k = kernel_for<half>(plait::sum{});
    k.combine(k.state, reinterpret_cast<const std::byte*>(left.data()),
              reinterpret_cast<const std::byte*>(right.data()), reinterpret_cast<std::byte*>(right.data()), 2);
    CHECK(right[0].bits() == half(1.5f).bits());
    CHECK(right[1].bits() == half(2.25f).bits());
  }
}

TEST_CASE("a combine reads and writes unaligned elements", "[reduction][alias]") {
  // Elements at odd byte offsets, as the engine may hand them over from staging.
  std::array<std::byte, 1 + 3 * sizeof(double)> left{}, right{}, out{};
  const double a[3] = {1.0, 2.0, 3.0}, b[3] = {0.5, 0.25, 0.125};
  std::memcpy(left.data() + 1, a, sizeof a);
  std::memcpy(right.data() + 1, b, sizeof b);
  const reduction_kernel k = kernel_for<double>(plait::max{});
  k.combine(k.state, left.data() + 1, right.data() + 1, out.data() + 1, 3);
  double got[3];
  std::memcpy(got, out.data() + 1, sizeof got);
  CHECK(got[0] == 1.0);
  CHECK(got[2] == 3.0);
}

TEST_CASE("ordered keeps its reduction's kernel, asks for the left fold and names itself", "[reduction][ordered]") {
  STATIC_REQUIRE(plait::is_ordered_v<plait::ordered<plait::sum>>);
  STATIC_REQUIRE_FALSE(plait::is_ordered_v<plait::sum>);
  const plait::ordered<plait::sum> ordered_sum{};
  const reduction_kernel k = kernel_for<float>(ordered_sum);
  CHECK(k.ordered);
  CHECK(k.commutative);
  CHECK(k.name == "ordered<sum>");
  CHECK(k.element_bytes == sizeof(float));

  const plait::ordered<plait::premul_sum> scaled{plait::premul_sum(2.0)};
  const reduction_kernel s = kernel_for<double>(scaled);
  CHECK(s.prepare != nullptr);
  CHECK(s.name == "ordered<premul_sum>");
  const std::vector<std::vector<double>> inputs = {{1.0}, {2.0}};
  CHECK(fold_with_kernel(scaled, inputs) == std::vector<double>{6.0});

  const auto product = plait::reduction(multiply, plait::associative);
  const plait::ordered<std::remove_const_t<decltype(product)>> ordered_product{product};
  const reduction_kernel m = kernel_for<mat2>(ordered_product);
  CHECK_FALSE(m.commutative);
  CHECK(m.ordered);
  CHECK(m.name == "ordered<user reduction>");
  CHECK(fold_with_kernel(ordered_product, matrix_inputs()) == fold_serially(matrix_inputs(), multiply));
}

TEST_CASE("every built-in's kernel carries its name and no prepare or finish it does not need", "[reduction]") {
  auto check = [](const reduction_kernel& k, std::string_view name, bool prepare, bool finish) {
    CAPTURE(name);
    CHECK(k.name == name);
    CHECK(k.commutative);
    CHECK_FALSE(k.ordered);
    CHECK((k.prepare != nullptr) == prepare);
    CHECK((k.finish != nullptr) == finish);
    CHECK(k.combine != nullptr);
    CHECK(k.state != nullptr);
  };
  check(kernel_for<int>(plait::sum{}), "sum", false, false);
  check(kernel_for<int>(plait::prod{}), "prod", false, false);
  check(kernel_for<int>(plait::min{}), "min", false, false);
  check(kernel_for<int>(plait::max{}), "max", false, false);
  check(kernel_for<float>(plait::avg{}), "avg", false, true);
  const plait::premul_sum premul(3.0);
  check(kernel_for<float>(premul), "premul_sum", true, false);
  check(kernel_for<int>(plait::logical_and{}), "logical_and", false, false);
  check(kernel_for<int>(plait::logical_or{}), "logical_or", false, false);
  check(kernel_for<int>(plait::logical_xor{}), "logical_xor", false, false);
  check(kernel_for<int>(plait::bit_and{}), "bit_and", false, false);
  check(kernel_for<int>(plait::bit_or{}), "bit_or", false, false);
  check(kernel_for<int>(plait::bit_xor{}), "bit_xor", false, false);
  check(kernel_for<value_index<int>>(plait::minloc{}), "minloc", false, false);
  check(kernel_for<value_index<int>>(plait::maxloc{}), "maxloc", false, false);
}

TEST_CASE("reduction_accepts says which element types each reduction takes", "[reduction][traits]") {
  struct no_plus {
    int x;
  };
  STATIC_REQUIRE(plait::reduction_accepts<plait::sum, int>);
  STATIC_REQUIRE(plait::reduction_accepts<plait::sum, half>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<plait::sum, bool>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<plait::sum, no_plus>);
  STATIC_REQUIRE(plait::reduction_accepts<plait::bit_and, std::byte>);
  STATIC_REQUIRE(plait::reduction_accepts<plait::bit_xor, bool>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<plait::bit_and, float>);
  STATIC_REQUIRE(plait::reduction_accepts<plait::logical_or, bool>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<plait::logical_or, double>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<plait::avg, int>);
  STATIC_REQUIRE(plait::reduction_accepts<plait::avg, bfloat16>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<plait::premul_sum, int>);
  STATIC_REQUIRE(plait::reduction_accepts<plait::minloc, value_index<double>>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<plait::minloc, int>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<plait::maxloc, value_index<bool>>);
  STATIC_REQUIRE(plait::reduction_accepts<plait::ordered<plait::sum>, int>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<plait::ordered<plait::sum>, no_plus>);
  STATIC_REQUIRE_FALSE(plait::reduction_accepts<int, int>);
  STATIC_REQUIRE(plait::is_commutative_v<plait::sum>);
  STATIC_REQUIRE(plait::is_commutative_v<plait::ordered<plait::max>>);
#if !defined(__FAST_MATH__)
  STATIC_REQUIRE(plait::reduction_accepts<plait::ordered<plait::sum>, float>);
#endif
}

namespace {

// The rules of docs/reductions.md written out per element, independently of
// the reductions' own code, for the long-vector test below.
template <class T>
T rule_sum(T a, T b) {
  if (std::isnan(to_float(a))) return a;
  if (std::isnan(to_float(b))) return b;
  if constexpr (plait::detail::is_float16_v<T>) {
    return T(to_float(a) + to_float(b));
  } else {
    return a + b;
  }
}

template <class T>
T rule_prod(T a, T b) {
  if (std::isnan(to_float(a))) return a;
  if (std::isnan(to_float(b))) return b;
  if constexpr (plait::detail::is_float16_v<T>) {
    return T(to_float(a) * to_float(b));
  } else {
    return a * b;
  }
}

template <bool Max, class T>
T rule_extreme(T a, T b) {
  const float x = to_float(a), y = to_float(b);
  if (std::isnan(x)) return a;
  if (std::isnan(y)) return b;
  if (x != y) return (x < y) == Max ? b : a;
  return std::signbit(x) == Max ? b : a;  // -0 < +0
}

TEMPLATE_TEST_CASE("one NaN at any position of a block is kept as it is, on either side and in place",
                   "[reduction][floating][nan][alias]", float, double, bfloat16, half) {
  using T = TestType;
  // The vector path tests a whole block for NaNs (two vectors per compare
  // on x86) before it stores it: one NaN operand, or one pair of infinities
  // whose sum or product is a NaN, in any lane of any vector of any block
  // must send that block through the rule. 136 elements: whole blocks of
  // every vector width, then a remainder.
  // The NaN is a signaling one: the rule keeps it as it is, where the
  // hardware's add would return it quieted, so a block whose NaN the test
  // missed shows in the bits. (Its bits are stored as an integer: g++ quiets
  // a signaling NaN constant it folds as a float.)
  constexpr std::size_t n = 136;
  using bits = std::conditional_t<sizeof(T) == 8, std::uint64_t,
                                  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint16_t>>;
  constexpr bits signaling_nan = sizeof(T) == 8                ? bits(0x7ff000000000abcdull)
                                 : sizeof(T) == 4              ? bits(0x7f80abcdu)
                                 : std::is_same_v<T, bfloat16> ? bits(0x7f9bu)
                                                               : bits(0x7c5bu);
  const auto put_nan = [&](std::vector<T>& v, std::size_t i) {
    if constexpr (plait::detail::is_float16_v<T>) {
      v[i] = T::from_bits(signaling_nan);
    } else {
      std::memcpy(&v[i], &signaling_nan, sizeof(T));
    }
  };
  const T infinity = as<T>(std::numeric_limits<float>::infinity());
  const T minus_infinity = as<T>(-std::numeric_limits<float>::infinity());
  const reduction_kernel add = kernel_for<T>(plait::sum{});
  const reduction_kernel multiply = kernel_for<T>(plait::prod{});
  std::vector<T> left(n), right(n);
  std::size_t failures = 0;
  const auto run = [&](const reduction_kernel& k, auto rule) {
    std::vector<T> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = rule(left[i], right[i]);
    for (const std::vector<T>& got : combine_three_ways(k, left, right)) {
      if (!same_bits(got, expected)) ++failures;
    }
  };
  for (std::size_t at = 0; at < n; ++at) {
    for (int side = 0; side < 3; ++side) {  // NaN on the left, on the right, inf and -inf (or 0) pair
      for (std::size_t i = 0; i < n; ++i) {
        left[i] = as<T>(static_cast<float>(i % 7) - 3.0f);
        right[i] = as<T>(static_cast<float>(i % 5) + 0.5f);
      }
      if (side == 0) put_nan(left, at);
      if (side == 1) put_nan(right, at);
      if (side == 2) {
        left[at] = infinity;
        right[at] = minus_infinity;
      }
      run(add, rule_sum<T>);
      if (side == 2) left[at] = as<T>(0.0f);
      run(multiply, rule_prod<T>);
    }
  }
  CHECK(failures == 0);
}

TEMPLATE_TEST_CASE("a long combine keeps the NaN and signed-zero rules across vector lanes and the remainder",
                   "[reduction][floating][nan][zero][alias]", float, double, bfloat16, half) {
  using T = TestType;
  // Odd length and an odd byte offset: many whole blocks of the kernel's
  // loop, then a remainder. In the first half NaNs with distinct payloads
  // and both zeros land in every lane position, on either side; the second
  // half's blocks have no NaN operand (the vector path), with zeros and
  // infinities whose sum or product is a NaN; the last element, in the
  // remainder, is a NaN again. (Also built with -mavx2: test_reductions_avx2.)
  constexpr std::size_t n = 1001;
  std::vector<T> left(n), right(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  const auto nan_with = [](std::uint32_t payload) {
    if constexpr (std::is_same_v<T, double>) {
      return std::bit_cast<double>(0x7ff8000000000000ull | payload);
    } else if constexpr (std::is_same_v<T, float>) {
      return std::bit_cast<float>(0x7fc00000u | payload);
    } else {
      return T::from_bits(static_cast<std::uint16_t>(0x7e00u | (payload & 0x1ffu)));
    }
  };
  const T infinity = as<T>(std::numeric_limits<float>::infinity());
  const T minus_infinity = as<T>(-std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < n; ++i) {
    left[i] = as<T>(value(rng));
    right[i] = as<T>(value(rng));
    const std::size_t pattern = (i * 7 + i / 13) % 11;
    if (i < n / 2 || i == n - 1) {
      switch (pattern) {
        case 0: left[i] = nan_with(static_cast<std::uint32_t>(i + 1)); break;
        case 1: right[i] = nan_with(static_cast<std::uint32_t>(i + 2)); break;
        case 2:
          left[i] = nan_with(static_cast<std::uint32_t>(i + 3));
          right[i] = nan_with(static_cast<std::uint32_t>(i + 4));
          break;
        default: break;
      }
    }
    switch (pattern) {
      case 3:
        left[i] = as<T>(-0.0f);
        right[i] = as<T>(0.0f);
        break;
      case 4:
        left[i] = as<T>(0.0f);
        right[i] = as<T>(-0.0f);
        break;
      case 5:
        left[i] = as<T>(-0.0f);
        right[i] = as<T>(-0.0f);
        break;
      case 6:
        left[i] = infinity;
        right[i] = minus_infinity;
        break;
      case 7: left[i] = infinity; break;
      case 8:
        left[i] = as<T>(0.0f);
        right[i] = minus_infinity;
        break;
      default: break;
    }
  }
  left[n - 1] = nan_with(5);
  const auto check = [&](const auto& r, auto rule) {
    std::vector<T> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = rule(left[i], right[i]);
    for (const std::vector<T>& got : combine_three_ways(kernel_for<T>(r), left, right)) {
      CHECK(same_bits(got, expected));
    }
  };
  check(plait::sum{}, rule_sum<T>);
  check(plait::prod{}, rule_prod<T>);
  check(plait::min{}, rule_extreme<false, T>);
  check(plait::max{}, rule_extreme<true, T>);
}

TEST_CASE("a long integer combine wraps in every lane and the remainder", "[reduction][integer][alias]") {
  constexpr std::size_t n = 203;
  std::vector<std::int32_t> left(n), right(n), expected(n);
  for (std::size_t i = 0; i < n; ++i) {
    left[i] = std::numeric_limits<std::int32_t>::max() - static_cast<std::int32_t>(i % 5);
    right[i] = static_cast<std::int32_t>(i);
    expected[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(left[i]) + static_cast<std::uint32_t>(i));
  }
  const reduction_kernel k = kernel_for<std::int32_t>(plait::sum{});
  k.combine(k.state, reinterpret_cast<const std::byte*>(left.data()), reinterpret_cast<const std::byte*>(right.data()),
            reinterpret_cast<std::byte*>(left.data()), n);
  CHECK(left == expected);
}

}  // namespace

// plait-test-labels: quick
// plait-test-needs: cuda
// The device combines' element work (plait/reduction/combine_functors.hpp's
// element_work, what plait/cuda/combine.cuh launches on a GPU) run by
// Thrust's CPP (sequential host) back end under the host compiler, for every
// built-in reduction on the element types a device combines, against the
// host kernel (reduction/kernel.hpp) bit for bit: NaNs, infinities, signed
// zeros and subnormals included, the result over either operand or both
// operands one array (the host kernel's separate loops), unaligned arrays,
// prepare (premul_sum), finish (avg) and accumulate's conversions, and the
// fold the NVLink step kernel's combining receives run (wire_combine). Only
// CCCL's headers are used from the CUDA toolkit.
#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_CPP

#include <catch2/catch.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <plait/reduction/combine_functors.hpp>

#include "support/thrust_runner.hpp"

static_assert(THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CPP);

namespace {

using plait_test::thrust_runner;

/// A float-like value: nearly half special (random bits: every class, NaN
/// payloads and subnormals among them; zeros of both signs; NaNs), the rest
/// moderate numbers.
template <class F>
F random_floating(std::mt19937_64& rng) {
  using bits = std::conditional_t<sizeof(F) == 2, std::uint16_t,
                                  std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>>;
  const auto from_bits = [](bits b) {
    if constexpr (std::is_class_v<F>) {
      return F::from_bits(b);
    } else {
      return std::bit_cast<F>(b);
    }
  };
  const unsigned pick = static_cast<unsigned>(rng() % 16);
  if (pick < 4) {
    // Random bits: every class of value, NaN payloads and subnormals among them.
    return from_bits(static_cast<bits>(rng()));
  }
  if (pick == 4) return from_bits(static_cast<bits>(bits{1} << (sizeof(F) * 8 - 1)));  // -0
  if (pick == 5) return from_bits(0);
  if (pick == 6) {
    // A NaN with a random payload and sign: often enough that two meet, where
    // the left one's payload must win (the host kernel's rule).
    constexpr int mantissa_bits =
        sizeof(F) == 2 ? (std::is_same_v<F, plait::bfloat16> ? 7 : 10) : (sizeof(F) == 4 ? 23 : 52);
    const bits mantissa_mask = static_cast<bits>((bits{1} << mantissa_bits) - 1);
    const bits exponent =
        static_cast<bits>(~bits{0} & ~mantissa_mask & static_cast<bits>(~(bits{1} << (sizeof(F) * 8 - 1))));
    bits payload = static_cast<bits>(rng() & mantissa_mask);
    if (payload == 0) payload = 1;
    return from_bits(static_cast<bits>(exponent | payload | (rng() % 2 == 0 ? 0 : bits{1} << (sizeof(F) * 8 - 1))));
  }
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  if constexpr (std::is_class_v<F>) {
    return F(value(rng));
  } else {
    return static_cast<F>(value(rng)) * static_cast<F>(rng() % 2 == 0 ? 1 : 1e-3);
  }
}

template <class T>
T random_element(std::mt19937_64& rng) {
  if constexpr (plait::detail::is_value_index_v<T>) {
    // Few distinct values and indices, so that ties are common.
    using V = decltype(T::value);
    return T{random_element<V>(rng), static_cast<int>(rng() % 4)};
  } else if constexpr (std::is_same_v<T, bool>) {
    return rng() % 2 == 0;
  } else if constexpr (std::is_same_v<T, std::byte>) {
    return static_cast<std::byte>(rng());
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(rng());
  } else {
    return random_floating<T>(rng);
  }
}

/// Bytes 16-aligned plus `offset` (0, or 1: unaligned for every element type).
struct bytes {
  std::vector<std::uint64_t> storage;
  std::size_t offset;
  bytes(std::size_t n, std::size_t off) : storage(n / 8 + 4), offset(off) {}
  std::byte* data() { return reinterpret_cast<std::byte*>(storage.data()) + offset; }
};

std::string differs(const std::byte* got, const std::byte* want, std::size_t n, std::size_t element,
                    const std::string& what) {
  for (std::size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) return what + ": first difference in element " + std::to_string(i / element) + "\n";
  }
  return {};
}

/// differs() on the members of n elements of W: a value_index's padding
/// holds whatever the copy that wrote it held, and is not compared.
template <class W>
std::string differs_in_members(const std::byte* got, const std::byte* want, std::size_t n, const std::string& what) {
  if constexpr (plait::detail::is_value_index_v<W>) {
    for (std::size_t i = 0; i < n; ++i) {
      W a;
      W b;
      std::memcpy(static_cast<void*>(&a), got + i * sizeof(W), sizeof(W));
      std::memcpy(static_cast<void*>(&b), want + i * sizeof(W), sizeof(W));
      if (std::memcmp(&a.value, &b.value, sizeof a.value) != 0 || a.index != b.index) {
        return what + ": first difference in element " + std::to_string(i) + "\n";
      }
    }
    return {};
  } else {
    return differs(got, want, n * sizeof(W), sizeof(W), what);
  }
}

/// R on T through element_work and through the host kernel, compared.
template <class T, class R>
std::string check(const R& r, std::mt19937_64& rng) {
  using work = plait::detail::element_work<T, R>;
  static_assert(plait::detail::device_combinable<R, T>());
  const plait::detail::reduction_kernel k = plait::detail::kernel_for<T>(r);
  const std::string name = std::string(k.name) + " on a " + std::to_string(sizeof(T)) + "-byte element type";
  const thrust_runner run;
  std::string v;
  for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
    const std::size_t n = 301;  // past several of the host kernel's blocks, and a tail
    const std::size_t w = k.wire_bytes;
    const std::string at = name + (offset != 0 ? " (unaligned)" : "");
    bytes in_a(n * sizeof(T), offset), in_b(n * sizeof(T), offset);
    for (std::size_t i = 0; i < n; ++i) {
      const T x = random_element<T>(rng);
      const T y = random_element<T>(rng);
      std::memcpy(in_a.data() + i * sizeof(T), &x, sizeof(T));
      std::memcpy(in_b.data() + i * sizeof(T), &y, sizeof(T));
    }
    // The operands as partials travel: widened (accumulate) and prepared (premul_sum).
    bytes a(n * w, offset), b(n * w, offset), a2(n * w, offset), b2(n * w, offset);
    if (k.to_wire != nullptr) {
      REQUIRE(work::widened);
      k.to_wire(in_a.data(), a.data(), n);
      k.to_wire(in_b.data(), b.data(), n);
      work::to_wire(run, in_a.data(), a2.data(), n);
      work::to_wire(run, in_b.data(), b2.data(), n);
      v += differs(a2.data(), a.data(), n * w, w, at + ": widening");
    } else {
      REQUIRE(!work::widened);
      std::memcpy(a.data(), in_a.data(), n * w);
      std::memcpy(b.data(), in_b.data(), n * w);
    }
    if (k.prepare != nullptr) {
      REQUIRE(work::prepares);
      std::memcpy(a2.data(), a.data(), n * w);
      k.prepare(k.state, a.data(), a.data(), n);
      work::prepare(run, k.state, a2.data(), a2.data(), n);
      v += differs(a2.data(), a.data(), n * w, w, at + ": prepare");
      k.prepare(k.state, b.data(), b.data(), n);
    } else {
      REQUIRE(!work::prepares);
    }
    // The combine, with the result apart and over each operand, and with both operands one array.
    using wire = plait::detail::wire_combine<T, R>;
    using wire_element = typename wire::element;
    REQUIRE(sizeof(wire_element) == w);
    bytes want(n * w, offset), got(n * w, offset);
    const auto combine_differs = [&](const std::string& what) {
      std::string where = at;
      where += ": ";
      where += what;
      return differs_in_members<wire_element>(got.data(), want.data(), n, where);
    };
    k.combine(k.state, a.data(), b.data(), want.data(), n);
    work::combine(run, k.state, a.data(), b.data(), got.data(), n);
    v += combine_differs("combine");
    // The NVLink step kernel's combining receive folds with wire_combine's
    // element and reduction, the value copied from where the kernel's state points.
    const plait::detail::combine_functor<wire_element, typename wire::reduction> fold{
        *static_cast<const typename wire::reduction*>(k.state), a.data(), b.data(), got.data(),
        plait::detail::aligned_for<wire_element>(a.data(), b.data(), got.data())};
    std::memset(got.data(), 0, n * w);
    for (std::size_t i = 0; i < n; ++i) fold(i);
    v += combine_differs("a combining receive's fold");
    std::memcpy(got.data(), a.data(), n * w);
    work::combine(run, k.state, got.data(), b.data(), got.data(), n);
    v += combine_differs("combine into the left operand");
    std::memcpy(got.data(), b.data(), n * w);
    work::combine(run, k.state, a.data(), got.data(), got.data(), n);
    v += combine_differs("combine into the right operand");
    k.combine(k.state, a.data(), a.data(), want.data(), n);
    work::combine(run, k.state, a.data(), a.data(), got.data(), n);
    v += combine_differs("combine of an array with itself");
    // The result, finished (avg divides) and rounded back (accumulate).
    k.combine(k.state, a.data(), b.data(), want.data(), n);
    std::memcpy(got.data(), want.data(), n * w);
    if (k.finish != nullptr) {
      REQUIRE(work::finishes);
      k.finish(k.state, want.data(), n, 3);
      work::finish(run, k.state, got.data(), n, 3);
      v += differs(got.data(), want.data(), n * w, w, at + ": finish");
    } else {
      REQUIRE(!work::finishes);
    }
    if (k.from_wire != nullptr) {
      bytes narrow(n * sizeof(T), offset), narrow2(n * sizeof(T), offset);
      k.from_wire(want.data(), narrow.data(), n);
      work::from_wire(run, got.data(), narrow2.data(), n);
      v += differs(narrow2.data(), narrow.data(), n * sizeof(T), sizeof(T), at + ": rounding back");
    }
  }
  return v;
}

template <class R, class... T>
std::string check_types(const R& r, std::mt19937_64& rng) {
  return (check<T>(r, rng) + ...);
}

using plait::bfloat16;
using plait::value_index;
using half16 = plait::half;  // a plain `half` is ambiguous beside CCCL's headers

template <class R>
std::string check_numbers(const R& r, std::mt19937_64& rng) {
  return check_types<R, std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t, std::uint32_t,
                     std::int64_t, std::uint64_t, float, double, half16, bfloat16>(r, rng);
}

}  // namespace

TEST_CASE("device combines give the host kernel's bits for sum, prod, min and max on every number type",
          "[reduce][thrust]") {
  std::mt19937_64 rng(20261205);
  CHECK(check_numbers(plait::sum{}, rng) == "");
  CHECK(check_numbers(plait::prod{}, rng) == "");
  CHECK(check_numbers(plait::min{}, rng) == "");
  CHECK(check_numbers(plait::max{}, rng) == "");
}

TEST_CASE("device combines give the host kernel's bits for avg and premul_sum on every floating type",
          "[reduce][thrust]") {
  std::mt19937_64 rng(7);
  CHECK(check_types<plait::avg, float, double, half16, bfloat16>(plait::avg{}, rng) == "");
  CHECK(check_types<plait::premul_sum, float, double, half16, bfloat16>(plait::premul_sum(0.37), rng) == "");
}

TEST_CASE("device combines give the host kernel's bits for the logical, bitwise, minloc and maxloc reductions",
          "[reduce][thrust]") {
  std::mt19937_64 rng(11);
  CHECK(check_types<plait::logical_and, bool, std::int32_t, std::uint8_t>(plait::logical_and{}, rng) == "");
  CHECK(check_types<plait::logical_or, bool, std::int32_t, std::uint8_t>(plait::logical_or{}, rng) == "");
  CHECK(check_types<plait::logical_xor, bool, std::int32_t, std::uint8_t>(plait::logical_xor{}, rng) == "");
  CHECK(check_types<plait::bit_and, std::byte, std::uint16_t, std::int64_t>(plait::bit_and{}, rng) == "");
  CHECK(check_types<plait::bit_or, std::byte, std::uint16_t, std::int64_t>(plait::bit_or{}, rng) == "");
  CHECK(check_types<plait::bit_xor, std::byte, std::uint16_t, std::int64_t>(plait::bit_xor{}, rng) == "");
  CHECK(check_types<plait::minloc, value_index<float>, value_index<double>, value_index<std::int32_t>>(plait::minloc{},
                                                                                                       rng) == "");
  CHECK(check_types<plait::maxloc, value_index<float>, value_index<double>, value_index<std::int32_t>>(plait::maxloc{},
                                                                                                       rng) == "");
}

TEST_CASE("device combines give the host kernel's bits for ordered<> and accumulate<> reductions", "[reduce][thrust]") {
  std::mt19937_64 rng(13);
  CHECK(check<float>(plait::ordered<plait::sum>{}, rng) == "");
  CHECK(check<double>(plait::ordered<plait::prod>{}, rng) == "");
  CHECK(check<half16>(plait::ordered<plait::max>{}, rng) == "");
  CHECK(check_types<plait::accumulate<float, plait::sum>, half16, bfloat16>(plait::accumulate<float, plait::sum>{},
                                                                            rng) == "");
  CHECK(check<float>(plait::accumulate<double, plait::sum>{}, rng) == "");
  CHECK(check<bfloat16>(plait::accumulate<float, plait::avg>{}, rng) == "");
  CHECK(check<half16>(plait::accumulate<double, plait::premul_sum>{plait::premul_sum(0.37)}, rng) == "");
}

TEST_CASE("device combines are refused at compile time where a device cannot run them", "[reduce][thrust]") {
  // A user reduction's callable is host code; CUDA device code has no long double.
  const auto f = [](int a, int b) { return a + b; };
  using user = decltype(plait::reduction(f, plait::associative));
  STATIC_REQUIRE(!plait::detail::device_combinable<user, int>());
  STATIC_REQUIRE(!plait::detail::device_combinable<plait::sum, long double>());
  STATIC_REQUIRE(!plait::detail::device_combinable<plait::ordered<user>, int>());
  STATIC_REQUIRE(plait::detail::device_combinable<plait::ordered<plait::sum>, float>());
  STATIC_REQUIRE(!plait::detail::device_combinable<plait::sum, bool>());  // sum does not take bool at all
}

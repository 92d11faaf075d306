// The type-erased form of a reduction that the collective engine runs: a
// handful of function pointers over byte arrays, so that the engine's
// schedules, staging and transports stay untyped and one engine serves every
// (element type, reduction) pair. kernel_for<T>(r) makes one, after
// detail::check_reduction<R, T>() has rejected a type r does not accept.
//
// The loops are plain loops over contiguous elements, in blocks the compiler
// vectorises, loading and storing without an alignment assumption (the
// engine's buffers carry no alignment promise); sums and products of float,
// double and bfloat16 take an explicit vector path (vector_block). `out` may be exactly `left` or `right` (or both be
// one array); each case gets its own loop, so that none needs an overlap check.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "plait/core/element_kind.hpp"
#include "plait/reduction/reductions.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// The same reduction's work on memory only a device reaches: each function
/// enqueues on `stream` (the engine's, as a pointer: cudaStream_t) and
/// returns its launch status (0: launched). One static table per element
/// type and reduction, made by <plait/cuda/combine.cuh> and attached to the
/// kernel by a copy engine that folds on its device (op/copy_engine.hpp); it
/// reads `state` as the host kernel does. The operations, and the order they
/// run in, are the host kernel's: only who runs them differs.
struct device_reduction {
  int (*combine)(void* stream, const void* state, const std::byte* left, const std::byte* right, std::byte* out,
                 std::size_t elements) = nullptr;
  int (*prepare)(void* stream, const void* state, const std::byte* in, std::byte* out, std::size_t elements) = nullptr;
  int (*finish)(void* stream, const void* state, std::byte* data, std::size_t elements, int ranks) = nullptr;
  int (*to_wire)(void* stream, const std::byte* in, std::byte* out, std::size_t elements) = nullptr;
  int (*from_wire)(void* stream, const std::byte* in, std::byte* out, std::size_t elements) = nullptr;
  /// A transport's step whose combining receives fold in device code: the
  /// NVLink step kernel instantiated for this reduction
  /// (plait/cuda/nvlink_device_ops.cuh), enqueued on `stream` for the step
  /// `step` with the reduction value read from `state` now. Null where no
  /// transport made one.
  int (*combining_step)(void* stream, const void* state, const void* step, void* error_word, void* claim) = nullptr;
};

/// A reduction on one element type, as bytes. Copyable; it points at the
/// reduction value (`state`), which must outlive every call.
struct reduction_kernel {
  /// sizeof(T): every byte count the engine passes is elements * element_bytes.
  std::size_t element_bytes = 0;
  /// The reduction value (premul_sum's scale, a user callable); outlives the call.
  const void* state = nullptr;
  /// out[i] = left[i] op right[i] for i < elements; out may alias left or right
  /// (exactly, the same pointer). left holds the lower ranks' partial.
  void (*combine)(const void* state, const std::byte* left, const std::byte* right, std::byte* out,
                  std::size_t elements) = nullptr;
  /// Applied once to each rank's own input before it enters any combine
  /// (premul_sum's scale); nullptr when none. out may alias in.
  void (*prepare)(const void* state, const std::byte* in, std::byte* out, std::size_t elements) = nullptr;
  /// Applied once to a final result (avg divides by `ranks`); nullptr when none.
  void (*finish)(const void* state, std::byte* data, std::size_t elements, int ranks) = nullptr;
  /// "sum", "ordered<sum>", "user reduction", ...: for diagnostics.
  std::string_view name;
  /// Whether partials may be combined in any order (else the lower rank's
  /// partial goes on the left).
  bool commutative = true;
  /// Whether the exact left fold over ranks is required (plait::ordered).
  bool ordered = false;
  /// Whether the elements are floating-point (or hold one, as value_index<float>):
  /// check mode then makes sure flush-to-zero and denormals-are-zero are off
  /// for an ordered reduction, whose bits they would change.
  bool floating = false;
  /// The element type's class and size as a call stamp carries them
  /// (plait::element_code<T>), so that ranks reducing different types fail.
  std::uint8_t element = 0;
  /// Bytes of one element as partials travel and combine: element_bytes, or
  /// the accumulator's for plait::accumulate<Acc, R> (combine, prepare and
  /// finish then work on Acc).
  std::size_t wire_bytes = 0;
  /// Widens elements into accumulators (plait::accumulate); nullptr when
  /// partials are elements.
  void (*to_wire)(const std::byte* in, std::byte* out, std::size_t elements) = nullptr;
  /// Rounds accumulators back to elements; nullptr when partials are elements.
  void (*from_wire)(const std::byte* in, std::byte* out, std::size_t elements) = nullptr;
  /// The same work on a device (see device_reduction); null until an engine
  /// that folds on its device attaches it.
  const device_reduction* device = nullptr;
};

/// A reduction picked at run time, carried as the kernel kernel_for made for
/// it (kernel_reduction_for<T>(r)): code that chooses among many (element
/// type, reduction) pairs at run time, as libplait_pmpi does for MPI's
/// datatypes and ops, then instantiates a collective once per element size
/// and order, not once per pair, while every combine runs the pair's own
/// loops. Elements travel as any trivially copyable type of Bytes bytes.
/// Host folds only (a copy engine that combines on its device needs the
/// reduction's type). The reduction the kernel was made from must outlive
/// every call it is passed to, as a kernel's `state` must.
template <std::size_t Bytes, bool Commutative>
struct kernel_reduction {
  /// Marks a plait reduction.
  using reduction_concept = reduction_tag;
  /// Shown only where no kernel is at hand; a call's messages name the kernel's reduction.
  static constexpr std::string_view name = "kernel_reduction";
  /// As the reduction the kernel was made from.
  static constexpr bool commutative = Commutative;
  /// Any element of the kernel's size.
  template <class T>
  static constexpr bool accepts = sizeof(T) == Bytes;
  /// kernel_for<T>(r) of the reduction this one stands for.
  reduction_kernel kernel;
};

template <class R>
inline constexpr bool is_kernel_reduction_v = false;
template <std::size_t Bytes, bool Commutative>
inline constexpr bool is_kernel_reduction_v<kernel_reduction<Bytes, Commutative>> = true;

/// Converts `elements` values from From to To (widening to an accumulator,
/// or rounding back once).
template <class From, class To>
void convert_elements(const std::byte* in, std::byte* out, std::size_t elements);

/// Whether load_element and store_element access T through an unaligned,
/// may_alias lvalue (GCC and Clang; arithmetic types: the attributes do not
/// apply to a class): g++ 12 loads a memcpy'd double as an
/// integer, which its vectoriser then refuses ("no vectype"), while the
/// lvalue is an ordinary double load. Other types and compilers use memcpy.
template <class T>
inline constexpr bool direct_access =
#if defined(__GNUC__) || defined(__clang__)
    std::is_arithmetic_v<T>;
#else
    false;
#endif

/// Element `i` of a byte array of T, read without an alignment assumption.
template <class T>
T load_element(const std::byte* data, std::size_t i) {
  if constexpr (direct_access<T>) {
#if defined(__GNUC__) || defined(__clang__)
    using unaligned [[gnu::may_alias, gnu::aligned(1)]] = T;
    return *reinterpret_cast<const unaligned*>(data + i * sizeof(T));
#endif
  } else if constexpr (std::is_default_constructible_v<T>) {
    T value;
    std::memcpy(&value, data + i * sizeof(T), sizeof(T));
    return value;
  } else {
    std::array<std::byte, sizeof(T)> raw;
    std::memcpy(raw.data(), data + i * sizeof(T), sizeof(T));
    return std::bit_cast<T>(raw);
  }
}

/// Element `i` of a byte array of T, written without an alignment assumption.
template <class T>
void store_element(std::byte* data, std::size_t i, const T& value) {
  if constexpr (direct_access<T>) {
#if defined(__GNUC__) || defined(__clang__)
    using unaligned [[gnu::may_alias, gnu::aligned(1)]] = T;
    *reinterpret_cast<unaligned*>(data + i * sizeof(T)) = value;
#endif
  } else {
    std::memcpy(data + i * sizeof(T), &value, sizeof(T));
  }
}

// The loops below see restrict-qualified pointers: with the exact aliasing
// the contract allows resolved up front, the compiler needs no run-time
// overlap check to vectorise. And they run in blocks of a constant number of
// elements (128 bytes' worth), the rest one by one: g++ 12 at -O2 vectorises
// only a loop whose trip count the vector width divides (its "very cheap"
// cost model), so a plain loop to `elements` stays scalar there, where the
// blocks do not. (The kernel is compiled with the user's flags.)

// g++ -O3 unrolls a block's loop completely before its loop vectoriser runs,
// and its straight-line vectoriser then leaves the NaN rule's selects of a
// float block scalar: kept a loop, the block vectorises at -O2 and -O3.
// (nvcc's front end rejects the pragma, and combines on the host anyway.)
// The explicit vector path's loops over a block's few vectors, the other
// way: unrolled whole, or g++ under AVX keeps the results in memory and
// stores them through a loop of 16-byte copies (0.3-0.4x of the streaming
// add in cache, where unrolled they run at 0.6-1.0x).
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define PLAIT_KERNEL_NO_UNROLL _Pragma("GCC unroll 1")
#define PLAIT_KERNEL_UNROLL _Pragma("GCC unroll 16")
#elif defined(__clang__)
#define PLAIT_KERNEL_NO_UNROLL
#define PLAIT_KERNEL_UNROLL _Pragma("clang loop unroll(full)")
#else
#define PLAIT_KERNEL_NO_UNROLL
#define PLAIT_KERNEL_UNROLL
#endif

/// Bytes of the explicit vector path's vectors: the widest registers the
/// target was compiled for (a 16-byte path under -march=native ran at 0.2-0.5x
/// of the compiler's 64-byte streaming add in cache).
#if defined(__AVX512F__)
inline constexpr std::size_t vector_bytes = 64;
#elif defined(__AVX__)
inline constexpr std::size_t vector_bytes = 32;
#else
inline constexpr std::size_t vector_bytes = 16;
#endif

/// Bytes of one block of the combine loops (and of the explicit vector
/// path's blocks): 128 at the baseline, where 64 measured 5-10 % slower.
inline constexpr std::size_t block_bytes = vector_bytes * 4 > 128 ? vector_bytes * 4 : 128;

/// Elements per block, at least one.
template <class T>
inline constexpr std::size_t block_elements = sizeof(T) >= block_bytes ? 1 : block_bytes / sizeof(T);

// Not under nvcc, whose front end lacks these vector types' operations (its
// device code does not combine; the host pass keeps the per-element loops).
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
/// Whether R's combine on T has the explicit vector path below: sum, prod,
/// avg and premul_sum (a plain add or multiply wherever neither operand is a
/// NaN) on float, double and bfloat16, with GCC's vector extensions (g++ and
/// clang, any target).
template <class R>
inline constexpr bool plain_without_nans =
    std::is_same_v<R, sum> || std::is_same_v<R, prod> || std::is_same_v<R, avg> || std::is_same_v<R, premul_sum>;
template <class T>
inline constexpr bool vector_element = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                       (std::is_same_v<T, bfloat16> && std::endian::native == std::endian::little);
/// Integers wrap and have no NaN: their sum is a plain lane-wise add of
/// unsigned lanes (a wrapped sum's low bits depend only on the operands'
/// low bits). Not prod: SSE2 has no 8- or 64-bit lane multiply, and the
/// compiler's emulation measured slower than its own loop.
template <class R, class T>
inline constexpr bool integer_vector_arithmetic =
    std::is_same_v<R, sum>&& std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class R, class T>
inline constexpr bool vector_arithmetic =
    (plain_without_nans<R> && vector_element<T>) || integer_vector_arithmetic<R, T>;

/// The two halves of a vector OR'd, as a vector of half its size.
template <class Half, class Vector>
Half or_of_halves(const Vector& whole) {
  static_assert(sizeof(Vector) == 2 * sizeof(Half));
  Half low;
  Half high;
  std::memcpy(&low, &whole, sizeof(Half));
  std::memcpy(&high, reinterpret_cast<const std::byte*>(&whole) + sizeof(Half), sizeof(Half));
  return low | high;
}

/// Whether any lane of a vector of masks is set: halves OR'd down to 16
/// bytes in vector registers, then its two words, not a test per lane.
template <class Masks>
bool any_lane(const Masks& masks) {
  // Sizes spelled out: g++ drops vector_size from an alias whose size
  // depends on a template parameter.
  using words32 [[gnu::vector_size(32)]] = std::uint64_t;
  using words16 [[gnu::vector_size(16)]] = std::uint64_t;
  if constexpr (sizeof(Masks) == 64) {
    return any_lane(or_of_halves<words32>(masks));
  } else if constexpr (sizeof(Masks) == 32) {
    return any_lane(or_of_halves<words16>(masks));
  } else {
    std::uint64_t words[2];
    std::memcpy(words, &masks, sizeof(words));
    return (words[0] | words[1]) != 0;
  }
}

/// The lanes where `a` or `b` is a NaN, all bits set: one unordered compare
/// for both on x86 (SSE, AVX), where the generic form costs two compares,
/// their copies and an OR, and held the in-cache fp32 combine near 0.7x of
/// a streaming add (docs/performance.md).
template <class Masks, class Values>
Masks nan_lanes(const Values& a, const Values& b) {
  using element = std::remove_cvref_t<decltype(a[0])>;
  constexpr bool single = std::is_same_v<element, float>;
#if defined(__SSE2__)
  if constexpr (sizeof(Values) == 16) {
    using floats [[gnu::vector_size(16)]] = float;
    using doubles [[gnu::vector_size(16)]] = double;
    if constexpr (single) {
      return std::bit_cast<Masks>(__builtin_ia32_cmpunordps(std::bit_cast<floats>(a), std::bit_cast<floats>(b)));
    } else {
      return std::bit_cast<Masks>(__builtin_ia32_cmpunordpd(std::bit_cast<doubles>(a), std::bit_cast<doubles>(b)));
    }
  }
#endif
#if defined(__AVX__)
  if constexpr (sizeof(Values) == 32) {
    using floats [[gnu::vector_size(32)]] = float;
    using doubles [[gnu::vector_size(32)]] = double;
    constexpr int unordered_quiet = 3;  // _CMP_UNORD_Q
    if constexpr (single) {
      return std::bit_cast<Masks>(
          __builtin_ia32_cmpps256(std::bit_cast<floats>(a), std::bit_cast<floats>(b), unordered_quiet));
    } else {
      return std::bit_cast<Masks>(
          __builtin_ia32_cmppd256(std::bit_cast<doubles>(a), std::bit_cast<doubles>(b), unordered_quiet));
    }
  }
#endif
  return (a != a) | (b != b);
}

/// One block of the combine, out = left op right (Swap: right op left), as
/// plain vector adds or multiplies, stored only when no result in the block
/// is a NaN (bfloat16: no operand; integers: always); false (nothing
/// stored) otherwise, and the block then goes through the NaN rule element
/// by element. Without NaNs the rule gives the same bits, and skipping it
/// matters: at the x86-64 baseline (SSE2, where a select is three
/// instructions) the rule's two compares and two selects cost more than the
/// add, and the compilers' own vectorisation of the rule reached 0.3-0.4x
/// of a streaming add where this reaches 0.8-1.1x in cache
/// (docs/performance.md). Every load comes before every store, so `out` may
/// be `left` or `right`. bfloat16 widens to float, adds and rounds back as
/// bfloat16(float) does (round to nearest even, a NaN made quiet). `Count`
/// vectors: a whole block, or one (the tail of a combine shorter than a block).
template <class R, class T, bool Swap, std::size_t Count = block_bytes / vector_bytes>
[[gnu::always_inline]] inline bool vector_block(const std::byte* left, const std::byte* right, std::byte* out) {
  constexpr bool multiply = std::is_same_v<R, prod>;
  if constexpr (integer_vector_arithmetic<R, T>) {
    // Each lane's result depends on that lane alone: stored as computed.
    using lanes [[gnu::vector_size(vector_bytes)]] = std::make_unsigned_t<T>;
    PLAIT_KERNEL_UNROLL
    for (std::size_t k = 0; k < Count; ++k) {
      lanes x;
      lanes y;
      std::memcpy(&x, left + k * vector_bytes, vector_bytes);
      std::memcpy(&y, right + k * vector_bytes, vector_bytes);
      const lanes result = x + y;
      std::memcpy(out + k * vector_bytes, &result, vector_bytes);
    }
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    // A 32-bit lane holds two bfloat16s, the first in its low half
    // (little-endian; see vector_arithmetic), each widened in place: no
    // vector wider than the target's registers, whose passing would change
    // the calling convention.
    using pairs [[gnu::vector_size(vector_bytes)]] = std::uint32_t;
    using halves [[gnu::vector_size(vector_bytes)]] = std::int16_t;
    using floats [[gnu::vector_size(vector_bytes)]] = float;
    constexpr std::size_t count = Count;
    pairs results[count];
    halves nan{};
    const auto round = [](pairs bits) {  // bfloat16(float): nearest even, a NaN made quiet
      const pairs rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
      const pairs quiet = (bits >> 16) | 0x40u;  // inf - inf and 0 * inf
      const pairs is_nan = pairs((bits & 0x7fffffffu) > 0x7f800000u);
      return (quiet & is_nan) | (rounded & ~is_nan);
    };
    PLAIT_KERNEL_UNROLL
    for (std::size_t k = 0; k < count; ++k) {
      pairs x;
      pairs y;
      std::memcpy(&x, left + k * vector_bytes, vector_bytes);
      std::memcpy(&y, right + k * vector_bytes, vector_bytes);
      const halves hx = std::bit_cast<halves>(x);
      const halves hy = std::bit_cast<halves>(y);
      nan |= ((hx & 0x7fff) > 0x7f80) | ((hy & 0x7fff) > 0x7f80);  // exponent all ones, mantissa nonzero
      const floats low_x = std::bit_cast<floats>(x << 16);
      const floats low_y = std::bit_cast<floats>(y << 16);
      const floats high_x = std::bit_cast<floats>(x & 0xffff0000u);
      const floats high_y = std::bit_cast<floats>(y & 0xffff0000u);
      const floats low = multiply ? (Swap ? low_y * low_x : low_x * low_y) : (Swap ? low_y + low_x : low_x + low_y);
      const floats high =
          multiply ? (Swap ? high_y * high_x : high_x * high_y) : (Swap ? high_y + high_x : high_x + high_y);
      results[k] = round(std::bit_cast<pairs>(low)) | (round(std::bit_cast<pairs>(high)) << 16);
    }
    if (any_lane(nan)) return false;
    PLAIT_KERNEL_UNROLL
    for (std::size_t k = 0; k < count; ++k) std::memcpy(out + k * vector_bytes, &results[k], vector_bytes);
  } else {
    using values [[gnu::vector_size(vector_bytes)]] = T;
    using masks [[gnu::vector_size(vector_bytes)]] = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
    constexpr std::size_t count = Count;
    values results[count];
    masks nan{};
    PLAIT_KERNEL_UNROLL
    for (std::size_t k = 0; k < count; ++k) {
      values x;
      values y;
      std::memcpy(&x, left + k * vector_bytes, vector_bytes);
      std::memcpy(&y, right + k * vector_bytes, vector_bytes);
      const values& l = Swap ? y : x;
      const values& r = Swap ? x : y;
      results[k] = multiply ? l * r : l + r;
      // A NaN operand makes the sum or product a NaN, so a test of the
      // results finds it; a NaN from operands that are not (inf - inf,
      // 0 * inf) goes through the rule too, which then stores the same.
      if (k % 2 == 1) nan |= nan_lanes<masks>(results[k - 1], results[k]);
    }
    if constexpr (count % 2 == 1) nan |= nan_lanes<masks>(results[count - 1], results[count - 1]);
    if (any_lane(nan)) return false;
    PLAIT_KERNEL_UNROLL
    for (std::size_t k = 0; k < count; ++k) std::memcpy(out + k * vector_bytes, &results[k], vector_bytes);
  }
  return true;
}
#else
template <class R, class T>
inline constexpr bool vector_arithmetic = false;

template <class R, class T, bool Swap, std::size_t Count = 1>
bool vector_block(const std::byte*, const std::byte*, std::byte*) {
  return false;
}
#endif

/// Elements of one vector of the explicit path (the combine's tail steps).
template <class T>
inline constexpr std::size_t tail_elements = vector_bytes / sizeof(T) > 0 ? vector_bytes / sizeof(T) : 1;

/// out[i] = left[i] op right[i], with out, left and right disjoint.
template <class T, class R>
void combine_disjoint(const R& r, const std::byte* __restrict left, const std::byte* __restrict right,
                      std::byte* __restrict out, std::size_t elements) {
  constexpr std::size_t width = block_elements<T>;
  std::size_t i = 0;
  for (; i + width <= elements; i += width) {
    if constexpr (vector_arithmetic<R, T>) {
      if (vector_block<R, T, false>(left + i * sizeof(T), right + i * sizeof(T), out + i * sizeof(T))) continue;
    }
    PLAIT_KERNEL_NO_UNROLL
    for (std::size_t j = i; j < i + width; ++j) {
      store_element(out, j, r(load_element<T>(left, j), load_element<T>(right, j)));
    }
  }
  if constexpr (vector_arithmetic<R, T>) {
    // The tail a vector at a time: a small call's whole combine (16 floats
    // one by one cost 260 instructions of a 64-byte all-reduce's 1,900).
    for (; i + tail_elements<T> <= elements; i += tail_elements<T>) {
      if (vector_block<R, T, false, 1>(left + i * sizeof(T), right + i * sizeof(T), out + i * sizeof(T))) continue;
      for (std::size_t j = i; j < i + tail_elements<T>; ++j) {
        store_element(out, j, r(load_element<T>(left, j), load_element<T>(right, j)));
      }
    }
  }
  for (; i < elements; ++i) store_element(out, i, r(load_element<T>(left, i), load_element<T>(right, i)));
}

/// acc[i] = acc[i] op other[i] (AccLeft) or other[i] op acc[i], acc and other
/// disjoint: the in-place combine the engine does most.
template <class T, bool AccLeft, class R>
void combine_into(const R& r, std::byte* __restrict acc, const std::byte* __restrict other, std::size_t elements) {
  const auto one = [&r](const T& mine, const T& theirs) { return AccLeft ? r(mine, theirs) : r(theirs, mine); };
  constexpr std::size_t width = block_elements<T>;
  std::size_t i = 0;
  for (; i + width <= elements; i += width) {
    if constexpr (vector_arithmetic<R, T>) {
      std::byte* block = acc + i * sizeof(T);
      if (vector_block<R, T, !AccLeft>(block, other + i * sizeof(T), block)) continue;
    }
    PLAIT_KERNEL_NO_UNROLL
    for (std::size_t j = i; j < i + width; ++j) {
      store_element(acc, j, one(load_element<T>(acc, j), load_element<T>(other, j)));
    }
  }
  if constexpr (vector_arithmetic<R, T>) {
    for (; i + tail_elements<T> <= elements; i += tail_elements<T>) {
      std::byte* vector = acc + i * sizeof(T);
      if (vector_block<R, T, !AccLeft, 1>(vector, other + i * sizeof(T), vector)) continue;
      for (std::size_t j = i; j < i + tail_elements<T>; ++j) {
        store_element(acc, j, one(load_element<T>(acc, j), load_element<T>(other, j)));
      }
    }
  }
  for (; i < elements; ++i) store_element(acc, i, one(load_element<T>(acc, i), load_element<T>(other, i)));
}

/// out[i] = in[i] op in[i]: both operands one array (out may be it too), each
/// element loaded before it is stored.
template <class T, class R>
void combine_self(const R& r, const std::byte* in, std::byte* out, std::size_t elements) {
  for (std::size_t i = 0; i < elements; ++i) {
    const T x = load_element<T>(in, i);
    store_element(out, i, r(x, x));
  }
}

// 16-bit floats convert through float (exactly when widening; a double
// accumulator is rounded to float, then to 16 bits).
template <class From, class To>
constexpr To convert_element(const From& value) {
  if constexpr (is_float16_v<From> || is_float16_v<To>) {
    return static_cast<To>(static_cast<float>(value));
  } else {
    return static_cast<To>(value);
  }
}

template <class From, class To>
void convert_elements(const std::byte* __restrict in, std::byte* __restrict out, std::size_t elements) {
  constexpr std::size_t width = block_elements<From>;
  std::size_t i = 0;
  for (; i + width <= elements; i += width) {
    PLAIT_KERNEL_NO_UNROLL
    for (std::size_t j = i; j < i + width; ++j) {
      store_element(out, j, convert_element<From, To>(load_element<From>(in, j)));
    }
  }
  for (; i < elements; ++i) store_element(out, i, convert_element<From, To>(load_element<From>(in, i)));
}

template <class T, class R>
void combine_elements(const void* state, const std::byte* left, const std::byte* right, std::byte* out,
                      std::size_t elements) {
  const R& r = *static_cast<const R*>(state);
  if (left == right) {
    combine_self<T>(r, left, out, elements);
  } else if (out == left) {
    combine_into<T, true>(r, out, right, elements);
  } else if (out == right) {
    combine_into<T, false>(r, out, left, elements);
  } else {
    combine_disjoint<T>(r, left, right, out, elements);
  }
}

template <class T, class R>
void prepare_elements(const void* state, const std::byte* in, std::byte* out, std::size_t elements) {
  const R& r = *static_cast<const R*>(state);
  for (std::size_t i = 0; i < elements; ++i) store_element(out, i, r.prepare(load_element<T>(in, i)));
}

template <class T, class R>
void finish_elements(const void* state, std::byte* data, std::size_t elements, int ranks) {
  const R& r = *static_cast<const R*>(state);
  for (std::size_t i = 0; i < elements; ++i) store_element(data, i, r.finish(load_element<T>(data, i), ranks));
}

/// One shared instance of each stateless reduction, so that a kernel made from
/// a temporary plait::sum{} does not point at a dead object.
template <class R>
inline constexpr R stateless_instance{};

/// The kernel that reduces elements of type T with `r`. `r` must outlive the
/// kernel's use (a stateless reduction need not: the kernel points at a shared
/// instance). A type `r` does not accept is a compile error naming `r`.
template <class T, class Reduction>
reduction_kernel kernel_for(const Reduction& r) {
  check_reduction<Reduction, T>();
  reduction_kernel kernel;
  if constexpr (is_kernel_reduction_v<Reduction>) {
    kernel = r.kernel;  // the original element type's code and name included
    return kernel;
  } else if constexpr (reduction_accepts<Reduction, T>) {  // else check_reduction has already failed
    if constexpr (is_ordered_v<Reduction>) {
      kernel = kernel_for<T>(r.reduction);
      kernel.name = Reduction::name;
      kernel.ordered = true;
    } else if constexpr (is_accumulated_v<Reduction>) {
      using wide = typename Reduction::accumulator;
      kernel = kernel_for<wide>(r.reduction);
      kernel.name = Reduction::name;
      kernel.element_bytes = sizeof(T);
      kernel.to_wire = &convert_elements<T, wide>;
      kernel.from_wire = &convert_elements<wide, T>;
    } else {
      kernel.element_bytes = sizeof(T);
      if constexpr (std::is_empty_v<Reduction> && std::is_trivially_default_constructible_v<Reduction>) {
        kernel.state = &stateless_instance<Reduction>;
      } else {
        kernel.state = &r;
      }
      kernel.combine = &combine_elements<T, Reduction>;
      if constexpr (requires(const T& x) { r.prepare(x); }) kernel.prepare = &prepare_elements<T, Reduction>;
      if constexpr (requires(const T& x) { r.finish(x, 1); }) kernel.finish = &finish_elements<T, Reduction>;
      kernel.name = Reduction::name;
      kernel.wire_bytes = sizeof(T);
      kernel.commutative = is_commutative_v<Reduction>;
      if constexpr (is_value_index_v<T>) {
        kernel.floating = is_floating_v<decltype(T::value)>;
      } else {
        kernel.floating = is_floating_v<T>;
      }
    }
    kernel.element = element_code<T>;
  }
  return kernel;
}

/// `r` on elements of type T as a kernel_reduction: the same combines, on
/// any element type of T's size. Unordered reductions only (ordered<R>'s
/// exact left fold is a property of its type that the engine reads).
template <class T, class Reduction>
kernel_reduction<sizeof(T), is_commutative_v<Reduction>> kernel_reduction_for(const Reduction& r) {
  static_assert(!is_ordered_v<Reduction>, "plait: kernel_reduction_for takes unordered reductions");
  return {kernel_for<T>(r)};
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#undef PLAIT_KERNEL_NO_UNROLL

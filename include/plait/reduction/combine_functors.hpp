// A reduction's element work written once for every executor that runs it
// off the host kernel's loops: combine, prepare, finish and the widening
// conversions of plait::accumulate as element-wise functors, `__host__
// __device__` under nvcc and plain host code elsewhere. Work item i reads
// element i of each operand and writes element i of the result, so `out` may
// be `left` or `right` (as the host kernel allows) and neighbouring items
// touch neighbouring elements (coalesced on a GPU).
//
// Each functor calls the reduction itself (sum{}(a, b), avg{}.finish(x, P),
// ...): the same function the host kernel (reduction/kernel.hpp) calls per
// element, so a device combine gives the host's bits, ordered<...> included
// (the host kernel's vector path gives the per-element rule's bits too).
// Under nvcc that needs --expt-relaxed-constexpr (the reductions are
// constexpr host functions); plait::cuda adds it.
//
// The functors run under anything that calls f(i) for i in [0, n): a Thrust
// for_each on its CPP, OMP or CUDA back end, or the kernels of
// <plait/cuda/combine.cuh>. combine_with, prepare_with, finish_with and
// convert_with hand one to such a runner; element_work is a reduction's whole
// element work (as the host kernel has it) and work_table its table of
// launchers for an engine that folds on its device.
//
// Not included by <plait/plait.hpp>: PLAIT_HOST_DEVICE changes these
// definitions under nvcc, and nothing plait.hpp brings may do that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "plait/core/host_device.hpp"
#include "plait/reduction/kernel.hpp"
#include "plait/reduction/reductions.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// Element types a device combines: arithmetic types but long double (which
/// CUDA's device code does not have), std::byte, the 16-bit floats, and
/// value_index of those.
template <class T>
struct device_element : std::bool_constant<(std::is_arithmetic_v<T> && !std::is_same_v<T, long double>) ||
                                           std::is_same_v<T, std::byte> || is_float16_v<T>> {};
template <class T>
struct device_element<value_index<T>> : device_element<T> {};

/// Whether reduction R on elements of T can run on a device: every built-in
/// (ordered<...> and accumulate<...> of one too) on a device_element. A user
/// reduction's callable is host code.
template <class R, class T>
constexpr bool device_combinable() {
  if constexpr (!reduction_accepts<R, T>) {
    return false;
  } else if constexpr (is_ordered_v<R>) {
    return device_combinable<decltype(R::reduction), T>();
  } else if constexpr (is_accumulated_v<R>) {
    return device_element<T>::value && device_combinable<decltype(R::reduction), typename R::accumulator>();
  } else {
    return !is_user_reduction_v<R> && device_element<T>::value;
  }
}

/// Element i of an array of T: a plain load when the array is aligned for T
/// (the usual case), else bytes (a bundle's members lie end to end).
template <class T>
PLAIT_HOST_DEVICE T element_at(const std::byte* data, std::size_t i, bool aligned) {
  if (aligned) return reinterpret_cast<const T*>(data)[i];
  T value;
  memcpy(static_cast<void*>(&value), data + i * sizeof(T), sizeof(T));
  return value;
}

template <class T>
PLAIT_HOST_DEVICE void set_element(std::byte* data, std::size_t i, const T& value, bool aligned) {
  if (aligned) {
    reinterpret_cast<T*>(data)[i] = value;
  } else {
    memcpy(data + i * sizeof(T), static_cast<const void*>(&value), sizeof(T));
  }
}

/// Whether every pointer is aligned for T.
template <class T, class... Pointers>
bool aligned_for(const Pointers*... pointers) noexcept {
  return ((reinterpret_cast<std::uintptr_t>(pointers) % alignof(T) == 0) && ...);
}

/// out[i] = left[i] op right[i].
template <class T, class R>
struct combine_functor {
  R r;
  const std::byte* left;
  const std::byte* right;
  std::byte* out;
  bool aligned;
  PLAIT_HOST_DEVICE void operator()(std::size_t i) const {
    const T a = element_at<T>(left, i, aligned);
    const T b = element_at<T>(right, i, aligned);
    set_element<T>(out, i, r(a, b), aligned);
  }
};

/// out[i] = r.prepare(in[i]) (premul_sum's scale).
template <class T, class R>
struct prepare_functor {
  R r;
  const std::byte* in;
  std::byte* out;
  bool aligned;
  PLAIT_HOST_DEVICE void operator()(std::size_t i) const {
    set_element<T>(out, i, r.prepare(element_at<T>(in, i, aligned)), aligned);
  }
};

/// data[i] = r.finish(data[i], ranks) (avg's division).
template <class T, class R>
struct finish_functor {
  R r;
  std::byte* data;
  int ranks;
  bool aligned;
  PLAIT_HOST_DEVICE void operator()(std::size_t i) const {
    set_element<T>(data, i, r.finish(element_at<T>(data, i, aligned), ranks), aligned);
  }
};

/// out[i] = in[i] as To (plait::accumulate's widening and rounding back).
template <class From, class To>
struct convert_functor {
  const std::byte* in;
  std::byte* out;
  bool aligned;
  PLAIT_HOST_DEVICE void operator()(std::size_t i) const {
    set_element<To>(out, i, convert_element<From, To>(element_at<From>(in, i, aligned)), aligned);
  }
};

/// Hands `run` (called as run(n, functor)) the combine of `elements` elements of T.
template <class T, class R, class Run>
void combine_with(Run&& run, const R& r, const std::byte* left, const std::byte* right, std::byte* out,
                  std::size_t elements) {
  if (elements == 0) return;
  run(elements, combine_functor<T, R>{r, left, right, out, aligned_for<T>(left, right, out)});
}

template <class T, class R, class Run>
void prepare_with(Run&& run, const R& r, const std::byte* in, std::byte* out, std::size_t elements) {
  if (elements == 0) return;
  run(elements, prepare_functor<T, R>{r, in, out, aligned_for<T>(in, out)});
}

template <class T, class R, class Run>
void finish_with(Run&& run, const R& r, std::byte* data, std::size_t elements, int ranks) {
  if (elements == 0) return;
  run(elements, finish_functor<T, R>{r, data, ranks, aligned_for<T>(data)});
}

template <class From, class To, class Run>
void convert_with(Run&& run, const std::byte* in, std::byte* out, std::size_t elements) {
  if (elements == 0) return;
  run(elements, convert_functor<From, To>{in, out, aligned_for<From>(in) && aligned_for<To>(out)});
}

/// Reduction R's element work on elements of T, for a runner, as
/// kernel_for<T>(r) (reduction/kernel.hpp) gives it to the host: each
/// function reads the same `state` as the host kernel's (for ordered<> and
/// accumulate<>, the inner reduction: state_of finds it). ordered<R> is R's
/// work (the order is the schedule's); accumulate<Acc, R> is R's on Acc plus
/// the conversions. <plait/cuda/combine.cuh> launches these; the Thrust
/// tests run them on the CPU against the host kernel.
template <class T, class R>
struct element_work {
  static constexpr bool prepares = requires(const R& r, const T& x) { r.prepare(x); };
  static constexpr bool finishes = requires(const R& r, const T& x) { r.finish(x, 1); };
  static constexpr bool widened = false;
  static const void* state_of(const R& r) noexcept { return &r; }

  template <class Run>
  static void combine(Run&& run, const void* state, const std::byte* left, const std::byte* right, std::byte* out,
                      std::size_t elements) {
    combine_with<T>(run, *static_cast<const R*>(state), left, right, out, elements);
  }
  template <class Run>
  static void prepare(Run&& run, const void* state, const std::byte* in, std::byte* out, std::size_t elements) {
    if constexpr (prepares) prepare_with<T>(run, *static_cast<const R*>(state), in, out, elements);
  }
  template <class Run>
  static void finish(Run&& run, const void* state, std::byte* data, std::size_t elements, int ranks) {
    if constexpr (finishes) finish_with<T>(run, *static_cast<const R*>(state), data, elements, ranks);
  }
  template <class Run>
  static void to_wire(Run&& /*run*/, const std::byte* /*in*/, std::byte* /*out*/, std::size_t /*elements*/) {}
  template <class Run>
  static void from_wire(Run&& /*run*/, const std::byte* /*in*/, std::byte* /*out*/, std::size_t /*elements*/) {}
};

template <class T, class R>
struct element_work<T, ordered<R>> : element_work<T, R> {
  static const void* state_of(const ordered<R>& r) noexcept { return element_work<T, R>::state_of(r.reduction); }
};

template <class T, class Acc, class R>
struct element_work<T, accumulate<Acc, R>> : element_work<Acc, R> {
  static constexpr bool widened = true;
  static const void* state_of(const accumulate<Acc, R>& r) noexcept {
    return element_work<Acc, R>::state_of(r.reduction);
  }
  template <class Run>
  static void to_wire(Run&& run, const std::byte* in, std::byte* out, std::size_t elements) {
    convert_with<T, Acc>(run, in, out, elements);
  }
  template <class Run>
  static void from_wire(Run&& run, const std::byte* in, std::byte* out, std::size_t elements) {
    convert_with<Acc, T>(run, in, out, elements);
  }
};

/// The element type partials of R on T combine as, and the reduction that
/// combines them, as kernel_for<T>(r) (reduction/kernel.hpp) sets the host
/// kernel up: ordered<R> combines as R, accumulate<Acc, R> as R on Acc. The
/// kernel's `state` points at a `reduction`: a combine that runs without
/// the host kernel (the NVLink step kernel's combining receive) copies it
/// from there.
template <class T, class R>
struct wire_combine {
  using element = T;
  using reduction = R;
};
template <class T, class R>
struct wire_combine<T, ordered<R>> : wire_combine<T, R> {};
template <class T, class Acc, class R>
struct wire_combine<T, accumulate<Acc, R>> : wire_combine<Acc, R> {};

/// A table of R's element work on T for an engine that folds on its device
/// (device_reduction, reduction/kernel.hpp), each entry run by a Runner made
/// from the engine's stream pointer: `Runner run(stream)`, then run(n, f) per
/// functor, then run.status() (0: every launch went). plait/cuda/combine.cuh
/// makes these with a runner that launches CUDA kernels; the entries are set
/// as kernel_for<T>(r) sets the host kernel's functions.
template <class Runner, class T, class R>
struct work_launchers {
  using work = element_work<T, R>;
  static int combine(void* stream, const void* state, const std::byte* left, const std::byte* right, std::byte* out,
                     std::size_t elements) {
    Runner run(stream);
    work::combine(run, state, left, right, out, elements);
    return run.status();
  }
  static int prepare(void* stream, const void* state, const std::byte* in, std::byte* out, std::size_t elements) {
    Runner run(stream);
    work::prepare(run, state, in, out, elements);
    return run.status();
  }
  static int finish(void* stream, const void* state, std::byte* data, std::size_t elements, int ranks) {
    Runner run(stream);
    work::finish(run, state, data, elements, ranks);
    return run.status();
  }
  static int to_wire(void* stream, const std::byte* in, std::byte* out, std::size_t elements) {
    Runner run(stream);
    work::to_wire(run, in, out, elements);
    return run.status();
  }
  static int from_wire(void* stream, const std::byte* in, std::byte* out, std::size_t elements) {
    Runner run(stream);
    work::from_wire(run, in, out, elements);
    return run.status();
  }
};

template <class Runner, class T, class R>
inline constexpr device_reduction work_table = [] {
  using launch = work_launchers<Runner, T, R>;
  device_reduction d;
  d.combine = &launch::combine;
  if constexpr (element_work<T, R>::prepares) d.prepare = &launch::prepare;
  if constexpr (element_work<T, R>::finishes) d.finish = &launch::finish;
  if constexpr (element_work<T, R>::widened) {
    d.to_wire = &launch::to_wire;
    d.from_wire = &launch::from_wire;
  }
  return d;
}();

}  // namespace detail
}  // namespace v0
}  // namespace plait

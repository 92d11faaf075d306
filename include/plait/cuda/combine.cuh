// Device combines: the functors of <plait/reduction/combine_functors.hpp> as
// CUDA kernels on a stream, one thread per element (grid-stride, the
// launcher of pack.cuh), for reductions on device buffers. For each element
// type and reduction, reduction_kernel_for<T>(r) gives one static table of
// launchers (detail::device_reduction) of the element work that
// kernel_for<T>(r) gives the host (reduction/combine_functors.hpp's
// element_work): ordered<R> runs R's combine (the order is the schedule's,
// not the kernel's), accumulate<Acc, R> widens to Acc, combines there and
// rounds back. Nothing here synchronises the host; each launcher
// returns the launch status (CUB style) for the caller to raise.
//
// The NVLink transport's copy engine attaches these tables to the plans of
// reduce_scatter and all_reduce (op/fold_collective.hpp) and runs them on its
// stream, where the fold run (op/fold_run.hpp) asks it to combine.
#pragma once

#if !defined(__CUDACC__)
#error \
    "<plait/cuda/combine.cuh> holds CUDA kernels: compile this translation unit with nvcc (or include <plait/cuda.hpp>)"
#endif
#if !defined(__CUDACC_RELAXED_CONSTEXPR__)
#error \
    "<plait/cuda/combine.cuh>: the device combines call plait's constexpr reductions from device code: compile with --expt-relaxed-constexpr (linking plait::cuda adds it)"
#endif

#include <cuda_runtime.h>

#include <cstddef>

#include "plait/cuda/pack.cuh"
#include "plait/reduction/combine_functors.hpp"
#include "plait/reduction/kernel.hpp"

namespace plait {
inline namespace v0 {
namespace device {
namespace detail {

namespace reducing = ::plait::detail;

template <class T, class R>
using work = reducing::element_work<T, R>;

/// Launches each functor as a kernel on the stream; status() is the first launch error.
class stream_runner {
 public:
  explicit stream_runner(void* stream) : stream_(static_cast<cudaStream_t>(stream)) {}
  template <class Functor>
  void operator()(std::size_t n, Functor f) {
    launcher{stream_, &status_}(n, f);
  }
  [[nodiscard]] int status() const noexcept { return static_cast<int>(status_); }

 private:
  cudaStream_t stream_;
  cudaError_t status_ = cudaSuccess;
};

/// A runner that loads the kernel it would launch instead of launching it.
struct loader {
  cudaError_t* status;
  template <class Functor>
  void operator()(std::size_t /*n*/, Functor /*f*/) const {
    cudaFuncAttributes attributes{};
    const cudaError_t e = cudaFuncGetAttributes(&attributes, for_each_kernel<Functor>);
    if (*status == cudaSuccess) *status = e;
  }
};

}  // namespace detail

/// Always false: its instantiation names the reduction and the element type a device cannot combine.
template <class Reduction, class T>
inline constexpr bool combines_on_device = false;

/// The device launchers of `reduction` on elements of T (a static table; the
/// reduction value itself is read through the host kernel's `state`). A
/// reduction a device cannot run is a compile error naming what can.
template <class T, class Reduction>
const ::plait::detail::device_reduction* reduction_kernel_for(const Reduction& /*reduction*/) {
  if constexpr (::plait::detail::device_combinable<Reduction, T>()) {
    return &::plait::detail::work_table<detail::stream_runner, T, Reduction>;
  } else {
    static_assert(combines_on_device<Reduction, T>,
                  "plait: this reduction cannot combine device buffers (the instantiation below names it and the "
                  "element type): the built-ins (sum, prod, min, max, avg, premul_sum, logical_*, bit_*, minloc, "
                  "maxloc, and ordered<> or accumulate<> of them) combine on the device for arithmetic types (not "
                  "long double), std::byte, plait::half, plait::bfloat16 and value_index of those; a user reduction "
                  "(plait::reduction) or a class element type combines only on the host: reduce host buffers "
                  "(the shm or MPI transport, or the NVLink host emulation)");
    return nullptr;
  }
}

/// Loads the kernels reduction_kernel_for<T>(reduction) launches into the
/// current device's context now, so that their first launch does not load
/// them (with lazy loading, a load may wait for kernels already running).
template <class T, class Reduction>
cudaError_t preload_reduction(const Reduction& reduction) {
  cudaError_t status = cudaSuccess;
  if constexpr (::plait::detail::device_combinable<Reduction, T>()) {
    using w = detail::work<T, Reduction>;
    const detail::loader load{&status};
    const void* state = w::state_of(reduction);
    // One element from no memory: the loader runs nothing.
    w::combine(load, state, nullptr, nullptr, nullptr, 1);
    w::prepare(load, state, nullptr, nullptr, 1);
    w::finish(load, state, nullptr, 1, 1);
    w::to_wire(load, nullptr, nullptr, 1);
    w::from_wire(load, nullptr, nullptr, 1);
  }
  return status;
}

}  // namespace device
}  // namespace v0
}  // namespace plait

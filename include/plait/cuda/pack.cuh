// Device packing: plait::device::pack / unpack run the functors of
// <plait/layout/pack_functors.hpp> as CUDA kernels on the caller's stream.
// One thread per 1- to 16-byte chunk, consecutive threads on consecutive
// chunks (coalesced), 128-bit loads and stores whenever the region's
// alignment allows; grid-stride loops so any size fits one launch. Nothing
// here synchronises the host: the copy is ordered on `stream` like any other
// work, and the launch status is returned (CUB style) rather than thrown.
// The NVLink transport packs device blocks with these.
#pragma once

#if !defined(__CUDACC__)
#error "<plait/cuda/pack.cuh> holds CUDA kernels: compile this translation unit with nvcc (or include <plait/cuda.hpp>)"
#endif

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "plait/core/region.hpp"
#include "plait/layout/pack_functors.hpp"

namespace plait {
inline namespace v0 {
namespace device {
namespace detail {

template <class Functor>
__global__ void for_each_kernel(Functor f, std::size_t n) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) f(i);
}

/// Launches for_each_kernel on a stream and keeps the first launch error.
struct launcher {
  static constexpr unsigned threads = 256;
  // Enough blocks to fill any current GPU several times over; beyond that the
  // grid-stride loop does the rest with less launch overhead.
  static constexpr std::size_t max_blocks = 8192;

  cudaStream_t stream;
  cudaError_t* status;

  template <class Functor>
  void operator()(std::size_t n, Functor f) const {
    const std::size_t blocks = std::min<std::size_t>((n + threads - 1) / threads, max_blocks);
    for_each_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(f, n);
    const cudaError_t e = cudaGetLastError();
    if (*status == cudaSuccess) *status = e;
  }
};

}  // namespace detail

/// Gathers the runs of device region `src` into the contiguous device bytes
/// at `dst` (src.bytes() of them), ordered on `stream`. Returns the launch status.
inline cudaError_t pack(const region& src, std::byte* dst, cudaStream_t stream) {
  cudaError_t status = cudaSuccess;
  pack_with(detail::launcher{stream, &status}, src, dst);
  return status;
}

/// Scatters the contiguous device bytes at `src` into the runs of device
/// region `dst`, ordered on `stream`; bytes between runs are never written.
inline cudaError_t unpack(const std::byte* src, const region& dst, cudaStream_t stream) {
  cudaError_t status = cudaSuccess;
  unpack_with(detail::launcher{stream, &status}, src, dst);
  return status;
}

}  // namespace device
}  // namespace v0
}  // namespace plait

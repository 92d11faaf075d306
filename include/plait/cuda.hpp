// plait's CUDA side: device packing (plait::device::pack / unpack, kernels on
// the caller's stream), device combines for reductions on device buffers
// (plait/cuda/combine.cuh; needs nvcc's --expt-relaxed-constexpr, which
// plait::cuda adds) and the NVLink P2P transport
// (plait::nvlink::communicator, device buffers moved between GPUs of one node
// through CUDA IPC or peer access, ordered on a stream). CUDA code lives only behind this header so that
// <plait/plait.hpp> stays the same for every compiler (no inline function there
// changes with __CUDACC__).
#pragma once

#if !defined(__CUDACC__)
#error "<plait/cuda.hpp> needs nvcc: compile this translation unit as CUDA (a .cu file, or -x cu)"
#endif

#include "plait/cuda/combine.cuh"
#include "plait/cuda/nvlink_device_ops.cuh"
#include "plait/cuda/pack.cuh"
#include "plait/layout/pack_functors.hpp"

// PLAIT_HOST_DEVICE: `__host__ __device__` under nvcc, nothing elsewhere, for
// code that runs on both sides (the pack functors, the NVLink protocol's
// flag and step arithmetic).
//
// Not included by <plait/plait.hpp>: what it marks changes definition under
// nvcc, and nothing plait.hpp brings may do that.
#pragma once

#if defined(__CUDACC__)
#define PLAIT_HOST_DEVICE __host__ __device__
#else
#define PLAIT_HOST_DEVICE
#endif

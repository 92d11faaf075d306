// plait-test-labels: quick
// plait-test-needs: cuda openmp
// Device-packing functors run by Thrust's OpenMP back end (parallel, in any
// order) under the host compiler; only CCCL's headers are used from the CUDA
// toolkit.
#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_OMP
#define PACK_BACKEND_NAME "OMP"
#include "support/pack_thrust_body.hpp"

static_assert(THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP);

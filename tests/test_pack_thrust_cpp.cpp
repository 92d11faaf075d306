// plait-test-labels: quick
// plait-test-needs: cuda
// Device-packing functors run by Thrust's CPP (sequential host) back end under
// the host compiler; only CCCL's headers are used from the CUDA toolkit.
#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_CPP
#define PACK_BACKEND_NAME "CPP"
#include "support/pack_thrust_body.hpp"

static_assert(THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CPP);

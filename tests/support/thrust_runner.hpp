// Runs an element functor over [0, n) with thrust::for_each on the Thrust
// device system that the including file picked (THRUST_DEVICE_SYSTEM, CPP or
// OMP, defined before this header): how the CPU-backend tests run the very
// functors that plait's CUDA kernels launch.
#pragma once

#include <cstddef>

#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

namespace plait_test {

struct thrust_runner {
  template <class Functor>
  void operator()(std::size_t n, Functor f) const {
    thrust::for_each(thrust::device, thrust::counting_iterator<std::size_t>(0),
                     thrust::counting_iterator<std::size_t>(n), f);
  }
};

}  // namespace plait_test

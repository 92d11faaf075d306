// plait: collective operations composed from a transport, an algorithm and a
// data layout. This header brings the core, the shared-memory transport, every
// algorithm, every layout, the reduction values and the operations.
#pragma once

#include "plait/version.hpp"

#include "plait/core/call_stamp.hpp"
#include "plait/core/communicator_core.hpp"
#include "plait/core/config.hpp"

#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/progress_engine.hpp"
#include "plait/core/region.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/views.hpp"

#include "plait/algorithm/algorithm_id.hpp"
#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/hierarchical.hpp"
#include "plait/algorithm/registry.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/algorithm/select.hpp"
#include "plait/algorithm/verify.hpp"

#include "plait/layout/along.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/layout.hpp"
#include "plait/layout/redistribute.hpp"

#include "plait/reduction/float16.hpp"
#include "plait/reduction/reductions.hpp"

#include "plait/op/all_gather.hpp"
#include "plait/op/all_gather_v.hpp"
#include "plait/op/all_reduce.hpp"
#include "plait/op/all_to_all.hpp"
#include "plait/op/all_to_all_v.hpp"
#include "plait/op/check.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/exchange_counts.hpp"
#include "plait/op/execute.hpp"
#include "plait/op/executor.hpp"
#include "plait/op/hierarchical.hpp"
#include "plait/op/in_flight.hpp"
#include "plait/op/nonblocking.hpp"
#include "plait/op/persistent.hpp"
#include "plait/op/progress_thread.hpp"
#include "plait/op/reduce_scatter.hpp"
#include "plait/op/request.hpp"
#include "plait/op/split_all_gather.hpp"

#include "plait/levels/two_level.hpp"
#include "plait/transport/shm/allocator.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/run.hpp"

// Last: in compiled mode, the template instances the compiled core holds
// (extern template declarations; nothing header-only). The core itself
// includes the list at the end of <plait/src.hpp>, as definitions.
#if !defined(PLAIT_COMPILING_CORE)
#include "plait/shm_instances.hpp"
#endif

// plait's compiled core: include this in exactly one source file of a project
// that defines PLAIT_SEPARATE_COMPILATION everywhere (plait::compiled in CMake
// does both). It defines the non-template functions the headers declare and
// instantiates the common templates once. See plait/core/config.hpp.
#pragma once

#if !defined(PLAIT_SEPARATE_COMPILATION)
// The compiled core needs PLAIT_SEPARATE_COMPILATION for the whole project
// (plait::compiled in CMake defines it).
#error "plait: <plait/src.hpp> needs PLAIT_SEPARATE_COMPILATION"
#endif
#if defined(PLAIT_EXTERN_TEMPLATE)
#error "plait: include <plait/src.hpp> before any other plait header in the file that compiles the core"
#endif
#define PLAIT_COMPILING_CORE

#include "plait/plait.hpp"

// ---- core --------------------------------------------------------------
#include "plait/core/impl/backoff.ipp"
#include "plait/core/impl/blame.ipp"
#include "plait/core/impl/call_stamp.ipp"
#include "plait/core/impl/communicator_core.ipp"
#include "plait/core/impl/cost_model.ipp"
#include "plait/core/impl/environment.ipp"
#include "plait/core/impl/error.ipp"
#include "plait/core/impl/overlap.ipp"
#include "plait/core/impl/progress_engine.ipp"
#include "plait/core/impl/region.ipp"
#include "plait/core/impl/scratch.ipp"
#include "plait/core/impl/stream_copy.ipp"
#include "plait/core/impl/timeout.ipp"

// ---- layout ------------------------------------------------------------
#include "plait/layout/impl/along.ipp"
#include "plait/layout/impl/bundle_plan.ipp"
#include "plait/layout/impl/tensor_plans.ipp"

// ---- algorithm ---------------------------------------------------------
#include "plait/algorithm/impl/algorithm_id.ipp"
#include "plait/algorithm/impl/automatic.ipp"
#include "plait/algorithm/impl/select.ipp"
#include "plait/algorithm/impl/verify.ipp"

// ---- op ----------------------------------------------------------------
#include "plait/op/impl/abandon.ipp"
#include "plait/op/impl/check.ipp"
#include "plait/op/impl/collective.ipp"
#include "plait/op/impl/executor.ipp"
#include "plait/op/impl/fold_collective.ipp"
#include "plait/op/impl/hierarchical.ipp"
#include "plait/op/impl/request.ipp"
#include "plait/op/impl/slot_run.ipp"
#include "plait/op/impl/split_all_gather.ipp"

// ---- transport ---------------------------------------------------------
#include "plait/levels/impl/two_level.ipp"

// ---- transport/shm -----------------------------------------------------
#include "plait/transport/shm/impl/chunk_channel.ipp"
#include "plait/transport/shm/impl/communicator.ipp"
#include "plait/transport/shm/impl/group.ipp"
#include "plait/transport/shm/impl/liveness.ipp"
#include "plait/transport/shm/impl/memory_resource.ipp"
#include "plait/transport/shm/impl/pieces.ipp"
#include "plait/transport/shm/impl/run.ipp"
#include "plait/transport/shm/impl/segment.ipp"
#include "plait/transport/shm/impl/shared_buffer.ipp"
#include "plait/transport/shm/impl/shared_slots.ipp"
#include "plait/transport/shm/impl/single_copy.ipp"
#include "plait/transport/shm/impl/tuning.ipp"

// ---- transport/nvlink: its wire records (the protocol is header-only) ---
#include "plait/transport/nvlink/impl/records.ipp"

// ---- template instances for the shm transport (see plait/core/config.hpp)
#include "plait/shm_instances.hpp"  // the list, as explicit instantiation definitions

// The common template instances for the shared-memory transport, in one list:
// the executor for every block plan the built-in layouts make, check mode's
// exchange, and the schedule for every built-in algorithm (and automatic) and
// operation it schedules. In compiled mode (PLAIT_SEPARATE_COMPILATION, see
// plait/core/config.hpp) users' files see the list as `extern template`
// declarations and do not instantiate these, which is most of the code a
// collective compiles; <plait/src.hpp> includes the list once more, last, as
// the explicit instantiation definitions. Header-only, it declares nothing.
//
// None of these function templates may be declared inline or constexpr: an
// extern template declaration does not stop the compiler from instantiating
// those (to inline them).
#pragma once

#include "plait/core/config.hpp"

#if defined(PLAIT_SEPARATE_COMPILATION)

#include <cstddef>
#include <string_view>

#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/registry.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/algorithm/select.hpp"
#include "plait/core/operation.hpp"
#include "plait/layout/contiguous_plans.hpp"
#include "plait/layout/tensor_plans.hpp"
#include "plait/op/check.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/execute.hpp"
#include "plait/op/split_all_gather.hpp"
#include "plait/transport/shm/communicator.hpp"

namespace plait {
inline namespace v0 {

// The executor, per block plan: contiguous and tensor layouts (along<D> and
// redistribute<S, C> make the tensor plans, which are not templates) and the
// pieces of split_all_gather.
PLAIT_EXTERN_TEMPLATE void execute<shm::communicator, detail::gather_plan>(shm::communicator&, const schedule&,
                                                                           const detail::gather_plan&, std::string_view,
                                                                           int);
PLAIT_EXTERN_TEMPLATE void execute<shm::communicator, detail::exchange_plan>(shm::communicator&, const schedule&,
                                                                             const detail::exchange_plan&,
                                                                             std::string_view, int);
PLAIT_EXTERN_TEMPLATE void execute<shm::communicator, detail::tensor_gather_plan>(shm::communicator&, const schedule&,
                                                                                  const detail::tensor_gather_plan&,
                                                                                  std::string_view, int);
PLAIT_EXTERN_TEMPLATE void execute<shm::communicator, detail::tensor_exchange_plan>(shm::communicator&, const schedule&,
                                                                                    const detail::tensor_exchange_plan&,
                                                                                    std::string_view, int);
PLAIT_EXTERN_TEMPLATE void execute<shm::communicator, detail::region_gather_plan>(shm::communicator&, const schedule&,
                                                                                  const detail::region_gather_plan&,
                                                                                  std::string_view, int);

namespace detail {

// Check mode, per block plan and operation.
PLAIT_EXTERN_TEMPLATE void check_call<shm::communicator, gather_plan, op::all_gather>(shm::communicator&,
                                                                                      const gather_plan&,
                                                                                      op::all_gather, std::string_view,
                                                                                      call_signature);
PLAIT_EXTERN_TEMPLATE void check_call<shm::communicator, exchange_plan, op::all_to_all>(
    shm::communicator&, const exchange_plan&, op::all_to_all, std::string_view, call_signature);
PLAIT_EXTERN_TEMPLATE void check_call<shm::communicator, tensor_gather_plan, op::all_gather>(
    shm::communicator&, const tensor_gather_plan&, op::all_gather, std::string_view, call_signature);
PLAIT_EXTERN_TEMPLATE void check_call<shm::communicator, tensor_exchange_plan, op::all_to_all>(
    shm::communicator&, const tensor_exchange_plan&, op::all_to_all, std::string_view, call_signature);

// The automatic choice (its remembered choices live in the core).
PLAIT_EXTERN_TEMPLATE choice automatic_choice<automatic, op::all_gather, shm::communicator>(int, int, std::size_t);
PLAIT_EXTERN_TEMPLATE choice automatic_choice<automatic, op::all_to_all, shm::communicator>(int, int, std::size_t);

// Schedules, per algorithm and operation it schedules: the remembered one
// that collectives use and plan_schedule that split_all_gather uses.
#define PLAIT_SHM_SCHEDULE_INSTANCES(A, Op)                                                                           \
  PLAIT_EXTERN_TEMPLATE const planned_schedule& remembered_schedule<A, Op, shm::communicator>(int, int, std::size_t); \
  PLAIT_EXTERN_TEMPLATE planned_schedule plan_schedule<A, Op, shm::communicator>(int, int, std::size_t)

PLAIT_SHM_SCHEDULE_INSTANCES(automatic, op::all_gather);
PLAIT_SHM_SCHEDULE_INSTANCES(automatic, op::all_to_all);
// Every registered algorithm with both operations (algorithm/registry.hpp): a
// pair without a schedule instantiates plan_schedule's one-line refusal.
#define PLAIT_SHM_SCHEDULE_INSTANCES_OF(A)         \
  PLAIT_SHM_SCHEDULE_INSTANCES(A, op::all_gather); \
  PLAIT_SHM_SCHEDULE_INSTANCES(A, op::all_to_all);
PLAIT_BUILT_IN_ALGORITHMS(PLAIT_SHM_SCHEDULE_INSTANCES_OF)
#undef PLAIT_SHM_SCHEDULE_INSTANCES_OF

#undef PLAIT_SHM_SCHEDULE_INSTANCES

}  // namespace detail
}  // namespace v0
}  // namespace plait

#endif  // PLAIT_SEPARATE_COMPILATION

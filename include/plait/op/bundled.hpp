// The engine behind bundles (op/bundle.hpp): every member gets its own block
// plan from the layout, as if it were moved alone; the plans become one
// bundle_plan (layout/bundle_plan.hpp) and the algorithm's schedule is
// expanded so that each message carries every member's blocks. One schedule,
// one tag, one message per (step, peer): the latency of one collective.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "plait/algorithm/select.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/overlap.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/bundle_plan.hpp"
#include "plait/layout/layout.hpp"
#include "plait/layout/tensor_plans.hpp"
#include "plait/layout/uneven_plans.hpp"
#include "plait/op/bundle.hpp"
#include "plait/op/check.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/executor.hpp"
#include "plait/op/stamp.hpp"
#include "plait/op/uneven.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// The schedule of `planned` expanded for `Members` members, remembered per
/// thread as remembered_schedule remembers schedules (a repeated call builds
/// nothing).
template <class Algorithm, class Op, class Transport, int Members>
const schedule& remembered_expansion(const planned_schedule& planned, int rank, int size, std::size_t block_bytes) {
  struct entry {
    int rank = -1;
    int size = 0;
    std::size_t block_bytes = 0;
    schedule wide;
  };
  thread_local std::array<entry, 4> known;
  thread_local std::size_t next = 0;
  for (entry& e : known) {
    if (e.size == size && e.rank == rank && e.block_bytes == block_bytes) return e.wide;
  }
  entry& slot = known[next++ % known.size()];
  slot = {rank, size, block_bytes, expand_for_members(planned.steps, Members)};
  return slot.wide;
}

/// True when every member of the bundle is a tensor view, or every member a 1-D range.
template <class Bundle, std::size_t... I>
constexpr bool members_alike(std::index_sequence<I...>) {
  constexpr bool tensors =
      (mdspan_like<std::remove_cvref_t<decltype(std::declval<Bundle&>().template get<I>())>> && ...);
  constexpr bool ranges =
      (!mdspan_like<std::remove_cvref_t<decltype(std::declval<Bundle&>().template get<I>())>> && ...);
  return tensors || ranges;
}

template <class Send, class Recv>
constexpr void check_bundle_pair() {
  static_assert(is_bundle<Send> && is_bundle<Recv>,
                "plait: when one side is a plait::bundle the other must be one too (in_place does not combine with "
                "bundles)");
  if constexpr (is_bundle<Send> && is_bundle<Recv>) {
    static_assert(Send::size == Recv::size, "plait: send and recv bundles must have the same number of members");
    static_assert(members_alike<Send>(std::make_index_sequence<Send::size>{}) &&
                      members_alike<Recv>(std::make_index_sequence<Recv::size>{}),
                  "plait: bundle members are all 1-D ranges or all tensor views, not a mix");
  }
}

template <class Bundle, std::size_t... I>
auto members_element_of(std::index_sequence<I...>) -> element_pack<
    typename element_of<std::remove_cvref_t<decltype(std::declval<Bundle&>().template get<I>())>>::type...>;
/// The element types of a bundle's members, for its call stamp.
template <class Bundle>
using members_element = decltype(members_element_of<Bundle>(std::make_index_sequence<Bundle::size>{}));

/// A bundle's collective of Op on Transport with Algorithm and Layout.
template <class Op, class Transport, class Algorithm, class Layout>
struct bundled_collective {
  static_assert(check_policies<Op, Transport, Algorithm, Layout>());

  /// all_gather / all_to_all of bundles. `launch` gets the planned schedule
  /// (run_now runs it at once).
  template <class Send, class Recv, class Launch = run_now>
  static void even(Transport& comm, Send& send, Recv& recv, Launch&& launch = {}) {
    check_bundle_pair<Send, Recv>();
    const call_site at{comm.rank(), comm.size(), requested_label<Op, Algorithm, false>()};
    auto plan = members_plan(at, send, recv, std::make_index_sequence<Send::size>{});
    members_apart(at, send, recv, std::make_index_sequence<Send::size>{});
    run<false>(comm, plan, plan.combined_block_bytes(at.rank), send, recv, launch);
  }

  /// all_gather_v of bundles: the same counts for every member.
  template <class Send, class Recv, class Counts, class Launch = run_now>
  static void gather_v(Transport& comm, Send& send, Recv& recv, const Counts& counts, Launch&& launch = {}) {
    check_bundle_pair<Send, Recv>();
    const call_site at{comm.rank(), comm.size(), requested_label<Op, Algorithm, true>()};
    auto plan = members_v_plan(at, send, recv, counts, std::make_index_sequence<Send::size>{});
    members_apart(at, send, recv, std::make_index_sequence<Send::size>{});
    std::size_t largest = 0;
    for (int j = 0; j < comm.size(); ++j) largest = std::max(largest, plan.combined_block_bytes(j));
    run<true>(comm, plan, largest, send, recv, launch);
  }

  /// all_to_all_v of bundles: the same counts for every member.
  template <class Send, class SendCounts, class Recv, class RecvCounts, class Launch = run_now>
  static void exchange_v(Transport& comm, Send& send, const SendCounts& send_counts, Recv& recv,
                         const RecvCounts& recv_counts, Launch&& launch = {}) {
    check_bundle_pair<Send, Recv>();
    const operation_label& label = requested_label<Op, Algorithm, true>();
    const call_site at{comm.rank(), comm.size(), label};
    auto plan = members_exchange_plan(at, send, send_counts, recv, recv_counts, std::make_index_sequence<Send::size>{});
    members_apart(at, send, recv, std::make_index_sequence<Send::size>{});
    if (!skips_count_exchange<Algorithm, Op, Transport>(comm.rank(), comm.size()) || check_mode(comm)) {
      learn_sizes(comm, plan, label, std::make_index_sequence<Send::size>{});
    }
    // Blocks whose size this rank does not know (no count exchange) count as 0.
    std::size_t largest = 0;
    for (int b = 0; b < Op::blocks(comm.size()); ++b) {
      largest = std::max(largest, plan.combined_block_bytes(b));
    }
    run<true>(comm, plan, largest, send, recv, launch);
  }

 private:
  /// check_members_apart on the members' views, after their plans (which
  /// check each view alone: null, overflow, a recv that names an element twice).
  template <class Send, class Recv, std::size_t... I>
  static void members_apart(const call_site& at, Send& send, Recv& recv, std::index_sequence<I...>) {
    if constexpr (sizeof...(I) > 1) {
      const auto sends = std::make_tuple(to_box(as_tensor(send.template get<I>()), at, "send")...);
      const auto recvs = std::make_tuple(to_box(as_tensor(recv.template get<I>()), at, "recv")...);
      const std::array<strided_set, sizeof...(I)> send_sets{elements_of(std::get<I>(sends))...};
      const std::array<strided_set, sizeof...(I)> recv_sets{elements_of(std::get<I>(recvs))...};
      check_members_apart(at, send_sets.data(), recv_sets.data(), sizeof...(I));
    }
  }
  template <class Send, class Recv, std::size_t... I>
  static auto members_plan(const call_site& at, Send& send, Recv& recv, std::index_sequence<I...>) {
    return bundle_plan<decltype(make_plan(Layout{}, Op{}, at, send.template get<I>(), recv.template get<I>()))...>(
        make_plan(Layout{}, Op{}, at, send.template get<I>(), recv.template get<I>())...);
  }
  template <class Send, class Recv, class Counts, std::size_t... I>
  static auto members_v_plan(const call_site& at, Send& send, Recv& recv, const Counts& counts,
                             std::index_sequence<I...>) {
    return bundle_plan<decltype(make_v_plan(Layout{}, Op{}, at, send.template get<I>(), recv.template get<I>(),
                                            counts))...>(
        make_v_plan(Layout{}, Op{}, at, send.template get<I>(), recv.template get<I>(), counts)...);
  }
  template <class Send, class SendCounts, class Recv, class RecvCounts, std::size_t... I>
  static auto members_exchange_plan(const call_site& at, Send& send, const SendCounts& send_counts, Recv& recv,
                                    const RecvCounts& recv_counts, std::index_sequence<I...>) {
    return bundle_plan<decltype(make_v_plan(Layout{}, Op{}, at, send.template get<I>(), send_counts,
                                            recv.template get<I>(), recv_counts))...>(
        make_v_plan(Layout{}, Op{}, at, send.template get<I>(), send_counts, recv.template get<I>(), recv_counts)...);
  }
  /// Each member learns every block's size (one count exchange per member:
  /// their units differ).
  template <class Plan, std::size_t... I>
  static void learn_sizes(Transport& comm, Plan& plan, std::string_view label, std::index_sequence<I...>) {
    (exchange_block_sizes(comm, plan.template member<I>(), label), ...);
  }

  /// Check mode, member by member: each member's call signature and blocks
  /// (one signature exchange per member; check mode is off by default).
  template <class Plan, class Send, class Recv, std::size_t... I>
  static void check_members(Transport& comm, const planned_schedule& planned, const Plan& plan, Send& send, Recv& recv,
                            std::string_view operation, std::index_sequence<I...>) {
    (collective<Op, Transport, Algorithm, Layout>::check(comm, planned, plan.template member<I>(),
                                                         send.template get<I>(), recv.template get<I>(), operation,
                                                         operation == Op::name),
     ...);
  }

  template <bool Uneven, class Plan, class Send, class Recv, class Launch>
  static void run(Transport& comm, const Plan& plan, std::size_t largest, Send& send, Recv& recv, Launch& launch) {
    const planned_schedule& planned = remembered_schedule<Algorithm, Op, Transport>(comm.rank(), comm.size(), largest);
    const schedule& wide =
        remembered_expansion<Algorithm, Op, Transport, Plan::members>(planned, comm.rank(), comm.size(), largest);
    if (check_mode(comm)) {
      check_members(comm, planned, plan, send, recv, Uneven ? std::string_view(Op::v_name) : std::string_view(Op::name),
                    std::make_index_sequence<Plan::members>{});
    }
    launch_planned<Op, Layout, Algorithm, Uneven, members_element<Recv>>(comm, planned, wide, plan, launch);
  }
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

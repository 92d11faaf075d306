// The engine behind the uneven collectives (all_gather_v, all_to_all_v): the
// same compile-time checks, schedules and executor as the even forms, with
// block plans whose blocks have the counts' sizes (layout/uneven_plans.hpp).
//
// automatic chooses by the largest block, the same on every rank: an
// all-gather's recv_counts are known everywhere; an all-to-all's are not, so
// all_to_all_v first exchanges every rank's counts (one small all-gather of
// 2P numbers per rank, control traffic) whenever it needs them: for
// automatic (but on two ranks, where its choice does not depend on the
// sizes), for schedules that may forward blocks between other ranks (Bruck:
// a forwarding rank must know a block's size; any algorithm that does not
// declare `forwards_blocks = false`, ring included) and in check mode, which
// also checks that rank i's send count to j equals rank j's receive count
// from i. pairwise and direct declare that they move each block straight
// from its source to its destination and skip the exchange; there the
// transports' exact receive sizes catch disagreeing counts.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/algorithm/ring.hpp"
#include "plait/algorithm/select.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/contiguous_plans.hpp"
#include "plait/layout/layout.hpp"
#include "plait/layout/uneven_plans.hpp"
#include "plait/op/check.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/execute.hpp"
#include "plait/op/stamp.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// Whether schedules of A move every all-to-all block straight from its
/// source to its destination, so no rank needs the size of a block it
/// neither sends nor receives: the algorithm says so with
/// `static constexpr bool forwards_blocks = false`.
template <class A>
inline constexpr bool moves_blocks_directly = requires {
  requires !A::forwards_blocks;
};

/// Whether an all_to_all_v with Algorithm on `size` ranks may skip the count
/// exchange outside check mode, the same answer on every rank: pairwise and
/// direct always; automatic on two ranks when its choice is the same for an
/// empty block and a huge one. Two ranks have no third to forward through,
/// and there the model's costs are linear in the block size, so the choice
/// at both ends is the choice for every size: every rank picks it without
/// knowing the others' counts. (The exchange costs a collective's latency:
/// 0.71-0.74x MPI_Alltoallv at 4 KiB with it, 1.17x without;
/// docs/performance.md.)
template <class Algorithm, class Op, class Transport>
bool skips_count_exchange(int rank, int size) {
  if constexpr (moves_blocks_directly<Algorithm>) {
    return true;
  } else if constexpr (is_automatic<Algorithm>) {
    if (size > 2) return false;
    // The model's choices (a transport's shared slots aside: they take
    // direct by block size, which both ranks of two know alike, see
    // exchange_v_one).
    return automatic_choice<Algorithm, Op, Transport>(rank, size, 0).id ==
           automatic_choice<Algorithm, Op, Transport>(rank, size, std::size_t{1} << 40).id;
  } else {
    return false;
  }
}

/// Every rank's row of (bytes sent to each rank, bytes expected from each
/// rank) reaches every rank; every pair is checked on every rank, so ranks
/// whose counts disagree all fail together (errc::size_mismatch naming both),
/// before any payload moves. Then `plan` knows every block's size.
template <class Comm>
void exchange_block_sizes(Comm& comm, exchange_v_plan& plan, std::string_view operation) {
  const auto p = static_cast<std::size_t>(comm.size());
  const std::vector<std::uint64_t> mine = plan.own_counts();
  std::vector<std::uint64_t> rows(2 * p * p);
  const auto own = std::as_bytes(std::span(mine));
  const auto all = std::as_writable_bytes(std::span(rows));
  if constexpr (exchanges_control<Comm>) {
    comm.exchange_control(own, all);  // a device transport: host records its own way
  } else {
    const gather_plan gather(own, all, own.size(), comm.rank(), false);
    const std::uint64_t before = comm.bytes_sent();
    execute(comm, ring::plan(op::all_gather{}, comm.rank(), comm.size()), gather, "count exchange",
            take_tag(comm, call_stamp::of(call_kind::control, "counts")));
    if constexpr (discounts_control_bytes<Comm>) comm.discount_control_bytes(comm.bytes_sent() - before);
  }
  std::vector<std::size_t> sizes(p * p);
  for (std::size_t s = 0; s < p; ++s) {
    for (std::size_t d = 0; d < p; ++d) {
      const std::uint64_t sent = rows[s * 2 * p + d];
      const std::uint64_t expected = rows[d * 2 * p + p + s];
      if (sent != expected) {
        fail(errc::size_mismatch,
             {"rank ", s, " sends ", sent, " bytes to rank ", d, ", but rank ", d, " expects ", expected, " from rank ",
              s, ": send_counts and recv_counts disagree"},
             {comm.rank(), operation, -1, static_cast<int>(s == static_cast<std::size_t>(comm.rank()) ? d : s)});
      }
      sizes[s * p + d] = static_cast<std::size_t>(sent);
    }
  }
  plan.set_block_sizes(std::move(sizes));
}

/// The uneven collective of Op on Transport with Algorithm and Layout.
template <class Op, class Transport, class Algorithm, class Layout>
struct uneven_collective {
  static_assert(check_policies<Op, Transport, Algorithm, Layout>());

  [[nodiscard]] static call_site site(const Transport& comm) {
    return {comm.rank(), comm.size(), requested_label<Op, Algorithm, true>()};
  }

  /// Runs `plan`, whose largest block (the same on every rank) is `largest` bytes.
  /// `launch` gets the planned schedule (run_now runs it at once).
  template <class Plan, class Send, class Recv, class Launch = run_now>
  static void run(Transport& comm, Plan& plan, std::size_t largest, const Send& send, const Recv& recv,
                  Launch&& launch = {}) {
    if constexpr (std::is_same_v<Plan, exchange_v_plan>) {
      if (!skips_count_exchange<Algorithm, Op, Transport>(comm.rank(), comm.size()) || check_mode(comm)) {
        exchange_block_sizes(comm, plan, requested_label<Op, Algorithm, true>());
        largest = 0;
        for (int b = 0; b < Op::blocks(comm.size()); ++b) largest = std::max(largest, plan.block_bytes(b));
      }
    }
    const planned_schedule& planned = remembered_schedule<Algorithm, Op, Transport>(comm.rank(), comm.size(), largest);
    if (check_mode(comm)) {
      collective<Op, Transport, Algorithm, Layout>::check(comm, planned, plan, send, recv, Op::v_name, false);
    }
    launch_planned<Op, Layout, Algorithm, true, typename element_of<std::remove_cvref_t<Recv>>::type>(
        comm, planned, planned.steps, plan, launch);
  }
};

/// The uneven form of one member (not a bundle) of an operation whose v form
/// takes the receive counts only (all_gather_v): block j is rank j's part.
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class Counts,
          class Launch = run_now>
void gather_v_one(Comm& comm, Send&& send, Recv&& recv, const Counts& recv_counts, Launch&& launch = {}) {
  using engine = uneven_collective<Op, Comm, Algorithm, Layout>;
  const call_site at = engine::site(comm);
  // Unqualified: argument-dependent lookup finds every layout's make_v_plan.
  auto plan = make_v_plan(Layout{}, Op{}, at, std::forward<Send>(send), std::forward<Recv>(recv), recv_counts);
  std::size_t largest = 0;
  for (int j = 0; j < comm.size(); ++j) largest = std::max(largest, plan.block_bytes(j));
  engine::run(comm, plan, largest, send, recv, launch);
}

/// The uneven form of one member of an operation whose v form takes send and
/// receive counts (all_to_all_v): block (s, d) travels from rank s to rank d.
template <class Op, class Algorithm, class Layout, class Comm, class Send, class SendCounts, class Recv,
          class RecvCounts, class Launch = run_now>
void exchange_v_one(Comm& comm, Send&& send, const SendCounts& send_counts, Recv&& recv, const RecvCounts& recv_counts,
                    Launch&& launch = {}) {
  using engine = uneven_collective<Op, Comm, Algorithm, Layout>;
  const call_site at = engine::site(comm);
  auto plan =
      make_v_plan(Layout{}, Op{}, at, std::forward<Send>(send), send_counts, std::forward<Recv>(recv), recv_counts);
  // This rank's largest block; the engine replaces it by every rank's when
  // automatic needs one number for all ranks. On two ranks without that
  // exchange, the blocks between them decide (both ranks know both; the own
  // block stays local): automatic's choice of the shared slots by size then
  // agrees.
  std::size_t largest = 0;
  for (int j = 0; j < comm.size(); ++j) {
    if (j == comm.rank() && comm.size() == 2) continue;
    largest = std::max({largest, plan.block_bytes(Op::block(comm.rank(), j, comm.size())),
                        plan.block_bytes(Op::block(j, comm.rank(), comm.size()))});
  }
  engine::run(comm, plan, largest, send, recv, launch);
}

/// The static_assert every v-form runs on its counts argument.
template <class Counts>
constexpr void check_counts_type() {
  static_assert(count_range<Counts>,
                "plait: counts must be a contiguous range of an integral type, one count per rank "
                "(std::vector<int>, std::array<std::int64_t, P>, std::span<const std::size_t>, ...)");
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

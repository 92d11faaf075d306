// Collectives on a plait::two_level communicator: hierarchical<Inner, Outer>
// runs one collective per level (Outer over inter, Inner over intra), each
// an ordinary nonblocking collective of that level awaited by a coroutine
// body (op/staged.hpp), so one body serves the blocking, nonblocking and
// persistent forms; automatic chooses between that and a flat collective
// over the whole communicator, when the object has one
// (plait::mpi::node_levels: world()). Every form (op/forms.hpp) comes here
// for a two_level communicator. Steps, bytes and messages on each level:
// docs/hierarchical.md.
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/hierarchical.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/algorithm/select.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/along.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/redistribute.hpp"
#include "plait/levels/two_level.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/dispatch.hpp"
#include "plait/op/hierarchical_state.hpp"
#include "plait/op/launch.hpp"
#include "plait/op/request.hpp"
#include "plait/op/staged.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// Always false, as has_schedule_for (algorithm/select.hpp), for the level
/// whose algorithm cannot run the operation.
template <class Inner, class Op, class WorksWith>
inline constexpr bool inner_level_has_schedule_for = false;
template <class Outer, class Op, class WorksWith>
inline constexpr bool outer_level_has_schedule_for = false;

/// Compile-time check of hierarchical<Inner, Outer> for Op: one message
/// naming the level whose algorithm cannot serve it.
template <class H, class Op>
consteval bool check_hierarchical_levels() {
  using Inner = typename H::inner;
  using Outer = typename H::outer;
  if constexpr (is_hierarchical<Inner> || is_hierarchical<Outer>) {
    static_assert(dependent_false<H>,
                  "plait: hierarchical<Inner, Outer> has two levels only: Inner and Outer are algorithms of one "
                  "level each (ring, pairwise, direct, ..., automatic), not hierarchical<...>");
  } else if constexpr (!algorithm<Inner> || !algorithm<Outer>) {
    static_assert(dependent_false<H>,
                  "plait: hierarchical<Inner, Outer>: Inner and Outer must be algorithms (with `using "
                  "algorithm_concept = plait::algorithm_tag;`)");
  } else if constexpr (!is_automatic<Inner> && !schedules<Inner, Op>) {
    static_assert(inner_level_has_schedule_for<Inner, Op, algorithms_that_work_with<Op>>,
                  "plait: hierarchical<Inner, Outer>: Inner (the intra-node level's algorithm) has no schedule for "
                  "this operation; the note below names both and lists in works_with<...> the algorithms that have "
                  "one");
  } else if constexpr (!is_automatic<Outer> && !schedules<Outer, Op>) {
    static_assert(outer_level_has_schedule_for<Outer, Op, algorithms_that_work_with<Op>>,
                  "plait: hierarchical<Inner, Outer>: Outer (the inter-node level's algorithm) has no schedule for "
                  "this operation; the note below names both and lists in works_with<...> the algorithms that have "
                  "one");
  } else {
    return true;
  }
  return false;
}

/// The operations hierarchical<Inner, Outer> has routes for (its bodies
/// below): the algorithm's own description, as an algorithm's plan overloads
/// are (schedules<A, Op>). Any other operation runs flat on a two_level.
template <class Op>
inline constexpr bool hierarchical_routes = std::same_as<Op, op::all_gather> || std::same_as<Op, op::all_to_all>;

/// Whether a two-level collective can run hierarchically on these arguments:
/// 1-D contiguous ranges of one element type with plait::contiguous.
/// A concept, so that element types are asked for only of ranges.
template <class Layout, class Send, class Recv>
concept hierarchical_arguments = std::is_same_v<Layout, contiguous> && send_range<Send> && recv_range<Recv> &&
    std::is_same_v<std::remove_cv_t<std::ranges::range_value_t<Send>>, std::ranges::range_value_t<Recv>>;

/// "all_gather<hierarchical>" / "all_to_all<hierarchical>".
template <class Op>
std::string_view hierarchical_label() {
  static const operation_label label(Op::name, "hierarchical");
  return label.view();
}

/// An error raised by one level's collective, seen from the two-level call:
/// the whole group's rank and peer, the two-level operation, the level and
/// its own rank and operation in the message. Out of line and cold;
/// declared without PLAIT_DECL and defined with it, noinline on the
/// definition (as detail::fail: g++ warns about inline and noinline together).
[[gnu::cold]] error level_error(const error& raised, int whole_rank, std::string_view operation, std::string_view level,
                                int whole_peer);

/// An error of one level's collective in the two-level call's words (level_error).
template <class Levels>
error on_level_error(const Levels& levels, bool inter, std::string_view operation, const error& raised) {
  const int level_size = inter ? levels.inter().size() : levels.intra().size();
  int peer = -1;
  if (raised.peer() >= 0 && raised.peer() < level_size) {
    peer = levels.rank_at(inter ? levels.position_of_inter_peer(raised.peer())
                                : levels.position_of_intra_peer(raised.peer()));
  }
  return level_error(raised, levels.rank(), operation, inter ? "inter" : "intra", peer);
}

/// Starts one level's collective of Op: in flight where the level's
/// transport can keep collectives in flight (shm, MPI), else run at once (a
/// complete request). `counts`: a v form's, after the buffers.
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class... Counts>
collective_request start_on_level(Comm& comm, Send&& send, Recv&& recv, const Counts&... counts) {
  in_flight_handle h;
  auto start = [&](auto launch) {
    if constexpr (sizeof...(Counts) == 0) {
      dispatch_even<Op, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv), launch);
    } else {
      dispatch_v<Op, Algorithm, Layout>(comm, launch, std::forward<Send>(send), std::forward<Recv>(recv), counts...);
    }
  };
  if constexpr (can_be_in_flight<Comm>) {
    start(start_in_flight{&h});
  } else {
    start(run_now{});
  }
  return collective_request(h);
}

/// `co_await on_level(levels, inter, operation, start)` in a hierarchical
/// body: starts one level's collective (start() returns its request) and
/// waits for it; its errors, at start or later, name the level.
template <class Levels, class Start>
auto on_level(const Levels& levels, bool inter, std::string_view operation, Start&& start) {
  auto explain = [&levels, inter, operation](const error& raised) {
    return on_level_error(levels, inter, operation, raised);
  };
  collective_request request;
  try {
    request = start();  // its checks and plan may refuse the call at once
  } catch (const error& raised) {
    throw explain(raised);
  }
  return step_awaiter<decltype(explain)>{std::move(request), explain};
}

/// Sizes as tensor extents.
inline std::size_t extent(int n) noexcept { return static_cast<std::size_t>(n); }

/// The all-gather when rank r sits at position r. Position p = n x L + l, so
/// the result viewed as [N, L, s] holds rank (n, l)'s shard at [n][l]:
/// Outer gathers this rank's shard from every node straight into column l
/// ([N, s] with stride L x s), then Inner gathers the node's columns in
/// place along dimension 1. No staging of whole results.
template <class Inner, class Outer, class Intra, class Inter>
staged_task gather_by_position(const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                               std::span<std::byte> out) {
  const std::size_t s = send.size();
  const std::size_t nodes = extent(levels.node_count());
  const std::size_t locals = extent(levels.node_size());
  const std::size_t local = extent(levels.intra().rank());
  const tensor_view<const std::byte, 2> shard(send.data(), {1, s});
  const tensor_view<std::byte, 2> column(out.data() + local * s, {nodes, s}, {locals * s, 1});
  co_await on_level(levels, true, hierarchical_label<op::all_gather>(),
                    [&] { return start_on_level<op::all_gather, Outer, along<0>>(levels.inter(), shard, column); });
  const tensor_view<std::byte, 3> whole(out.data(), {nodes, locals, s});
  co_await on_level(levels, false, hierarchical_label<op::all_gather>(),
                    [&] { return start_on_level<op::all_gather, Inner, along<1>>(levels.intra(), in_place, whole); });
}

/// The all-to-all when rank r sits at position r. Viewed as [N, L, s], send
/// block [n][l] goes to rank (n, l). Inner runs once per node n on row [n]
/// (L contiguous blocks, one for each local rank of node n), so afterwards
/// bundled[n][l''] is the block from (this node, l'') for (n, this local
/// rank). Outer then sends node n its row bundled[n] (L blocks, one message
/// per node pair and local rank) and receives from node n the blocks of (n,
/// l'') for this rank, which are blocks n x L + l'' of the result: it writes
/// straight into place. The rows are contiguous, so no level packs or
/// unpacks (one strided redistribute<1, 1> of the whole send instead cost
/// 4x as long at 64 MiB through the executor's packing), and the bundle
/// buffer is the two_level's own, kept between calls.
template <class Inner, class Outer, class Intra, class Inter>
staged_task exchange_by_position(const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                                 std::span<std::byte> out) {
  const std::size_t row = send.size() / extent(levels.node_count());
  const std::span<std::byte> bundled = staging(levels, 0, send.size());  // Inner writes every byte
  for (std::size_t at = 0; at < send.size(); at += row) {
    co_await on_level(levels, false, hierarchical_label<op::all_to_all>(), [&] {
      return start_on_level<op::all_to_all, Inner, contiguous>(levels.intra(), send.subspan(at, row),
                                                               bundled.subspan(at, row));
    });
  }
  co_await on_level(levels, true, hierarchical_label<op::all_to_all>(), [&] {
    return start_on_level<op::all_to_all, Outer, contiguous>(levels.inter(), std::span<const std::byte>(bundled), out);
  });
}

/// The all-gather when local rank l of node n is rank l x N + n (round-robin):
/// the result viewed as [L, N, s] holds its shard at [l][n], so Outer gathers
/// the node's shards of local rank l into row l and Inner gathers the rows in
/// place: both levels move contiguous blocks.
template <class Inner, class Outer, class Intra, class Inter>
staged_task gather_by_local_rank(const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                                 std::span<std::byte> out) {
  const std::size_t row = extent(levels.node_count()) * send.size();
  co_await on_level(levels, true, hierarchical_label<op::all_gather>(), [&] {
    return start_on_level<op::all_gather, Outer, contiguous>(levels.inter(), send,
                                                             out.subspan(extent(levels.intra().rank()) * row, row));
  });
  co_await on_level(levels, false, hierarchical_label<op::all_gather>(),
                    [&] { return start_on_level<op::all_gather, Inner, contiguous>(levels.intra(), in_place, out); });
}

/// The all-to-all for the same placement. Viewed as [L, N, s], send block
/// [l][n] goes to rank (n, l): Inner sends local rank l' its row [l'] (N
/// blocks); then bundled[l''][n] is the block from (this node, l'') for (n,
/// this local rank), and Outer sends node n the column bundled[*][n], which
/// lands there as column (this node) of the result, [l''][node]: the blocks
/// from ranks l'' x N + node.
template <class Inner, class Outer, class Intra, class Inter>
staged_task exchange_by_local_rank(const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                                   std::span<std::byte> out) {
  const std::size_t s = send.size() / extent(levels.size());
  const std::size_t nodes = extent(levels.node_count());
  const std::size_t locals = extent(levels.node_size());
  const std::span<std::byte> bundled = staging(levels, 0, send.size());  // Inner writes every byte
  co_await on_level(levels, false, hierarchical_label<op::all_to_all>(),
                    [&] { return start_on_level<op::all_to_all, Inner, contiguous>(levels.intra(), send, bundled); });
  const tensor_view<const std::byte, 3> columns(bundled.data(), {locals, nodes, s});
  const tensor_view<std::byte, 3> arrived(out.data(), {locals, nodes, s});
  co_await on_level(levels, true, hierarchical_label<op::all_to_all>(), [&] {
    return start_on_level<op::all_to_all, Outer, redistribute<1, 1>>(levels.inter(), columns, arrived);
  });
}

/// Bytes [lo, hi) of a node's block of `bytes` that local rank `share` of
/// `shares` carries over the slow level (near-equal byte ranges).
struct share_range {
  std::size_t lo;
  std::size_t hi;
  [[nodiscard]] std::size_t size() const noexcept { return hi - lo; }
};
inline share_range share_of(std::size_t bytes, std::size_t share, std::size_t shares) noexcept {
  return {bytes * share / shares, bytes * (share + 1) / shares};
}

/// The all-gather on nodes of different sizes, into `out` in position
/// order. With M the smallest node's size, only local ranks 0 .. M - 1
/// meet every node over inter, so the node's block goes first and is cut
/// into M shares:
///   1. Inner: the node all-gathers its L_n shards into place (its block).
///   2. Outer, local ranks l < M: share l of every node's block (near-equal
///      byte ranges) is all_gather_v'd over inter into row l of staging.
///   3. Inner: the node all_gather_v's rows 0 .. M - 1 in place (local ranks
///      l >= M contribute nothing), and every share is copied into place.
/// The slow level carries each node's block once to every other node, as
/// with equal nodes; the fast level also carries the rows (docs/hierarchical.md).
template <class Inner, class Outer, class Intra, class Inter>
staged_task gather_uneven_nodes(const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                                std::span<std::byte> out) {
  const std::string_view label = hierarchical_label<op::all_gather>();
  const std::size_t s = send.size();
  const std::size_t nodes = extent(levels.node_count());
  const std::size_t shares = extent(levels.smallest_node_size());
  const std::size_t local = extent(levels.intra().rank());
  const std::size_t node = extent(levels.node_index());
  const auto block_of = [&](std::size_t n) {
    return out.subspan(extent(levels.node_offset(static_cast<int>(n))) * s,
                       extent(levels.node_size_of(static_cast<int>(n))) * s);
  };
  co_await on_level(levels, false, label, [&] {
    return start_on_level<op::all_gather, Inner, contiguous>(levels.intra(), send, block_of(node));
  });
  // Staging row l holds share l of every node, nodes in order.
  std::vector<std::size_t> share_bytes(shares * nodes);
  std::vector<std::size_t> row_bytes(extent(levels.node_size()), 0);
  for (std::size_t l = 0; l < shares; ++l) {
    for (std::size_t n = 0; n < nodes; ++n) {
      share_bytes[l * nodes + n] = share_of(block_of(n).size(), l, shares).size();
      row_bytes[l] += share_bytes[l * nodes + n];
    }
  }
  const std::span<std::byte> rows = staging(levels, 1, out.size());  // rows 0 .. M - 1: every node's block once
  std::size_t row_at = 0;
  for (std::size_t l = 0; l < local && l < shares; ++l) row_at += row_bytes[l];
  if (local < shares) {
    const share_range mine = share_of(block_of(node).size(), local, shares);
    const std::span<const std::size_t> counts(share_bytes.data() + local * nodes, nodes);
    co_await on_level(levels, true, label, [&] {
      return start_on_level<op::all_gather, Outer, contiguous>(
          levels.inter(), std::span<const std::byte>(block_of(node).subspan(mine.lo, mine.size())),
          rows.subspan(row_at, row_bytes[local]), counts);
    });
  }
  co_await on_level(levels, false, label, [&] {
    return start_on_level<op::all_gather, Inner, contiguous>(levels.intra(), in_place, rows, row_bytes);
  });
  std::size_t at = 0;
  for (std::size_t l = 0; l < shares; ++l) {
    for (std::size_t n = 0; n < nodes; ++n) {
      const std::span<std::byte> block = block_of(n);
      const share_range range = share_of(block.size(), l, shares);
      if (n != node && range.size() != 0) std::memcpy(block.data() + range.lo, rows.data() + at, range.size());
      at += range.size();
    }
  }
}

/// The all-to-all on nodes of different sizes, into `out` in position
/// order, with `b`-byte blocks. Blocks within the node go straight; local
/// rank k's blocks from other nodes cross the slow level through relay
/// k mod M (M: the smallest node's size; relays meet every node over inter):
///   1. Inner: one all-to-all of the node's own row, straight into place;
///      then (all_to_all_v, once per other node m) each rank sends relay r
///      of its node the blocks for m's local ranks k with k mod M = r.
///   2. Outer (all_to_all_v), relays only: relay r sends node m's relay r
///      the node's blocks for m's local ranks k mod M = r, one message per
///      node pair and relay.
///   3. Inner (all_to_all_v): relay r keeps the blocks for itself and sends
///      local rank k >= M (k mod M = r) its P - L blocks from other nodes.
/// Packing before step 1 and unpacking after steps 2 and 3 are host copies;
/// the buffers are the two_level's own, kept between calls (docs/hierarchical.md).
template <class Inner, class Outer, class Intra, class Inter>
staged_task exchange_uneven_nodes(const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                                  std::span<std::byte> out) {
  const std::string_view label = hierarchical_label<op::all_to_all>();
  const std::size_t ranks = extent(levels.size());
  const std::size_t b = send.size() / ranks;
  const std::size_t nodes = extent(levels.node_count());
  const std::size_t relays = extent(levels.smallest_node_size());
  const std::size_t locals = extent(levels.node_size());
  const std::size_t local = extent(levels.intra().rank());
  const std::size_t node = extent(levels.node_index());
  const std::size_t foreign = ranks - locals;  // ranks on other nodes
  const auto size_of = [&](std::size_t n) { return extent(levels.node_size_of(static_cast<int>(n))); };
  const auto offset_of = [&](std::size_t n) { return extent(levels.node_offset(static_cast<int>(n))); };
  // Local ranks of node m that relay r serves: r, r + M, ... below L_m.
  const auto served = [&](std::size_t m, std::size_t r) { return (size_of(m) - r + relays - 1) / relays; };
  const bool relay = local < relays;
  const std::size_t mine_served = relay ? served(node, local) : 0;
  const std::span<std::byte> own_row = out.subspan(offset_of(node) * b, locals * b);

  // 1. The node's own row, then the other nodes' blocks packed by node,
  //    relay, local rank; one Inner call per other node m leaves, at relay
  //    l, [m][source local l'][k served by l on m]: the order step 2 sends in.
  co_await on_level(levels, false, label, [&] {
    return start_on_level<op::all_to_all, Inner, contiguous>(levels.intra(),
                                                             send.subspan(offset_of(node) * b, locals * b), own_row);
  });
  const std::span<std::byte> packed = staging(levels, 0, foreign * b);
  std::size_t at = 0;
  for (std::size_t m = 0; m < nodes; ++m) {
    for (std::size_t r = 0; r < relays && m != node; ++r) {
      for (std::size_t k = r; k < size_of(m); k += relays) {
        std::memcpy(packed.data() + at, send.data() + (offset_of(m) + k) * b, b);
        at += b;
      }
    }
  }
  std::vector<std::size_t> to_node(nodes, 0);  // step 2's counts; none to this node
  std::vector<std::size_t> from_node(nodes, 0);
  std::size_t gathered_bytes = 0;
  for (std::size_t m = 0; relay && m < nodes; ++m) {
    if (m == node) continue;
    to_node[m] = locals * served(m, local) * b;
    from_node[m] = size_of(m) * mine_served * b;
    gathered_bytes += to_node[m];
  }
  const std::span<std::byte> gathered = staging(levels, 1, gathered_bytes);
  std::vector<std::size_t> to_local(locals, 0);
  std::vector<std::size_t> from_local(locals, 0);
  std::size_t packed_at = 0;
  std::size_t gathered_at = 0;
  for (std::size_t m = 0; m < nodes; ++m) {
    if (m == node) continue;
    std::size_t row = 0;
    for (std::size_t r = 0; r < relays; ++r) row += (to_local[r] = served(m, r) * b);
    if (relay) std::fill(from_local.begin(), from_local.end(), served(m, local) * b);
    co_await on_level(levels, false, label, [&] {
      return start_on_level<op::all_to_all, Inner, contiguous>(
          levels.intra(), std::span<const std::byte>(packed.subspan(packed_at, row)),
          gathered.subspan(gathered_at, to_node[m]), to_local, from_local);
    });
    packed_at += row;
    gathered_at += to_node[m];
  }

  // 2. Relays exchange over inter. Arrived from node m: [source local l' <
  //    L_m][k of this node served by this relay]: the other nodes' sources
  //    in position order.
  const std::span<std::byte> arrived = staging(levels, 2, foreign * mine_served * b);
  if (relay) {
    co_await on_level(levels, true, label, [&] {
      return start_on_level<op::all_to_all, Outer, contiguous>(levels.inter(), std::span<const std::byte>(gathered),
                                                               arrived, to_node, from_node);
    });
  }

  // 3. Relays unpack their own blocks and pack those of local ranks k >= M;
  //    those receive the P - L blocks from other nodes in position order.
  const std::span<std::byte> forwarded = staging(levels, 3, relay ? (mine_served - 1) * foreign * b : foreign * b);
  const auto place_of = [&](std::size_t i) { return i < offset_of(node) ? i : i + locals; };  // i-th foreign source
  std::vector<std::size_t> forward_to(locals, 0);
  std::vector<std::size_t> forward_from(locals, 0);
  if (relay) {
    for (std::size_t i = 0; i < foreign; ++i) {
      const std::byte* blocks = arrived.data() + i * mine_served * b;
      std::memcpy(out.data() + place_of(i) * b, blocks, b);
      for (std::size_t t = 1; t < mine_served; ++t) {
        std::memcpy(forwarded.data() + ((t - 1) * foreign + i) * b, blocks + t * b, b);
      }
    }
    for (std::size_t t = 1; t < mine_served; ++t) forward_to[local + t * relays] = foreign * b;
  } else {
    forward_from[local % relays] = foreign * b;
  }
  co_await on_level(levels, false, label, [&] {
    return start_on_level<op::all_to_all, Inner, contiguous>(
        levels.intra(), std::span<const std::byte>(relay ? forwarded : std::span<std::byte>()),
        relay ? std::span<std::byte>() : forwarded, forward_to, forward_from);
  });
  if (!relay) {
    const std::size_t before = offset_of(node) * b;
    if (before != 0) std::memcpy(out.data(), forwarded.data(), before);
    if (foreign * b != before) {
      std::memcpy(own_row.data() + own_row.size(), forwarded.data() + before, foreign * b - before);
    }
  }
}

/// Copies block rank_at(p) of `from` to block p of `to` (or back, `to_ranks`):
/// between the whole group's rank order and position order.
template <class Levels>
void reorder_blocks(const Levels& levels, std::span<const std::byte> from, std::span<std::byte> to, std::size_t block,
                    bool to_ranks) {
  for (int p = 0; p < levels.size(); ++p) {
    const std::size_t at_rank = extent(levels.rank_at(p)) * block;
    const std::size_t at_position = extent(p) * block;
    std::memcpy(to.data() + (to_ranks ? at_rank : at_position), from.data() + (to_ranks ? at_position : at_rank),
                block);
  }
}

/// hierarchical<Inner, Outer>'s size checks for Op on bytes, on this rank,
/// before any byte moves (and before a nonblocking call returns).
template <class Op, class Intra, class Inter>
void check_hierarchical_sizes(const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                              std::span<const std::byte> recv) {
  constexpr bool gather = std::is_same_v<Op, op::all_gather>;
  const std::size_t ranks = extent(levels.size());
  const error_context at{levels.rank(), hierarchical_label<Op>()};
  const std::size_t wanted = gather ? ranks * send.size() : send.size();
  if (recv.size() != wanted) {
    fail(errc::size_mismatch,
         {"recv holds ", recv.size(), " bytes, and ", gather ? "P x send" : "send", " is ", wanted, " (P = ", ranks,
          ")"},
         at);
  }
  if (!gather && send.size() % ranks != 0) {
    fail(errc::size_mismatch, {"send holds ", send.size(), " bytes, which is not P = ", ranks, " equal blocks"}, at);
  }
}

/// hierarchical<Inner, Outer> for Op on bytes whose sizes are checked: runs
/// straight into the result for block and round-robin placements, and
/// through staging in position order for any other rank table. Nodes of
/// different sizes take their own paths (gather_uneven_nodes,
/// exchange_uneven_nodes), in position order too. A staged_task: the
/// blocking form runs it, the nonblocking and persistent forms advance it.
template <class Op, class Inner, class Outer, class Intra, class Inter>
staged_task hierarchical_body(const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                              std::span<std::byte> recv) {
  constexpr bool gather = std::is_same_v<Op, op::all_gather>;
  if (recv.empty()) co_return;  // nothing moves on any rank: every rank's sizes are these
  const auto by_position = [&levels](std::span<const std::byte> in, std::span<std::byte> out) {
    if (!levels.even_nodes()) {
      if constexpr (gather) {
        return gather_uneven_nodes<Inner, Outer>(levels, in, out);
      } else {
        return exchange_uneven_nodes<Inner, Outer>(levels, in, out);
      }
    } else if constexpr (gather) {
      return gather_by_position<Inner, Outer>(levels, in, out);
    } else {
      return exchange_by_position<Inner, Outer>(levels, in, out);
    }
  };
  if (levels.node_major()) {
    co_await by_position(send, recv);
    co_return;
  }
  if (levels.local_major()) {
    if constexpr (gather) {
      co_await gather_by_local_rank<Inner, Outer>(levels, send, recv);
    } else {
      co_await exchange_by_local_rank<Inner, Outer>(levels, send, recv);
    }
    co_return;
  }
  const std::size_t block = recv.size() / extent(levels.size());
  const byte_buffer staged(recv.size());  // not zeroed: the levels write every byte
  const std::span<std::byte> staged_bytes(staged.data(), staged.size());
  if constexpr (gather) {
    co_await by_position(send, staged_bytes);
  } else {
    const byte_buffer outgoing(send.size());
    const std::span<std::byte> outgoing_bytes(outgoing.data(), outgoing.size());
    reorder_blocks(levels, send, outgoing_bytes, block, false);
    co_await by_position(outgoing_bytes, staged_bytes);
  }
  reorder_blocks(levels, staged_bytes, recv, block, true);
}

/// What automatic predicts for hierarchical<automatic, automatic> with
/// `bytes`-byte blocks of the whole group: the inter level's choice plus the
/// intra level's, each from its transport's cost model. `local_major`: the
/// all-to-all's intra level runs once on N-block bundles (round-robin
/// placement) instead of once per node on single blocks.
template <class Op, class A, class Intra, class Inter>
double predicted_hierarchical_seconds(int nodes, int locals, std::size_t bytes, bool local_major) {
  const std::size_t n = extent(nodes);
  const std::size_t l = extent(locals);
  const double inter = [&] {
    // all-gather: inter blocks are one shard; all-to-all: bundles of L blocks.
    const std::size_t block = std::is_same_v<Op, op::all_gather> ? bytes : l * bytes;
    return run_time_choice(Op{}, nodes, block, model_of<A, Inter>(), allowed_set<A>()).predicted_seconds;
  }();
  const auto intra = [&](std::size_t block) {
    return run_time_choice(Op{}, locals, block, model_of<A, Intra>(), allowed_set<A>()).predicted_seconds;
  };
  // all-gather: intra blocks are a node column (N shards); all-to-all: one
  // call of N-block bundles, or N calls of single blocks (one per node's row).
  if (std::is_same_v<Op, op::all_gather> || local_major) return inter + intra(n * bytes);
  return inter + static_cast<double>(n) * intra(bytes);
}

/// A two_level that also offers the whole group as one communicator.
template <class Comm>
concept has_whole_communicator = requires(Comm& comm) {
  comm.world();
};

/// The v forms on a two_level communicator: flat, on its whole
/// communicator (`flat(whole)` runs the form there). Hierarchical v forms are
/// not written yet: the two-level issue's next step.
template <class Algorithm, class Comm, class Flat>
decltype(auto) two_level_v_collective(Comm& comm, Flat flat) {
  if constexpr (is_hierarchical<Algorithm>) {
    static_assert(dependent_false<Comm>,
                  "plait: hierarchical<Inner, Outer> runs the even forms; the v forms on a plait::two_level run flat "
                  "on its whole communicator: use plait::automatic or a flat algorithm (plait::mpi::node_levels has "
                  "a whole communicator)");
  } else if constexpr (!has_whole_communicator<Comm>) {
    static_assert(dependent_false<Comm>,
                  "plait: the v forms on a plait::two_level run flat on its whole communicator, and this two_level "
                  "has none: call them on a communicator over all its ranks");
  } else {
    if constexpr (is_automatic<Algorithm>) comm.note_choice(level_choice{.hierarchical = false});
    return flat(comm.world());
  }
}

/// How long waits on a two_level's collectives spin before they yield: the
/// intra level's setting where it has one.
template <class Levels>
std::chrono::nanoseconds staged_busy_poll(const Levels& levels) {
  if constexpr (requires { levels.intra().busy_poll(); }) {
    return levels.intra().busy_poll();
  } else {
    return std::chrono::microseconds(20);
  }
}

/// The launches of a hierarchical collective's body (`make` builds it, a
/// staged_task), one per form. All of them go through the levels' own
/// engine (staged_progress(levels), in order) whenever collectives are
/// in flight there, so that every rank starts the levels' collectives in
/// the same order.
struct two_level_now {  // blocking: runs the body to its end
  static constexpr bool keeps_buffers = false;
  template <class Levels, class Make>
  void staged(const Levels& levels, Make make) const {
    progress_engine& engine = staged_progress(levels);
    if (!engine.active()) {
      make().run();
      return;
    }
    in_flight_handle h = staged_handle(engine, levels.rank(), staged_busy_poll(levels), std::move(make));
    queue(h, true);
    collective_request(h).wait();  // behind the collectives in flight, in order
  }
};
struct two_level_in_flight {  // nonblocking: a request whose turns advance the body
  static constexpr bool keeps_buffers = true;
  template <class Levels, class Make>
  collective_request staged(const Levels& levels, Make make) const {
    in_flight_handle h =
        staged_handle(staged_progress(levels), levels.rank(), staged_busy_poll(levels), std::move(make));
    queue(h, true);
    return collective_request(h);
  }
};
struct two_level_bound {  // persistent: a fresh body at every start()
  static constexpr bool keeps_buffers = true;
  template <class Levels, class Make>
  persistent_collective staged(const Levels& levels, Make make) const {
    return persistent_collective(
        staged_handle(staged_progress(levels), levels.rank(), staged_busy_poll(levels), std::move(make)));
  }
};

/// Every form of plait::all_gather / plait::all_to_all on a two_level
/// communicator. `flat(whole, send, recv)` runs the form on a whole
/// communicator (the public function itself); `launch` runs the
/// hierarchical body in the form (two_level_now, two_level_in_flight,
/// two_level_bound). Returns what they return.
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class Flat, class Launch>
decltype(auto) two_level_collective(Comm& comm, Send&& send, Recv&& recv, Flat flat, Launch launch) {
  using args = std::pair<std::remove_cvref_t<Send>, std::remove_cvref_t<Recv>>;
  constexpr bool serves_hierarchy =
      hierarchical_routes<Op> &&
      hierarchical_arguments<Layout, std::remove_reference_t<Send>, std::remove_reference_t<Recv>>;
  constexpr bool host_levels = std::is_same_v<typename Comm::intra_type::memory_space, host_memory> &&
                               std::is_same_v<typename Comm::inter_type::memory_space, host_memory>;
  if constexpr (Launch::keeps_buffers) static_assert(check_kept_arguments<Send, Recv>());
  // The body's views of the user's buffers (checked here, before the call returns).
  const auto body = [&comm]<class Inner, class Outer>(std::span<const std::byte> s, std::span<std::byte> r) {
    check_hierarchical_sizes<Op>(comm, s, r);
    return [&comm, s, r] { return hierarchical_body<Op, Inner, Outer>(comm, s, r); };
  };
  if constexpr (is_hierarchical<Algorithm> && !host_levels) {
    static_assert(dependent_false<args>,
                  "plait: hierarchical<Inner, Outer> needs two levels of host memory (shm, MPI): its staging and "
                  "reordering are host copies");
  } else if constexpr (is_hierarchical<Algorithm>) {
    if constexpr (!serves_hierarchy) {
      static_assert(dependent_false<args>,
                    "plait: hierarchical<Inner, Outer> runs all_gather and all_to_all on 1-D contiguous ranges "
                    "(std::vector, std::span, ...) of one element type with plait::contiguous; tensor views, other "
                    "layouts, in_place, bundles and other operations run flat on the whole communicator");
    } else if constexpr (check_hierarchical_levels<Algorithm, Op>()) {
      return launch.staged(comm, body.template operator()<typename Algorithm::inner, typename Algorithm::outer>(
                                     const_bytes(send), mutable_bytes(recv)));
    }
  } else if constexpr (is_automatic<Algorithm> && serves_hierarchy && host_levels) {
    // automatic_with<Tuning> tunes both levels (and the flat choice) alike.
    const std::size_t block =
        const_bytes(send).size() /
        (std::is_same_v<Op, op::all_gather> ? std::size_t{1} : extent(comm.size() > 0 ? comm.size() : 1));
    level_choice picked{};
    picked.hierarchical_seconds =
        predicted_hierarchical_seconds<Op, Algorithm, typename Comm::intra_type, typename Comm::inter_type>(
            comm.node_count(), comm.largest_node_size(), block, comm.local_major());
    if constexpr (has_whole_communicator<Comm>) {
      using whole = std::remove_reference_t<decltype(comm.world())>;
      picked.flat_seconds =
          run_time_choice(Op{}, comm.size(), block, model_of<Algorithm, whole>(), allowed_set<Algorithm>())
              .predicted_seconds;
      picked.hierarchical = picked.hierarchical_seconds <= picked.flat_seconds;
    }
    comm.note_choice(picked);
    if constexpr (has_whole_communicator<Comm>) {
      if (!picked.hierarchical) return flat(comm.world(), std::forward<Send>(send), std::forward<Recv>(recv));
    }
    return launch.staged(comm, body.template operator()<Algorithm, Algorithm>(const_bytes(send), mutable_bytes(recv)));
  } else if constexpr (has_whole_communicator<Comm>) {
    if constexpr (is_automatic<Algorithm>) comm.note_choice(level_choice{.hierarchical = false});
    return flat(comm.world(), std::forward<Send>(send), std::forward<Recv>(recv));
  } else if constexpr (is_automatic<Algorithm>) {
    static_assert(dependent_false<args>,
                  "plait: automatic on a plait::two_level runs hierarchically, which takes 1-D contiguous ranges of "
                  "one element type with plait::contiguous on host-memory levels; this two_level has no whole "
                  "communicator to run anything else flat");
  } else {
    static_assert(dependent_false<args>,
                  "plait: a flat algorithm cannot run on a plait::two_level without a communicator over all its "
                  "ranks: use plait::hierarchical<Inner, Outer>, or plait::automatic (hierarchical here), or call it "
                  "on the whole communicator");
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/hierarchical.ipp"
#endif

// Collectives on a plait::two_level communicator: hierarchical<Inner, Outer>
// runs one collective per level (Outer over inter, Inner over intra), each
// an ordinary nonblocking collective of that level awaited by a coroutine
// body (op/staged.hpp), so one body serves the blocking, nonblocking and
// persistent forms; automatic chooses between that and a flat collective
// over the whole communicator, when the object has one
// (plait::mpi::node_levels: world()). Every form (op/forms.hpp) comes here
// for a two_level communicator: the even and v forms of each operation with
// a hierarchical body (overloads on its tag: hierarchical_body,
// hierarchical_v_body), and bundles of them (their members' bodies one
// after another). Steps, bytes and messages on each level: docs/hierarchical.md.
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ranges>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/hierarchical.hpp"
#include "plait/algorithm/ring.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/algorithm/select.hpp"
#include "plait/core/call_site.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/along.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/counts.hpp"
#include "plait/layout/redistribute.hpp"
#include "plait/layout/uneven_plans.hpp"
#include "plait/levels/two_level.hpp"
#include "plait/op/abandon_levels.hpp"
#include "plait/op/bundle.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/dispatch.hpp"
#include "plait/op/hierarchical_state.hpp"
#include "plait/op/launch.hpp"
#include "plait/op/request.hpp"
#include "plait/op/staged.hpp"
#include "plait/op/stamp.hpp"

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

/// The operations hierarchical<Inner, Outer> has routes for: those with a
/// body below (hierarchical_body and hierarchical_v_body overloads on the
/// operation's tag, as an algorithm's plan overloads are; schedules<A, Op>).
/// Any other operation runs flat on a two_level.
constexpr bool has_hierarchical_body(op::all_gather) noexcept { return true; }
constexpr bool has_hierarchical_body(op::all_to_all) noexcept { return true; }
template <class Op>
concept hierarchical_routes = requires {
  has_hierarchical_body(Op{});
};

/// Whether a two-level collective can run hierarchically on these arguments:
/// 1-D contiguous ranges of one element type with plait::contiguous.
/// A concept, so that element types are asked for only of ranges.
template <class Layout, class Send, class Recv>
concept hierarchical_arguments = std::is_same_v<Layout, contiguous> && send_range<Send> && recv_range<Recv> &&
    std::is_same_v<std::remove_cv_t<std::ranges::range_value_t<Send>>, std::ranges::range_value_t<Recv>>;

/// "hierarchical<ring, pairwise>": the policy as the user wrote it, built
/// once per program.
template <class Inner, class Outer>
std::string_view hierarchical_name() {
  static const std::string name =
      concat({"hierarchical<", algorithm_name<Inner>(), ", ", algorithm_name<Outer>(), ">"});
  return name;
}

/// "all_gather<hierarchical<ring, ring>>" / "all_to_all<hierarchical<...>>":
/// errors name the call the user made, with both levels' algorithms.
template <class Op, class Inner, class Outer>
std::string_view hierarchical_label() {
  static const operation_label label(Op::name, hierarchical_name<Inner, Outer>());
  return label.view();
}

/// An error raised by one level's collective, seen from the two-level call:
/// the whole group's rank and peer and the two-level operation (the call the
/// user made) in the location; the level, its operation and this rank's
/// rank in it in the message; and every "rank N" of the level's own message
/// (a level rank) as the whole group's rank with the level's in parentheses,
/// "rank 5 (rank 1 of the inter level)". `whole_of_level[q]`: the whole
/// group's rank of level rank q. Out of line and cold; declared without
/// PLAIT_DECL and defined with it, noinline on the definition (as
/// detail::fail: g++ warns about inline and noinline together).
[[gnu::cold]] error level_error(const error& raised, int whole_rank, std::string_view operation, std::string_view level,
                                int whole_peer, std::span<const int> whole_of_level);

/// `raised`, a level's refusal since an earlier failure ("communicator
/// unusable since an earlier failure: poisoned by all_gather<ring> #4, step
/// 1: ..."), naming the two-level call `failed` that the level's collective
/// belonged to ("..., step 1, a level collective of all_gather<hierarchical<
/// ring, ring>>: ..."); as it is where that is unknown or the level's poison
/// names no call.
[[gnu::cold]] error within_failed_call(const error& raised, std::string_view failed);

/// An error of one level's collective in the two-level call's words (level_error).
template <class Levels>
error on_level_error(const Levels& levels, bool inter, std::string_view operation, const error& raised) {
  const int level_size = inter ? levels.inter().size() : levels.intra().size();
  std::vector<int> whole(static_cast<std::size_t>(level_size));
  for (int q = 0; q < level_size; ++q) {
    whole[static_cast<std::size_t>(q)] = levels.rank_of_level_peer(inter, q);
  }
  int peer = raised.peer() >= 0 && raised.peer() < level_size ? whole[static_cast<std::size_t>(raised.peer())] : -1;
  // A failure passed on from another level names the rank to blame in its text (abandon_level).
  if (const int blamed = blamed_in_text(raised.detail()); blamed >= 0 && blamed < levels.size()) peer = blamed;
  return level_error(raised, levels.rank(), operation, inter ? "inter" : "intra", peer, whole);
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

/// While a two-level body waits at one level, each level's transport may
/// take note (core/blame.hpp): the other level's wait record says this rank
/// is away there (shm's note_other_level), so a peer there that times out
/// waiting for it waits one timeout more, for this level's own timeout to
/// name the rank to blame; and the waited level knows that a peer that does
/// not answer its query may be at its other level (MPI's note_level_step),
/// so it waits one timeout more before it blames that peer. Type-erased:
/// the levels' types differ.
class level_step_marks {
 public:
  template <class Here, class Other>
  level_step_marks(Here& here, Other& other) noexcept {
    if constexpr (requires { here.note_level_step(true); }) {
      here_ = &here;
      note_here_ = [](void* c, bool on) noexcept { static_cast<Here*>(c)->note_level_step(on); };
      note_here_(here_, true);
    }
    if constexpr (requires { other.note_other_level(true); }) {
      other_ = &other;
      note_other_ = [](void* c, bool on) noexcept { static_cast<Other*>(c)->note_other_level(on); };
      note_other_(other_, true);
    }
  }
  level_step_marks(level_step_marks&& from) noexcept
      : here_(std::exchange(from.here_, nullptr)),
        other_(std::exchange(from.other_, nullptr)),
        note_here_(std::exchange(from.note_here_, nullptr)),
        note_other_(std::exchange(from.note_other_, nullptr)) {}
  level_step_marks(const level_step_marks&) = delete;
  level_step_marks& operator=(const level_step_marks&) = delete;
  level_step_marks& operator=(level_step_marks&&) = delete;
  ~level_step_marks() {
    if (note_here_ != nullptr) note_here_(here_, false);
    if (note_other_ != nullptr) note_other_(other_, false);
  }

 private:
  using note = void (*)(void*, bool) noexcept;
  void* here_ = nullptr;
  void* other_ = nullptr;
  note note_here_ = nullptr;
  note note_other_ = nullptr;
};

/// A step of a hierarchical body at one level: the step's awaiter, with both
/// levels' marks (level_step_marks) until the step resumes.
template <class Explain>
struct level_step_awaiter : step_awaiter<Explain> {
  level_step_marks marks;
};

/// `co_await on_level(levels, inter, operation, start)` in a hierarchical
/// body: starts one level's collective (start() returns its request) and
/// waits for it; its errors, at start or later, name the level, and go to
/// the other level's peers too (abandon_other_level).
template <class Levels, class Start>
auto on_level(const Levels& levels, bool inter, std::string_view operation, Start&& start) {
  // A level an earlier failure left unusable refuses with the name of its
  // own collective that failed; the error says which two-level call that was.
  const bool unusable_before = inter ? !levels.inter().usable() : !levels.intra().usable();
  auto explain = [&levels, inter, operation, unusable_before](const error& raised) {
    hierarchical_state& state = hierarchical_state_of(levels);
    error seen = on_level_error(levels, inter, operation,
                                unusable_before ? within_failed_call(raised, state.first_failure()) : raised);
    // Only a failure that left the level unusable: a refusal of the call's
    // arguments (an algorithm that cannot run on the level) leaves it usable.
    const bool unusable_now = inter ? !levels.inter().usable() : !levels.intra().usable();
    if (!unusable_before && unusable_now) state.note_failure(operation);
    abandon_other_level(levels, inter, seen);
    return seen;
  };
  level_step_marks marks =
      inter ? level_step_marks(levels.inter(), levels.intra()) : level_step_marks(levels.intra(), levels.inter());
  collective_request request;
  try {
    request = start();  // its checks and plan may refuse the call at once
  } catch (const error& raised) {
    throw explain(raised);
  }
  return level_step_awaiter<decltype(explain)>{{std::move(request), explain}, std::move(marks)};
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
  co_await on_level(levels, true, hierarchical_label<op::all_gather, Inner, Outer>(),
                    [&] { return start_on_level<op::all_gather, Outer, along<0>>(levels.inter(), shard, column); });
  const tensor_view<std::byte, 3> whole(out.data(), {nodes, locals, s});
  co_await on_level(levels, false, hierarchical_label<op::all_gather, Inner, Outer>(),
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
    co_await on_level(levels, false, hierarchical_label<op::all_to_all, Inner, Outer>(), [&] {
      return start_on_level<op::all_to_all, Inner, contiguous>(levels.intra(), send.subspan(at, row),
                                                               bundled.subspan(at, row));
    });
  }
  co_await on_level(levels, true, hierarchical_label<op::all_to_all, Inner, Outer>(), [&] {
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
  co_await on_level(levels, true, hierarchical_label<op::all_gather, Inner, Outer>(), [&] {
    return start_on_level<op::all_gather, Outer, contiguous>(levels.inter(), send,
                                                             out.subspan(extent(levels.intra().rank()) * row, row));
  });
  co_await on_level(levels, false, hierarchical_label<op::all_gather, Inner, Outer>(),
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
  co_await on_level(levels, false, hierarchical_label<op::all_to_all, Inner, Outer>(),
                    [&] { return start_on_level<op::all_to_all, Inner, contiguous>(levels.intra(), send, bundled); });
  const tensor_view<const std::byte, 3> columns(bundled.data(), {locals, nodes, s});
  const tensor_view<std::byte, 3> arrived(out.data(), {locals, nodes, s});
  co_await on_level(levels, true, hierarchical_label<op::all_to_all, Inner, Outer>(), [&] {
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
  const std::string_view label = hierarchical_label<op::all_gather, Inner, Outer>();
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
  const std::string_view label = hierarchical_label<op::all_to_all, Inner, Outer>();
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

/// hierarchical<Inner, Outer>'s size checks of an all-gather on bytes, on
/// this rank, before any byte moves (and before a nonblocking call returns).
template <class Inner, class Outer, class Intra, class Inter>
void check_hierarchical_sizes(op::all_gather, const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                              std::span<const std::byte> recv) {
  const std::size_t ranks = extent(levels.size());
  if (recv.size() != ranks * send.size()) {
    fail(errc::size_mismatch,
         {"recv holds ", recv.size(), " bytes, and P x send is ", ranks * send.size(), " (P = ", ranks, ")"},
         {levels.rank(), hierarchical_label<op::all_gather, Inner, Outer>()});
  }
}

/// The same for an all-to-all: P equal blocks on both sides.
template <class Inner, class Outer, class Intra, class Inter>
void check_hierarchical_sizes(op::all_to_all, const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                              std::span<const std::byte> recv) {
  const std::size_t ranks = extent(levels.size());
  const error_context at{levels.rank(), hierarchical_label<op::all_to_all, Inner, Outer>()};
  if (recv.size() != send.size()) {
    fail(errc::size_mismatch, {"recv holds ", recv.size(), " bytes, and send is ", send.size(), " (P = ", ranks, ")"},
         at);
  }
  if (send.size() % ranks != 0) {
    fail(errc::size_mismatch, {"send holds ", send.size(), " bytes, which is not P = ", ranks, " equal blocks"}, at);
  }
}

/// hierarchical<Inner, Outer>'s all-gather on bytes whose sizes are checked:
/// straight into the result for block and round-robin placements, through
/// staging in position order for any other rank table; nodes of different
/// sizes take their own path (gather_uneven_nodes), in position order too. A
/// staged_task: the blocking form runs it, the nonblocking and persistent
/// forms advance it.
template <class Inner, class Outer, class Intra, class Inter>
staged_task hierarchical_body(op::all_gather, const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                              std::span<std::byte> recv) {
  if (recv.empty()) co_return;  // nothing moves on any rank: every rank's sizes are these
  if (levels.local_major()) {
    co_await gather_by_local_rank<Inner, Outer>(levels, send, recv);
    co_return;
  }
  const bool in_place_order = levels.node_major();
  const byte_buffer staged(in_place_order ? 0 : recv.size());  // not zeroed: the levels write every byte
  const std::span<std::byte> out = in_place_order ? recv : std::span<std::byte>(staged.data(), staged.size());
  if (levels.even_nodes()) {
    co_await gather_by_position<Inner, Outer>(levels, send, out);
  } else {
    co_await gather_uneven_nodes<Inner, Outer>(levels, send, out);
  }
  if (!in_place_order) reorder_blocks(levels, out, recv, recv.size() / extent(levels.size()), true);
}

/// hierarchical<Inner, Outer>'s all-to-all, as the all-gather above; any
/// other rank table reorders the send into position order first.
template <class Inner, class Outer, class Intra, class Inter>
staged_task hierarchical_body(op::all_to_all, const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                              std::span<std::byte> recv) {
  if (recv.empty()) co_return;
  const auto by_position = [&levels](std::span<const std::byte> in, std::span<std::byte> out) {
    if (levels.even_nodes()) return exchange_by_position<Inner, Outer>(levels, in, out);
    return exchange_uneven_nodes<Inner, Outer>(levels, in, out);
  };
  if (levels.node_major()) {
    co_await by_position(send, recv);
    co_return;
  }
  if (levels.local_major()) {
    co_await exchange_by_local_rank<Inner, Outer>(levels, send, recv);
    co_return;
  }
  const std::size_t block = recv.size() / extent(levels.size());
  const byte_buffer staged(recv.size());  // not zeroed: the levels write every byte
  const byte_buffer outgoing(send.size());
  const std::span<std::byte> staged_bytes(staged.data(), staged.size());
  const std::span<std::byte> outgoing_bytes(outgoing.data(), outgoing.size());
  reorder_blocks(levels, send, outgoing_bytes, block, false);
  co_await by_position(outgoing_bytes, staged_bytes);
  reorder_blocks(levels, staged_bytes, recv, block, true);
}

/// "all_gather_v<hierarchical<ring, ring>>" / "all_to_all_v<hierarchical<...>>".
template <class Op, class Inner, class Outer>
std::string_view hierarchical_v_label() {
  static const operation_label label(Op::v_name, hierarchical_name<Inner, Outer>());
  return label.view();
}

/// Running offsets of `bytes` (one entry per rank of the whole group, in its
/// rank order): where each rank's part starts; the total last.
inline std::vector<std::size_t> running_offsets(const std::vector<std::size_t>& bytes) {
  std::vector<std::size_t> at(bytes.size() + 1, 0);
  for (std::size_t r = 0; r < bytes.size(); ++r) at[r + 1] = at[r] + bytes[r];
  return at;
}

/// hierarchical<Inner, Outer>'s all_gather_v on bytes: rank r contributes
/// counts[r] bytes (every rank has every count, checked), delivered in the
/// whole group's rank order. Node n has L_n ranks and T_n = the sum of its
/// ranks' counts, T the sum of all; local rank 0 of each node (the leader)
/// carries the node's block over the slow level:
///   1. Inner over intra (all_gather_v): the node gathers its L_n parts
///      into its block (T_n bytes, position order).
///   2. Outer over inter (all_gather_v), leaders only (local rank 0 meets
///      every node): the leaders gather every node's block (counts T_m).
///   3. Inner over intra (in-place all_gather_v): the leader contributes the
///      other nodes' T - T_n bytes, the other local ranks nothing.
///   4. Every rank copies each part from the node's block or the other
///      nodes' bytes to its place in recv (rank order).
/// Bytes each rank of node n sends, Outer and Inner direct: intra
/// (L_n - 1) x counts[self] (step 1), plus (L_n - 1) x (T - T_n) for the
/// leader (step 3); inter (N - 1) x T_n, leader only (step 2). The slow level
/// carries each node's block once to every other node, the least an
/// all-gather can; the fast level carries the leader's broadcast as
/// Open MPI's han does. Steps whose bytes are 0 on every rank of the level are left out.
template <class Inner, class Outer, class Intra, class Inter>
staged_task hierarchical_v_body(op::all_gather, const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                                std::span<std::byte> recv, std::vector<std::size_t> counts) {
  const std::string_view label = hierarchical_v_label<op::all_gather, Inner, Outer>();
  const std::size_t ranks = extent(levels.size());
  const std::size_t nodes = extent(levels.node_count());
  const std::size_t node = extent(levels.node_index());
  const std::size_t locals = extent(levels.node_size());
  const std::size_t first = extent(levels.node_offset(levels.node_index()));
  const std::vector<std::size_t> place = running_offsets(counts);  // in recv, rank order
  const std::size_t total = place[ranks];
  if (total == 0) co_return;  // every rank has these counts
  const auto rank_at = [&levels](std::size_t p) { return extent(levels.rank_at(static_cast<int>(p))); };
  std::vector<std::size_t> node_bytes(nodes, 0);  // T_m
  for (std::size_t m = 0; m < nodes; ++m) {
    const std::size_t from = extent(levels.node_offset(static_cast<int>(m)));
    const std::size_t to = from + extent(levels.node_size_of(static_cast<int>(m)));
    for (std::size_t p = from; p < to; ++p) node_bytes[m] += counts[rank_at(p)];
  }

  // 1. The node's block.
  std::vector<std::size_t> local_bytes(locals);
  for (std::size_t k = 0; k < locals; ++k) local_bytes[k] = counts[rank_at(first + k)];
  const byte_buffer block_buffer(node_bytes[node]);
  const std::span<std::byte> block(block_buffer.data(), block_buffer.size());
  co_await on_level(levels, false, label, [&] {
    return start_on_level<op::all_gather, Inner, contiguous>(levels.intra(), send, block, local_bytes);
  });

  // 2. The leaders gather every node's block; 3. and hand the others' on.
  const std::size_t foreign = total - node_bytes[node];
  const byte_buffer others_buffer(foreign);
  const std::span<std::byte> others(others_buffer.data(), others_buffer.size());
  if (levels.intra().rank() == 0 && nodes > 1) {
    const byte_buffer all_buffer(total);
    const std::span<std::byte> all(all_buffer.data(), all_buffer.size());
    co_await on_level(levels, true, label, [&] {
      return start_on_level<op::all_gather, Outer, contiguous>(levels.inter(), std::span<const std::byte>(block), all,
                                                               node_bytes);
    });
    std::size_t before = 0;  // the nodes before this one
    for (std::size_t m = 0; m < node; ++m) before += node_bytes[m];
    if (before != 0) std::memcpy(others.data(), all.data(), before);
    if (foreign != before) std::memcpy(others.data() + before, all.data() + before + block.size(), foreign - before);
  }
  if (foreign != 0) {  // the same on every rank of the node
    std::vector<std::size_t> handed(locals, 0);
    handed[0] = foreign;
    co_await on_level(levels, false, label, [&] {
      return start_on_level<op::all_gather, Inner, contiguous>(levels.intra(), in_place, others, handed);
    });
  }

  // 4. Into place, rank order.
  std::size_t in_block = 0;
  std::size_t in_others = 0;
  for (std::size_t p = 0; p < ranks; ++p) {
    const std::size_t r = rank_at(p);
    const bool own = p >= first && p < first + locals;
    std::size_t& at = own ? in_block : in_others;
    if (counts[r] != 0) std::memcpy(recv.data() + place[r], (own ? block : others).data() + at, counts[r]);
    at += counts[r];
  }
}

/// hierarchical<Inner, Outer>'s all_to_all_v on bytes: this rank sends
/// send_bytes[d] to rank d and receives recv_bytes[s] from rank s (its own
/// counts only, checked), both in the whole group's rank order. Blocks
/// within the node go straight; local rank 0 of each node (the leader)
/// carries every block between nodes:
///   0. Inner over intra (ring all_gather, control bytes left out of
///      bytes_sent()): the node's count rows, 2P numbers per local rank,
///      so the leader knows every size it forwards; every rank checks that
///      the node's pairs agree (size_mismatch, as the flat count exchange).
///   1. Inner over intra (all_to_all_v): the blocks for the node's own ranks.
///   2. Inner over intra (all_to_all_v): each rank sends the leader its
///      blocks for other nodes, in position order.
///   3. Outer over inter (all_to_all_v), leaders only: leader n sends node
///      m's leader, in one message, every block of its node for m's ranks
///      (by source local rank, then destination local rank).
///   4. Inner over intra (all_to_all_v): the leader sends each local rank
///      its blocks from other nodes, in position order.
/// Packing and unpacking around each step are host copies. Bytes each rank
/// of node n sends, Outer and Inner direct or pairwise: intra, the blocks
/// for its own node's other ranks (step 1), plus its blocks for other nodes
/// (step 2, all but the leader), plus, for the leader, every other local
/// rank's blocks from other nodes (step 4); inter, leaders only, every
/// block from node n to node m in one message per node pair (N - 1 messages).
/// Each block between nodes crosses the slow level once; the fast level
/// carries it twice more (to the leader, from the leader).
template <class Inner, class Outer, class Intra, class Inter>
staged_task hierarchical_v_body(op::all_to_all, const two_level<Intra, Inter>& levels, std::span<const std::byte> send,
                                std::span<std::byte> recv, std::vector<std::size_t> send_bytes,
                                std::vector<std::size_t> recv_bytes) {
  const std::string_view label = hierarchical_v_label<op::all_to_all, Inner, Outer>();
  const std::size_t ranks = extent(levels.size());
  const std::size_t nodes = extent(levels.node_count());
  const std::size_t node = extent(levels.node_index());
  const std::size_t locals = extent(levels.node_size());
  const std::size_t first = extent(levels.node_offset(levels.node_index()));
  const bool leader = levels.intra().rank() == 0;
  const auto rank_at = [&levels](std::size_t p) { return extent(levels.rank_at(static_cast<int>(p))); };
  const auto on_node = [&](std::size_t p) { return p >= first && p < first + locals; };
  const std::vector<std::size_t> send_at = running_offsets(send_bytes);  // in send, rank order
  const std::vector<std::size_t> recv_at = running_offsets(recv_bytes);

  // 0. The node's count rows, in position order: [to position q..., from position q...].
  std::vector<std::uint64_t> mine(2 * ranks);
  std::vector<std::uint64_t> rows(2 * ranks * locals);
  for (std::size_t q = 0; q < ranks; ++q) {
    mine[q] = send_bytes[rank_at(q)];
    mine[ranks + q] = recv_bytes[rank_at(q)];
  }
  {
    const std::uint64_t before = levels.intra().bytes_sent();
    co_await on_level(levels, false, label, [&] {
      return start_on_level<op::all_gather, ring, contiguous>(levels.intra(), std::span<const std::uint64_t>(mine),
                                                              std::span<std::uint64_t>(rows));
    });
    if constexpr (discounts_control_bytes<Intra>) {
      levels.intra().discount_control_bytes(levels.intra().bytes_sent() - before);
    }
  }
  const auto sent_by = [&](std::size_t l, std::size_t q) { return static_cast<std::size_t>(rows[l * 2 * ranks + q]); };
  const auto got_by = [&](std::size_t l, std::size_t q) {
    return static_cast<std::size_t>(rows[l * 2 * ranks + ranks + q]);
  };
  // Every rank of the node checks every pair within it, as the flat form's
  // count exchange does, so they all fail together before any payload moves.
  // Pairs across nodes: the inter level's exact receive sizes catch totals that disagree.
  for (std::size_t l = 0; l < locals; ++l) {
    for (std::size_t k = 0; k < locals; ++k) {
      if (sent_by(l, first + k) == got_by(k, first + l)) continue;
      const int s = levels.rank_at(static_cast<int>(first + l));
      const int d = levels.rank_at(static_cast<int>(first + k));
      fail(errc::size_mismatch,
           {"rank ", s, " sends ", sent_by(l, first + k), " bytes to rank ", d, ", but rank ", d, " expects ",
            got_by(k, first + l), " from rank ", s, ": send_counts and recv_counts disagree"},
           {levels.rank(), label, -1, s == levels.rank() ? d : s});
    }
  }

  // 1. Blocks within the node, packed and unpacked in local rank order.
  {
    std::vector<std::size_t> to_local(locals);
    std::vector<std::size_t> from_local(locals);
    std::size_t out_bytes = 0;
    std::size_t in_bytes = 0;
    for (std::size_t k = 0; k < locals; ++k) {
      out_bytes += (to_local[k] = send_bytes[rank_at(first + k)]);
      in_bytes += (from_local[k] = recv_bytes[rank_at(first + k)]);
    }
    const byte_buffer out_buffer(out_bytes);
    const byte_buffer in_buffer(in_bytes);
    const std::span<std::byte> out(out_buffer.data(), out_bytes);
    const std::span<std::byte> in(in_buffer.data(), in_bytes);
    std::size_t at = 0;
    for (std::size_t k = 0; k < locals; ++k) {
      if (to_local[k] != 0) std::memcpy(out.data() + at, send.data() + send_at[rank_at(first + k)], to_local[k]);
      at += to_local[k];
    }
    co_await on_level(levels, false, label, [&] {
      return start_on_level<op::all_to_all, Inner, contiguous>(levels.intra(), std::span<const std::byte>(out), in,
                                                               to_local, from_local);
    });
    at = 0;
    for (std::size_t k = 0; k < locals; ++k) {
      if (from_local[k] != 0) std::memcpy(recv.data() + recv_at[rank_at(first + k)], in.data() + at, from_local[k]);
      at += from_local[k];
    }
  }
  if (nodes == 1) co_return;

  // 2. Each rank's blocks for other nodes to the leader, position order.
  std::vector<std::size_t> up_to(locals, 0);
  std::vector<std::size_t> up_from(locals, 0);
  for (std::size_t q = 0; q < ranks; ++q) {
    if (!on_node(q)) up_to[0] += send_bytes[rank_at(q)];
  }
  for (std::size_t l = 0; leader && l < locals; ++l) {
    for (std::size_t q = 0; q < ranks; ++q) {
      if (!on_node(q)) up_from[l] += sent_by(l, q);
    }
  }
  const byte_buffer outgoing_buffer(up_to[0]);
  const std::span<std::byte> outgoing(outgoing_buffer.data(), outgoing_buffer.size());
  std::size_t at = 0;
  for (std::size_t q = 0; q < ranks; ++q) {
    const std::size_t d = rank_at(q);
    if (on_node(q)) continue;
    if (send_bytes[d] != 0) std::memcpy(outgoing.data() + at, send.data() + send_at[d], send_bytes[d]);
    at += send_bytes[d];
  }
  std::size_t gathered_bytes = 0;
  for (const std::size_t b : up_from) gathered_bytes += b;
  const byte_buffer gathered_buffer(gathered_bytes);
  const std::span<std::byte> gathered(gathered_buffer.data(), gathered_bytes);
  co_await on_level(levels, false, label, [&] {
    return start_on_level<op::all_to_all, Inner, contiguous>(levels.intra(), std::span<const std::byte>(outgoing),
                                                             gathered, up_to, up_from);
  });

  // 3. Leaders exchange over inter (its rank order is node order for local rank 0).
  std::vector<std::size_t> down_to(locals, 0);
  std::vector<std::size_t> down_from(locals, 0);
  for (std::size_t q = 0; q < ranks; ++q) {
    if (!on_node(q)) down_from[0] += recv_bytes[rank_at(q)];
  }
  byte_buffer scattered_buffer;
  if (leader) {
    // Where block (local l -> position q) sits in `gathered`.
    std::vector<std::size_t> from_local_at(locals * ranks, 0);
    at = 0;
    for (std::size_t l = 0; l < locals; ++l) {
      for (std::size_t q = 0; q < ranks; ++q) {
        if (on_node(q)) continue;
        from_local_at[l * ranks + q] = at;
        at += sent_by(l, q);
      }
    }
    std::vector<std::size_t> to_node(nodes, 0);
    std::vector<std::size_t> from_node(nodes, 0);
    for (std::size_t m = 0; m < nodes; ++m) {
      if (m == node) continue;
      const std::size_t from = extent(levels.node_offset(static_cast<int>(m)));
      const std::size_t to = from + extent(levels.node_size_of(static_cast<int>(m)));
      for (std::size_t l = 0; l < locals; ++l) {
        for (std::size_t q = from; q < to; ++q) {
          to_node[m] += sent_by(l, q);
          from_node[m] += got_by(l, q);
        }
      }
    }
    std::size_t bundled_bytes = 0;
    std::size_t arrived_bytes = 0;
    for (std::size_t m = 0; m < nodes; ++m) {
      bundled_bytes += to_node[m];
      arrived_bytes += from_node[m];
    }
    const byte_buffer bundled_buffer(bundled_bytes);
    const byte_buffer arrived_buffer(arrived_bytes);
    const std::span<std::byte> bundled(bundled_buffer.data(), bundled_bytes);
    const std::span<std::byte> arrived(arrived_buffer.data(), arrived_bytes);
    at = 0;
    for (std::size_t m = 0; m < nodes; ++m) {  // to node m: by source local l, then destination position
      if (m == node) continue;
      const std::size_t from = extent(levels.node_offset(static_cast<int>(m)));
      const std::size_t to = from + extent(levels.node_size_of(static_cast<int>(m)));
      for (std::size_t l = 0; l < locals; ++l) {
        for (std::size_t q = from; q < to; ++q) {
          if (sent_by(l, q) != 0)
            std::memcpy(bundled.data() + at, gathered.data() + from_local_at[l * ranks + q], sent_by(l, q));
          at += sent_by(l, q);
        }
      }
    }
    co_await on_level(levels, true, label, [&] {
      return start_on_level<op::all_to_all, Outer, contiguous>(levels.inter(), std::span<const std::byte>(bundled),
                                                               arrived, to_node, from_node);
    });
    // From node m: by source position q of m, then local rank k of this node.
    std::vector<std::size_t> arrived_at(locals * ranks, 0);
    at = 0;
    for (std::size_t q = 0; q < ranks; ++q) {
      if (on_node(q)) continue;
      for (std::size_t k = 0; k < locals; ++k) {
        arrived_at[k * ranks + q] = at;
        at += got_by(k, q);
      }
    }
    for (std::size_t k = 0; k < locals; ++k) {
      for (std::size_t q = 0; q < ranks; ++q) {
        if (!on_node(q)) down_to[k] += got_by(k, q);
      }
    }
    std::size_t scattered_bytes = 0;
    for (const std::size_t b : down_to) scattered_bytes += b;
    scattered_buffer = byte_buffer(scattered_bytes);
    at = 0;
    for (std::size_t k = 0; k < locals; ++k) {
      for (std::size_t q = 0; q < ranks; ++q) {
        if (on_node(q)) continue;
        if (got_by(k, q) != 0) {
          std::memcpy(scattered_buffer.data() + at, arrived.data() + arrived_at[k * ranks + q], got_by(k, q));
        }
        at += got_by(k, q);
      }
    }
  }

  // 4. The leader hands each local rank its blocks from other nodes.
  const byte_buffer incoming_buffer(down_from[0]);
  const std::span<std::byte> incoming(incoming_buffer.data(), incoming_buffer.size());
  co_await on_level(levels, false, label, [&] {
    return start_on_level<op::all_to_all, Inner, contiguous>(
        levels.intra(), std::span<const std::byte>(scattered_buffer.data(), scattered_buffer.size()), incoming, down_to,
        down_from);
  });
  at = 0;
  for (std::size_t q = 0; q < ranks; ++q) {
    const std::size_t s = rank_at(q);
    if (on_node(q)) continue;
    if (recv_bytes[s] != 0) std::memcpy(recv.data() + recv_at[s], incoming.data() + at, recv_bytes[s]);
    at += recv_bytes[s];
  }
}

/// A bundle's hierarchical body: its members' bodies, one after another, in
/// one coroutine (each member moves as it would alone; the bundle is one
/// collective in the levels' engine, so one request or persistent start).
inline staged_task one_after_another(std::vector<std::function<staged_task()>> members) {
  for (const auto& member : members) co_await member();
}

/// The stamp of a hierarchical call of Op (its v form where Uneven) on
/// elements of Recv's type: its levels move bytes, so the collectives its
/// body starts carry it besides their own (staged_task::set_within), and
/// ranks whose calls differ in element type, form or levels' algorithms
/// fail instead of taking each other's bytes.
template <class Op, class Inner, class Outer, bool Uneven, class Recv>
constexpr call_stamp hierarchical_stamp() noexcept {
  using element = typename element_of<std::remove_cvref_t<Recv>>::type;
  constexpr call_kind kind = Uneven ? Op::v_kind : Op::kind;
  constexpr call_stamp inner = collective_stamp<Op, contiguous, element>(Inner::name, kind);
  constexpr call_stamp outer = collective_stamp<Op, contiguous, element>(Outer::name, kind);
  return stamp_digest{}
      .add_number(inner.digest)
      .add(",")
      .add_number(outer.digest)
      .stamp(kind)
      .with_element(inner.element);
}

/// A body whose steps carry `call` (hierarchical_stamp).
inline staged_task stamped(staged_task body, call_stamp call) noexcept {
  body.set_within(call);
  return body;
}

/// One member's hierarchical body (even form): checks its sizes, and returns
/// what builds the body (at every start, for a persistent collective).
template <class Op, class Inner, class Outer, class Comm, class Send, class Recv>
std::function<staged_task()> hierarchical_member(Comm& comm, Send& send, Recv& recv) {
  const std::span<const std::byte> s = const_bytes(send);
  const std::span<std::byte> r = mutable_bytes(recv);
  check_hierarchical_sizes<Inner, Outer>(Op{}, comm, s, r);
  return [&comm, s, r] {
    return stamped(hierarchical_body<Inner, Outer>(Op{}, comm, s, r),
                   hierarchical_stamp<Op, Inner, Outer, false, Recv>());
  };
}

/// Counts as bytes: read_counts' counts of `unit`-byte elements.
template <class Counts>
std::vector<std::size_t> count_bytes(const Counts& counts, const call_site& at, std::string_view which,
                                     std::size_t unit) {
  checked_counts checked;
  read_counts(counts, at, which, 1, checked);
  std::vector<std::size_t> bytes(checked.count.begin(), checked.count.end());
  for (std::size_t& b : bytes) b *= unit;
  return bytes;
}

/// One member's hierarchical all_gather_v: the flat form's checks (the same
/// layout plan, so the same errors), then the body on the counts as bytes,
/// read once (a persistent collective keeps them).
template <class Inner, class Outer, class Comm, class Send, class Recv, class Counts>
std::function<staged_task()> hierarchical_v_member(op::all_gather, Comm& comm, Send& send, Recv& recv,
                                                   const Counts& recv_counts) {
  const call_site at{comm.rank(), comm.size(), hierarchical_v_label<op::all_gather, Inner, Outer>()};
  (void)make_v_plan(contiguous{}, op::all_gather{}, at, send, recv, recv_counts);
  std::vector<std::size_t> bytes =
      count_bytes(recv_counts, at, "recv_counts", sizeof(std::ranges::range_value_t<std::remove_cvref_t<Recv>>));
  return [&comm, s = const_bytes(send), r = mutable_bytes(recv), bytes = std::move(bytes)] {
    return stamped(hierarchical_v_body<Inner, Outer>(op::all_gather{}, comm, s, r, bytes),
                   hierarchical_stamp<op::all_gather, Inner, Outer, true, Recv>());
  };
}

/// One member's hierarchical all_to_all_v, as the all_gather_v above.
template <class Inner, class Outer, class Comm, class Send, class Recv, class SendCounts, class RecvCounts>
std::function<staged_task()> hierarchical_v_member(op::all_to_all, Comm& comm, Send& send, Recv& recv,
                                                   const SendCounts& send_counts, const RecvCounts& recv_counts) {
  const call_site at{comm.rank(), comm.size(), hierarchical_v_label<op::all_to_all, Inner, Outer>()};
  (void)make_v_plan(contiguous{}, op::all_to_all{}, at, send, send_counts, recv, recv_counts);
  const std::size_t unit = sizeof(std::ranges::range_value_t<std::remove_cvref_t<Recv>>);
  std::vector<std::size_t> out = count_bytes(send_counts, at, "send_counts", unit);
  std::vector<std::size_t> in = count_bytes(recv_counts, at, "recv_counts", unit);
  return [&comm, s = const_bytes(send), r = mutable_bytes(recv), out = std::move(out), in = std::move(in)] {
    return stamped(hierarchical_v_body<Inner, Outer>(op::all_to_all{}, comm, s, r, out, in),
                   hierarchical_stamp<op::all_to_all, Inner, Outer, true, Recv>());
  };
}

/// What builds a hierarchical call's body: one member, or a bundle's members
/// one after another; the even form without counts, the v form with them.
/// Every member is checked before any byte moves.
template <class Op, class Inner, class Outer, class Comm, class Send, class Recv, class... Counts>
std::function<staged_task()> hierarchical_make(Comm& comm, Send& send, Recv& recv, const Counts&... counts) {
  const auto one = [&](auto& s, auto& r) {
    if constexpr (sizeof...(Counts) == 0) {
      return hierarchical_member<Op, Inner, Outer>(comm, s, r);
    } else {
      return hierarchical_v_member<Inner, Outer>(Op{}, comm, s, r, counts...);
    }
  };
  if constexpr (is_bundle<std::remove_cvref_t<Send>>) {
    std::vector<std::function<staged_task()>> members;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (members.push_back(one(send.template get<I>(), recv.template get<I>())), ...);
    }
    (std::make_index_sequence<std::remove_cvref_t<Send>::size>{});
    return [members = std::move(members)] { return one_after_another(members); };
  } else {
    return one(send, recv);
  }
}

/// The blocks each level's collectives move in hierarchical<automatic,
/// automatic>, for its prediction: an all-gather's inter blocks are one
/// shard and its intra blocks a node column (N shards), in one call each.
struct level_blocks {
  std::size_t inter;
  std::size_t intra;
  std::size_t intra_calls;
};
constexpr level_blocks hierarchical_level_blocks(op::all_gather, std::size_t nodes, std::size_t /*locals*/,
                                                 std::size_t bytes, bool /*local_major*/) noexcept {
  return {bytes, nodes * bytes, 1};
}
/// An all-to-all's inter blocks are bundles of L blocks; its intra level
/// runs once on N-block bundles (round-robin placement) or once per node's
/// row on single blocks.
constexpr level_blocks hierarchical_level_blocks(op::all_to_all, std::size_t nodes, std::size_t locals,
                                                 std::size_t bytes, bool local_major) noexcept {
  if (local_major) return {locals * bytes, nodes * bytes, 1};
  return {locals * bytes, bytes, nodes};
}

/// Whether every rank knows every block's size in Op's v form, so that
/// automatic can predict from them alike on every rank: an all-gather's
/// recv_counts are every rank's; an all-to-all's counts are each rank's own.
constexpr bool v_sizes_known_everywhere(op::all_gather) noexcept { return true; }
constexpr bool v_sizes_known_everywhere(op::all_to_all) noexcept { return false; }

/// `m` for a level whose ranks send to other nodes while the other ranks of
/// their node do too: a node's `locals` ranks share its link, so a byte that
/// leaves the node takes `locals` times the link's time per byte; one that
/// stays (a flat algorithm's pairs inside a node) the model's. `leaving` is
/// the share of a rank's bytes that leave its node: 1 for the inter level,
/// (P - L) / (P - 1) for a flat algorithm whose bytes spread evenly over
/// its peers. Without it the flat prediction charged bytes through the link
/// as if each rank had a link of its own, and chose flat direct for 1 MiB
/// all-gathers on two hosts of two ranks, which sends the link twice the
/// bytes hierarchical does (docs/hierarchical.md).
constexpr cost_model sharing_node_links(cost_model m, int locals, double leaving) noexcept {
  m.beta *= 1.0 + (static_cast<double>(locals) - 1.0) * leaving;
  return m;
}

/// The share of a flat algorithm's bytes that leave a node of `locals` of
/// the group's `size` ranks (spread evenly over the peers).
constexpr double flat_share_leaving(int size, int locals) noexcept {
  return size > 1 ? static_cast<double>(size - locals) / static_cast<double>(size - 1) : 0.0;
}

/// What automatic predicts for hierarchical<automatic, automatic> with
/// `bytes`-byte blocks of the whole group: the inter level's choice plus the
/// intra level's, each from its transport's cost model (the inter one's
/// link shared by the node's ranks).
template <class Op, class A, class Intra, class Inter>
double predicted_hierarchical_seconds(int nodes, int locals, std::size_t bytes, bool local_major) {
  const level_blocks blocks = hierarchical_level_blocks(Op{}, extent(nodes), extent(locals), bytes, local_major);
  const double inter = run_time_choice(Op{}, nodes, blocks.inter, sharing_node_links(model_of<A, Inter>(), locals, 1.0),
                                       allowed_set<A>())
                           .predicted_seconds;
  const double intra =
      run_time_choice(Op{}, locals, blocks.intra, model_of<A, Intra>(), allowed_set<A>()).predicted_seconds;
  return inter + static_cast<double>(blocks.intra_calls) * intra;
}

/// A two_level that also offers the whole group as one communicator.
template <class Comm>
concept has_whole_communicator = requires(Comm& comm) {
  comm.world();
};
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

/// staged_run's `leave` for a body on `levels`: abandon_levels. The levels
/// outlive every collective on them (two_level's state holds the engine).
template <class Levels>
auto leaving_levels(const Levels& levels, std::string_view operation) noexcept {
  return [&levels, operation]() noexcept { abandon_levels(levels, operation); };
}

/// The launches of a hierarchical collective's body (`make` builds it, a
/// staged_task), one per form. All of them go through the levels' own
/// engine (staged_progress(levels), in order) whenever collectives are
/// in flight there, so that every rank starts the levels' collectives in
/// the same order. A body that ends in an exception of the rank's own code
/// abandons both levels first (a level's failure went to the other level
/// from on_level already: op/abandon_levels.hpp); `operation` names the
/// call there.
struct two_level_now {  // blocking: runs the body to its end
  static constexpr bool keeps_buffers = false;
  template <class Levels, class Make>
  void staged(const Levels& levels, std::string_view operation, Make make) const {
    progress_engine& engine = staged_progress(levels);
    if (!engine.active()) {
      try {
        make().run();
      } catch (...) {
        abandon_levels(levels, operation);
        throw;
      }
      return;
    }
    in_flight_handle h = staged_handle(engine, levels.rank(), staged_busy_poll(levels), std::move(make),
                                       leaving_levels(levels, operation));
    queue(h, true);
    collective_request(h).wait();  // behind the collectives in flight, in order
  }
};
struct two_level_in_flight {  // nonblocking: a request whose turns advance the body
  static constexpr bool keeps_buffers = true;
  template <class Levels, class Make>
  collective_request staged(const Levels& levels, std::string_view operation, Make make) const {
    in_flight_handle h = staged_handle(staged_progress(levels), levels.rank(), staged_busy_poll(levels),
                                       std::move(make), leaving_levels(levels, operation));
    queue(h, true);
    return collective_request(h);
  }
};
struct two_level_bound {  // persistent: a fresh body at every start()
  static constexpr bool keeps_buffers = true;
  template <class Levels, class Make>
  persistent_collective staged(const Levels& levels, std::string_view operation, Make make) const {
    return persistent_collective(staged_handle(staged_progress(levels), levels.rank(), staged_busy_poll(levels),
                                               std::move(make), leaving_levels(levels, operation)));
  }
};

/// Whether a call's arguments can run hierarchically: one pair of
/// hierarchical_arguments, or bundles of such pairs.
template <class Layout, class Send, class Recv>
consteval bool hierarchical_call() {
  if constexpr (is_bundle<Send> && is_bundle<Recv>) {
    if constexpr (Send::size != Recv::size) {
      return false;
    } else {
      return []<std::size_t... I>(std::index_sequence<I...>) {
        return (
            hierarchical_arguments<Layout, std::remove_reference_t<decltype(std::declval<Send&>().template get<I>())>,
                                   std::remove_reference_t<decltype(std::declval<Recv&>().template get<I>())>> &&
            ...);
      }
      (std::make_index_sequence<Send::size>{});
    }
  } else if constexpr (is_bundle<Send> || is_bundle<Recv>) {
    return false;
  } else {
    return hierarchical_arguments<Layout, Send, Recv>;
  }
}

/// Every form of every operation with a hierarchical body (plait::all_gather,
/// plait::all_to_all, their v forms, bundles of them) on a two_level
/// communicator, and of any other operation (flat on the whole communicator).
/// `flat(whole, send, recv)` runs the form on a whole communicator (the
/// public function itself, with the counts); `launch` runs the hierarchical
/// body in the form (two_level_now, two_level_in_flight, two_level_bound);
/// `counts`: a v form's, none for the even form. Returns what they return.
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class Flat, class Launch,
          class... Counts>
decltype(auto) two_level_collective(Comm& comm, Send&& send, Recv&& recv, Flat flat, Launch launch,
                                    const Counts&... counts) {
  using args = std::pair<std::remove_cvref_t<Send>, std::remove_cvref_t<Recv>>;
  constexpr bool serves_hierarchy =
      hierarchical_routes<Op> &&
      hierarchical_call<Layout, std::remove_reference_t<Send>, std::remove_reference_t<Recv>>();
  constexpr bool host_levels = std::is_same_v<typename Comm::intra_type::memory_space, host_memory> &&
                               std::is_same_v<typename Comm::inter_type::memory_space, host_memory>;
  constexpr bool v_form = sizeof...(Counts) > 0;
  if constexpr (Launch::keeps_buffers) static_assert(check_kept_arguments<Send, Recv>());
  // The body's builder (its checks run here, before the call returns).
  const auto body = [&]<class Inner, class Outer>() {
    return hierarchical_make<Op, Inner, Outer>(comm, send, recv, counts...);
  };
  if constexpr (is_hierarchical<Algorithm> && !host_levels) {
    static_assert(dependent_false<args>,
                  "plait: hierarchical<Inner, Outer> needs two levels of host memory (shm, MPI): its staging and "
                  "reordering are host copies");
  } else if constexpr (is_hierarchical<Algorithm>) {
    if constexpr (!serves_hierarchy) {
      static_assert(dependent_false<args>,
                    "plait: hierarchical<Inner, Outer> runs all_gather and all_to_all on 1-D contiguous ranges "
                    "(std::vector, std::span, ...) of one element type with plait::contiguous, in every form (even, "
                    "v, bundles of them); tensor views, other layouts, in_place and other operations run flat on the "
                    "whole communicator");
    } else if constexpr (check_hierarchical_levels<Algorithm, Op>()) {
      return launch.staged(comm, hierarchical_label<Op, typename Algorithm::inner, typename Algorithm::outer>(),
                           body.template operator()<typename Algorithm::inner, typename Algorithm::outer>());
    }
  } else if constexpr (is_automatic<Algorithm> && serves_hierarchy && host_levels) {
    if constexpr (has_whole_communicator<Comm> && v_form && !v_sizes_known_everywhere(Op{})) {
      // Each rank knows only its own counts: no choice every rank would make alike without an exchange.
      comm.note_choice(level_choice{.hierarchical = false});
      return flat(comm.world(), std::forward<Send>(send), std::forward<Recv>(recv));
    } else {
      // automatic_with<Tuning> tunes both levels (and the flat choice) alike. The
      // blocks of the whole group: recv over P (bundles: every member's).
      std::size_t block = 0;
      if constexpr (is_bundle<std::remove_cvref_t<Recv>>) {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          ((block += mutable_bytes(recv.template get<I>()).size()), ...);
        }
        (std::make_index_sequence<std::remove_cvref_t<Recv>::size>{});
      } else {
        block = mutable_bytes(recv).size();
      }
      block /= extent(comm.size() > 0 ? comm.size() : 1);
      level_choice picked{};
      picked.hierarchical_seconds =
          predicted_hierarchical_seconds<Op, Algorithm, typename Comm::intra_type, typename Comm::inter_type>(
              comm.node_count(), comm.largest_node_size(), block, comm.local_major());
      if constexpr (has_whole_communicator<Comm>) {
        using whole = std::remove_reference_t<decltype(comm.world())>;
        const int locals = comm.largest_node_size();
        picked.flat_seconds = run_time_choice(Op{}, comm.size(), block,
                                              sharing_node_links(model_of<Algorithm, whole>(), locals,
                                                                 flat_share_leaving(comm.size(), locals)),
                                              allowed_set<Algorithm>())
                                  .predicted_seconds;
        picked.hierarchical = picked.hierarchical_seconds <= picked.flat_seconds;
      }
      comm.note_choice(picked);
      if constexpr (has_whole_communicator<Comm>) {
        if (!picked.hierarchical) return flat(comm.world(), std::forward<Send>(send), std::forward<Recv>(recv));
      }
      return launch.staged(comm, hierarchical_label<Op, Algorithm, Algorithm>(),
                           body.template operator()<Algorithm, Algorithm>());
    }
  } else if constexpr (has_whole_communicator<Comm>) {
    if constexpr (is_automatic<Algorithm>) comm.note_choice(level_choice{.hierarchical = false});
    return flat(comm.world(), std::forward<Send>(send), std::forward<Recv>(recv));
  } else if constexpr (is_automatic<Algorithm>) {
    static_assert(dependent_false<args>,
                  "plait: automatic on a plait::two_level runs hierarchically, which takes 1-D contiguous ranges of "
                  "one element type with plait::contiguous (or bundles of them) on host-memory levels; this "
                  "two_level has no whole communicator to run anything else flat");
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

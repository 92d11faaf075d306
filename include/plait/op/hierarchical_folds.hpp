// Reductions on a plait::two_level communicator: every rank's data combined
// over both levels, by a coroutine body (op/staged.hpp) whose steps are the
// levels' own nonblocking collectives, so one body serves the blocking,
// nonblocking and persistent forms, as op/hierarchical.hpp's do.
//
// Each rank first turns its data into partials (widened to the accumulator
// for plait::accumulate, prepared for premul_sum), and the levels combine
// those with the reduction's combine alone (avg's division and the rounding
// back to 16 bits happen once, at the end, as in the flat forms). Two routes:
//
//   combined per node (commutative reductions; and reductions that keep rank
//   order when every node holds consecutive ranks in order, i.e. the
//   two_level's positions are the ranks):
//     1. Inner: all_reduce of the N-element data over the node;
//     2. Outer, local rank 0 of every node: all_reduce of the node partials;
//     3. Inner: local rank 0 broadcasts the result (an all_gather_v in which
//        it alone contributes).
//     Bytes per rank: the intra all-reduce's, 2(L-1)/L x N with ring; local
//     rank 0 also the inter all-reduce's, 2(M-1)/M x N over M nodes; the
//     broadcast (L-1) x N from local rank 0.
//   gathered (plait::ordered, whose result is the exact left fold over
//   ranks; and rank-order reductions on other placements):
//     1. Inner: all_gather of every local rank's partials (L x N);
//     2. Outer, local rank 0: all_gather_v of the nodes' blocks (P x N);
//     3. local rank 0 folds the P contributions in rank order, one at a time;
//     4. Inner: local rank 0 broadcasts the result.
//     Exact whatever the placement, and P x N bytes to every node: for the
//     small data an exact sum is usually wanted for.
//
// reduce_scatter (and _v) runs the same body and keeps this rank's part.
// Bundles run their members' bodies one after another in one collective.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <ranges>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/hierarchical.hpp"
#include "plait/core/call_site.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/contiguous_folds.hpp"
#include "plait/levels/two_level.hpp"
#include "plait/op/bundle.hpp"
#include "plait/op/dispatch.hpp"
#include "plait/op/fold_collective.hpp"
#include "plait/op/hierarchical.hpp"
#include "plait/op/staged.hpp"
#include "plait/reduction/kernel.hpp"
#include "plait/reduction/reductions.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// What the levels combine partials of element type T with, for reduction R:
/// R's combine alone (avg and premul_sum combine as sum: their division and
/// scale are the body's, once), on the accumulator for plait::accumulate.
template <class T, class R>
struct level_reduction {
  using element = T;
  static const R& of(const R& r) noexcept { return r; }
};
template <class T>
struct level_reduction<T, avg> {
  using element = T;
  static sum of(const avg&) noexcept { return {}; }
};
template <class T>
struct level_reduction<T, premul_sum> {
  using element = T;
  static sum of(const premul_sum&) noexcept { return {}; }
};
template <class T, class Acc, class R>
struct level_reduction<T, accumulate<Acc, R>> {
  using element = typename level_reduction<Acc, R>::element;
  static decltype(auto) of(const accumulate<Acc, R>& r) noexcept { return level_reduction<Acc, R>::of(r.reduction); }
};

/// "all_reduce<hierarchical<ring, ring>>", "reduce_scatter<hierarchical<...>>".
template <class Op, class Inner, class Outer>
std::string_view hierarchical_fold_label() {
  static const operation_label label(Op::name, hierarchical_name<Inner, Outer>());
  return label.view();
}

/// Starts one level's reduction (in flight where the level can keep one).
template <class Algorithm, class Comm, class Send, class Recv, class Reduction>
collective_request start_fold_on_level(Comm& comm, Send&& send, Recv&& recv, const Reduction& reduction) {
  using element = std::remove_cv_t<typename element_of<Recv>::type>;
  using operation = op::all_reduce<fold_order_of<Reduction>()>;
  (void)sizeof(element);
  in_flight_handle h;
  if constexpr (can_be_in_flight<Comm>) {
    dispatch_fold<operation, Algorithm, contiguous>(comm, start_in_flight{&h}, std::forward<Send>(send),
                                                    std::forward<Recv>(recv), reduction);
  } else {
    dispatch_fold<operation, Algorithm, contiguous>(comm, run_now{}, std::forward<Send>(send), std::forward<Recv>(recv),
                                                    reduction);
  }
  return collective_request(h);
}

/// Whether every node holds consecutive ranks in rank order (position p is rank p).
template <class Levels>
bool positions_are_ranks(const Levels& levels) {
  for (int p = 0; p < levels.size(); ++p) {
    if (levels.rank_at(p) != p) return false;
  }
  return true;
}

/// The body: every rank's `send` (N elements of T) combined with `*r` over
/// both levels; this rank keeps elements [first, first + count) of the
/// result in `out`. `gathered`: the gathered route (see the top).
/// `PerNode`: whether the combined-per-node route exists for R at all (not
/// under plait::ordered), so that it is compiled only where it may run.
template <class Inner, class Outer, bool PerNode, class T, class R, class Levels>
staged_task fold_on_levels(const Levels& levels, std::span<const T> send, std::span<T> out, std::size_t first,
                           std::size_t count, std::shared_ptr<const R> r, bool gathered, std::string_view label) {
  using element = typename level_reduction<T, R>::element;  // what partials are
  const reduction_kernel kernel = kernel_for<T>(*r);
  const std::size_t n = send.size();
  const std::size_t unit = sizeof(element);
  std::vector<element> partial(n);
  auto* bytes = reinterpret_cast<std::byte*>(partial.data());
  if (kernel.to_wire != nullptr) {
    kernel.to_wire(reinterpret_cast<const std::byte*>(send.data()), bytes, n);
  } else if (n != 0) {
    std::memcpy(bytes, send.data(), n * unit);
  }
  if (kernel.prepare != nullptr) kernel.prepare(kernel.state, bytes, bytes, n);
  const bool leader = levels.intra().rank() == 0;
  if (PerNode && !gathered) {
    if constexpr (PerNode) {
      const auto combine_only = level_reduction<T, R>::of(*r);
      co_await on_level(levels, false, label, [&] {
        return start_fold_on_level<Inner>(levels.intra(), in_place, std::span<element>(partial), combine_only);
      });
      if (leader) {
        co_await on_level(levels, true, label, [&] {
          return start_fold_on_level<Outer>(levels.inter(), in_place, std::span<element>(partial), combine_only);
        });
      }
    }
  } else {
    const auto locals = static_cast<std::size_t>(levels.intra().size());
    std::vector<element> node(locals * n);
    co_await on_level(levels, false, label, [&] {
      return start_on_level<op::all_gather, automatic, contiguous>(levels.intra(), std::span<const element>(partial),
                                                                   std::span<element>(node));
    });
    if (leader) {
      std::vector<element> all(static_cast<std::size_t>(levels.size()) * n);
      std::vector<std::size_t> counts(static_cast<std::size_t>(levels.node_count()));
      for (int k = 0; k < levels.node_count(); ++k) {
        counts[static_cast<std::size_t>(k)] = static_cast<std::size_t>(levels.node_size_of(k)) * n;
      }
      co_await on_level(levels, true, label, [&] {
        return start_on_level<op::all_gather, automatic, contiguous>(levels.inter(), std::span<const element>(node),
                                                                     std::span<element>(all), counts);
      });
      // The exact left fold over ranks: position_of(q) is where rank q's data sits.
      const auto at = [&](int q) {
        return reinterpret_cast<const std::byte*>(all.data() + static_cast<std::size_t>(levels.position_of(q)) * n);
      };
      if (n != 0) std::memcpy(bytes, at(0), n * unit);
      for (int q = 1; q < levels.size(); ++q) kernel.combine(kernel.state, bytes, at(q), bytes, n);
    }
  }
  // Local rank 0 holds the result: it alone contributes to an all_gather_v in place.
  std::vector<std::size_t> from_leader(static_cast<std::size_t>(levels.intra().size()), 0);
  from_leader[0] = n;
  co_await on_level(levels, false, label, [&] {
    return start_on_level<op::all_gather, automatic, contiguous>(levels.intra(), in_place, std::span<element>(partial),
                                                                 from_leader);
  });
  if (kernel.finish != nullptr) kernel.finish(kernel.state, bytes, n, levels.size());
  const std::byte* kept = bytes + first * unit;
  if (kernel.from_wire != nullptr) {
    kernel.from_wire(kept, reinterpret_cast<std::byte*>(out.data()), count);
  } else if (count != 0) {
    std::memcpy(out.data(), kept, count * unit);
  }
}

/// One member's hierarchical reduction: the flat form's checks (the same
/// layout plan, so the same errors, before any byte moves), then what builds
/// the body (at every start, for a persistent collective). `counts`:
/// reduce_scatter_v's recv_counts, read once.
template <class Op, class Inner, class Outer, class Comm, class Send, class Recv, class R, class... Counts>
std::function<staged_task()> hierarchical_fold_member(Comm& comm, Send& send, Recv& recv, std::shared_ptr<const R> r,
                                                      const Counts&... counts) {
  using T = std::remove_cv_t<std::ranges::range_value_t<std::remove_cvref_t<Recv>>>;
  const call_site at{comm.rank(), comm.size(), hierarchical_fold_label<Op, Inner, Outer>()};
  const bool in_place_call = std::is_same_v<std::remove_cvref_t<Send>, in_place_t>;
  const auto plan = [&] {
    if constexpr (sizeof...(Counts) == 0) {
      return make_plan(contiguous{}, Op{}, at, send, recv, *r);
    } else {
      return make_v_plan(contiguous{}, Op{}, at, send, recv, counts..., *r);
    }
  }();
  const fold_member& m = plan.members().front();
  const std::size_t total = m.elements;
  std::size_t first = 0;
  std::size_t count = total;
  if constexpr (op::is_reduce_scatter<Op>) {
    first = m.first_element(comm.rank());
    count = m.elements_in(comm.rank());
  }
  std::span<const T> data;
  std::span<T> out;
  if constexpr (std::is_same_v<std::remove_cvref_t<Send>, in_place_t>) {
    const std::span<T> whole(std::ranges::data(recv), std::ranges::size(recv));
    data = whole;
    out = whole.subspan(in_place_call ? first : 0, count);
  } else {
    data = std::span<const T>(std::ranges::data(send), std::ranges::size(send));
    out = std::span<T>(std::ranges::data(recv), std::ranges::size(recv));
  }
  constexpr bool exact_left_fold = Op::order == op::fold_order::left;
  const bool gathered = exact_left_fold || (Op::order == op::fold_order::rank && !positions_are_ranks(comm));
  return [&comm, data, out, first, count, r, gathered] {
    return fold_on_levels<Inner, Outer, !exact_left_fold>(comm, data, out, first, count, r, gathered,
                                                          hierarchical_fold_label<Op, Inner, Outer>());
  };
}

/// A reduction on a two_level communicator, in the form `launch` gives
/// (two_level_now, two_level_in_flight, two_level_bound): hierarchical<Inner,
/// Outer>, or automatic (hierarchical<automatic, automatic>), on 1-D
/// contiguous ranges (or bundles of them); flat on the whole communicator
/// when the object has one and the algorithm is a flat one (`flat(whole)`).
/// `args`: the reduction, or (recv_counts, reduction).
template <class Op, class Algorithm, class Layout, class Comm, class Send, class Recv, class Flat, class Launch,
          class... Args>
decltype(auto) two_level_fold_collective(Comm& comm, Send&& send, Recv&& recv, Flat flat, Launch launch,
                                         const Args&... args) {
  using args_t = std::pair<std::remove_cvref_t<Send>, std::remove_cvref_t<Recv>>;
  constexpr bool host_levels = std::is_same_v<typename Comm::intra_type::memory_space, host_memory> &&
                               std::is_same_v<typename Comm::inter_type::memory_space, host_memory>;
  constexpr bool contiguous_data = std::is_same_v<Layout, contiguous>;
  using reduction_t = std::remove_cvref_t<decltype(std::get<sizeof...(Args) - 1>(std::tie(args...)))>;
  const auto body = [&]<class Inner, class Outer>() {
    const auto r = std::make_shared<const reduction_t>(std::get<sizeof...(Args) - 1>(std::tie(args...)));
    const auto one = [&](auto& s, auto& v) {
      if constexpr (sizeof...(Args) == 1) {
        return hierarchical_fold_member<Op, Inner, Outer>(comm, s, v, r);
      } else {
        return hierarchical_fold_member<Op, Inner, Outer>(comm, s, v, r, std::get<0>(std::tie(args...)));
      }
    };
    if constexpr (is_bundle<std::remove_cvref_t<Send>>) {
      std::vector<std::function<staged_task()>> members;
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (members.push_back(one(send.template get<I>(), recv.template get<I>())), ...);
      }
      (std::make_index_sequence<std::remove_cvref_t<Send>::size>{});
      return std::function<staged_task()>([members = std::move(members)] { return one_after_another(members); });
    } else {
      return one(send, recv);
    }
  };
  if constexpr (Launch::keeps_buffers) static_assert(check_kept_arguments<Send, Recv>());
  if constexpr (has_whole_communicator<Comm> && !is_hierarchical<Algorithm>) {
    if constexpr (is_automatic<Algorithm>) comm.note_choice(level_choice{.hierarchical = false});
    return flat(comm.world());
  } else if constexpr (!host_levels) {
    static_assert(dependent_false<args_t>,
                  "plait: reductions on a plait::two_level combine on the host: both levels must be host-memory "
                  "transports (shm, MPI)");
  } else if constexpr (!contiguous_data) {
    static_assert(dependent_false<args_t>,
                  "plait: reductions on a plait::two_level take 1-D contiguous ranges (or bundles of them) with "
                  "plait::contiguous; tensor layouts run flat on the whole communicator");
  } else if constexpr (is_hierarchical<Algorithm>) {
    if constexpr (check_hierarchical_levels<Algorithm, op::all_reduce<Op::order>>()) {
      return launch.staged(comm, hierarchical_fold_label<Op, typename Algorithm::inner, typename Algorithm::outer>(),
                           body.template operator()<typename Algorithm::inner, typename Algorithm::outer>());
    }
  } else if constexpr (is_automatic<Algorithm>) {
    comm.note_choice(level_choice{.hierarchical = true});
    return launch.staged(comm, hierarchical_fold_label<Op, Algorithm, Algorithm>(),
                         body.template operator()<Algorithm, Algorithm>());
  } else {
    static_assert(dependent_false<args_t>,
                  "plait: a flat algorithm cannot run on a plait::two_level without a communicator over all its "
                  "ranks: use plait::hierarchical<Inner, Outer>, or plait::automatic (hierarchical here), or call it "
                  "on the whole communicator");
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

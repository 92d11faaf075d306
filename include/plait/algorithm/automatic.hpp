// plait::automatic and plait::automatic_with<Tuning>: pick, per call, the
// built-in algorithm with the lowest predicted time for (operation, P, bytes
// per block) under an alpha-beta cost model; plait::explain says which one a
// call would use and what it predicts.
//
// The model charges a schedule step by step (see cost_model). The prediction
// is the larger of rank 0's and rank P-1's costs: between them they are on
// every built-in's critical path (tree's root; the ranks that stand in for
// the extras in recursive_doubling and recursive_halving, rank 0 among them
// whenever P is not a power of two; the rank whose Bruck blocks wrap around,
// so its messages are packed; any rank of the symmetric ones).
//
// Parameters: automatic_with<Tuning> takes Tuning::cost_model(); plain
// automatic takes Transport::cost_model() when the transport type has that
// static member, else default_cost_model. Tuning may also choose the
// candidates with `static constexpr bool allows(plait::algorithm_id)`;
// without it, every built-in but those that say
// `static constexpr bool automatic_candidate = false` (recursive_halving).
// Nothing here needs a specialization of a library template.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "plait/algorithm/algorithm_id.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/core/config.hpp"
#include "plait/core/cost_model.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {

/// Chooses the cheapest built-in algorithm for each call (see explain).
struct automatic {
  /// Marks automatic as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "automatic";
};

/// automatic with the user's parameters. Tuning is any type with
///   static constexpr plait::cost_model cost_model();
/// and optionally
///   static constexpr bool allows(plait::algorithm_id);   // choose the candidates
template <class Tuning>
struct automatic_with {
  static_assert(
      requires {
        { Tuning::cost_model() } -> std::convertible_to<plait::cost_model>;
      },
      "plait: automatic_with<Tuning> needs `static constexpr plait::cost_model cost_model()` in Tuning");
  /// Marks automatic_with as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The user's parameters: cost_model() and, optionally, allows(id).
  using tuning = Tuning;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "automatic_with";
};

namespace detail {
template <class A>
inline constexpr bool is_automatic = false;
template <>
inline constexpr bool is_automatic<automatic> = true;
template <class T>
inline constexpr bool is_automatic<automatic_with<T>> = true;

/// The parameters automatic uses on Transport (void: none known).
template <class Transport>
constexpr cost_model transport_cost_model() {
  if constexpr (requires {
                  { Transport::cost_model() } -> std::convertible_to<cost_model>;
                }) {
    return Transport::cost_model();
  } else {
    return default_cost_model;
  }
}

/// The parameters of an automatic policy A on Transport.
template <class A, class Transport>
constexpr cost_model model_of() {
  if constexpr (requires { typename A::tuning; }) {
    return A::tuning::cost_model();
  } else {
    return transport_cost_model<Transport>();
  }
}

/// Whether automatic considers built-in B unless a tuning's allows() says
/// otherwise: every built-in but one that says
/// `static constexpr bool automatic_candidate = false` (recursive_halving:
/// its measurements so far could not show where it beats the others).
template <class B>
constexpr bool default_candidate() {
  if constexpr (requires { B::automatic_candidate; }) {
    return B::automatic_candidate;
  } else {
    return true;
  }
}

/// Whether the automatic policy A considers `id`: the tuning's allows() when
/// it has one (which can take in what is not a default candidate), else the
/// default candidates.
template <class A>
constexpr bool allowed(algorithm_id id) {
  if constexpr (requires { typename A::tuning; }) {
    if constexpr (requires {
                    { A::tuning::allows(id) } -> std::convertible_to<bool>;
                  }) {
      return A::tuning::allows(id);
    }
  }
  return visit_algorithm(id, []<class B>(std::type_identity<B>) { return default_candidate<B>(); });
}

/// A set of algorithm ids: bit i stands for all_algorithm_ids[i]. How the
/// run-time choice receives automatic_with's restriction as a value.
using algorithm_set = std::uint32_t;

/// The candidates an automatic policy A allows.
template <class A>
constexpr algorithm_set allowed_set() {
  algorithm_set set = 0;
  for (std::size_t i = 0; i < all_algorithm_ids.size(); ++i) {
    if (allowed<A>(all_algorithm_ids[i])) set |= algorithm_set{1} << i;
  }
  return set;
}
}  // namespace detail

namespace detail {
/// Whether a message's blocks are one increasing run of ids (no packing needed
/// in the contiguous layout).
constexpr bool is_run(const std::vector<int>& blocks) {
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    if (blocks[i] != blocks[i - 1] + 1) return false;
  }
  return true;
}
}  // namespace detail

/// The model's time for one rank's schedule with blocks of `bytes_per_block` bytes.
/// A reduction's combine of a block (a receive with a fold) is charged as
/// packing it (beta_pack per byte: it reads and writes the block once more);
/// folding in the rank's own contribution moves nothing over the wire.
constexpr double predicted_seconds(const schedule& s, std::size_t bytes_per_block, const cost_model& m) {
  const double bytes = static_cast<double>(bytes_per_block);
  double total = 0;
  for (const step& st : s.steps) {
    std::size_t sent = 0;
    std::size_t received = 0;
    std::size_t packed = 0;
    std::size_t largest = 0;  // blocks in the step's largest message
    std::size_t staged = 0;   // blocks of received messages of several blocks that fold
    std::size_t messages = st.sends.size();
    for (const transfer& x : st.sends) {
      sent += x.blocks.size();
      largest = std::max(largest, x.blocks.size());
      if (!detail::is_run(x.blocks)) packed += x.blocks.size();
    }
    for (const transfer& x : st.recvs) {
      if (x.arrival != fold::none) packed += x.blocks.size();
      if (x.peer == own_contribution) continue;
      ++messages;
      received += x.blocks.size();
      largest = std::max(largest, x.blocks.size());
      if (x.arrival != fold::none && x.blocks.size() > 1) staged += x.blocks.size();
      if (!detail::is_run(x.blocks)) packed += x.blocks.size();
    }
    if (largest != 0 && bytes * static_cast<double>(largest) >= static_cast<double>(m.rendezvous_bytes)) {
      total += m.alpha_rendezvous;
    }
    const std::size_t concurrent = std::max(st.sends.size(), messages - st.sends.size());
    const double spread = 1 + m.contention * static_cast<double>(concurrent > 0 ? concurrent - 1 : 0);
    total += m.alpha + m.alpha_message * static_cast<double>(messages) +
             m.beta * bytes * static_cast<double>(std::max(sent, received)) * spread +
             m.beta_pack * bytes * static_cast<double>(packed) + m.beta_staged * bytes * static_cast<double>(staged);
  }
  return total;
}

/// What a call would run and what the model predicts for it.
struct choice {
  /// The algorithm chosen.
  algorithm_id id;
  /// What the cost model predicts the call takes, in seconds.
  double predicted_seconds;

  /// The chosen algorithm's name ("ring", "bruck", ...).
  [[nodiscard]] constexpr std::string_view name() const { return to_string(id); }
  /// Equal when the algorithm and the prediction are.
  constexpr bool operator==(const choice&) const = default;
};

/// Writes "ring (predicted 1.2e-05 s)".
PLAIT_DECL std::ostream& operator<<(std::ostream& out, const choice& c);

/// The predicted time of algorithm `id` for Op on `size` ranks. Throws
/// errc::unsupported when `id` cannot run Op on `size` ranks.
template <class Op>
requires operation<Op>
constexpr choice explain(algorithm_id id, int size, std::size_t bytes_per_block,
                         const cost_model& m = default_cost_model) {
  const double first = predicted_seconds(plan(id, Op{}, 0, size), bytes_per_block, m);
  const double last = size > 1 ? predicted_seconds(plan(id, Op{}, size - 1, size), bytes_per_block, m) : first;
  return {id, std::max(first, last)};
}

/// Replaces, for the whole process, the candidates every automatic policy
/// chooses among at run time by `candidates` (bit i: all_algorithm_ids[i],
/// including those automatic leaves out by default), wherever one of them
/// can run the operation on the group's size; elsewhere each policy's own
/// candidates stay. 0 (the default) restores them. For experiments and
/// for programs that know better than the cost model (libplait_pmpi's
/// PLAIT_PMPI_ALGORITHM). Every rank must set the same before its first
/// collective: choices are remembered, and ranks that choose differently
/// fail their call. Compile-time explain() is not affected.
PLAIT_DECL void restrict_automatic(detail::algorithm_set candidates) noexcept;

/// The run-time restriction restrict_automatic set (0: none).
PLAIT_DECL detail::algorithm_set automatic_restriction() noexcept;

namespace detail {
/// The cheapest candidate in `allowed`; ties go to the earlier algorithm_id.
/// At run time, the candidates of restrict_automatic instead, where one of
/// them can run Op on `size` ranks.
template <class Op>
constexpr choice choose_among(int size, std::size_t bytes_per_block, const cost_model& m, algorithm_set allowed) {
  if (size < 1) fail(errc::invalid_argument, {"a group needs at least one rank"});
  bool found = false;
  choice best{algorithm_id::ring, 0};
  auto consider = [&](algorithm_set candidates) {
    for (std::size_t i = 0; i < all_algorithm_ids.size(); ++i) {
      const algorithm_id id = all_algorithm_ids[i];
      if (!supports<Op>(id, size) || (candidates & (algorithm_set{1} << i)) == 0) continue;
      const choice c = explain<Op>(id, size, bytes_per_block, m);
      if (!found || c.predicted_seconds < best.predicted_seconds) best = c;
      found = true;
    }
  };
  if (!std::is_constant_evaluated()) consider(automatic_restriction());
  if (!found) consider(allowed);
  if (!found) {
    fail(errc::unsupported,
         {"automatic_with: the tuning allows no algorithm that can run ", Op::name, " on ", size, " ranks"});
  }
  return best;
}

/// The cheapest candidate that the automatic policy A allows.
template <class Op, class A>
constexpr choice choose(int size, std::size_t bytes_per_block, const cost_model& m) {
  return choose_among<Op>(size, bytes_per_block, m, allowed_set<A>());
}

/// choose_among for the run-time path: not a template and not constexpr, so
/// the cost model and every algorithm's planner compile where it is defined
/// (once, in the compiled core) rather than in every file that calls a
/// collective. The policy's model and restriction come in as values.
PLAIT_DECL choice run_time_choice(op::all_gather, int size, std::size_t bytes_per_block, const cost_model& m,
                                  algorithm_set allowed);
PLAIT_DECL choice run_time_choice(op::all_to_all, int size, std::size_t bytes_per_block, const cost_model& m,
                                  algorithm_set allowed);
}  // namespace detail

/// Which algorithm `Algorithm` (automatic by default) would run for Op on
/// `size` ranks with blocks of `bytes_per_block` bytes, and its predicted time.
/// Parameters: automatic_with's Tuning, else Transport::cost_model() when
/// Transport (void: none) has it, else default_cost_model. For a built-in
/// algorithm it explains that algorithm.
template <class Op, class Algorithm = automatic, class Transport = void>
requires operation<Op>
constexpr choice explain(int size, std::size_t bytes_per_block) {
  return explain<Op, Algorithm>(size, bytes_per_block, detail::model_of<Algorithm, Transport>());
}

/// explain with explicit parameters (a Tuning's restriction of candidates still applies).
template <class Op, class Algorithm = automatic>
requires operation<Op>
constexpr choice explain(int size, std::size_t bytes_per_block, const cost_model& m) {
  if constexpr (detail::is_automatic<Algorithm>) {
    return detail::choose<Op, Algorithm>(size, bytes_per_block, m);
  } else {
    static_assert(algorithm_id_of<Algorithm>.has_value(),
                  "plait: explain needs a built-in algorithm, automatic or automatic_with<Tuning>; for your own "
                  "algorithm use plait::predicted_seconds(A::plan(op, 0, size), bytes, model)");
    return explain<Op>(*algorithm_id_of<Algorithm>, size, bytes_per_block, m);
  }
}

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/algorithm/impl/automatic.ipp"
#endif

// plait::hierarchical<Inner, Outer>: the algorithm policy of a two-level
// (node-aware) collective. It has no schedule of its own: on a
// plait::two_level communicator it runs Inner on the fast intra-node level
// and Outer on the slow inter-node level (op/hierarchical.hpp;
// docs/hierarchical.md has the steps and the bytes on each level).
#pragma once

#include <string_view>

#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/schedule.hpp"

namespace plait {
inline namespace v0 {

/// Two-level policy for plait::all_gather and plait::all_to_all on a
/// plait::two_level communicator: Inner runs on its intra-node communicator,
/// Outer on its inter-node one. Any algorithm that serves the operation
/// (automatic too) may be either.
///   plait::all_gather<plait::hierarchical<plait::ring, plait::recursive_doubling>>(levels, send, recv);
template <class Inner, class Outer>
struct hierarchical {
  /// Marks hierarchical as an algorithm (the opt-in tag).
  using algorithm_concept = algorithm_tag;
  /// The algorithm of the intra-node level.
  using inner = Inner;
  /// The algorithm of the inter-node level.
  using outer = Outer;
  /// The name errors and check mode show.
  static constexpr std::string_view name = "hierarchical";
};

namespace detail {
template <class A>
inline constexpr bool is_hierarchical = false;
template <class Inner, class Outer>
inline constexpr bool is_hierarchical<hierarchical<Inner, Outer>> = true;
}  // namespace detail

}  // namespace v0
}  // namespace plait

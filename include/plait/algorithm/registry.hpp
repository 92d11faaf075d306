// The registry of built-in algorithms: the one list of them. Everything that
// enumerates the built-ins is generated from it: plait::algorithm_id and
// visit_algorithm (algorithm/algorithm_id.hpp), automatic's candidates, the
// compiled core's schedule instances (plait/shm_instances.hpp), the
// algorithms named in "works with ..." diagnostics (algorithm/select.hpp,
// op/hierarchical.hpp) and the tests' algorithm lists. Adding a built-in
// algorithm is writing its header and adding it here: its include and one
// X(name) below.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "plait/algorithm/bruck.hpp"
#include "plait/algorithm/chain.hpp"
#include "plait/algorithm/direct.hpp"
#include "plait/algorithm/neighbor_exchange.hpp"
#include "plait/algorithm/pairwise.hpp"
#include "plait/algorithm/recursive_doubling.hpp"
#include "plait/algorithm/recursive_halving.hpp"
#include "plait/algorithm/ring.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/algorithm/tree.hpp"

/// X(name) once per built-in algorithm tag type plait::name, in the order
/// automatic breaks cost ties in. A macro, not only a type list, because it
/// also spells algorithm_id's enumerators and the compiled core's explicit
/// instantiations, which no template can generate.
#define PLAIT_BUILT_IN_ALGORITHMS(X) \
  X(ring)                            \
  X(tree)                            \
  X(pairwise)                        \
  X(bruck)                           \
  X(recursive_doubling)              \
  X(direct)                          \
  X(neighbor_exchange)               \
  X(chain)                           \
  X(recursive_halving)

namespace plait {
inline namespace v0 {

/// A list of algorithm tag types. In a diagnostic it reads as the list
/// itself: works_with<ring, pairwise, ...>.
template <class... Algorithms>
struct works_with {
  /// How many algorithms the list holds.
  static constexpr std::size_t size = sizeof...(Algorithms);
  /// The same algorithms as a std::tuple (Catch2's TEMPLATE_LIST_TEST_CASE takes one).
  using tuple = std::tuple<Algorithms...>;
};

namespace detail {

template <class Ignored, class... Algorithms>
struct all_but_first {
  using type = works_with<Algorithms...>;
};

template <class Tuple>
struct works_with_from_tuple;
template <class... Algorithms>
struct works_with_from_tuple<std::tuple<Algorithms...>> {
  using type = works_with<Algorithms...>;
};

template <class Head, class Tail>
struct concat_algorithms;
template <class... Head, class... Tail>
struct concat_algorithms<works_with<Head...>, works_with<Tail...>> {
  using type = works_with<Head..., Tail...>;
};

template <class Op, class List>
struct scheduling;
template <class Op, class... Algorithms>
struct scheduling<Op, works_with<Algorithms...>> {
  using type = typename works_with_from_tuple<decltype(std::tuple_cat(
      std::declval<std::conditional_t<schedules<Algorithms, Op>, std::tuple<Algorithms>, std::tuple<>>>()...))>::type;
};

}  // namespace detail

#define PLAIT_ALGORITHM_TYPE(name) , name
/// Every built-in algorithm, in the registry's order.
using built_in_algorithms = detail::all_but_first<void PLAIT_BUILT_IN_ALGORITHMS(PLAIT_ALGORITHM_TYPE)>::type;
#undef PLAIT_ALGORITHM_TYPE

/// The built-in algorithms that have a schedule for Op, in the registry's order.
template <class Op>
using built_in_algorithms_for = typename detail::scheduling<Op, built_in_algorithms>::type;

}  // namespace v0
}  // namespace plait

// The layout concept: a layout policy turns the user's views into a block plan
// for the executor (which bytes form block k on this rank).
#pragma once

#include <concepts>

namespace plait {
inline namespace v0 {

/// Opt-in tag (plus `template <class Op> static constexpr bool serves`, true for
/// the operations the layout has a meaning for): a type is a layout when it says `using layout_concept =
/// plait::layout_tag;`.
struct layout_tag {};

template <class L>
concept layout = std::same_as<typename L::layout_concept, layout_tag>;

}  // namespace v0
}  // namespace plait

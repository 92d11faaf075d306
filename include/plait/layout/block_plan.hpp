// The block plan concept: what a layout hands the executor. Block k is
// block_bytes(k) bytes, found at location(k) when has_location(k) (else the
// executor stages it), and prepare() runs once before any byte moves.
#pragma once

#include <concepts>
#include <cstddef>

#include "plait/core/region.hpp"

namespace plait {
inline namespace v0 {

/// What the executor needs of a layout's plan: each block's size and, where
/// it lies in a user buffer, its location.
template <class P>
concept block_plan = requires(const P& plan, int block) {
  { plan.block_bytes(block) } -> std::convertible_to<std::size_t>;
  { plan.has_location(block) } -> std::convertible_to<bool>;
  { plan.location(block) } -> std::same_as<region>;
  plan.prepare();
};

}  // namespace v0
}  // namespace plait

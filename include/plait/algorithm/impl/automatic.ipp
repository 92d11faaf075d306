// Defines the stream output of choice and the run-time choice (see plait/algorithm/automatic.hpp).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <ostream>

#include "plait/algorithm/automatic.hpp"

namespace plait {
inline namespace v0 {

PLAIT_DECL std::ostream& operator<<(std::ostream& out, const choice& c) {
  return out << c.name() << " (predicted " << c.predicted_seconds << " s)";
}

namespace detail {
/// restrict_automatic's candidates: one word, read on every run-time choice.
PLAIT_DECL std::atomic<algorithm_set>& automatic_restriction_word() noexcept {
  static std::atomic<algorithm_set> word{0};
  return word;
}
}  // namespace detail

PLAIT_DECL void restrict_automatic(detail::algorithm_set candidates) noexcept {
  detail::automatic_restriction_word().store(candidates, std::memory_order_relaxed);
}

PLAIT_DECL detail::algorithm_set automatic_restriction() noexcept {
  return detail::automatic_restriction_word().load(std::memory_order_relaxed);
}

namespace detail {

/// Everything choose_among's answer depends on.
struct choice_inputs {
  int operation = -1;  ///< 0: all_gather, 1: all_to_all; -1: an empty slot
  int size = 0;
  std::size_t bytes_per_block = 0;
  cost_model model;
  algorithm_set allowed = 0;
  algorithm_set restriction = 0;  ///< restrict_automatic's

  constexpr bool operator==(const choice_inputs&) const = default;
};

/// choose_among, remembered per thread in a small table. A
/// choice builds every candidate's schedule for two ranks (tens of
/// thousands of instructions and a few hundred allocations), and a
/// hierarchical automatic call asks for three, every call: that was most of
/// a small call's time (docs/pmpi.md). The answer is a pure function of the
/// inputs, so remembering it changes no choice; per thread, so no lock.
template <class Op>
choice remembered_choice_among(int operation, int size, std::size_t bytes_per_block, const cost_model& m,
                               algorithm_set allowed) {
  struct slot {
    choice_inputs inputs;
    choice picked{algorithm_id::ring, 0};
  };
  // A linear scan of a few entries, replaced in turn: a call asks for up to
  // three choices (a hierarchical one's two levels and the flat one), and a
  // program repeats a handful of (size, bytes) pairs.
  thread_local std::array<slot, 16> remembered;
  thread_local std::size_t next = 0;
  // The restriction is an input too: a program may lift it between calls.
  const choice_inputs inputs{operation, size, bytes_per_block, m, allowed, automatic_restriction()};
  for (const slot& s : remembered) {
    if (s.inputs == inputs) return s.picked;
  }
  const choice picked = choose_among<Op>(size, bytes_per_block, m, allowed);  // may throw: nothing remembered
  remembered[next++ % remembered.size()] = {inputs, picked};
  return picked;
}

PLAIT_DECL choice run_time_choice(op::all_gather, int size, std::size_t bytes_per_block, const cost_model& m,
                                  algorithm_set allowed) {
  return remembered_choice_among<op::all_gather>(0, size, bytes_per_block, m, allowed);
}
PLAIT_DECL choice run_time_choice(op::all_to_all, int size, std::size_t bytes_per_block, const cost_model& m,
                                  algorithm_set allowed) {
  return remembered_choice_among<op::all_to_all>(1, size, bytes_per_block, m, allowed);
}
}  // namespace detail

}  // namespace v0
}  // namespace plait

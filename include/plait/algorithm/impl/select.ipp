// Defines the automatic choice's run-time part and its PLAIT_DEBUG logging (see plait/algorithm/select.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string_view>

#include "plait/algorithm/select.hpp"
#include "plait/core/environment.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL bool debug_logging() noexcept {
  try {
    return environment_flag("PLAIT_DEBUG").value_or(false);
  } catch (...) {  // reported by read_environment when the communicator was created
    return false;
  }
}

/// Writes one automatic choice to stderr; `candidates` holds each algorithm's
/// predicted seconds in all_algorithm_ids order, negative where it cannot run.
/// Not a template and cold: it compiles once, away from the hot path. Only
/// log_choice calls it, so only this file declares it.
[[gnu::cold, gnu::noinline]] PLAIT_DECL void write_choice(
    int rank, std::string_view operation, int size, std::size_t block_bytes, const choice& picked,
    const std::array<double, all_algorithm_ids.size()>& candidates, const cost_model& m) {
  std::ostringstream line;
  line << "plait: rank " << rank << ": automatic " << operation << " on " << size << " ranks, " << block_bytes
       << " bytes per block: " << picked << "; candidates";
  for (std::size_t i = 0; i < all_algorithm_ids.size(); ++i) {
    if (candidates[i] >= 0) line << ' ' << all_algorithm_ids[i] << ' ' << candidates[i];
  }
  line << "; model " << m << '\n';
  std::fputs(line.str().c_str(), stderr);
}

/// log_choice for Op: each candidate's prediction, then write_choice.
template <class Op>
void log_choice_of(int rank, int size, std::size_t block_bytes, const choice& picked, const cost_model& m) {
  if (!debug_logging()) return;
  std::array<double, all_algorithm_ids.size()> candidates{};
  for (std::size_t i = 0; i < all_algorithm_ids.size(); ++i) {
    const algorithm_id id = all_algorithm_ids[i];
    candidates[i] = supports<Op>(id, size) ? explain<Op>(id, size, block_bytes, m).predicted_seconds : -1.0;
  }
  write_choice(rank, Op::name, size, block_bytes, picked, candidates, m);
}

PLAIT_DECL void log_choice(op::all_gather, int rank, int size, std::size_t block_bytes, const choice& picked,
                           const cost_model& m) {
  log_choice_of<op::all_gather>(rank, size, block_bytes, picked, m);
}
PLAIT_DECL void log_choice(op::all_to_all, int rank, int size, std::size_t block_bytes, const choice& picked,
                           const cost_model& m) {
  log_choice_of<op::all_to_all>(rank, size, block_bytes, picked, m);
}

PLAIT_DECL const remembered_choice* find_choice(const remembered_choice* list, int size, std::size_t block_bytes) {
  for (; list != nullptr; list = list->next) {
    if (list->size == size && list->block_bytes == block_bytes) return list;
  }
  return nullptr;
}

/// choose_once for Op: the remembered choice, else a new one, remembered and logged.
template <class Op>
choice choose_once_of(choice_memory& memory, int rank, int size, std::size_t block_bytes, const cost_model& m,
                      algorithm_set allowed) {
  if (const remembered_choice* found = find_choice(memory.known.load(std::memory_order_acquire), size, block_bytes)) {
    return found->picked;
  }
  const choice picked = run_time_choice(Op{}, size, block_bytes, m, allowed);
  bool first = false;
  {
    const std::scoped_lock lock(memory.guard);
    const remembered_choice* head = memory.known.load(std::memory_order_relaxed);  // only adders write it
    if (find_choice(head, size, block_bytes) == nullptr) {
      memory.known.store(new remembered_choice{size, block_bytes, picked, head}, std::memory_order_release);
      first = true;
    }
  }
  if (first) log_choice(Op{}, rank, size, block_bytes, picked, m);
  return picked;
}

PLAIT_DECL choice choose_once(choice_memory& memory, op::all_gather, int rank, int size, std::size_t block_bytes,
                              const cost_model& m, algorithm_set allowed) {
  return choose_once_of<op::all_gather>(memory, rank, size, block_bytes, m, allowed);
}
PLAIT_DECL choice choose_once(choice_memory& memory, op::all_to_all, int rank, int size, std::size_t block_bytes,
                              const cost_model& m, algorithm_set allowed) {
  return choose_once_of<op::all_to_all>(memory, rank, size, block_bytes, m, allowed);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

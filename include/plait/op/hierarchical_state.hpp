// What the hierarchical collectives (op/hierarchical.hpp) keep per two_level
// communicator: their staging buffers and the engine that runs them in
// order. op/ owns it; the two_level only holds it (two_level::attached(),
// made on first use and gone with the two_level), so levels/ knows nothing
// of the collectives that run on it.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "plait/core/progress_engine.hpp"
#include "plait/core/scratch.hpp"
#include "plait/levels/two_level.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// The hierarchical collectives' state on one two_level.
class hierarchical_state {
 public:
  /// Buffers staging() keeps.
  static constexpr std::size_t staging_slots = 4;

  /// Kept staging buffers of the hierarchical collectives, one per `slot`
  /// (0 .. staging_slots - 1; slot 0 is the all-to-all's bundle buffer):
  /// `bytes` uninitialised bytes, valid until the next call. Each is kept
  /// until the two_level goes and only grows (to the largest call's needs): a
  /// fresh buffer of tens of MiB costs a page fault per page at its first
  /// touch (about 90 ms per 64 MiB per rank on the two-host bench's VM),
  /// more than the node level's copy itself.
  [[nodiscard]] std::span<std::byte> staging(std::size_t slot, std::size_t bytes) {
    byte_buffer& kept = staging_[slot];
    if (kept.size() < bytes) kept = byte_buffer(bytes);
    return {kept.data(), bytes};
  }

  /// The engine of the collectives in flight on the levels as a whole (the
  /// hierarchical nonblocking and persistent forms, and a blocking one made
  /// while those are pending): in order, one at a time, so that every rank
  /// starts the levels' own collectives in the same order, and the staging
  /// buffers serve one collective at a time.
  [[nodiscard]] progress_engine& staged_progress() noexcept { return staged_progress_; }

  /// The two-level call in which a level failed first ("all_gather<
  /// hierarchical<ring, ring>>"): a level keeps only its own collective's
  /// name, which a later call's error then puts in the user's words.
  void note_failure(std::string_view operation) {
    if (first_failure_.empty()) first_failure_.assign(operation);
  }
  [[nodiscard]] const std::string& first_failure() const noexcept { return first_failure_; }

 private:
  // Scratch: one collective at a time, as on every communicator.
  std::array<byte_buffer, staging_slots> staging_;
  progress_engine staged_progress_{true};
  std::string first_failure_;
};

/// The hierarchical collectives' state on `levels`, made at the first call
/// (a launch on the caller's thread, before any body can run on another).
template <class Intra, class Inter>
hierarchical_state& hierarchical_state_of(const two_level<Intra, Inter>& levels) {
  return levels.template attached<hierarchical_state>();
}

/// hierarchical_state_of(levels).staging(slot, bytes).
template <class Intra, class Inter>
std::span<std::byte> staging(const two_level<Intra, Inter>& levels, std::size_t slot, std::size_t bytes) {
  return hierarchical_state_of(levels).staging(slot, bytes);
}

/// hierarchical_state_of(levels).staged_progress().
template <class Intra, class Inter>
progress_engine& staged_progress(const two_level<Intra, Inter>& levels) {
  return hierarchical_state_of(levels).staged_progress();
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

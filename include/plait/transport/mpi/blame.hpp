// The MPI side of naming the rank to blame (the rule is core/blame.hpp's).
// MPI has no memory the peers can read, so a rank whose collective wait times
// out asks: it sends a query to every other rank on a tag of its own, and
// ranks answer with their wait record from inside their waits (a rank
// elsewhere does not answer, and is a suspect). It then follows the chain and
// tells every rank the verdict, which a rank still waiting turns into
// peer_lost naming the same rank.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "plait/core/blame.hpp"

namespace plait {
inline namespace v0 {
namespace mpi::detail {

/// How long a rank that timed out waits for the answers to its query: a rank
/// in a wait answers within a poll or a sleep (at most a millisecond), so
/// this only covers a loaded machine's scheduling.
inline constexpr std::chrono::milliseconds blame_answer_window{150};

/// One message of the exchange. Fixed size: a receiver knows it before it
/// looks.
struct blame_message {
  enum kind_type : std::int32_t { query = 1, answer = 2, verdict = 3 };
  std::int32_t kind = query;
  std::int32_t entered = 0;  ///< answer: the last call it entered
  std::int32_t waiting = 0;  ///< answer: 1 when in a wait
  std::int32_t call = 0;     ///< answer: that wait's call (0: a user's transfer); query: the asker's call
  std::uint32_t stamp = 0;   ///< answer: call_stamp::bits() of that call
  std::int32_t step = -1;    ///< answer: its step
  std::int32_t peer = -1;    ///< answer: the rank it waits for; verdict: the rank blamed
  std::int32_t gave_up = 0;  ///< answer: 1 when that wait timed out (the rank asks the others too)
  char text[480] = {};       ///< answer: the call's name; verdict: why the group failed

  void set_text(std::string_view value) noexcept {
    const std::size_t n = value.size() < sizeof text ? value.size() : sizeof text - 1;
    std::memcpy(text, value.data(), n);
    text[n] = '\0';
  }
  /// The text, bounded (a peer's bytes: never trusted to be terminated).
  [[nodiscard]] std::string text_value() const { return {text, strnlen(text, sizeof text)}; }
};

/// An answer as the chain's rule reads it.
inline plait::detail::wait_record record_of(const blame_message& m) {
  return {true,           static_cast<std::uint32_t>(m.entered),
          m.waiting != 0, static_cast<std::uint32_t>(m.call),
          m.stamp,        m.step,
          m.peer,         m.text_value(),
          m.gave_up != 0, false,  // a rank that answers polls
          false};                 // and waits at this level (on another, it does not answer)
}

}  // namespace mpi::detail
}  // namespace v0
}  // namespace plait

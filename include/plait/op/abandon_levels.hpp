// A two-level call that fails on one level leaves the other too. Its body
// runs on one level at a time: when one fails (a peer lost, a timeout, a
// size that does not match), that level's transport ends its peers' waits,
// but the ranks waiting for this rank on the other level would learn of it
// only at their timeout, and pass it on to their own other level only then.
// So the failure abandons the rank's other level (abandons_calls,
// core/transport.hpp): its peers fail at once, and pass it on in turn. An
// exception of the rank's own code (a user reduction that threw in a level's
// combine or in the body's own fold) abandons both levels: the level's run
// has abandoned its own already where it threw there.
//
// Not passed on: errc::invalid_argument and errc::unsupported, the refusals
// of a call's arguments before any byte moves (and of a level that an
// earlier failure left unusable), where the peers refuse alike or were never
// waited on.
#pragma once

#include <string>
#include <string_view>

#include "plait/core/error.hpp"
#include "plait/core/transport.hpp"
#include "plait/op/abandon.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// What a passed-on failure's message starts with where the rank to blame
/// is not on the level that carries it: the level's own record can blame
/// only its members, so the whole group's rank travels in the text, and
/// on_level_error takes it as the error's peer on every rank it reaches.
inline constexpr std::string_view blame_marker = "whole-group rank ";

/// The whole group's rank a message passed on by abandon_level blames, or
/// -1 where it names none.
[[nodiscard]] inline int blamed_in_text(std::string_view text) noexcept {
  const std::size_t at = text.find(blame_marker);
  if (at == std::string_view::npos) return -1;
  int rank = -1;
  for (std::size_t i = at + blame_marker.size(); i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (rank > 1'000'000) return -1;
    rank = (rank < 0 ? 0 : rank * 10) + (text[i] - '0');
  }
  return rank;
}

/// Tells `level` (this rank's intra or inter level of `levels`) that this
/// rank leaves the call `why` reports, in the level's own numbering: the
/// level rank of the rank `why` blames where it is on this level, else this
/// rank itself, with "whole-group rank W is to blame" leading the message
/// (blamed_in_text). The message's other ranks are in the whole group's
/// words already, "rank W (rank q of the X level)", which level_error
/// leaves as they are.
template <class Levels, class Level>
void abandon_level(const Levels& levels, Level& level, bool inter, const error& why) noexcept {
  if constexpr (abandons_calls<Level>) {
    int peer = -1;
    for (int q = 0; q < level.size(); ++q) {
      if (levels.rank_of_level_peer(inter, q) == why.peer()) peer = q;
    }
    try {
      if (peer >= 0 || why.peer() < 0) {
        level.abandon_call(error(why.value(), why.detail(),
                                 {level.rank(), why.operation(), why.step(), peer >= 0 ? peer : level.rank()}));
      } else {
        const std::string detail = concat({blame_marker, why.peer(), " is to blame: ", why.detail()});
        level.abandon_call(error(why.value(), detail, {level.rank(), why.operation(), why.step(), level.rank()}));
      }
    } catch (...) {  // out of memory for the message: the peers' timeouts still end their waits
    }
  }
}

/// An error `why` (in the whole group's words) that ended this rank's step
/// on one of `levels` (`failed_inter`: the inter level): abandons the other
/// level, unless it is a refusal.
template <class Levels>
[[gnu::cold]] void abandon_other_level(const Levels& levels, bool failed_inter, const error& why) noexcept {
  if (why.value() == errc::invalid_argument || why.value() == errc::unsupported) return;
  if (failed_inter) {
    abandon_level(levels, levels.intra(), false, why);
  } else {
    abandon_level(levels, levels.inter(), true, why);
  }
}

/// Inside a handler of the exception that ends the two-level call
/// `operation` on `levels`: an exception of the rank's own code abandons
/// both levels; a plait::error was passed on where it arose.
template <class Levels>
[[gnu::cold]] void abandon_levels(const Levels& levels, std::string_view operation) noexcept {
  try {
    throw;
  } catch (const error&) {  // NOLINT(bugprone-empty-catch): on_level passed it on (abandon_other_level)
  } catch (...) {
    const error why = abandoned_call_error({levels.rank(), operation, -1, levels.rank()});
    abandon_level(levels, levels.intra(), false, why);
    abandon_level(levels, levels.inter(), true, why);
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

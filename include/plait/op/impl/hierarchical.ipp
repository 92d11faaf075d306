// Defines the two-level collectives' non-template helper: a level's error
// seen from the whole call (see plait/op/hierarchical.hpp).
#pragma once

#include <cctype>
#include <span>
#include <string>
#include <string_view>

#include "plait/core/error.hpp"
#include "plait/op/abandon_levels.hpp"
#include "plait/op/hierarchical.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

[[gnu::noinline]] PLAIT_DECL error level_error(const error& raised, int whole_rank, std::string_view operation,
                                               std::string_view level, int whole_peer,
                                               std::span<const int> whole_of_level) {
  // The level's message knows only level ranks: each "rank N" and each
  // number of "ranks N and M" becomes "rank W (rank N of the X level)", so
  // that no number in the message means another group's rank. Not "parent
  // rank N" (a split communicator's note), nor what another level passed on
  // in whole-group words: "whole-group rank W", "rank W (rank q of ...".
  const std::string_view text = raised.detail();
  const std::string note = concat({" of the ", level, " level)"});
  const auto digit = [&text](std::size_t k) { return k < text.size() && text[k] >= '0' && text[k] <= '9'; };
  std::string translated;
  std::size_t at = 0;  // text before this is in `translated`
  for (std::size_t i = text.find("rank"); i != std::string_view::npos; i = text.find("rank", i + 1)) {
    std::size_t j = i + 4;
    const bool plural = j < text.size() && text[j] == 's';
    if (plural) ++j;
    const bool word_start = i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]));
    const bool parent = i >= 7 && text.substr(i - 7, 7) == "parent ";
    const bool whole_group = i >= 12 && text.substr(i - 12, 12) == "whole-group ";  // abandon_level's
    if (!word_start || parent || whole_group || j >= text.size() || text[j] != ' ') continue;
    ++j;
    while (digit(j)) {  // one number, or a list of them after "ranks"
      std::size_t end = j;
      std::size_t q = 0;
      while (digit(end) && q < whole_of_level.size()) q = q * 10 + static_cast<std::size_t>(text[end++] - '0');
      if (digit(end) || q >= whole_of_level.size()) break;  // not a rank of this level: left as it is
      // Already the whole group's words (another level's failure passed on:
      // op/abandon_levels.hpp): "rank W (rank q of the X level)".
      if (text.substr(end, 7) == " (rank " || text.substr(end, 8) == " of the ") break;
      translated.append(text.substr(at, j - at));
      translated.append(concat({whole_of_level[q], " (rank ", q, note}));
      at = end;
      if (!plural) break;
      if (text.substr(end, 5) == " and ") {
        j = end + 5;
      } else if (text.substr(end, 2) == ", ") {
        j = end + 2;
      } else {
        break;
      }
    }
  }
  translated.append(text.substr(at));
  const std::string detail = concat({"rank ", whole_rank, " (rank ", raised.rank(), note, ", in the ", level,
                                     " level's ", raised.operation(), ": ", translated});
  return error(raised.value(), detail, {whole_rank, operation, raised.step(), whole_peer});
}

[[gnu::noinline]] PLAIT_DECL error within_failed_call(const error& raised, std::string_view failed) {
  const std::string detail = raised.detail();
  constexpr std::string_view marker = "poisoned by ";
  const std::size_t at = detail.find(marker);
  // The level's own collective ends at the ": " after "poisoned by"; a
  // level another level's failure poisoned names the two-level call already.
  const std::size_t end = at == std::string::npos ? at : detail.find(": ", at);
  if (failed.empty() || end == std::string::npos || detail.compare(at + marker.size(), failed.size(), failed) == 0) {
    return raised;
  }
  std::string named = detail.substr(0, end);
  named.append(", a level collective of ").append(failed).append(detail, end, std::string::npos);
  return error(raised.value(), named,
               {raised.rank(), raised.operation(), raised.step(), raised.peer(), raised.parent_rank()});
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

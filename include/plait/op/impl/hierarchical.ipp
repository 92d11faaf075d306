// Defines the two-level collectives' non-template helper: a level's error
// seen from the whole call (see plait/op/hierarchical.hpp).
#pragma once

#include <cctype>
#include <span>
#include <string>
#include <string_view>

#include "plait/core/error.hpp"
#include "plait/op/hierarchical.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

[[gnu::noinline]] PLAIT_DECL error level_error(const error& raised, int whole_rank, std::string_view operation,
                                               std::string_view level, int whole_peer,
                                               std::span<const int> whole_of_level) {
  // The level's message knows only level ranks: each "rank N" (not "parent
  // rank N", a split communicator's note) becomes "rank W (rank N of the X
  // level)", so that no number in the message means another group's rank.
  const std::string_view text = raised.detail();
  const std::string note = concat({" of the ", level, " level)"});
  std::string translated;
  std::size_t at = 0;
  constexpr std::string_view word = "rank ";
  for (std::size_t found = text.find(word); found != std::string_view::npos; found = text.find(word, found + 1)) {
    std::size_t end = found + word.size();
    int q = 0;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9' && q < (1 << 24)) {
      q = q * 10 + (text[end] - '0');
      ++end;
    }
    const bool number = end > found + word.size() && (end == text.size() || text[end] < '0' || text[end] > '9');
    const bool parent = found >= 7 && text.substr(found - 7, 7) == "parent ";
    const bool word_start = found == 0 || !std::isalnum(static_cast<unsigned char>(text[found - 1]));
    if (!number || parent || !word_start || q >= static_cast<int>(whole_of_level.size())) continue;
    translated.append(text.substr(at, found - at));
    translated.append(concat({"rank ", whole_of_level[static_cast<std::size_t>(q)], " (rank ", q, note}));
    at = end;
  }
  translated.append(text.substr(at));
  const std::string detail = concat({"rank ", whole_rank, " (rank ", raised.rank(), note, ", in the ", level,
                                     " level's ", raised.operation(), ": ", translated});
  return error(raised.value(), detail, {whole_rank, operation, raised.step(), whole_peer});
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// A rank's verdict on a call that must fail: "" when it throws the expected
// plait::error, else what went wrong (ranks return verdicts; the main thread
// asserts, as Catch2's assertions are not thread-safe).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "plait/core/error.hpp"

namespace plait_test {

/// "" when `call` throws a plait::error whose code is one of `codes`, whose
/// peer() is `peer` (-1: any) and whose message holds each of `words`.
template <class Call>
std::string expect_error(Call&& call, std::initializer_list<plait::errc> codes, int peer,
                         const std::vector<std::string>& words = {}) {
  try {
    call();
    return "the call went through";
  } catch (const plait::error& e) {
    bool listed = false;
    for (const plait::errc code : codes) listed = listed || e.value() == code;
    if (!listed) return std::string("wrong code: ") + e.what();
    if (peer >= 0 && e.peer() != peer) return "blames peer " + std::to_string(e.peer()) + ": " + e.what();
    for (const auto& w : words) {
      if (std::string(e.what()).find(w) == std::string::npos) return "message lacks '" + w + "': " + e.what();
    }
  }
  return {};
}

/// expect_error for a wait that must end naming rank 0: a timeout, or the
/// peer_lost of a rank another rank's timeout told.
template <class Call>
std::string blames_rank_zero(Call&& call, const std::vector<std::string>& words) {
  return expect_error(call, {plait::errc::timeout, plait::errc::peer_lost}, 0, words);
}

}  // namespace plait_test

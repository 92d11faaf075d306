// Defines the two-level collectives' non-template helper: a level's error
// seen from the whole call (see plait/op/hierarchical.hpp).
#pragma once

#include <string_view>

#include "plait/core/error.hpp"
#include "plait/op/hierarchical.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

[[gnu::noinline]] PLAIT_DECL error level_error(const error& raised, int whole_rank, std::string_view operation,
                                               std::string_view level, int whole_peer) {
  const std::string detail = raised.peer() >= 0
                                 ? concat({"in the ", level, " level (", raised.operation(), ", level rank ",
                                           raised.rank(), ", level peer ", raised.peer(), "): ", raised.detail()})
                                 : concat({"in the ", level, " level (", raised.operation(), ", level rank ",
                                           raised.rank(), "): ", raised.detail()});
  return error(raised.value(), detail, {whole_rank, operation, raised.step(), whole_peer});
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Defines what plait/op/abandon.hpp declares out of line: the error of a call
// left by the rank's own exception.
#pragma once

#include <exception>
#include <string>

#include "plait/core/error.hpp"
#include "plait/op/abandon.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL error abandoned_call_error(const error_context& at) {
  std::string what;
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "(not a std::exception)";
  }
  return {errc::invalid_argument, "the rank's own code threw mid-call: " + what, at};
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

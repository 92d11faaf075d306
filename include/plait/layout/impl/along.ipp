// Defines what plait/layout/along.hpp declares: the layout's name in messages.
#pragma once

#include <cstddef>
#include <string>

#include "plait/core/config.hpp"
#include "plait/layout/along.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL std::string along_name(std::size_t d) { return "along<" + std::to_string(d) + ">"; }

}  // namespace detail
}  // namespace v0
}  // namespace plait

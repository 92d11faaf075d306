// Defines operation_label's formatting (see plait/op/collective.hpp).
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#include "plait/op/collective.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL void operation_label::compose(std::string_view operation, std::string_view algorithm) noexcept {
  append(operation);
  append("<");
  append(algorithm);
  append(">");
  if (truncated_) {
    size_ = capacity - 3;
    append("...");
  }
}

PLAIT_DECL void operation_label::append(std::string_view part) noexcept {
  const std::size_t room = capacity - size_;
  const std::size_t n = part.size() < room ? part.size() : room;
  if (n < part.size()) truncated_ = true;
  std::memcpy(text_ + size_, part.data(), n);
  size_ += n;
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

// Who is calling what: the rank, the group's size and the operation every
// argument error names. In core because every floor checks arguments: the
// layouts' plans, the operations' entries and the count exchange.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "plait/core/error.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// Who is calling what: the context every argument error names.
struct call_site {
  int rank;
  int size;
  std::string_view operation;

  [[nodiscard]] error fail(errc code, const std::string& what) const { return error(code, what, {rank, operation}); }
  /// Throws `code` with the pieces as message, from one cold out-of-line place.
  [[noreturn]] void fail(errc code, std::initializer_list<message_piece> what) const {
    detail::fail(code, what, {rank, operation});
  }
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

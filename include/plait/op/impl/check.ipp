// Defines check mode's non-template part: call signatures and their comparison (see
// plait/op/check.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "plait/core/error.hpp"
#include "plait/op/check.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL call_signature call_signature::make(std::string_view operation, std::string_view shape) {
  call_signature s;
  std::memcpy(s.operation.data(), operation.data(), std::min(operation.size(), s.operation.size() - 1));
  std::memcpy(s.shape.data(), shape.data(), std::min(shape.size(), s.shape.size() - 1));
  s.checksum = s.digest();
  return s;
}

PLAIT_DECL std::uint64_t call_signature::digest() const {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : operation) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  for (char c : shape) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string call_signature::text() const {
  return std::string(operation.data(), strnlen(operation.data(), operation.size())) + " with " +
         std::string(shape.data(), strnlen(shape.data(), shape.size()));
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string describe_blocks(std::span<const std::size_t> sizes, int blocks) {
  std::string text = "blocks of";
  for (std::size_t bytes : sizes) {
    text += ' ';  // two appends: g++ 12 -O2 flags `" " + std::to_string(..)` with a false -Wrestrict
    text += std::to_string(bytes);
  }
  if (blocks > static_cast<int>(sizes.size())) text += " ...";
  return text + " bytes";
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL void compare_signatures(std::span<const call_signature> all, int rank,
                                                                std::string_view operation) {
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].checksum != all[r].digest()) {
      fail(errc::transport, {"rank ", r, " sent a corrupt call signature"}, {rank, operation, -1, static_cast<int>(r)});
    }
  }
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (!all[r].same_call(all[0])) {
      fail(errc::size_mismatch,
           {"ranks disagree on the call: rank 0 calls ", all[0].text(), ", but rank ", r, " calls ", all[r].text()},
           {rank, operation, -1, static_cast<int>(r)});
    }
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

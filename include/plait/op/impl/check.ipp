// Defines check mode's non-template part: call signatures, their comparison
// and the memory of verified schedules (see plait/op/check.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "plait/algorithm/verify.hpp"
#include "plait/core/error.hpp"
#include "plait/op/check.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

PLAIT_DECL std::uint64_t fnv_mix(std::uint64_t h, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

/// `name` in `field`, cut short to leave a terminating zero.
template <std::size_t N>
void copy_truncated(std::array<char, N>& field, std::string_view name) {
  std::memcpy(field.data(), name.data(), std::min(name.size(), N - 1));
}

template <std::size_t N>
std::string_view field_text(const std::array<char, N>& field) {
  return {field.data(), strnlen(field.data(), N)};
}

PLAIT_DECL view_shape view_shape::make(kind_type kind, std::span<const std::size_t> extents) {
  view_shape s;
  s.kind = kind;
  s.rank = extents.size();
  s.digest = fnv_offset;
  for (std::size_t r = 0; r < extents.size(); ++r) {
    if (r < shown) s.extents[r] = extents[r];
    s.digest = fnv_mix(s.digest, &extents[r], sizeof(std::size_t));
  }
  return s;
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string view_shape::text() const {
  if (kind == in_place_kind) return "in_place";
  std::string out = "[";
  for (std::uint64_t r = 0; r < rank && r < shown; ++r) {
    if (r != 0) out += ", ";
    out += std::to_string(extents[r]);
  }
  if (rank > shown) out += ", ...";
  return out + "]";
}

PLAIT_DECL void call_signature::set_names(std::string_view operation_name, std::string_view algorithm_name,
                                          std::string_view layout_name,
                                          std::span<const std::size_t> layout_dimensions) {
  std::string layout_text(layout_name);
  for (std::size_t d = 0; d < layout_dimensions.size(); ++d) {
    layout_text += d == 0 ? "<" : ", ";
    layout_text += std::to_string(layout_dimensions[d]);
  }
  if (!layout_dimensions.empty()) layout_text += '>';
  copy_truncated(operation, operation_name);
  copy_truncated(algorithm, algorithm_name);
  copy_truncated(layout, layout_text);
  names_digest = fnv_offset;
  for (std::string_view name : {operation_name, algorithm_name, std::string_view(layout_text)}) {
    const std::size_t length = name.size();  // so that "ab" + "c" and "a" + "bc" differ
    names_digest = fnv_mix(fnv_mix(names_digest, &length, sizeof(length)), name.data(), length);
  }
}

PLAIT_DECL void call_signature::set_blocks(std::span<const std::size_t> sizes) {
  blocks = sizes.size();
  block_bytes_digest = fnv_offset;
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    if (b < shown_blocks) first_block_bytes[b] = sizes[b];
    block_bytes_digest = fnv_mix(block_bytes_digest, &sizes[b], sizeof(std::size_t));
  }
  checksum = digest();
}

PLAIT_DECL std::uint64_t call_signature::digest() const {
  return fnv_mix(fnv_offset, this, offsetof(call_signature, checksum));  // no padding: see the static_assert
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string call_signature::text() const {
  std::string out(field_text(operation));
  out += '<';
  out += field_text(algorithm);
  out += "> with ";
  out += field_text(layout);
  out += ", ";
  out += std::to_string(element_bytes);
  out += "-byte elements (";
  out += describe_element(static_cast<std::uint8_t>(element_code));
  out += "), send ";
  out += send.text();
  out += ", recv ";
  out += recv.text();
  out += ", blocks of";
  for (std::uint64_t b = 0; b < blocks && b < shown_blocks; ++b) {
    out += ' ';  // two appends: g++ 12 -O2 flags `" " + std::to_string(..)` with a false -Wrestrict
    out += std::to_string(first_block_bytes[b]);
  }
  if (blocks > shown_blocks) out += " ...";
  return out + " bytes";
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL std::string_view call_signature::first_difference(
    const call_signature& other) const {
  if (operation != other.operation) return "the operation";
  if (algorithm != other.algorithm) return "the algorithm";
  if (layout != other.layout) return "the layout";
  if (names_digest != other.names_digest) return "the names of the algorithm or layout";
  if (element_bytes != other.element_bytes) return "the element size";
  if (element_code != other.element_code) return "the element type";
  if (send != other.send) return "the send shape";
  if (recv != other.recv) return "the recv shape";
  if (blocks != other.blocks || first_block_bytes != other.first_block_bytes ||
      block_bytes_digest != other.block_bytes_digest) {
    return "the block sizes";
  }
  return {};
}

[[gnu::cold, gnu::noinline]] PLAIT_DECL void compare_signatures(std::span<const call_signature> all, int rank,
                                                                std::string_view operation) {
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].checksum != all[r].digest()) {
      fail(errc::transport, {"rank ", r, " sent a corrupt call signature"}, {rank, operation, -1, static_cast<int>(r)});
    }
  }
  for (std::size_t r = 1; r < all.size(); ++r) {
    const std::string_view differs = all[0].first_difference(all[r]);
    if (!differs.empty()) {
      fail(errc::size_mismatch,
           {"ranks disagree on the call (on ", differs, "): rank 0 calls ", all[0].text(), ", but rank ", r, " calls ",
            all[r].text()},
           {rank, operation, -1, static_cast<int>(r)});
    }
  }
}

PLAIT_DECL bool verified_before(verified_sizes& known, int size) {
  const std::lock_guard<std::mutex> lock(known.guard);
  return std::find(known.sizes.begin(), known.sizes.end(), size) != known.sizes.end();
}

PLAIT_DECL void remember_verified(verified_sizes& known, int size) {
  const std::lock_guard<std::mutex> lock(known.guard);
  if (std::find(known.sizes.begin(), known.sizes.end(), size) == known.sizes.end()) known.sizes.push_back(size);
}

[[noreturn, gnu::cold, gnu::noinline]] PLAIT_DECL void fail_verification(const verify_result& found,
                                                                         std::string_view algorithm,
                                                                         std::string_view operation_name, int size,
                                                                         const error_context& where) {
  fail(errc::invalid_argument,
       {"check mode: the schedules of ", algorithm, " for ", operation_name, " on ", size,
        " ranks break plait::verify's rule ", to_string(found.fault), ": ", describe(found),
        " (nothing was sent; test custom algorithms with static_assert(plait::verify<A, Op>(P)))"},
       where);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

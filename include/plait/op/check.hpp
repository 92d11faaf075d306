// Check mode: before moving data, ranks exchange a signature of the call
// (operation, algorithm, block sizes, shape) so that ranks disagreeing on the
// call fail on every rank with errc::size_mismatch naming both ranks and their
// shapes, instead of hanging or producing silently wrong data. Off by default;
// on with PLAIT_CHECK=1 or a communicator's set_check_mode(true). It costs one
// small all-gather per call.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plait/algorithm/ring.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/layout/contiguous_plans.hpp"
#include "plait/op/executor.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// PLAIT_CHECK set to anything but "" or "0".
inline bool check_mode_from_environment() {
  const char* value = std::getenv("PLAIT_CHECK");  // read per call: cheap next to a collective
  return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

template <class Comm>
bool check_mode(const Comm& comm) {
  if constexpr (requires {
                  { comm.check_mode() } -> std::convertible_to<bool>;
                }) {
    if (comm.check_mode()) return true;
    // A communicator that read PLAIT_CHECK when it was created has answered for it.
    if constexpr (requires { requires Comm::check_mode_reads_environment; }) return false;
  }
  return check_mode_from_environment();
}

/// What a rank believes the call is. Fixed size, so that ranks disagreeing
/// about everything still exchange it correctly.
struct call_signature {
  std::array<char, 64> operation{};
  std::array<char, 184> shape{};
  std::uint64_t checksum = 0;  // of the fields above: a torn or foreign message is caught too

  static call_signature make(std::string_view operation, std::string_view shape) {
    call_signature s;
    std::memcpy(s.operation.data(), operation.data(), std::min(operation.size(), s.operation.size() - 1));
    std::memcpy(s.shape.data(), shape.data(), std::min(shape.size(), s.shape.size() - 1));
    s.checksum = s.digest();
    return s;
  }
  [[nodiscard]] std::uint64_t digest() const {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (char c : operation) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    for (char c : shape) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    return h;
  }
  [[nodiscard]] std::string text() const {
    return std::string(operation.data(), strnlen(operation.data(), operation.size())) + " with " +
           std::string(shape.data(), strnlen(shape.data(), shape.size()));
  }
  [[nodiscard]] bool same_call(const call_signature& other) const {
    return operation == other.operation && shape == other.shape;
  }
};

/// The plan's own description of its shape if it has one, else its block sizes.
template <class Plan>
std::string describe_shape(const Plan& plan, int blocks) {
  if constexpr (requires {
                  { plan.describe() } -> std::convertible_to<std::string>;
                }) {
    return plan.describe();
  } else {
    std::string text = "blocks of";
    const int shown = std::min(blocks, 8);
    for (int b = 0; b < shown; ++b) {
      text += ' ';  // two appends: g++ 12 -O2 flags `" " + std::to_string(..)` with a false -Wrestrict
      text += std::to_string(plan.block_bytes(b));
    }
    if (blocks > shown) text += " ...";
    return text + " bytes";
  }
}

/// Exchanges signatures over `comm` and throws errc::size_mismatch on every
/// rank if any two disagree.
template <class Comm, class Plan, class Op>
void check_call(Comm& comm, const Plan& plan, Op, std::string_view operation) {
  const int size = comm.size();
  const call_signature mine = call_signature::make(operation, describe_shape(plan, Op::blocks(size)));
  std::vector<call_signature> all(static_cast<std::size_t>(size));
  const auto own = std::as_bytes(std::span(&mine, 1));
  const auto everyone = std::as_writable_bytes(std::span(all));
  if constexpr (requires { comm.exchange_control(own, everyone); }) {
    // A transport whose buffers are not host memory (NVLink) exchanges host records its own way.
    comm.exchange_control(own, everyone);
  } else {
    std::vector<std::size_t> offsets(static_cast<std::size_t>(size) + 1);
    for (std::size_t j = 0; j < offsets.size(); ++j) offsets[j] = j * sizeof(call_signature);
    const gather_plan signatures(own, everyone, std::move(offsets), comm.rank(), false);
    const std::uint64_t payload_before = comm.bytes_sent();
    execute(comm, ring::plan(op::all_gather{}, comm.rank(), size), signatures, "check", comm.next_tag());
    if constexpr (requires { comm.discount_control_bytes(std::uint64_t{}); }) {
      comm.discount_control_bytes(comm.bytes_sent() - payload_before);  // control traffic, not payload
    }
  }
  for (int r = 0; r < size; ++r) {
    const call_signature& theirs = all[static_cast<std::size_t>(r)];
    if (theirs.checksum != theirs.digest()) {
      throw error(errc::transport, "rank " + std::to_string(r) + " sent a corrupt call signature",
                  {comm.rank(), operation, -1, r});
    }
  }
  for (int r = 1; r < size; ++r) {
    const call_signature& theirs = all[static_cast<std::size_t>(r)];
    if (!theirs.same_call(all[0])) {
      throw error(errc::size_mismatch,
                  "ranks disagree on the call: rank 0 calls " + all[0].text() + ", but rank " + std::to_string(r) +
                      " calls " + theirs.text(),
                  {comm.rank(), operation, -1, r});
    }
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

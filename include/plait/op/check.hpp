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
#include <span>
#include <string>
#include <string_view>

#include "plait/algorithm/ring.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/contiguous_plans.hpp"
#include "plait/op/executor.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

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

  static call_signature make(std::string_view operation, std::string_view shape);
  [[nodiscard]] std::uint64_t digest() const;
  [[nodiscard, gnu::cold]] std::string text() const;
  [[nodiscard]] bool same_call(const call_signature& other) const {
    return operation == other.operation && shape == other.shape;
  }
};

/// "blocks of 4 4 4 ... bytes" from the first `shown` of `blocks` block sizes.
/// Not a template and cold: check mode is off by default, and its text
/// building compiles once per program instead of once per plan type.
/// Declared without PLAIT_DECL and noinline, which its definition carries:
/// g++ warns (-Wattributes) when an inline declaration and a noinline one are
/// apart; a plain declaration before an inline definition is fine.
[[gnu::cold]] std::string describe_blocks(std::span<const std::size_t> sizes, int blocks);

/// The plan's own description of its shape if it has one, else its block sizes.
template <class Plan>
std::string describe_shape(const Plan& plan, int blocks) {
  if constexpr (requires {
                  { plan.describe() } -> std::convertible_to<std::string>;
                }) {
    return plan.describe();
  } else {
    std::array<std::size_t, 8> sizes{};
    const int shown = std::min(blocks, static_cast<int>(sizes.size()));
    for (int b = 0; b < shown; ++b) sizes[static_cast<std::size_t>(b)] = plan.block_bytes(b);
    return describe_blocks(std::span(sizes.data(), static_cast<std::size_t>(shown)), blocks);
  }
}

/// Throws on this rank if the exchanged signatures `all` are corrupt or
/// disagree. Not a template, cold: the same code for every call. (Declared
/// as describe_blocks is.)
[[gnu::cold]] void compare_signatures(std::span<const call_signature> all, int rank, std::string_view operation);

/// Exchanges signatures over `comm` and throws errc::size_mismatch on every
/// rank if any two disagree. Cold and out of line: check mode is off by
/// default, so -O2 need not inline the exchange into every collective.
template <class Comm, class Plan, class Op>
[[gnu::cold, gnu::noinline]] void check_call(Comm& comm, const Plan& plan, Op, std::string_view operation) {
  const int size = comm.size();
  const call_signature mine = call_signature::make(operation, describe_shape(plan, Op::blocks(size)));
  fixed_array<call_signature> all(static_cast<std::size_t>(size));
  const auto own = std::as_bytes(std::span(&mine, 1));
  const auto everyone = std::as_writable_bytes(std::span(all.data(), all.size()));
  if constexpr (requires { comm.exchange_control(own, everyone); }) {
    // A transport whose buffers are not host memory (NVLink) exchanges host records its own way.
    comm.exchange_control(own, everyone);
  } else {
    const gather_plan signatures(own, everyone, sizeof(call_signature), comm.rank(), false);
    const std::uint64_t payload_before = comm.bytes_sent();
    // Named and stamped as check mode of this call: a timeout names the
    // collective, and a rank that skipped check mode is told apart.
    const std::string name = std::string("check mode of ").append(operation);
    execute(comm, ring::plan(op::all_gather{}, comm.rank(), size), signatures, name,
            take_tag(comm, call_stamp::of(call_kind::check, "ring signatures")));
    if constexpr (requires { comm.discount_control_bytes(std::uint64_t{}); }) {
      comm.discount_control_bytes(comm.bytes_sent() - payload_before);  // control traffic, not payload
    }
  }
  compare_signatures(std::span(all.data(), all.size()), comm.rank(), operation);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/check.ipp"
#endif

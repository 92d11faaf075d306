// Check mode: before moving data, ranks exchange a signature of the call so
// that ranks disagreeing on it fail on every rank with errc::size_mismatch
// naming both ranks, both calls and what differs, instead of hanging or
// producing silently wrong data. The signature covers the operation, the
// algorithm that runs, the layout (kind and dimensions), the element size,
// both views' shapes and every block's size, so calls that move the same
// bytes differently (redistribute<1, 1> against redistribute<0, 0>) are
// caught too. Then, the first time an algorithm policy runs an operation on P
// ranks in this process, check mode verifies its schedules for the whole
// group (plait::verify) and throws errc::invalid_argument naming the broken
// rule before any byte moves. Off by default; on with PLAIT_CHECK=1 or a
// communicator's set_check_mode(true). It costs one small all-gather per call.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "plait/algorithm/ring.hpp"
#include "plait/algorithm/schedule.hpp"
#include "plait/algorithm/verify.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/config.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/tensor_view.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/views.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/contiguous_plans.hpp"
#include "plait/op/execute.hpp"

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

/// FNV-1a over `bytes` bytes at `data`, continuing from `h` (fnv_offset to start).
inline constexpr std::uint64_t fnv_offset = 1469598103934665603ULL;
PLAIT_DECL std::uint64_t fnv_mix(std::uint64_t h, const void* data, std::size_t bytes);

/// One view's shape as check mode compares it: what it is, its rank and
/// every extent (the first few kept to be shown, all of them in a digest).
struct view_shape {
  enum kind_type : std::uint64_t { in_place_kind = 0, range_kind = 1, tensor_kind = 2 };
  static constexpr std::size_t shown = 6;

  std::uint64_t kind = in_place_kind;
  std::uint64_t rank = 0;
  std::array<std::uint64_t, shown> extents{};
  std::uint64_t digest = 0;  // of every extent, also those not shown

  static view_shape make(kind_type kind, std::span<const std::size_t> extents);
  [[nodiscard, gnu::cold]] std::string text() const;  // "[4, 2]", "in_place"
  bool operator==(const view_shape&) const = default;
};

/// What a rank believes the call is. Fixed size and free of padding, so that
/// ranks disagreeing about everything still exchange it correctly and its
/// checksum covers every byte. Names longer than their field are cut short for the
/// message, and compared in full through their digest.
struct call_signature {
  static constexpr std::size_t shown_blocks = 8;

  std::array<char, 24> operation{};  // "all_gather"
  std::array<char, 48> algorithm{};  // the one that runs: automatic's choice, not "automatic"
  std::array<char, 40> layout{};     // "along<1>", "redistribute<1, 0>"; contiguous is along<0> / redistribute<0, 0>
  std::uint64_t names_digest = 0;    // of the three names in full
  std::uint64_t element_bytes = 0;
  std::uint64_t element_code = 0;  // plait::element_code: float and uint32 are both 4 bytes
  view_shape send;
  view_shape recv;
  std::uint64_t blocks = 0;
  std::array<std::uint64_t, shown_blocks> first_block_bytes{};
  std::uint64_t block_bytes_digest = 0;  // of every block's size, also those not shown
  std::uint64_t checksum = 0;            // of the fields above: a torn or foreign message is caught too

  /// Sets the names; `layout_dimensions` follow the layout's name: "along" and {1} is along<1>.
  void set_names(std::string_view operation_name, std::string_view algorithm_name, std::string_view layout_name,
                 std::span<const std::size_t> layout_dimensions);
  /// Sets the block sizes (one per block of the operation, in block order) and seals the checksum.
  void set_blocks(std::span<const std::size_t> sizes);
  [[nodiscard]] std::uint64_t digest() const;
  [[nodiscard, gnu::cold]] std::string text() const;
  /// The first part on which two signatures disagree ("the layout"), or empty when they agree.
  [[nodiscard, gnu::cold]] std::string_view first_difference(const call_signature& other) const;
};
static_assert(std::has_unique_object_representations_v<call_signature>,
              "plait: call_signature must have no padding: its checksum covers its bytes");

/// T's name as the compiler spells it ("{anonymous}::my_algorithm"), for
/// policies without a `name` of their own: two such algorithms must not sign
/// their calls alike. Ranks built by one compiler spell it alike.
template <class T>
constexpr std::string_view type_name() {
  // g++, clang and nvcc spell it "... [with T = X; ...]" or "... [T = X]".
  constexpr std::string_view whole = __PRETTY_FUNCTION__;
  constexpr std::string_view open = "T = ";
  constexpr std::string_view close = ";]";
  const std::size_t first = whole.find(open);
  if (first == std::string_view::npos) return whole;
  const std::size_t start = first + open.size();
  const std::size_t end = whole.find_first_of(close, start);
  return whole.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

/// The name check mode signs an algorithm policy with: its `name`, or its type's for one without.
template <class A>
constexpr std::string_view signed_algorithm_name() {
  if constexpr (requires {
                  { A::name } -> std::convertible_to<std::string_view>;
                }) {
    return A::name;
  } else {
    return type_name<A>();
  }
}

/// The shape of one argument of a collective: plait::in_place, a 1-d range or an mdspan-like view.
template <class View>
view_shape shape_of(const View& view) {
  if constexpr (std::same_as<View, in_place_t>) {
    return {};
  } else if constexpr (mdspan_like<View>) {
    std::array<std::size_t, view_rank<View>> extents{};
    for (std::size_t r = 0; r < extents.size(); ++r) extents[r] = extent_of(view, r);
    return view_shape::make(view_shape::tensor_kind, extents);
  } else {
    const std::size_t length = std::ranges::size(view);
    return view_shape::make(view_shape::range_kind, std::span(&length, 1));
  }
}

/// The element type's class and size (plait::element_code) of a view.
template <class View>
constexpr std::uint8_t element_code_of_view() {
  if constexpr (mdspan_like<View>) {
    return element_code<view_element<View>>;
  } else {
    return element_code<std::ranges::range_value_t<View>>;
  }
}

template <class View>
constexpr std::size_t element_bytes_of() {
  if constexpr (mdspan_like<View>) {
    return sizeof(view_element<View>);
  } else {
    return sizeof(std::ranges::range_value_t<View>);
  }
}

/// The signature of a call of Op under Layout with these views, less its
/// block sizes (check_call adds them from the plan). Cold: check mode only.
template <class Op, class Layout, class Send, class Recv>
[[gnu::cold, gnu::noinline]] call_signature describe_call(std::string_view algorithm, const Send& send,
                                                          const Recv& recv) {
  call_signature s;
  if constexpr (requires {
                  Layout::split_dimension;
                  Layout::concat_dimension;
                }) {
    const std::array<std::size_t, 2> dims{Layout::split_dimension, Layout::concat_dimension};
    s.set_names(Op::name, algorithm, "redistribute", dims);
  } else if constexpr (requires { Layout::dimension; }) {
    const std::array<std::size_t, 1> dims{Layout::dimension};
    s.set_names(Op::name, algorithm, "along", dims);
  } else if constexpr (std::same_as<Layout, contiguous>) {
    // The same call as the layout the operation names (along<0> for an
    // all-gather, redistribute<0, 0> for an all-to-all), for 1-d data and tensors.
    const std::array<std::size_t, Op::contiguous_as_parameters> dims{};
    s.set_names(Op::name, algorithm, Op::contiguous_as, dims);
  } else if constexpr (requires {
                         { Layout::name } -> std::convertible_to<std::string_view>;
                       }) {
    s.set_names(Op::name, algorithm, Layout::name, {});
  } else {
    s.set_names(Op::name, algorithm, type_name<Layout>(), {});
  }
  s.element_bytes = element_bytes_of<Recv>();  // send holds the same type (a compile-time check)
  s.element_code = element_code_of_view<Recv>();
  s.send = shape_of(send);
  s.recv = shape_of(recv);
  return s;
}

/// Throws on this rank if the exchanged signatures `all` are corrupt or
/// disagree. Not a template, cold: the same code for every call. Declared
/// without PLAIT_DECL and noinline, which its definition carries: g++ warns
/// (-Wattributes) when an inline declaration and a noinline one are apart; a
/// plain declaration before an inline definition is fine.
[[gnu::cold]] void compare_signatures(std::span<const call_signature> all, int rank, std::string_view operation);

/// Adds the plan's block sizes to `mine`, exchanges signatures over `comm`
/// and throws errc::size_mismatch on every rank if any two disagree. The
/// exchange is an all-gather of fixed-size records under a tag of its own, so
/// it completes whatever the ranks believe the call is. Cold and out of
/// line: check mode is off by default, so -O2 need not inline the exchange
/// into every collective.
template <class Comm, class Plan, class Op>
[[gnu::cold, gnu::noinline]] void check_call(Comm& comm, const Plan& plan, Op, std::string_view operation,
                                             call_signature mine) {
  const int size = comm.size();
  {
    fixed_array<std::size_t> sizes(static_cast<std::size_t>(Op::blocks(size)));
    for (std::size_t b = 0; b < sizes.size(); ++b) sizes[b] = plan.block_bytes(static_cast<int>(b));
    mine.set_blocks(std::span(sizes.data(), sizes.size()));
  }
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

/// The group sizes on which one algorithm policy's schedules for one
/// operation passed plait::verify in this process.
struct verified_sizes {
  std::mutex guard;
  std::vector<int> sizes;
};

PLAIT_DECL bool verified_before(verified_sizes& known, int size);
PLAIT_DECL void remember_verified(verified_sizes& known, int size);

/// Throws errc::invalid_argument naming the rule `found` breaks. (Declared as compare_signatures is.)
[[noreturn, gnu::cold]] void fail_verification(const verify_result& found, std::string_view algorithm,
                                               std::string_view operation_name, int size, const error_context& where);

/// Verifies A's schedules for Op on `size` ranks the first time this process
/// runs them and throws errc::invalid_argument naming the broken rule. Every
/// rank verifies the whole group's schedules (an all-gather's cost grows
/// with P^2, an all-to-all's with P^3: seconds near a thousand ranks), once
/// per size; two ranks of one process that race here both verify, which is
/// harmless. A verdict of broken is not remembered: it throws at every call.
template <class A, class Op>
[[gnu::cold, gnu::noinline]] void verify_schedules_once(int rank, int size, std::string_view operation) {
  static verified_sizes known;
  if (verified_before(known, size)) return;
  const verify_result found = verify_detailed<A, Op>(size);
  if (!found) fail_verification(found, algorithm_name<A>(), Op::name, size, {rank, operation});
  remember_verified(known, size);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/check.ipp"
#endif

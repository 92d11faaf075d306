// The block plan of a bundle: M member plans of one operation seen as one
// plan of M x B blocks. Block b * M + m is member m's block b, so a schedule
// whose transfer lists block b becomes, expanded, a transfer of every
// member's block b, back to back in one message (expand_for_members): the
// same messages as one call, each carrying every member: one message's
// latency instead of M. Members live in different buffers, so such a
// message is vectored where the transport offers isendv/irecvv (gathered
// and scattered by the transport), else packed into the executor's staging
// buffer and unpacked on arrival (op/executor.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <tuple>
#include <utility>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/call_site.hpp"
#include "plait/core/config.hpp"
#include "plait/core/overlap.hpp"
#include "plait/core/region.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// `steps` with every block b replaced by blocks b * members + 0 .. members - 1.
PLAIT_DECL schedule expand_for_members(const schedule& steps, int members);

/// The members of a bundle must not share elements across members (each
/// member's own send and recv are its layout's to check): two recv members
/// that share one would each write it, a send member that shares one with
/// another member's recv would be overwritten before it is sent. Throws
/// errc::invalid_argument naming both members. `send` and `recv` hold
/// `members` entries each.
PLAIT_DECL void check_members_apart(const call_site& at, const strided_set* send, const strided_set* recv,
                                    std::size_t members);

template <class... Plans>
class bundle_plan {
 public:
  static constexpr int members = static_cast<int>(sizeof...(Plans));

  explicit bundle_plan(Plans... plans) : plans_(std::move(plans)...) {}

  [[nodiscard]] std::size_t block_bytes(int block) const {
    return visit(block, [](const auto& p, int b) -> std::size_t { return p.block_bytes(b); });
  }
  [[nodiscard]] bool has_location(int block) const {
    return visit(block, [](const auto& p, int b) -> bool { return p.has_location(b); });
  }
  [[nodiscard]] region location(int block) const {
    return visit(block, [](const auto& p, int b) -> region { return p.location(b); });
  }
  /// The bytes block `block` of the operation (before expansion) has in all members together.
  [[nodiscard]] std::size_t combined_block_bytes(int block) const {
    return std::apply([block](const auto&... p) { return (std::size_t{0} + ... + p.block_bytes(block)); }, plans_);
  }
  template <class Copy>
  void prepare(Copy&& copy) const {
    std::apply([&copy](const auto&... p) { (p.prepare(copy), ...); }, plans_);
  }
  void prepare() const {
    std::apply([](const auto&... p) { (p.prepare(), ...); }, plans_);
  }
  /// Member plan I.
  template <std::size_t I>
  [[nodiscard]] auto& member() noexcept {
    return std::get<I>(plans_);
  }
  /// Member plan I, read only.
  template <std::size_t I>
  [[nodiscard]] const auto& member() const noexcept {
    return std::get<I>(plans_);
  }

 private:
  template <class F>
  auto visit(int block, F&& f) const {
    return visit_at<0>(block % members, block / members, f);
  }
  template <std::size_t I, class F>
  auto visit_at(int member, int b, F& f) const {
    if constexpr (I + 1 == sizeof...(Plans)) {
      return f(std::get<I>(plans_), b);
    } else {
      return member == static_cast<int>(I) ? f(std::get<I>(plans_), b) : visit_at<I + 1>(member, b, f);
    }
  }

  std::tuple<Plans...> plans_;
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/layout/impl/bundle_plan.ipp"
#endif

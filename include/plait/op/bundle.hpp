// plait::bundle: several views of any element types moved by one collective.
// Attention output and its LSE statistics in one all-to-all; NVFP4 data and
// its scale factors in one all-gather: every message of the schedule carries
// every member's blocks, so the call costs one collective's latency, and each
// member's blocks land in its own buffer.
#pragma once

#include <cstddef>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>

#include "plait/core/tensor_view.hpp"
#include "plait/core/views.hpp"

namespace plait {
inline namespace v0 {

/// Members of a bundle: held by reference when the caller passed an lvalue,
/// by value when it passed a view (std::span, plait::tensor_view, any
/// mdspan-like type), which is cheap to copy and refers to memory it does not own.
template <class... Members>
class bundle_of {
 public:
  /// The number of members.
  static constexpr std::size_t size = sizeof...(Members);

  /// Holds the members as given (see plait::bundle).
  explicit bundle_of(Members&&... members) : members_(std::forward<Members>(members)...) {}

  /// Member I.
  template <std::size_t I>
  [[nodiscard]] auto& get() noexcept {
    return std::get<I>(members_);
  }

 private:
  std::tuple<Members...> members_;
};

namespace detail {
template <class X>
inline constexpr bool is_bundle = false;
template <class... M>
inline constexpr bool is_bundle<bundle_of<M...>> = true;

/// A member may be an lvalue (any range or view) or a view rvalue; an
/// owning container passed as an rvalue would die before the collective runs.
template <class X>
inline constexpr bool bundle_member_ok =
    std::is_lvalue_reference_v<X> || std::ranges::view<std::remove_cvref_t<X>> || mdspan_like<std::remove_cvref_t<X>>;
}  // namespace detail

/// Bundles views (all 1-D ranges or all tensor views, any element types, a
/// member may be empty) for one all_gather, all_to_all, all_gather_v or
/// all_to_all_v: send and recv are each a bundle with the same number of
/// members, member i of send going to member i of recv.
///   plait::all_to_all<plait::pairwise>(comm, plait::bundle(out, lse), plait::bundle(out_recv, lse_recv));
template <class... Members>
auto bundle(Members&&... members) {
  static_assert(sizeof...(Members) >= 1, "plait: a bundle needs at least one member");
  static_assert((detail::bundle_member_ok<Members> && ...),
                "plait: a bundle member must be an lvalue or a view (std::span, plait::tensor_view): an owning "
                "container passed as a temporary would be destroyed before the collective reads it");
  using stored =
      bundle_of<std::conditional_t<std::is_lvalue_reference_v<Members>, Members, std::remove_cvref_t<Members>>...>;
  return stored(std::forward<Members>(members)...);
}

}  // namespace v0
}  // namespace plait

// N-d views of user data: plait::tensor_view<T, Rank> (row-major or with
// explicit strides in elements) and the mdspan_like concept that lets any
// mdspan-shaped type (std::mdspan, ::cuda::std::mdspan, Kokkos views wrapped
// as mdspan) be passed where a tensor is expected. Layouts read views only
// through detail::extent_of / stride_of, so every such type works the same.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace plait {
inline namespace v0 {

/// A non-owning view of an N-d array: a pointer, Rank extents and Rank strides
/// (in elements, not bytes). Row-major unless strides are given. T may be const.
///   plait::tensor_view<float, 3> x(ptr, {b, s, h});            // row-major
///   plait::tensor_view<float, 3> y(ptr, {b, s, h}, {s * 2 * h, 2 * h, 1});
template <class T, std::size_t Rank>
class tensor_view {
 public:
  /// The element type as given (may be const).
  using element_type = T;
  /// The element type without const or volatile.
  using value_type = std::remove_cv_t<T>;
  /// The type of one index.
  using index_type = std::size_t;
  /// One extent per dimension.
  using extents_type = std::array<std::size_t, Rank>;
  /// One stride per dimension, in elements.
  using strides_type = std::array<std::size_t, Rank>;

  /// The number of dimensions (static, like mdspan's).
  [[nodiscard]] static constexpr std::size_t rank() noexcept { return Rank; }

  constexpr tensor_view() noexcept = default;

  /// Row-major: the last dimension is contiguous.
  constexpr tensor_view(T* data, const extents_type& extents) noexcept
      : data_(data), extents_(extents), strides_(row_major(extents)) {}

  /// Explicit strides, in elements, one per dimension.
  constexpr tensor_view(T* data, const extents_type& extents, const strides_type& strides) noexcept
      : data_(data), extents_(extents), strides_(strides) {}

  /// A view of non-const T converts to a view of const T (never the reverse).
  template <class U>
  requires(!std::is_same_v<U, T> && std::is_convertible_v<U (*)[], T (*)[]>) constexpr tensor_view(
      const tensor_view<U, Rank>& other) noexcept  // NOLINT: implicit on purpose, like span
      : data_(other.data_handle()), extents_(other.extents()), strides_(other.strides()) {}

  /// The first element.
  [[nodiscard]] constexpr T* data_handle() const noexcept { return data_; }
  /// The extents, outermost first.
  [[nodiscard]] constexpr const extents_type& extents() const noexcept { return extents_; }
  /// The strides, in elements.
  [[nodiscard]] constexpr const strides_type& strides() const noexcept { return strides_; }
  /// The extent of dimension r.
  [[nodiscard]] constexpr std::size_t extent(std::size_t r) const noexcept { return extents_[r]; }
  /// Elements between neighbours along dimension r.
  [[nodiscard]] constexpr std::size_t stride(std::size_t r) const noexcept { return strides_[r]; }
  /// Number of elements viewed (the product of the extents).
  [[nodiscard]] constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (std::size_t e : extents_) n *= e;
    return n;
  }
  /// True when some extent is zero.
  [[nodiscard]] constexpr bool empty() const noexcept { return size() == 0; }

  /// The element at a multi-index (one index per dimension).
  template <class... Index>
  requires(sizeof...(Index) == Rank && (std::convertible_to<Index, std::size_t> && ...)) [[nodiscard]] constexpr T&
  operator()(Index... index) const noexcept {
    const std::array<std::size_t, Rank> at{static_cast<std::size_t>(index)...};
    return (*this)[at];
  }
  /// The element at a multi-index given as an array.
  [[nodiscard]] constexpr T& operator[](const std::array<std::size_t, Rank>& index) const noexcept {
    std::size_t offset = 0;
    for (std::size_t r = 0; r < Rank; ++r) offset += index[r] * strides_[r];
    return data_[offset];
  }

  /// Row-major strides for the given extents.
  [[nodiscard]] static constexpr strides_type row_major(const extents_type& extents) noexcept {
    strides_type s{};
    std::size_t step = 1;
    for (std::size_t r = Rank; r-- > 0;) {
      s[r] = step;
      step *= extents[r];
    }
    return s;
  }

 private:
  T* data_ = nullptr;
  extents_type extents_{};
  strides_type strides_{};
};

namespace detail {

/// extents() either has extent(r) (mdspan's extents) or is indexable (std::array).
template <class E>
concept extents_with_member = requires(const E& e, std::size_t r) {
  { e.extent(r) } -> std::convertible_to<std::size_t>;
};
template <class E>
concept extents_indexable = requires(const E& e, std::size_t r) {
  { e[r] } -> std::convertible_to<std::size_t>;
};

template <class V>
using view_type = std::remove_cvref_t<V>;

template <class V>
using view_pointer =
    std::remove_cvref_t<decltype(std::declval<const view_type<V>&>().data_handle())>;  // mdspan returns a reference

template <class V>
using view_extents = std::remove_cvref_t<decltype(std::declval<const view_type<V>&>().extents())>;

}  // namespace detail

/// Anything shaped like an mdspan over plain memory: data_handle() returns a
/// raw pointer, rank() is a constant expression, extents() has extent(r) or is
/// indexable, and stride(r) gives elements between neighbours along r.
template <class V>
concept mdspan_like = requires(const detail::view_type<V>& v, std::size_t r) {
  { v.data_handle() } -> std::convertible_to<const volatile void*>;
  { detail::view_type<V>::rank() } -> std::convertible_to<std::size_t>;
  { v.stride(r) } -> std::convertible_to<std::size_t>;
  v.extents();
  typename std::integral_constant<std::size_t, detail::view_type<V>::rank()>;  // rank is static
}
&&std::is_pointer_v<detail::view_pointer<V>> &&
    (detail::extents_with_member<detail::view_extents<V>> || detail::extents_indexable<detail::view_extents<V>>);

namespace detail {

/// The element type a view refers to (const kept).
template <mdspan_like V>
using view_element = std::remove_pointer_t<view_pointer<V>>;

/// The static rank of a view.
template <mdspan_like V>
inline constexpr std::size_t view_rank = view_type<V>::rank();

template <mdspan_like V>
constexpr std::size_t extent_of(const V& v, std::size_t r) {
  const auto& e = v.extents();
  if constexpr (extents_with_member<std::remove_cvref_t<decltype(e)>>) {
    return static_cast<std::size_t>(e.extent(r));
  } else {
    return static_cast<std::size_t>(e[r]);
  }
}

template <mdspan_like V>
constexpr std::size_t stride_of(const V& v, std::size_t r) {
  return static_cast<std::size_t>(v.stride(r));
}

}  // namespace detail

}  // namespace v0
}  // namespace plait

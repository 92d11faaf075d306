// plait-test-labels: quick
// tensor_view: row-major and explicit strides, const conversion, element
// access, and the mdspan_like concept (which types count as tensors).
#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include <plait/core/tensor_view.hpp>

namespace {

/// extents() as a std::array, as the concept allows.
struct array_extents_view {
  int* p;
  static constexpr std::size_t rank() { return 2; }
  [[nodiscard]] int* data_handle() const { return p; }
  [[nodiscard]] std::array<std::size_t, 2> extents() const { return {2, 3}; }
  [[nodiscard]] std::size_t stride(std::size_t r) const { return r == 0 ? 3 : 1; }
};

/// rank() is not a constant expression: not mdspan-like.
struct dynamic_rank_view {
  int* p;
  std::size_t n;
  [[nodiscard]] std::size_t rank() const { return n; }
  [[nodiscard]] int* data_handle() const { return p; }
  [[nodiscard]] std::array<std::size_t, 2> extents() const { return {2, 3}; }
  [[nodiscard]] std::size_t stride(std::size_t) const { return 1; }
};

}  // namespace

static_assert(plait::mdspan_like<plait::tensor_view<float, 3>>);
static_assert(plait::mdspan_like<plait::tensor_view<const float, 1>>);
static_assert(plait::mdspan_like<const plait::tensor_view<int, 2>&>);
static_assert(plait::mdspan_like<array_extents_view>);
static_assert(!plait::mdspan_like<dynamic_rank_view>);
static_assert(!plait::mdspan_like<std::vector<float>>);
static_assert(!plait::mdspan_like<std::span<float>>);
static_assert(std::is_convertible_v<plait::tensor_view<float, 2>, plait::tensor_view<const float, 2>>);
static_assert(!std::is_convertible_v<plait::tensor_view<const float, 2>, plait::tensor_view<float, 2>>);
static_assert(plait::tensor_view<float, 4>::rank() == 4);

TEST_CASE("tensor_view is row-major by default", "[tensor_view]") {
  std::vector<int> data(24);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>(i);
  plait::tensor_view<int, 3> v(data.data(), {2, 3, 4});
  CHECK(v.data_handle() == data.data());
  CHECK(v.size() == 24);
  CHECK(v.extent(1) == 3);
  CHECK(v.stride(0) == 12);
  CHECK(v.stride(1) == 4);
  CHECK(v.stride(2) == 1);
  CHECK(v(1, 2, 3) == 23);
  CHECK(v(0, 1, 0) == 4);
  CHECK(v.extents() == std::array<std::size_t, 3>{2, 3, 4});
}

TEST_CASE("tensor_view takes explicit strides in elements", "[tensor_view]") {
  std::vector<int> data(40, 0);
  // A column-major 4 x 5 matrix with its leading dimension padded to 8.
  plait::tensor_view<int, 2> m(data.data(), {4, 5}, {1, 8});
  m(3, 2) = 7;
  CHECK(data[3 + 2 * 8] == 7);
  CHECK(m.size() == 20);
  plait::tensor_view<const int, 2> c = m;
  CHECK(c(3, 2) == 7);
  CHECK(c.stride(1) == 8);
}

TEST_CASE("zero extents make an empty view", "[tensor_view]") {
  plait::tensor_view<double, 2> v(nullptr, {0, 5});
  CHECK(v.size() == 0);
  CHECK(v.empty());
  CHECK(v.stride(0) == 5);
}

TEST_CASE("views are read through extent_of and stride_of whatever their extents type", "[tensor_view]") {
  int cell = 0;
  array_extents_view a{&cell};
  CHECK(plait::detail::extent_of(a, 1) == 3);
  CHECK(plait::detail::stride_of(a, 0) == 3);
  plait::tensor_view<int, 2> t(&cell, {1, 1});
  CHECK(plait::detail::extent_of(t, 0) == 1);
}

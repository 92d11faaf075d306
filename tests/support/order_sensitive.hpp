// Values whose reduction depends on the order of the operands, so that a
// collective that folds in the wrong order gives a different result, not the
// same one by luck: a 2x2 matrix product (does not commute; unsigned, so it
// wraps exactly) and float sums that round differently in every order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace plait_test {

/// A 2x2 matrix of unsigned integers under `times`.
struct matrix {
  std::array<std::uint32_t, 4> m;
  bool operator==(const matrix&) const = default;
};
static_assert(sizeof(matrix) == 16);

constexpr matrix times(const matrix& a, const matrix& b) {
  return {{a.m[0] * b.m[0] + a.m[1] * b.m[2], a.m[0] * b.m[1] + a.m[1] * b.m[3], a.m[2] * b.m[0] + a.m[3] * b.m[2],
           a.m[2] * b.m[1] + a.m[3] * b.m[3]}};
}

/// Rank `rank`'s matrix at element `i`.
inline matrix matrix_of(int rank, std::size_t i) {
  const auto r = static_cast<std::uint32_t>(rank);
  const auto k = static_cast<std::uint32_t>(i);
  return {{1 + r, 2 + k, 3 * r + k, 1 + r * k}};
}

/// Large values of both signs and small ones, so ((x0 + x1) + x2) ... differs
/// from other orders; `salt` makes each call's data its own.
template <class F = float>
F float_contribution(int rank, std::size_t i, int salt = 0) {
  // The same magnitude in units of the last place for both: 3e7 and 3e7 x 2^29.
  const F scale = std::is_same_v<F, float> ? F(3.0e7) : F(3.0e7 * 536870912.0);
  const F big =
      (rank % 2 == 0 ? F(1) : F(-1)) * scale * static_cast<F>(1 + (rank + i + static_cast<std::size_t>(salt)) % 3);
  return big + F(0.37) * static_cast<F>(rank + 1) + F(0.011) * static_cast<F>(i) + F(0.5) * static_cast<F>(salt);
}

/// The serial left fold over ranks, (((x0 + x1) + x2) ...): what `ordered` keeps.
template <class F = float>
F left_fold(int ranks, std::size_t i, int salt = 0) {
  F acc = float_contribution<F>(0, i, salt);
  for (int r = 1; r < ranks; ++r) acc = acc + float_contribution<F>(r, i, salt);
  return acc;
}

/// The right fold, (x0 + (x1 + (x2 ...))): a different order, so tests can
/// show the data tells the two apart.
template <class F = float>
F right_fold(int ranks, std::size_t i, int salt = 0) {
  F acc = float_contribution<F>(ranks - 1, i, salt);
  for (int r = ranks - 2; r >= 0; --r) acc = float_contribution<F>(r, i, salt) + acc;
  return acc;
}

}  // namespace plait_test

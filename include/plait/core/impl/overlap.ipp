// Defines what plait/core/overlap.hpp declares: the exact overlap test of two
// strided views.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include "plait/core/config.hpp"
#include "plait/core/overlap.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

namespace overlap_impl {
/// k x stride for k in [lo, hi]: one dimension's share of the offset between
/// an element of a and one of b (b's dimensions count negatively).
struct term {
  std::ptrdiff_t stride = 0;  // > 0
  std::ptrdiff_t lo = 0;
  std::ptrdiff_t hi = 0;
};

inline std::ptrdiff_t floor_div(std::ptrdiff_t a, std::ptrdiff_t b) noexcept {  // b > 0
  const std::ptrdiff_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
inline std::ptrdiff_t ceil_div(std::ptrdiff_t a, std::ptrdiff_t b) noexcept { return -floor_div(-a, b); }

struct search {
  const std::vector<term>& terms;
  std::vector<std::ptrdiff_t> rest_min, rest_max, rest_gcd;  // over terms [i, n)
  std::ptrdiff_t low, high;                                  // the offsets at which two elements share a byte
  std::size_t budget = std::size_t{1} << 16;

  /// Whether v plus some choice of terms [i, n) lies in [low, high].
  bool reaches(std::size_t i, std::ptrdiff_t v) {
    const std::ptrdiff_t from = std::max(low, v + rest_min[i]);
    const std::ptrdiff_t to = std::min(high, v + rest_max[i]);
    if (from > to) return false;
    if (i == terms.size()) return true;
    // Every sum of terms [i, n) is rest_min[i] plus a multiple of their gcd.
    const std::ptrdiff_t g = rest_gcd[i];
    const std::ptrdiff_t base = v + rest_min[i];
    const std::ptrdiff_t first = from + ((base - from) % g + g) % g;
    if (first > to) return false;
    if (budget == 0) return true;  // a false alarm rather than a long search
    --budget;
    const term& t = terms[i];
    const std::ptrdiff_t k_from = std::max(t.lo, ceil_div(low - v - rest_max[i + 1], t.stride));
    const std::ptrdiff_t k_to = std::min(t.hi, floor_div(high - v - rest_min[i + 1], t.stride));
    for (std::ptrdiff_t k = k_from; k <= k_to; ++k) {
      if (reaches(i + 1, v + k * t.stride)) return true;
      if (budget == 0) return true;
    }
    return false;
  }
};

inline bool empty(const strided_set& s) noexcept {
  for (std::size_t d = 0; d < s.rank; ++d) {
    if (s.extent[d] == 0) return true;
  }
  return s.element == 0;
}
/// Bytes from the first element's first byte to the last element's last.
inline std::size_t span(const strided_set& s) noexcept {
  std::size_t last = 0;
  for (std::size_t d = 0; d < s.rank; ++d) last += (s.extent[d] - 1) * s.stride[d];
  return last + s.element;
}
}  // namespace overlap_impl

PLAIT_DECL bool share_bytes(const strided_set& a, const strided_set& b) {
  using namespace overlap_impl;
  if (empty(a) || empty(b)) return false;
  const std::byte* a_end = a.data + span(a);
  const std::byte* b_end = b.data + span(b);
  if (!std::less<>{}(a.data, b_end) || !std::less<>{}(b.data, a_end)) return false;  // the common case
  // Element x of a and y of b share a byte when their bytes [x, x + ea) and
  // [y, y + eb) meet: when -ea < x - y < eb. x - y is the offset between the
  // first elements plus a sum of a's strides minus a sum of b's.
  std::vector<term> terms;
  const auto add = [&terms](std::size_t stride, std::size_t extent, bool negative) {
    if (stride == 0 || extent <= 1) return;  // adds nothing to the offset
    const auto s = static_cast<std::ptrdiff_t>(stride);
    const auto n = static_cast<std::ptrdiff_t>(extent - 1);
    for (term& t : terms) {
      if (t.stride == s) {  // k1 s + k2 s = (k1 + k2) s: the ranges add up
        (negative ? t.lo : t.hi) += negative ? -n : n;
        return;
      }
    }
    terms.push_back(negative ? term{s, -n, 0} : term{s, 0, n});
  };
  for (std::size_t d = 0; d < a.rank; ++d) add(a.stride[d], a.extent[d], false);
  for (std::size_t d = 0; d < b.rank; ++d) add(b.stride[d], b.extent[d], true);
  // Largest steps first: each then leaves few choices to the smaller ones.
  std::sort(terms.begin(), terms.end(), [](const term& x, const term& y) { return x.stride > y.stride; });
  const std::size_t n = terms.size();
  search s{terms,
           std::vector<std::ptrdiff_t>(n + 1, 0),
           std::vector<std::ptrdiff_t>(n + 1, 0),
           std::vector<std::ptrdiff_t>(n + 1, 0),
           1 - static_cast<std::ptrdiff_t>(a.element),
           static_cast<std::ptrdiff_t>(b.element) - 1};
  for (std::size_t i = n; i-- > 0;) {
    s.rest_min[i] = s.rest_min[i + 1] + terms[i].lo * terms[i].stride;
    s.rest_max[i] = s.rest_max[i + 1] + terms[i].hi * terms[i].stride;
    s.rest_gcd[i] = std::gcd(s.rest_gcd[i + 1], terms[i].stride);
  }
  // Through integers: the views may lie in different objects.
  const auto offset =
      static_cast<std::ptrdiff_t>(reinterpret_cast<std::uintptr_t>(a.data) - reinterpret_cast<std::uintptr_t>(b.data));
  return s.reaches(0, offset);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

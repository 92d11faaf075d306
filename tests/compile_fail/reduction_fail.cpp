// A reduction that does not accept the element type is one static_assert
// naming the reduction and what it accepts, through kernel_for (what the
// engine's entry points call) and check_reduction: plait::sum on a struct
// without +, bit_and on float, minloc on a plain int, avg on int, ordered<sum>
// on float under -ffast-math, a bare callable, plait::reduction without the
// associative declaration, ordered<> of a bare callable, and a user callable
// on a type it cannot combine. With no case selected the fixture compiles:
// the valid uses below.
// The expect-error lines are regexes matched one line each, so clang-format
// must not reflow them.
// clang-format off

// no-precompiled-header: a case defines __FAST_MATH__ before plait's headers.
// expect-error(ordered_float_fast_math): plait::ordered promises the same bits on every run, which -ffast-math \(__FAST_MATH__\) cannot keep
// max-lines(ordered_float_fast_math): 20
#if defined(PLAIT_CASE_ordered_float_fast_math)
// What -ffast-math defines; the runner passes no per-case flags.
#define __FAST_MATH__ 1
#endif

#include "plait/reduction/kernel.hpp"

namespace {
struct no_plus {
  int x;
};
}  // namespace

[[maybe_unused]] void use() {
  const plait::sum sum;
  auto k = plait::detail::kernel_for<int>(sum);
  auto o = plait::detail::kernel_for<int>(plait::ordered<plait::sum>{});
  auto m = plait::detail::kernel_for<plait::value_index<float>>(plait::minloc{});
  const auto user = plait::reduction([](int a, int b) { return a * b; }, plait::associative);
  auto u = plait::detail::kernel_for<int>(user);
  static_assert(!plait::reduction_accepts<plait::sum, no_plus>);

// expect-error(sum_without_plus): plait::sum accepts arithmetic types \(not bool\), plait::bfloat16, plait::half, and class types whose a \+ b converts to T
// max-lines(sum_without_plus): 20
#if defined(PLAIT_CASE_sum_without_plus)
  auto bad = plait::detail::kernel_for<no_plus>(plait::sum{});
#endif

// expect-error(bit_and_on_float): plait::bit_and, bit_or and bit_xor accept integral types and std::byte
// max-lines(bit_and_on_float): 20
#if defined(PLAIT_CASE_bit_and_on_float)
  auto bad = plait::detail::kernel_for<float>(plait::bit_and{});
#endif

// expect-error(minloc_on_int): plait::minloc and plait::maxloc accept only plait::value_index<T>
// max-lines(minloc_on_int): 20
#if defined(PLAIT_CASE_minloc_on_int)
  auto bad = plait::detail::kernel_for<int>(plait::minloc{});
#endif

#if defined(PLAIT_CASE_ordered_float_fast_math)
  auto bad = plait::detail::kernel_for<float>(plait::ordered<plait::sum>{});
#endif

// expect-error(avg_on_int): plait::avg accepts floating types only
// max-lines(avg_on_int): 20
#if defined(PLAIT_CASE_avg_on_int)
  plait::detail::check_reduction<plait::avg, int>();
#endif

// expect-error(bare_callable): plait: this is not a plait reduction: use a built-in .* a user reduction must be declared associative
// max-lines(bare_callable): 20
#if defined(PLAIT_CASE_bare_callable)
  auto f = [](int a, int b) { return a + b; };
  auto bad = plait::detail::kernel_for<int>(f);
#endif

// expect-error(not_declared_associative): plait::reduction: a user reduction must be declared associative
// max-lines(not_declared_associative): 20
#if defined(PLAIT_CASE_not_declared_associative)
  auto bad = plait::reduction([](int a, int b) { return a + b; }, plait::commutative);
#endif

// expect-error(ordered_of_a_callable): plait::ordered<R>: R must be a plait reduction
#if defined(PLAIT_CASE_ordered_of_a_callable)
  auto f = [](int a, int b) { return a + b; };
  plait::ordered<decltype(f)> bad{f};
#endif

// expect-error(user_wrong_type): plait::reduction\(f, ...\): f must be callable as f\(const T&, const T&\) and return a T
// max-lines(user_wrong_type): 20
#if defined(PLAIT_CASE_user_wrong_type)
  auto bad = plait::detail::kernel_for<no_plus>(user);
#endif
}

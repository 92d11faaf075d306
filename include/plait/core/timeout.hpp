// Timeouts every transport shares: the default (PLAIT_TIMEOUT), overflow-safe
// deadlines, and how a duration reads in an error message.
//
// Every deadline is made by detail::after, which saturates: a timeout of
// `hours::max()` means "wait as long as it takes", and now + timeout would
// wrap to the past and time out at once. The test source.deadlines
// (cmake/plait_deadline_check.cmake) fails on `now() +` anywhere else.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "plait/core/config.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// PLAIT_TIMEOUT in seconds (a positive number below 1e9) if set, else 300 s:
/// no wait may block forever, but a slow job must not fail either. A value
/// that is not such a number is errc::invalid_argument naming it
/// (core/environment.hpp).
PLAIT_DECL std::chrono::nanoseconds default_timeout();

/// `d` in the clock's unit, saturated at its largest and smallest value
/// instead of wrapping: `hours::max()` does not fit in nanoseconds, and a
/// duration_cast of it is undefined. NaN reads as zero.
template <class Rep, class Period>
constexpr clock::duration saturated(std::chrono::duration<Rep, Period> d) noexcept {
  using target = clock::duration;
  // The range check in double: it rounds to the nearest, which never lets a
  // value that does not fit pass as one that does (2^63 is a power of two),
  // and a value within 2^-53 below the end saturates, which no wait can
  // tell. (Not long double: under nvcc's --expt-relaxed-constexpr, which
  // plait::cuda sets, chrono's constexpr templates are compiled for the
  // device too, where long double is an error.)
  const double ticks = std::chrono::duration<double, target::period>(d).count();
  if (ticks != ticks) return target::zero();
  if (ticks >= static_cast<double>(target::max().count())) return target::max();
  if (ticks <= static_cast<double>(target::min().count())) return target::min();
  if constexpr (std::is_integral_v<Rep> && (Period::num == 1 || Period::den == 1)) {
    return std::chrono::duration_cast<target>(d);  // exact, and it fits
  } else {
    return target(static_cast<target::rep>(ticks));
  }
}

/// `now + timeout`, saturated at the clock's end when the timeout is huge
/// (and `now` for a negative one): the one place a deadline is computed.
template <class Rep, class Period>
deadline after(std::chrono::duration<Rep, Period> timeout) noexcept {
  const clock::duration t = saturated(timeout);
  const deadline now = clock::now();
  if (t <= clock::duration::zero()) return now;
  if (t >= deadline::max() - now) return deadline::max();
  return now + t;
}

/// "0.15 s", "300 s": a duration as an error message says it; a saturated
/// one (a timeout of hours::max()) reads "forever".
PLAIT_DECL std::string seconds_text(clock::duration d);

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/timeout.ipp"
#endif

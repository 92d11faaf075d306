// Defines what plait/core/environment.hpp declares: the strict parsers of the
// PLAIT_* variables and the check every communicator makes when created.
#pragma once

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "plait/core/config.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// NAME="text" is not WHAT: give FORMS. The text is shown bounded and
/// printable: it comes from outside and ends up in logs.
[[noreturn, gnu::cold, gnu::noinline]] PLAIT_DECL void bad_setting(std::string_view name, std::string_view text,
                                                                   std::string_view what, std::string_view forms,
                                                                   const error_context& at) {
  std::string shown;
  for (const char c : text.substr(0, 40)) shown += c >= ' ' && c <= '~' && c != '"' ? c : '?';
  if (text.size() > 40) shown += "...";
  fail(errc::invalid_argument, {name, "=\"", shown, "\" is not ", what, ": give ", forms}, at);
}

PLAIT_DECL std::chrono::nanoseconds parse_seconds(std::string_view name, std::string_view text,
                                                  const error_context& at) {
  constexpr std::string_view forms = "seconds as a positive number below 1e9, e.g. 30 or 0.5";
  // digits [. digits] [e [+-] digits], read by hand: strtod would accept
  // "inf", "nan", hex and leading blanks, and takes its decimal point from
  // the program's locale (under a German one "0.5" reads as 0).
  long double mantissa = 0;
  int scale = 0;  // powers of ten the digits after the point take away
  std::size_t i = 0;
  std::size_t digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) mantissa = mantissa * 10 + (text[i] - '0');
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits, --scale) {
      mantissa = mantissa * 10 + (text[i] - '0');
    }
  }
  if (digits == 0) bad_setting(name, text, "a timeout", forms, at);
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    int exponent = 0;
    std::size_t exponent_digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++exponent_digits) {
      if (exponent < 10000) exponent = exponent * 10 + (text[i] - '0');  // far past any range that fits
    }
    if (exponent_digits == 0) bad_setting(name, text, "a timeout", forms, at);
    scale += negative ? -exponent : exponent;
  }
  if (i != text.size()) bad_setting(name, text, "a timeout", forms, at);
  const long double seconds = mantissa * std::pow(10.0L, static_cast<long double>(scale));
  // Less than a nanosecond would fail every wait at once, like zero; NaN
  // (0 x an exponent too large) fails both comparisons.
  if (!(seconds * 1e9L >= 0.5L && seconds < 1e9L)) bad_setting(name, text, "a timeout", forms, at);
  return std::chrono::nanoseconds(std::llround(seconds * 1e9L));
}

PLAIT_DECL std::size_t parse_bytes(std::string_view name, std::string_view text, const error_context& at) {
  constexpr std::string_view forms = "a whole number of bytes in decimal digits, e.g. 0 or 65536";
  if (text.empty()) bad_setting(name, text, "a byte count", forms, at);
  std::size_t bytes = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') bad_setting(name, text, "a byte count", forms, at);
    const auto digit = static_cast<std::size_t>(c - '0');
    if (bytes > (SIZE_MAX - digit) / 10) bad_setting(name, text, "a byte count that fits in size_t", forms, at);
    bytes = bytes * 10 + digit;
  }
  return bytes;
}

PLAIT_DECL bool parse_flag(std::string_view name, std::string_view text, const error_context& at) {
  if (text == "1") return true;
  if (text == "0") return false;
  bad_setting(name, text, "a switch", "1 (on) or 0 (off)", at);
}

PLAIT_DECL std::optional<std::chrono::nanoseconds> environment_seconds(const char* name, const error_context& at) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return parse_seconds(name, text, at);
}

PLAIT_DECL std::optional<std::size_t> environment_bytes(const char* name, const error_context& at) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return parse_bytes(name, text, at);
}

PLAIT_DECL std::optional<bool> environment_flag(const char* name, const error_context& at) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return parse_flag(name, text, at);
}

PLAIT_DECL environment_settings read_environment(const error_context& at) {
  environment_settings s;
  s.timeout = environment_seconds("PLAIT_TIMEOUT", at).value_or(s.timeout);
  s.check = environment_flag("PLAIT_CHECK", at).value_or(false);
  s.debug = environment_flag("PLAIT_DEBUG", at).value_or(false);
  s.shm_single_copy_bytes = environment_bytes("PLAIT_SHM_SINGLE_COPY_BYTES", at);
  s.stream_copy_bytes = environment_bytes("PLAIT_STREAM_COPY_BYTES", at);
  return s;
}

PLAIT_DECL bool check_mode_from_environment() { return environment_flag("PLAIT_CHECK").value_or(false); }

}  // namespace detail
}  // namespace v0
}  // namespace plait

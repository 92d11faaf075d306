// The PLAIT_* environment variables, each parsed strictly in one place and
// checked when a communicator is created: a value that is not what the
// variable takes (PLAIT_TIMEOUT=10abc, PLAIT_CHECK=yes) is an error there,
// naming the variable and what it accepts, never a silent default. The table
// of variables and their forms is in docs/reliability.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

// Each parser returns the value of `text` or throws errc::invalid_argument
// whose message names `name`, the text and the accepted forms, located at
// `at` (the rank and the call that creates a communicator).

/// Seconds: a decimal number, fraction and exponent allowed (30, 0.5, 2e3),
/// from 1 ns up to but not including 1e9 s.
PLAIT_DECL std::chrono::nanoseconds parse_seconds(std::string_view name, std::string_view text,
                                                  const error_context& at = {});
/// A byte count: decimal digits only (0, 65536), at most SIZE_MAX.
PLAIT_DECL std::size_t parse_bytes(std::string_view name, std::string_view text, const error_context& at = {});
/// A switch: "1" on, "0" off.
PLAIT_DECL bool parse_flag(std::string_view name, std::string_view text, const error_context& at = {});

// The variable `name` parsed as above; empty when it is unset or set to ""
// (the default applies, as `PLAIT_TIMEOUT= program` means).

/// getenv(name) read with parse_seconds.
PLAIT_DECL std::optional<std::chrono::nanoseconds> environment_seconds(const char* name, const error_context& at = {});
/// getenv(name) read with parse_bytes.
PLAIT_DECL std::optional<std::size_t> environment_bytes(const char* name, const error_context& at = {});
/// getenv(name) read with parse_flag.
PLAIT_DECL std::optional<bool> environment_flag(const char* name, const error_context& at = {});

/// Every PLAIT_* variable plait reads, with the defaults where one is unset.
struct environment_settings {
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);  ///< PLAIT_TIMEOUT
  bool check = false;                                            ///< PLAIT_CHECK
  bool debug = false;                                            ///< PLAIT_DEBUG
  std::optional<std::size_t> shm_single_copy_bytes;              ///< PLAIT_SHM_SINGLE_COPY_BYTES (0 as read)
  std::optional<std::size_t> stream_copy_bytes;                  ///< PLAIT_STREAM_COPY_BYTES (0 as read)
};

/// Reads and checks every PLAIT_* variable, throwing at the first bad one.
/// Every communicator calls it when it is created (communicator_core's
/// constructor; run_threads, run_processes and join before they start
/// anything), so a bad value is reported there even for variables that are
/// used later, on a hot path that must not throw or read the environment
/// (PLAIT_STREAM_COPY_BYTES, PLAIT_DEBUG).
PLAIT_DECL environment_settings read_environment(const error_context& at = {});

/// PLAIT_CHECK: check mode for every communicator created from now on. Read
/// once per communicator, not per call: getenv walks the whole environment
/// (about 300 instructions, a fifth of a small shm collective's own work).
PLAIT_DECL bool check_mode_from_environment();

}  // namespace detail
}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/environment.ipp"
#endif

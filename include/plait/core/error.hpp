// plait::error and plait::errc: every failure plait reports, with the rank,
// operation, step and peer it happened at.
#pragma once

#include <concepts>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "plait/core/config.hpp"

namespace plait {
inline namespace v0 {

/// What went wrong. Values are stable: they cross process boundaries in
/// run_processes (a child's code is rethrown in the parent).
enum class errc {
  invalid_argument = 1,  ///< bad pointer, rank, name, overlap, ... (one rank can tell alone)
  size_mismatch = 2,     ///< extents or byte counts that do not fit the operation
  timeout = 3,           ///< a wait ran past the communicator's timeout
  peer_lost = 4,         ///< a peer failed or died; the group cannot continue
  transport = 5,         ///< the transport itself failed (syscall, MPI, CUDA, protocol)
  unsupported = 6,       ///< a valid request this algorithm/transport cannot serve (odd P for neighbor_exchange)
};

/// The category of plait::errc (one object for the whole program: a
/// function-local static).
PLAIT_DECL const std::error_category& error_category() noexcept;

/// Lets a plait::errc compare with std::error_code (found by argument-dependent lookup).
inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), error_category()}; }

/// Where an error happened. Unknown fields stay at their "none" values and are
/// left out of the message.
struct error_context {
  int rank = -1;               ///< the rank that reports
  std::string_view operation;  ///< "all_gather<ring>", "barrier", "isend", ...
  int step = -1;               ///< schedule step, -1 outside a schedule
  int peer = -1;               ///< the peer involved, -1 if none
  int parent_rank = -1;        ///< on a split communicator: the reporting rank in the parent, else -1

  constexpr error_context() = default;
  /// Where: rank, operation, step, peer and parent rank (all but the first optional).
  constexpr error_context(int rank_, std::string_view operation_ = {}, int step_ = -1, int peer_ = -1,
                          int parent_rank_ = -1) noexcept
      : rank(rank_), operation(operation_), step(step_), peer(peer_), parent_rank(parent_rank_) {}
};

/// The one exception type plait throws. code() compares equal to a plait::errc.
class error : public std::system_error {
 public:
  // Out of line and cold: a throw site compiles to a call, and -O2 does not
  // inline message building into every function that can fail (compile cost).
  // noinline is on the definitions (impl/error.ipp): g++ warns when an inline
  // declaration follows a noinline one.
  /// An error of kind `code` with message `detail`, located at `where`.
  [[gnu::cold]] error(errc code, std::string_view detail, const error_context& where = {});

  // Copyable and movable as before; the destructor is out of line so that it
  // is the key function: the compiled core alone then emits the vtable and
  // the type_info (header-only, every file that needs them still does).
  /// Copyable and movable, like std::system_error.
  error(const error&) = default;
  /// Copyable and movable, like std::system_error.
  error(error&&) = default;
  /// Copyable and movable, like std::system_error.
  error& operator=(const error&) = default;
  /// Copyable and movable, like std::system_error.
  error& operator=(error&&) = default;
  ~error() override;

  /// "plait, rank R, OPERATION, step S, peer P: detail" (unknown parts left
  /// out; on a split communicator "rank R (parent rank Q)").
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }
  /// The rank that raised it, -1 if unknown.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// The peer involved, -1 if none.
  [[nodiscard]] int peer() const noexcept { return peer_; }
  /// The schedule step, -1 outside a schedule.
  [[nodiscard]] int step() const noexcept { return step_; }
  /// The reporting rank in the communicator a split one came from, or -1.
  [[nodiscard]] int parent_rank() const noexcept { return parent_rank_; }
  /// The operation, "all_gather<ring>", "barrier", "isend", ... (empty if unknown).
  [[nodiscard]] const std::string& operation() const noexcept { return operation_; }
  /// The message without the location prefix.
  [[nodiscard]] const std::string& detail() const noexcept { return detail_; }
  /// The kind of error, as a plait::errc.
  [[nodiscard]] errc value() const noexcept { return static_cast<errc>(code().value()); }

  /// The same error seen from an outer layer that knows more (the executor adds
  /// operation and step to a transport's error); fields already known are kept.
  [[nodiscard, gnu::cold]] error within(const error_context& outer) const;

 private:
  [[gnu::cold]] static std::string compose(const error_context& where, std::string_view detail);

  std::string message_;
  int rank_;
  int peer_;
  int step_;
  int parent_rank_;
  std::string operation_;
  std::string detail_;
};

namespace detail {
/// One piece of an error message: text or an integer.
class message_piece {
 public:
  constexpr message_piece(std::string_view text) noexcept : text_(text) {}  // NOLINT(google-explicit-constructor)
  constexpr message_piece(const char* text) noexcept : text_(text) {}       // NOLINT(google-explicit-constructor)
  message_piece(const std::string& text) noexcept : text_(text) {}          // NOLINT(google-explicit-constructor)
  template <std::integral I>
  requires(!std::same_as<I, bool> &&
           !std::same_as<I, char>) constexpr message_piece(I value) noexcept  // NOLINT(google-explicit-constructor)
      : kind_(std::is_signed_v<I> ? kind::signed_number : kind::unsigned_number),
        signed_(static_cast<long long>(value)),
        unsigned_(static_cast<unsigned long long>(value)) {}

  void append_to(std::string& out) const;

 private:
  enum class kind { text, signed_number, unsigned_number };
  kind kind_ = kind::text;
  std::string_view text_;
  long long signed_ = 0;
  unsigned long long unsigned_ = 0;
};

// concat and fail are declared without PLAIT_DECL and defined with it, noinline
// on the definitions (impl/error.ipp): g++ warns about a declaration that is
// both inline and noinline, and about one that follows a noinline declaration.
// A function first declared without `inline` and defined `inline` later is
// fine: the definition is in every file that includes this header.

/// The pieces concatenated. Out of line and cold: error messages are built on
/// failure only, and a call site compiles to an array of pieces and a call
/// instead of inlined std::string concatenation (what -O2 spends time on).
[[gnu::cold]] std::string concat(std::initializer_list<message_piece> pieces);

/// throw error(code, concat(pieces), where), from one cold out-of-line place.
[[noreturn, gnu::cold]] void fail(errc code, std::initializer_list<message_piece> pieces,
                                  const error_context& where = {});
}  // namespace detail

}  // namespace v0
}  // namespace plait

/// @cond std_specialisation
template <>
struct std::is_error_code_enum<plait::errc> : std::true_type {};
/// @endcond

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/error.ipp"
#endif

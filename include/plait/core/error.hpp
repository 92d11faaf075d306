// plait::error and plait::errc: every failure plait reports, with the rank,
// operation, step and peer it happened at.
#pragma once

#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

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

namespace detail {
class errc_category final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "plait"; }
  [[nodiscard]] std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::invalid_argument: return "invalid argument";
      case errc::size_mismatch: return "size mismatch";
      case errc::timeout: return "timeout";
      case errc::peer_lost: return "peer lost";
      case errc::transport: return "transport failure";
      case errc::unsupported: return "unsupported";
    }
    return "unknown plait error";
  }
};
}  // namespace detail

/// The category of plait::errc (one object for the whole program: inline variable).
inline const std::error_category& error_category() noexcept {
  static const detail::errc_category category;
  return category;
}

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), error_category()}; }

/// Where an error happened. Unknown fields stay at their "none" values and are
/// left out of the message.
struct error_context {
  int rank = -1;               ///< the rank that reports
  std::string_view operation;  ///< "all_gather<ring>", "barrier", "isend", ...
  int step = -1;               ///< schedule step, -1 outside a schedule
  int peer = -1;               ///< the peer involved, -1 if none

  constexpr error_context() = default;
  constexpr error_context(int rank_, std::string_view operation_ = {}, int step_ = -1, int peer_ = -1) noexcept
      : rank(rank_), operation(operation_), step(step_), peer(peer_) {}
};

/// The one exception type plait throws. code() compares equal to a plait::errc.
class error : public std::system_error {
 public:
  error(errc code, std::string_view detail, const error_context& where = {})
      : std::system_error(make_error_code(code)),
        message_(compose(where, detail)),
        rank_(where.rank),
        peer_(where.peer),
        step_(where.step),
        operation_(where.operation),
        detail_(detail) {}

  /// "plait, rank R, OPERATION, step S, peer P: detail" (unknown parts left out).
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int peer() const noexcept { return peer_; }
  [[nodiscard]] int step() const noexcept { return step_; }
  [[nodiscard]] const std::string& operation() const noexcept { return operation_; }
  /// The message without the location prefix.
  [[nodiscard]] const std::string& detail() const noexcept { return detail_; }
  [[nodiscard]] errc value() const noexcept { return static_cast<errc>(code().value()); }

  /// The same error seen from an outer layer that knows more (the executor adds
  /// operation and step to a transport's error); fields already known are kept.
  [[nodiscard]] error within(const error_context& outer) const {
    error_context merged{rank_ >= 0 ? rank_ : outer.rank, operation_.empty() ? outer.operation : operation_,
                         step_ >= 0 ? step_ : outer.step, peer_ >= 0 ? peer_ : outer.peer};
    if (!outer.operation.empty() && !operation_.empty() && outer.operation != operation_) {
      std::string op = std::string(outer.operation) + " (" + operation_ + ")";
      merged.operation = op;
      return error(value(), detail_, merged);
    }
    return error(value(), detail_, merged);
  }

 private:
  static std::string compose(const error_context& where, std::string_view detail) {
    std::string text = "plait";
    auto field = [&text](std::string_view label, int value) {
      if (value >= 0) text += std::string(", ").append(label).append(" ").append(std::to_string(value));
    };
    field("rank", where.rank);
    if (!where.operation.empty()) text.append(", ").append(where.operation);
    field("step", where.step);
    field("peer", where.peer);
    text.append(": ").append(detail);
    return text;
  }

  std::string message_;
  int rank_;
  int peer_;
  int step_;
  std::string operation_;
  std::string detail_;
};

}  // namespace v0
}  // namespace plait

template <>
struct std::is_error_code_enum<plait::errc> : std::true_type {};

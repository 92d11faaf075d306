// Defines what plait/core/error.hpp declares: the errc category, plait::error's
// constructor and message composition, and the message pieces' formatting.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>

#include "plait/core/config.hpp"
#include "plait/core/error.hpp"

namespace plait {
inline namespace v0 {

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

PLAIT_DECL const std::error_category& error_category() noexcept {
  static const detail::errc_category category;
  return category;
}

[[gnu::noinline]] PLAIT_DECL error::error(errc code, std::string_view detail, const error_context& where)
    : std::system_error(make_error_code(code)),
      message_(compose(where, detail)),
      rank_(where.rank),
      peer_(where.peer),
      step_(where.step),
      parent_rank_(where.parent_rank),
      operation_(where.operation),
      detail_(detail) {}

PLAIT_DECL error::~error() = default;

[[gnu::noinline]] PLAIT_DECL error error::within(const error_context& outer) const {
  error_context merged{rank_ >= 0 ? rank_ : outer.rank, operation_.empty() ? outer.operation : operation_,
                       step_ >= 0 ? step_ : outer.step, peer_ >= 0 ? peer_ : outer.peer,
                       parent_rank_ >= 0 ? parent_rank_ : outer.parent_rank};
  if (!outer.operation.empty() && !operation_.empty() && outer.operation != operation_) {
    std::string op = std::string(outer.operation) + " (" + operation_ + ")";
    merged.operation = op;
    return error(value(), detail_, merged);
  }
  return error(value(), detail_, merged);
}

[[gnu::noinline]] PLAIT_DECL std::string error::compose(const error_context& where, std::string_view detail) {
  std::string text = "plait";
  auto field = [&text](std::string_view label, int value) {
    if (value >= 0) text += std::string(", ").append(label).append(" ").append(std::to_string(value));
  };
  field("rank", where.rank);
  if (where.parent_rank >= 0) text.append(" (parent rank ").append(std::to_string(where.parent_rank)).append(")");
  if (!where.operation.empty()) text.append(", ").append(where.operation);
  field("step", where.step);
  field("peer", where.peer);
  text.append(": ").append(detail);
  return text;
}

namespace detail {

PLAIT_DECL void message_piece::append_to(std::string& out) const {
  switch (kind_) {
    case kind::text: out.append(text_); return;
    case kind::signed_number: out.append(std::to_string(signed_)); return;
    case kind::unsigned_number: out.append(std::to_string(unsigned_)); return;
  }
}

[[gnu::noinline]] PLAIT_DECL std::string concat(std::initializer_list<message_piece> pieces) {
  std::string text;
  for (const message_piece& piece : pieces) piece.append_to(text);
  return text;
}

[[gnu::noinline]] PLAIT_DECL void fail(errc code, std::initializer_list<message_piece> pieces,
                                       const error_context& where) {
  throw error(code, concat(pieces), where);
}

}  // namespace detail

}  // namespace v0
}  // namespace plait

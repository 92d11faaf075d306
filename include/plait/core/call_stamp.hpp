// plait::call_stamp: what one collective call is, in 32 bits, so that a
// transport whose messages carry a header can tell a message of another
// collective from its own (ranks that disagree on the call get an error, not
// each other's bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "plait/core/config.hpp"
#include "plait/core/element_kind.hpp"

namespace plait {
inline namespace v0 {

/// Which kind of call a tag belongs to: the operation part of a call_stamp.
enum class call_kind : std::uint8_t {
  unknown = 0,  ///< a tag taken with plain next_tag(): nothing to compare
  all_gather = 1,
  all_to_all = 2,
  check = 3,             ///< check mode's signature exchange
  split_all_gather = 4,  ///< a boundary's point-to-point stage
  control = 5,           ///< a transport's own control exchange (split tables, handles)
  all_gather_v = 6,
  all_to_all_v = 7,
  reduce_scatter = 8,
  reduce_scatter_v = 9,
  all_reduce = 10,
};

/// The first call kind free for operations of one's own: an operation's
/// description names its kinds (Op::kind, Op::v_kind) from here up to 255.
inline constexpr std::uint8_t first_custom_call_kind = 64;

/// The name of a call kind, as error messages write it.
PLAIT_DECL std::string_view call_kind_name(call_kind kind) noexcept;

/// Names a kind from first_custom_call_kind on in error messages; `name`
/// must live as long as the program (an operation tag's static name). The
/// engine calls it the first time an operation of one's own runs. Thread-safe.
PLAIT_DECL void name_call_kind(call_kind kind, const std::string_view* name) noexcept;

/// What one collective call is, in 32 bits: its kind, its element type
/// (class and size, core/element_kind.hpp) and a digest of the algorithm and
/// layout that run. A transport whose messages carry a header
/// (shm, NVLink) writes the stamp of the message's tag into it; a receiver
/// whose own call under that tag has another stamp fails with
/// errc::size_mismatch naming both calls, so ranks that disagree on the
/// collective, or on its element type, get an error by default instead of
/// each other's bytes. A zero
/// stamp (plain next_tag(), user point-to-point) is never compared.
struct call_stamp {
  /// The kind of call.
  call_kind kind = call_kind::unknown;
  /// The element byte (plait::element_code): 0 where the call has no element type.
  std::uint8_t element = 0;
  std::uint16_t digest = 0;  ///< of the running algorithm's and layout's names (and large or mixed elements)

  /// The stamp of a call of `kind` running `detail_text` ("ring along<1>"):
  /// constexpr, so a collective computes its requested stamp at compile time.
  static constexpr call_stamp of(call_kind kind, std::string_view detail_text) noexcept;
  /// This stamp with the element byte `code` (plait::element_code).
  [[nodiscard]] constexpr call_stamp with_element(std::uint8_t code) const noexcept { return {kind, code, digest}; }
  /// The stamp as 32 bits, as a message header carries it.
  [[nodiscard]] constexpr std::uint32_t bits() const noexcept {
    return static_cast<std::uint32_t>(kind) | std::uint32_t{element} << 8 | std::uint32_t{digest} << 16;
  }
  /// The stamp a header's 32 bits carry.
  [[nodiscard]] static constexpr call_stamp from_bits(std::uint32_t bits) noexcept {
    return {static_cast<call_kind>(bits & 0xffu), static_cast<std::uint8_t>(bits >> 8),
            static_cast<std::uint16_t>(bits >> 16)};
  }
  /// False for the stamp of a plain next_tag() or a user message: never compared.
  [[nodiscard]] constexpr bool known() const noexcept { return kind != call_kind::unknown; }
  /// Same kind and digest.
  friend constexpr bool operator==(call_stamp, call_stamp) = default;
};

/// A stamp's digest fed a part at a time: of(kind, text) for the text the
/// parts spell, without writing the text out (a reduction's stamp is taken
/// every call, from its kernel's name).
class stamp_digest {
 public:
  /// Feeds the characters of `part`.
  constexpr stamp_digest& add(std::string_view part) noexcept {
    for (char c : part) hash_ = (hash_ ^ static_cast<unsigned char>(c)) * 16777619u;  // FNV-1a
    return *this;
  }
  /// Feeds `n` written in decimal.
  constexpr stamp_digest& add_number(std::size_t n) noexcept {
    char digits[20]{};
    std::size_t count = 0;
    do {
      digits[count++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0);
    while (count > 0) add(std::string_view(&digits[--count], 1));
    return *this;
  }
  /// The stamp of `kind` with this digest, folded to 16 bits.
  [[nodiscard]] constexpr call_stamp stamp(call_kind kind) const noexcept {
    return {kind, 0, static_cast<std::uint16_t>((hash_ >> 16) ^ (hash_ & 0xffffu))};
  }

 private:
  std::uint32_t hash_ = 2166136261u;
};

constexpr call_stamp call_stamp::of(call_kind kind, std::string_view detail_text) noexcept {
  return stamp_digest{}.add(detail_text).stamp(kind);
}

/// True for the uneven forms, whose message sizes come from each rank's own
/// counts: ranks whose counts disagree send messages of sizes their peers do
/// not expect (a transport may then check a message's size before taking it).
constexpr bool sizes_may_disagree(call_kind kind) noexcept {
  return kind == call_kind::all_gather_v || kind == call_kind::all_to_all_v || kind == call_kind::reduce_scatter_v;
}

/// True when two stamps of the same tag say different calls (both known).
constexpr bool stamps_conflict(call_stamp a, call_stamp b) noexcept { return a.known() && b.known() && a != b; }

namespace detail {
/// The call whose body starts collectives on this thread now: a
/// hierarchical collective's own stamp while its body runs (op/staged.hpp),
/// else none. Per thread: a body runs on one thread at a time.
inline thread_local call_stamp enclosing_call{};

/// `stamp` as a collective started inside the call `enclosing` takes it: that
/// call's element byte, with its kind and digest folded into the digest. A
/// two-level call's levels move bytes; without this, ranks whose two-level
/// calls differ (in element type, in form) but move bytes alike would take
/// each other's bytes. Check and control exchanges keep their own stamps (they
/// say themselves what disagrees).
constexpr call_stamp within(call_stamp stamp, call_stamp enclosing) noexcept {
  if (!stamp.known() || !enclosing.known() || stamp.kind == call_kind::check || stamp.kind == call_kind::control) {
    return stamp;
  }
  return stamp_digest{}
      .add_number(stamp.digest)
      .add(":")
      .add_number(static_cast<std::size_t>(enclosing.kind))
      .add(":")
      .add_number(enclosing.digest)
      .stamp(stamp.kind)
      .with_element(enclosing.element);
}
}  // namespace detail

/// "all_to_all (algorithm and layout digest 1a2b) of int32": a stamp as error
/// messages write it.
// Declared without PLAIT_DECL: the definition carries it and noinline (g++
// warns when an inline declaration precedes a noinline one).
[[gnu::cold]] std::string describe(call_stamp stamp);

/// "int8", "float", "bfloat16", "bytes of size 12": an element byte as error
/// messages write it.
[[gnu::cold]] std::string describe_element(std::uint8_t code);

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/core/impl/call_stamp.ipp"
#endif

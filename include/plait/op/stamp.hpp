// The call stamp of a collective (core/call_stamp.hpp): its operation, its
// element type, the algorithm that runs and the layout with its parameters,
// so that ranks that disagree on any of them are told apart by a transport
// with a message header.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "plait/core/call_stamp.hpp"
#include "plait/core/element_kind.hpp"
#include "plait/core/operation.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// Writes what an element byte cannot hold into a stamp's digest text: each
/// type's code and exact size ("/e192:48").
template <class Put, class PutNumber, class T>
constexpr void put_element_digest(Put& put, PutNumber& put_number, std::type_identity<T>) {
  put("/e");
  put_number(element_code<T>);
  put(":");
  put_number(sizeof(T));
}
template <class Put, class PutNumber, class... T>
constexpr void put_element_digest(Put& put, PutNumber& put_number, std::type_identity<element_pack<T...>>) {
  (put_element_digest(put, put_number, std::type_identity<T>{}), ...);
}

/// The stamp of Op with Layout running `algorithm` (the running one: under
/// automatic, the algorithm it picked, so that it matches a rank that named
/// that algorithm). constexpr: a collective computes its requested stamp once.
/// `kind` names the form when it is not Op's even one (all_gather_v, ...).
/// Element is the element type (an element_pack for a bundle): its class and
/// size go in the stamp's element byte, and what that byte cannot hold (a size
/// of 32 bytes or more, a bundle's member types) into the digest.
template <class Op, class Layout, class Element>
constexpr call_stamp collective_stamp(std::string_view algorithm, call_kind kind = call_kind::unknown) noexcept {
  std::array<char, 160> text{};
  std::size_t size = 0;
  auto put = [&](std::string_view part) {
    for (char c : part) {
      if (size < text.size()) text[size++] = c;
    }
  };
  auto put_number = [&](std::size_t n) {
    char digits[20]{};
    std::size_t count = 0;
    do {
      digits[count++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0 && count < sizeof digits);
    while (count > 0) put(std::string_view(&digits[--count], 1));
  };
  put(algorithm);
  put(" ");
  // contiguous is along<0> of an all-gather and redistribute<0, 0> of an
  // all-to-all: the same blocks in the same places, so the same stamp (check
  // mode agrees).
  if constexpr (Layout::name == std::string_view("contiguous")) {
    put(Op::contiguous_as);
    put("<");
    for (int i = 0; i < Op::contiguous_as_parameters; ++i) put(i == 0 ? "0" : ",0");
    put(">");
  } else {
    put(Layout::name);
  }
  // A layout's parameters are part of the call: along<0> and along<1>, or
  // redistribute<1, 1> and <0, 0>, may move the same bytes to other places.
  if constexpr (requires { Layout::dimension; }) {
    put("<");
    put_number(Layout::dimension);
    put(">");
  }
  if constexpr (requires {
                  Layout::split_dimension;
                  Layout::concat_dimension;
                }) {
    put("<");
    put_number(Layout::split_dimension);
    put(",");
    put_number(Layout::concat_dimension);
    put(">");
  }
  constexpr std::uint8_t element = element_code<Element>;
  if constexpr (element_size_in(element) == 0) put_element_digest(put, put_number, std::type_identity<Element>{});
  if (kind == call_kind::unknown) kind = Op::kind;
  return call_stamp::of(kind, std::string_view(text.data(), size)).with_element(element);
}

}  // namespace detail
}  // namespace v0
}  // namespace plait

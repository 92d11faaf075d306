// Shared by test_layouts.cpp (quick) and test_layouts_full.cpp (full): runs
// all-gather along<D> and all-to-all redistribute<S, C> over rank-3 tensors
// (and, when a plan asks, rank-2 ones) with dense, padded, interleaved and
// column-major views on both sides, and checks every element against a serial
// reference computed from the value formula, and every byte between strided
// elements against its guard value. Each rank does all its calls inside one
// run_ranks body (one fork per algorithm and P), and reports a verdict
// string; nothing asserts in a rank. The bodies take any communicator whose
// buffers are host-addressable (shm, the NVLink transport's host emulation,
// the loopback transport of tests/support/loopback_transport.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <plait/algorithm/automatic.hpp>
#include <plait/algorithm/bruck.hpp>
#include <plait/algorithm/direct.hpp>
#include <plait/algorithm/neighbor_exchange.hpp>
#include <plait/algorithm/pairwise.hpp>
#include <plait/algorithm/recursive_doubling.hpp>
#include <plait/algorithm/ring.hpp>
#include <plait/algorithm/tree.hpp>
#include <plait/plait.hpp>

#include "support/harness.hpp"

namespace layout_sweep {

using shape = std::array<std::size_t, 3>;

/// How a view lays its elements out in its buffer.
enum class arrangement {
  dense,         ///< row-major, no gaps
  padded,        ///< row-major with every dimension padded by one (gaps between rows and planes)
  interleaved,   ///< inner stride 2 plus padding: every run is one element
  column_major,  ///< dimension 0 fastest
};
inline constexpr std::array<arrangement, 4> all_arrangements{arrangement::dense, arrangement::padded,
                                                             arrangement::interleaved, arrangement::column_major};

inline const char* to_string(arrangement a) {
  switch (a) {
    case arrangement::dense: return "dense";
    case arrangement::padded: return "padded";
    case arrangement::interleaved: return "interleaved";
    case arrangement::column_major: return "column_major";
  }
  return "?";
}

inline std::size_t elements(const shape& e) { return e[0] * e[1] * e[2]; }
inline std::size_t linear(const shape& e, const shape& i) { return (i[0] * e[1] + i[1]) * e[2] + i[2]; }

/// A buffer holding one view with guard values in every element it does not view.
template <class T>
struct strided_buffer {
  shape extent{};
  shape stride{};
  std::vector<T> storage;
  T guard{};

  strided_buffer(const shape& e, arrangement a, T guard_value) : extent(e), guard(guard_value) {
    shape padded = e;
    if (a == arrangement::padded || a == arrangement::interleaved) {
      for (auto& x : padded) x += 1;
    }
    const std::size_t inner = a == arrangement::interleaved ? 2 : 1;
    if (a == arrangement::column_major) {
      stride = {1, padded[0], padded[0] * padded[1]};
    } else {
      stride = {padded[1] * padded[2] * inner, padded[2] * inner, inner};
    }
    std::size_t span = 1;
    for (std::size_t r = 0; r < 3; ++r) span += (padded[r] == 0 ? 0 : padded[r] - 1) * stride[r];
    storage.assign(span + 1, guard);  // +1: a guard after the last element too
  }
  [[nodiscard]] std::size_t offset(const shape& i) const {
    return i[0] * stride[0] + i[1] * stride[1] + i[2] * stride[2];
  }
  T& at(const shape& i) { return storage[offset(i)]; }
  plait::tensor_view<T, 3> view() { return {storage.data(), extent, stride}; }
  plait::tensor_view<const T, 3> const_view() { return view(); }
  /// The view as a tensor of its last Rank dimensions (the others have extent 1).
  template <std::size_t Rank>
  plait::tensor_view<T, Rank> trailing_view() {
    std::array<std::size_t, Rank> e{};
    std::array<std::size_t, Rank> s{};
    for (std::size_t r = 0; r < Rank; ++r) {
      e[r] = extent[3 - Rank + r];
      s[r] = stride[3 - Rank + r];
    }
    return {storage.data(), e, s};
  }

  template <class Fn>
  void for_each_index(Fn&& fn) const {
    for (std::size_t a = 0; a < extent[0]; ++a)
      for (std::size_t b = 0; b < extent[1]; ++b)
        for (std::size_t c = 0; c < extent[2]; ++c) fn(shape{a, b, c});
  }
  /// "" when every element outside the view still holds the guard.
  [[nodiscard]] std::string guards_intact(const std::string& what) const {
    std::vector<bool> mask(storage.size(), false);
    for_each_index([&](const shape& i) { mask[offset(i)] = true; });
    for (std::size_t k = 0; k < storage.size(); ++k) {
      if (!mask[k] && !(storage[k] == guard))
        return what + ": guard overwritten at buffer element " + std::to_string(k);
    }
    return {};
  }
};

template <class T>
T guard_value() {
  if constexpr (std::is_same_v<T, plait_test::triple>) {
    return {-7, -7, -7};
  } else if constexpr (std::is_same_v<T, plait_test::three_bytes>) {
    return {249, 249, 249};  // -7 as a byte; make_value's last byte is a rank, never 249
  } else {
    return static_cast<T>(-7);
  }
}

/// Hook for transport tests: called with both buffers' storage before each
/// call, its result kept alive until the call has been checked. A test's own
/// overload (found by argument-dependent lookup on its communicator type)
/// may register them with the transport (NVLink's zero-copy); none by default.
template <class Comm, class Send, class Recv>
int hold_buffers(Comm&, Send&, Recv&) {
  return 0;
}

/// One all-gather along<D> on this rank; "" when recv is right and guards hold.
/// With Rank < 3 the views are rank-Rank tensors of the shape's last
/// dimensions (the leading ones must be 1), gathered along their D - (3 - Rank).
template <class Algorithm, std::size_t D, class T, std::size_t Rank = 3, class Comm>
std::string gather_once(Comm& comm, const shape& shard, arrangement send_layout, arrangement recv_layout,
                        bool in_place) {
  static_assert(D >= 3 - Rank && Rank <= 3, "gather_once: D must be one of the view's dimensions");
  using along = plait::along<D - (3 - Rank)>;
  const int p = comm.size();
  const int me = comm.rank();
  shape full = shard;
  full[D] *= static_cast<std::size_t>(p);
  strided_buffer<T> send(shard, send_layout, guard_value<T>());
  strided_buffer<T> recv(full, recv_layout, guard_value<T>());
  send.for_each_index([&](const shape& i) { send.at(i) = plait_test::make_value<T>(me, linear(shard, i)); });
  [[maybe_unused]] auto held = hold_buffers(comm, send.storage, recv.storage);
  if (in_place) {
    send.for_each_index([&](const shape& i) {
      shape j = i;
      j[D] += static_cast<std::size_t>(me) * shard[D];
      recv.at(j) = send.at(i);
    });
    plait::all_gather<Algorithm, along>(comm, plait::in_place, recv.template trailing_view<Rank>());
  } else {
    plait::all_gather<Algorithm, along>(comm, plait::tensor_view<const T, Rank>(send.template trailing_view<Rank>()),
                                        recv.template trailing_view<Rank>());
  }
  std::string bad;
  recv.for_each_index([&](const shape& i) {
    if (!bad.empty()) return;
    const std::size_t n = shard[D];
    const int from = n == 0 ? 0 : static_cast<int>(i[D] / n);
    shape k = i;
    k[D] = n == 0 ? 0 : i[D] % n;
    if (!(recv.at(i) == plait_test::make_value<T>(from, linear(shard, k)))) {
      bad = "element (" + std::to_string(i[0]) + "," + std::to_string(i[1]) + "," + std::to_string(i[2]) +
            ") of recv is wrong";
    }
  });
  if (bad.empty()) bad = recv.guards_intact("recv");
  if (bad.empty()) bad = send.guards_intact("send");
  if (!bad.empty()) {
    return "rank " + std::to_string(Rank) + " along<" + std::to_string(D - (3 - Rank)) + "> " + to_string(send_layout) +
           "->" + to_string(recv_layout) + (in_place ? " in_place" : "") + " shard " + std::to_string(shard[0]) + "x" +
           std::to_string(shard[1]) + "x" + std::to_string(shard[2]) + ": " + bad;
  }
  return {};
}

/// One all-to-all redistribute<S, C> on this rank; `block` is the block shape.
/// With Rank < 3, as gather_once: rank-Rank views, redistribute<S, C> of the
/// shape's dimensions counted from its first kept one.
template <class Algorithm, std::size_t S, std::size_t C, class T, std::size_t Rank = 3, class Comm>
std::string exchange_once(Comm& comm, const shape& block, arrangement send_layout, arrangement recv_layout) {
  static_assert(S >= 3 - Rank && C >= 3 - Rank && Rank <= 3, "exchange_once: S and C must be the view's dimensions");
  using redistribute = plait::redistribute<S - (3 - Rank), C - (3 - Rank)>;
  const auto p = static_cast<std::size_t>(comm.size());
  const int me = comm.rank();
  shape out = block;
  out[S] *= p;
  shape in = block;
  in[C] *= p;
  strided_buffer<T> send(out, send_layout, guard_value<T>());
  strided_buffer<T> recv(in, recv_layout, guard_value<T>());
  send.for_each_index([&](const shape& i) { send.at(i) = plait_test::make_value<T>(me, linear(out, i)); });
  [[maybe_unused]] auto held = hold_buffers(comm, send.storage, recv.storage);
  plait::all_to_all<Algorithm, redistribute>(comm,
                                             plait::tensor_view<const T, Rank>(send.template trailing_view<Rank>()),
                                             recv.template trailing_view<Rank>());
  std::string bad;
  recv.for_each_index([&](const shape& i) {
    if (!bad.empty()) return;
    // recv slice i[C] / block[C] along C came from that rank, which sent its
    // slice (this rank) along S.
    const int from = static_cast<int>(i[C] / block[C]);
    shape local = i;
    local[C] %= block[C];
    shape there = local;
    there[S] += static_cast<std::size_t>(me) * block[S];
    if (!(recv.at(i) == plait_test::make_value<T>(from, linear(out, there)))) {
      bad = "element (" + std::to_string(i[0]) + "," + std::to_string(i[1]) + "," + std::to_string(i[2]) +
            ") of recv is wrong";
    }
  });
  if (bad.empty()) bad = recv.guards_intact("recv");
  if (bad.empty()) bad = send.guards_intact("send");
  if (!bad.empty()) {
    return "rank " + std::to_string(Rank) + " redistribute<" + std::to_string(S - (3 - Rank)) + "," +
           std::to_string(C - (3 - Rank)) + "> " + to_string(send_layout) + "->" + to_string(recv_layout) + " block " +
           std::to_string(block[0]) + "x" + std::to_string(block[1]) + "x" + std::to_string(block[2]) + ": " + bad;
  }
  return {};
}

/// What one sweep covers.
struct plan {
  std::vector<shape> shapes;                             ///< shard (gather) / block (exchange) shapes
  std::vector<std::array<arrangement, 2>> arrangements;  ///< (send, recv) pairs
  bool in_place = true;
  bool rank_2 = false;  ///< also rank-2 views of the shapes' last two dimensions
};

/// A few shapes, empty shards included, across the strided arrangements: the
/// sweep a transport test runs when the full one would take too long.
inline const plan strided_views{{{1, 2, 3}, {0, 2, 3}, {3, 1, 5}},
                                {{arrangement::dense, arrangement::dense},
                                 {arrangement::padded, arrangement::interleaved},
                                 {arrangement::column_major, arrangement::dense},
                                 {arrangement::interleaved, arrangement::column_major}},
                                true};

inline std::vector<std::array<arrangement, 2>> every_pair() {
  std::vector<std::array<arrangement, 2>> out;
  for (auto s : all_arrangements)
    for (auto r : all_arrangements) out.push_back({s, r});
  return out;
}

template <class Algorithm, class T, class Comm>
std::string gather_sweep(Comm& comm, const plan& what) {
  std::string verdict;
  auto add = [&](std::string v) {
    if (!v.empty() && verdict.size() < 600) verdict += v + "; ";
  };
  for (const shape& s : what.shapes) {
    for (const auto& [from, into] : what.arrangements) {
      add(gather_once<Algorithm, 0, T>(comm, s, from, into, false));
      add(gather_once<Algorithm, 1, T>(comm, s, from, into, false));
      add(gather_once<Algorithm, 2, T>(comm, s, from, into, false));
    }
    if (what.in_place) {
      add(gather_once<Algorithm, 0, T>(comm, s, arrangement::interleaved, arrangement::dense, true));
      add(gather_once<Algorithm, 1, T>(comm, s, arrangement::dense, arrangement::padded, true));
      add(gather_once<Algorithm, 2, T>(comm, s, arrangement::dense, arrangement::interleaved, true));
    }
    if (!what.rank_2) continue;
    const shape flat{1, s[1], s[2]};
    for (const auto& [from, into] : what.arrangements) {
      add(gather_once<Algorithm, 1, T, 2>(comm, flat, from, into, false));
      add(gather_once<Algorithm, 2, T, 2>(comm, flat, from, into, false));
    }
    if (what.in_place) {
      add(gather_once<Algorithm, 1, T, 2>(comm, flat, arrangement::padded, arrangement::column_major, true));
      add(gather_once<Algorithm, 2, T, 2>(comm, flat, arrangement::dense, arrangement::padded, true));
    }
  }
  return verdict;
}

template <class Algorithm, class T, class Comm>
std::string exchange_sweep(Comm& comm, const plan& what) {
  std::string verdict;
  auto add = [&](std::string v) {
    if (!v.empty() && verdict.size() < 600) verdict += v + "; ";
  };
  for (const shape& s : what.shapes) {
    for (const auto& [from, into] : what.arrangements) {
      add(exchange_once<Algorithm, 1, 0, T>(comm, s, from, into));  // Ulysses
      add(exchange_once<Algorithm, 0, 1, T>(comm, s, from, into));  // and back
      add(exchange_once<Algorithm, 0, 0, T>(comm, s, from, into));
      add(exchange_once<Algorithm, 2, 2, T>(comm, s, from, into));
      add(exchange_once<Algorithm, 2, 0, T>(comm, s, from, into));
    }
    if (!what.rank_2) continue;
    const shape flat{1, s[1], s[2]};
    for (const auto& [from, into] : what.arrangements) {
      add(exchange_once<Algorithm, 2, 1, T, 2>(comm, flat, from, into));  // rank-2 redistribute<1, 0>
      add(exchange_once<Algorithm, 1, 2, T, 2>(comm, flat, from, into));
      add(exchange_once<Algorithm, 1, 1, T, 2>(comm, flat, from, into));
      add(exchange_once<Algorithm, 2, 2, T, 2>(comm, flat, from, into));
    }
  }
  return verdict;
}

}  // namespace layout_sweep

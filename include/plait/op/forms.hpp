// Every form of any operation, from one place: the operation is a
// description (a tag such as plait::op::all_gather, core/operation.hpp) and
// the form a policy. plait::all_gather and the other named functions are
// these with their operation filled in; an operation of one's own (its tag,
// its layouts' make_plan / make_v_plan overloads and its algorithms'
// schedules) gets every form by calling them:
//
//   run_collective<Op, Algorithm, Layout>(comm, send, recv)        blocking
//   start_collective<Op, Algorithm, Layout>(comm, send, recv)      nonblocking: a collective_request
//   init_collective<Op, Algorithm, Layout>(comm, send, recv)       persistent: a persistent_collective
//   run_collective_v / start_collective_v / init_collective_v      the same, counts after the buffers
//
// Bundles are arguments (plait::bundle(...)), so each of these serves them;
// on a two_level communicator they run as op/hierarchical.hpp says.
#pragma once

#include <utility>

#include "plait/algorithm/automatic.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/levels/two_level.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/dispatch.hpp"
#include "plait/op/hierarchical.hpp"
#include "plait/op/launch.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {

/// Op's even form, blocking. Comm, Send and Recv are not constrained here: a
/// type that is not a transport, or an argument that is not accepted, stops
/// the compiler with one static_assert that names what is missing.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
void run_collective(Comm& comm, Send&& send, Recv&& recv) {
  if constexpr (detail::two_level_communicator<Comm>) {
    detail::two_level_collective<Op, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [](auto& whole, auto&& s, auto&& r) {
          run_collective<Op, Algorithm, Layout>(whole, std::forward<decltype(s)>(s), std::forward<decltype(r)>(r));
        },
        detail::two_level_now{});
  } else {
    detail::dispatch_even<Op, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                 detail::run_now{});
  }
}

/// Op's even form, nonblocking: the same arguments and checks; returns at once.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] collective_request start_collective(Comm& comm, Send&& send, Recv&& recv) {
  if constexpr (detail::two_level_communicator<Comm>) {
    return detail::two_level_collective<Op, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [](auto& whole, auto&& s, auto&& r) {
          return start_collective<Op, Algorithm, Layout>(whole, std::forward<decltype(s)>(s),
                                                         std::forward<decltype(r)>(r));
        },
        detail::two_level_in_flight{});
  } else {
    detail::in_flight_handle h;
    detail::dispatch_even<Op, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                 detail::start_in_flight{&h});
    return collective_request(h);
  }
}

/// Op's even form, persistent: checks and plans once; start() moves the bytes.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv>
[[nodiscard]] persistent_collective init_collective(Comm& comm, Send&& send, Recv&& recv) {
  if constexpr (detail::two_level_communicator<Comm>) {
    return detail::two_level_collective<Op, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [](auto& whole, auto&& s, auto&& r) {
          return init_collective<Op, Algorithm, Layout>(whole, std::forward<decltype(s)>(s),
                                                        std::forward<decltype(r)>(r));
        },
        detail::two_level_bound{});
  } else {
    detail::in_flight_handle h;
    detail::dispatch_even<Op, Algorithm, Layout>(comm, std::forward<Send>(send), std::forward<Recv>(recv),
                                                 detail::bind_persistent{&h});
    return persistent_collective(h);
  }
}

/// Op's uneven form, blocking; `counts` as Op's v form takes them
/// (Op::v_count_arrays of them: recv_counts, or send_counts and recv_counts).
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Counts>
void run_collective_v(Comm& comm, Send&& send, Recv&& recv, const Counts&... counts) {
  if constexpr (detail::two_level_communicator<Comm>) {
    detail::two_level_collective<Op, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [&](auto& whole, auto&& s, auto&& r) {
          run_collective_v<Op, Algorithm, Layout>(whole, std::forward<decltype(s)>(s), std::forward<decltype(r)>(r),
                                                  counts...);
        },
        detail::two_level_now{}, counts...);
  } else {
    detail::dispatch_v<Op, Algorithm, Layout>(comm, detail::run_now{}, std::forward<Send>(send),
                                              std::forward<Recv>(recv), counts...);
  }
}

/// Op's uneven form, nonblocking.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Counts>
[[nodiscard]] collective_request start_collective_v(Comm& comm, Send&& send, Recv&& recv, const Counts&... counts) {
  if constexpr (detail::two_level_communicator<Comm>) {
    return detail::two_level_collective<Op, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [&](auto& whole, auto&& s, auto&& r) {
          return start_collective_v<Op, Algorithm, Layout>(whole, std::forward<decltype(s)>(s),
                                                           std::forward<decltype(r)>(r), counts...);
        },
        detail::two_level_in_flight{}, counts...);
  } else {
    detail::in_flight_handle h;
    detail::dispatch_v<Op, Algorithm, Layout>(comm, detail::start_in_flight{&h}, std::forward<Send>(send),
                                              std::forward<Recv>(recv), counts...);
    return collective_request(h);
  }
}

/// Op's uneven form, persistent: the counts are read and checked once, at init
/// (on a two_level's hierarchical body too: it keeps them as bytes).
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Counts>
[[nodiscard]] persistent_collective init_collective_v(Comm& comm, Send&& send, Recv&& recv, const Counts&... counts) {
  if constexpr (detail::two_level_communicator<Comm>) {
    return detail::two_level_collective<Op, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [&](auto& whole, auto&& s, auto&& r) {
          return init_collective_v<Op, Algorithm, Layout>(whole, std::forward<decltype(s)>(s),
                                                          std::forward<decltype(r)>(r), counts...);
        },
        detail::two_level_bound{}, counts...);
  } else {
    detail::in_flight_handle h;
    detail::dispatch_v<Op, Algorithm, Layout>(comm, detail::bind_persistent{&h}, std::forward<Send>(send),
                                              std::forward<Recv>(recv), counts...);
    return persistent_collective(h);
  }
}

}  // namespace v0
}  // namespace plait

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
//   run_reduction / start_reduction / init_reduction               an operation that combines (reduce_scatter,
//                                                                  all_reduce): the reduction after the buffers
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
#include "plait/op/fold_collective.hpp"
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
  if constexpr (detail::two_level_communicator<Comm>) {  // flat on its whole communicator
    detail::two_level_v_collective<Algorithm>(comm, [&](auto& whole) {
      run_collective_v<Op, Algorithm, Layout>(whole, std::forward<Send>(send), std::forward<Recv>(recv), counts...);
    });
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
    return detail::two_level_v_collective<Algorithm>(comm, [&](auto& whole) {
      return start_collective_v<Op, Algorithm, Layout>(whole, std::forward<Send>(send), std::forward<Recv>(recv),
                                                       counts...);
    });
  } else {
    detail::in_flight_handle h;
    detail::dispatch_v<Op, Algorithm, Layout>(comm, detail::start_in_flight{&h}, std::forward<Send>(send),
                                              std::forward<Recv>(recv), counts...);
    return collective_request(h);
  }
}

/// Op's uneven form, persistent: the counts are read and checked once, at init.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Counts>
[[nodiscard]] persistent_collective init_collective_v(Comm& comm, Send&& send, Recv&& recv, const Counts&... counts) {
  if constexpr (detail::two_level_communicator<Comm>) {
    return detail::two_level_v_collective<Algorithm>(comm, [&](auto& whole) {
      return init_collective_v<Op, Algorithm, Layout>(whole, std::forward<Send>(send), std::forward<Recv>(recv),
                                                      counts...);
    });
  } else {
    detail::in_flight_handle h;
    detail::dispatch_v<Op, Algorithm, Layout>(comm, detail::bind_persistent{&h}, std::forward<Send>(send),
                                              std::forward<Recv>(recv), counts...);
    return persistent_collective(h);
  }
}

namespace detail {
/// The one error for a reduction on a two_level communicator (not served yet).
template <class Comm>
consteval bool check_reduction_communicator() {
  static_assert(!two_level_communicator<Comm>,
                "plait: reductions run on one communicator (shm, MPI); on a plait::two_level they are not served "
                "yet: call them on the whole communicator (plait::mpi::node_levels::world())");
  return !two_level_communicator<Comm>;
}
}  // namespace detail

/// A combining Op (reduce_scatter, all_reduce), blocking: every rank's
/// contributions combined. `args`: the reduction, or (recv_counts, reduction)
/// for the uneven form.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Args>
void run_reduction(Comm& comm, Send&& send, Recv&& recv, const Args&... args) {
  if constexpr (detail::check_reduction_communicator<Comm>()) {
    detail::dispatch_fold<Op, Algorithm, Layout>(comm, detail::run_now{}, std::forward<Send>(send),
                                                 std::forward<Recv>(recv), args...);
  }
}

/// A combining Op, nonblocking: the same arguments and checks; returns at once.
/// The reduction is copied (it may be a temporary); counts are read now.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Args>
[[nodiscard]] collective_request start_reduction(Comm& comm, Send&& send, Recv&& recv, const Args&... args) {
  detail::in_flight_handle h;
  if constexpr (detail::check_reduction_communicator<Comm>()) {
    detail::dispatch_fold<Op, Algorithm, Layout>(comm, detail::start_in_flight{&h}, std::forward<Send>(send),
                                                 std::forward<Recv>(recv), args...);
  }
  return collective_request(h);
}

/// A combining Op, persistent: checks and plans once (counts fixed then);
/// start() moves and combines the buffers' contents as they are then. The
/// reduction is copied.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Args>
[[nodiscard]] persistent_collective init_reduction(Comm& comm, Send&& send, Recv&& recv, const Args&... args) {
  detail::in_flight_handle h;
  if constexpr (detail::check_reduction_communicator<Comm>()) {
    detail::dispatch_fold<Op, Algorithm, Layout>(comm, detail::bind_persistent{&h}, std::forward<Send>(send),
                                                 std::forward<Recv>(recv), args...);
  }
  return persistent_collective(h);
}

}  // namespace v0
}  // namespace plait

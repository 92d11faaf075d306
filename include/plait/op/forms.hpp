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

#include <array>
#include <cstddef>
#include <ranges>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/algorithm/automatic.hpp"
#include "plait/core/error.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/levels/two_level.hpp"
#include "plait/op/check.hpp"
#include "plait/op/collective.hpp"
#include "plait/op/dispatch.hpp"
#include "plait/op/fold_collective.hpp"
#include "plait/op/hierarchical.hpp"
#include "plait/op/hierarchical_folds.hpp"
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

namespace detail {

/// One count array a persistent v form keeps for check mode's re-read at
/// each start: the array itself (an lvalue, by pointer; a view, by value),
/// its values at init and its name in messages.
template <class Counts>
struct kept_counts {
  std::conditional_t<std::is_lvalue_reference_v<Counts>, const std::remove_reference_t<Counts>*,
                     std::remove_cvref_t<Counts>>
      array;
  std::vector<long long> at_init;
  std::string_view name;

  [[nodiscard]] const auto& current() const {
    if constexpr (std::is_lvalue_reference_v<Counts>) {
      return *array;
    } else {
      return array;
    }
  }
};

/// Whether a count array passed as Counts (a forwarding reference's type)
/// can be read again at a later start(): an lvalue, or a view of one. A
/// temporary container is gone by then, and no one can change it.
template <class Counts>
inline constexpr bool rereadable_counts =
    std::is_lvalue_reference_v<Counts> || std::ranges::borrowed_range<std::remove_cvref_t<Counts>>;

template <class Counts>
kept_counts<Counts> keep_counts(Counts&& counts, std::string_view name) {
  kept_counts<Counts> kept{};
  if constexpr (std::is_lvalue_reference_v<Counts>) {
    kept.array = &counts;
  } else {
    kept.array = counts;
  }
  for (const auto c : counts) kept.at_init.push_back(static_cast<long long>(c));
  kept.name = name;
  return kept;
}

/// Check mode's re-read at a start(): errc::invalid_argument naming the
/// array, the first count that changed, its value at init and now.
template <class Counts>
void recheck_counts(const kept_counts<Counts>& kept, int rank, std::string_view operation) {
  const auto& now = kept.current();
  const std::size_t n = std::ranges::size(now);
  if (n != kept.at_init.size()) {
    fail(errc::invalid_argument,
         {kept.name, " holds ", n, " counts at this start() and held ", kept.at_init.size(),
          " at init: a persistent collective's counts are fixed when it is created (check mode re-reads them)"},
         {rank, operation});
  }
  std::size_t i = 0;
  for (const auto c : now) {
    const auto value = static_cast<long long>(c);
    if (value != kept.at_init[i]) {
      fail(errc::invalid_argument,
           {kept.name, "[", i, "] is ", value, " at this start() but was ", kept.at_init[i],
            " at init: a persistent collective's counts are fixed when it is created (check mode re-reads them "
            "before any byte moves); create another one for new counts"},
           {rank, operation});
    }
    ++i;
  }
}

/// Whether a v form's persistent collective on comm re-reads its counts at
/// each start (check mode; a two_level: either level's).
template <class Comm>
bool rereads_counts(const Comm& comm) {
  if constexpr (two_level_communicator<Comm>) {
    return check_mode(comm.intra()) || check_mode(comm.inter());
  } else {
    return check_mode(comm);
  }
}

}  // namespace detail

/// Op's uneven form, persistent: the counts are read and checked once, at
/// init (a two_level's hierarchical body keeps them as bytes). In check mode
/// (detail::check_mode: PLAIT_CHECK=1 or the communicator's), every start()
/// reads the count arrays again, where they were passed as lvalues or views,
/// and throws errc::invalid_argument before any byte moves if one changed.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Counts>
[[nodiscard]] persistent_collective init_collective_v(Comm& comm, Send&& send, Recv&& recv, Counts&&... counts) {
  persistent_collective bound;
  if constexpr (detail::two_level_communicator<Comm>) {
    bound = detail::two_level_collective<Op, Algorithm, Layout>(
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
    bound = persistent_collective(h);
  }
  if constexpr ((detail::rereadable_counts<Counts> && ...)) {
    if (detail::rereads_counts(comm)) {
      constexpr std::array<std::string_view, 2> names =
          sizeof...(Counts) == 1 ? std::array<std::string_view, 2>{"recv_counts", ""}
                                 : std::array<std::string_view, 2>{"send_counts", "recv_counts"};
      auto kept = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::make_tuple(detail::keep_counts<Counts>(std::forward<Counts>(counts), names[I])...);
      }
      (std::index_sequence_for<Counts...>{});
      bound.check_each_start([kept = std::move(kept), rank = comm.rank()] {
        std::apply([&](const auto&... k) { (detail::recheck_counts(k, rank, Op::v_name), ...); }, kept);
      });
    }
  }
  return bound;
}

/// A combining Op (reduce_scatter, all_reduce), blocking: every rank's
/// contributions combined. `args`: the reduction, or (recv_counts, reduction)
/// for the uneven form. On a two_level: op/hierarchical_folds.hpp.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Args>
void run_reduction(Comm& comm, Send&& send, Recv&& recv, const Args&... args) {
  if constexpr (detail::two_level_communicator<Comm>) {
    detail::two_level_fold_collective<Op, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [&](auto& whole) {
          run_reduction<Op, Algorithm, Layout>(whole, std::forward<Send>(send), std::forward<Recv>(recv), args...);
        },
        detail::two_level_now{}, args...);
  } else {
    detail::dispatch_fold<Op, Algorithm, Layout>(comm, detail::run_now{}, std::forward<Send>(send),
                                                 std::forward<Recv>(recv), args...);
  }
}

/// A combining Op, nonblocking: the same arguments and checks; returns at once.
/// The reduction is copied (it may be a temporary); counts are read now.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Args>
[[nodiscard]] collective_request start_reduction(Comm& comm, Send&& send, Recv&& recv, const Args&... args) {
  if constexpr (detail::two_level_communicator<Comm>) {
    return detail::two_level_fold_collective<Op, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [&](auto& whole) {
          return start_reduction<Op, Algorithm, Layout>(whole, std::forward<Send>(send), std::forward<Recv>(recv),
                                                        args...);
        },
        detail::two_level_in_flight{}, args...);
  } else {
    detail::in_flight_handle h;
    detail::dispatch_fold<Op, Algorithm, Layout>(comm, detail::start_in_flight{&h}, std::forward<Send>(send),
                                                 std::forward<Recv>(recv), args...);
    return collective_request(h);
  }
}

/// A combining Op, persistent: checks and plans once (counts fixed then);
/// start() moves and combines the buffers' contents as they are then. The
/// reduction is copied.
template <class Op, class Algorithm = automatic, class Layout = contiguous, class Comm, class Send, class Recv,
          class... Args>
[[nodiscard]] persistent_collective init_reduction(Comm& comm, Send&& send, Recv&& recv, const Args&... args) {
  if constexpr (detail::two_level_communicator<Comm>) {
    return detail::two_level_fold_collective<Op, Algorithm, Layout>(
        comm, std::forward<Send>(send), std::forward<Recv>(recv),
        [&](auto& whole) {
          return init_reduction<Op, Algorithm, Layout>(whole, std::forward<Send>(send), std::forward<Recv>(recv),
                                                       args...);
        },
        detail::two_level_bound{}, args...);
  } else {
    detail::in_flight_handle h;
    detail::dispatch_fold<Op, Algorithm, Layout>(comm, detail::bind_persistent{&h}, std::forward<Send>(send),
                                                 std::forward<Recv>(recv), args...);
    return persistent_collective(h);
  }
}

}  // namespace v0
}  // namespace plait

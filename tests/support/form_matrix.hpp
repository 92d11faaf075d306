// The form matrix as one test body: every cell of {all_gather, all_to_all} x
// {even, v, bundle, bundle of v} x {blocking, nonblocking, persistent} on one
// communicator of any kind (a transport or a two_level), each result checked
// against what the blocking even call (or MPI_Allgatherv / MPI_Alltoallv)
// delivers for the same data: each rank's values are a function of
// (source, index, salt), so the expected result is known on every rank.
// Ranks return a verdict ("" when every cell was right); the caller asserts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <plait/plait.hpp>

namespace plait_test {

enum class form { blocking, nonblocking, persistent };

inline const char* to_string(form f) {
  return f == form::blocking ? "blocking" : f == form::nonblocking ? "nonblocking" : "persistent";
}

/// What the matrix runs on a communicator: a collective's completion is
/// waited for in stream order on a device transport (synchronize()).
template <class Comm>
void settle(Comm& comm) {
  if constexpr (requires { comm.synchronize(); }) comm.synchronize();
}

/// The value of element i that `source` sends to `target` (-1: to everyone) in cell `salt`.
inline std::uint32_t matrix_value(int source, int target, std::size_t i, int salt) {
  return static_cast<std::uint32_t>(source) * 1000003u + static_cast<std::uint32_t>(target + 1) * 7919u +
         static_cast<std::uint32_t>(i) * 31u + static_cast<std::uint32_t>(salt) * 65537u;
}

/// One cell's even or v call of Op in form `f` (a persistent one is started twice).
template <class Op, class Algorithm, class Comm, class Send, class Recv, class... Counts>
void run_cell(form f, Comm& comm, Send&& send, Recv&& recv, const Counts&... counts) {
  constexpr bool v = sizeof...(Counts) > 0;
  if (f == form::blocking) {
    if constexpr (v) {
      plait::run_collective_v<Op, Algorithm>(comm, send, recv, counts...);
    } else {
      plait::run_collective<Op, Algorithm>(comm, send, recv);
    }
  } else if (f == form::nonblocking) {
    plait::collective_request r;
    if constexpr (v) {
      r = plait::start_collective_v<Op, Algorithm>(comm, send, recv, counts...);
    } else {
      r = plait::start_collective<Op, Algorithm>(comm, send, recv);
    }
    r.wait();
  } else {
    plait::persistent_collective p;
    if constexpr (v) {
      p = plait::init_collective_v<Op, Algorithm>(comm, send, recv, counts...);
    } else {
      p = plait::init_collective<Op, Algorithm>(comm, send, recv);
    }
    for (int start = 0; start < 2; ++start) {
      p.start();
      p.wait();
    }
  }
  settle(comm);
}

/// Every cell on `comm`: Even runs the even forms (a flat algorithm, or
/// hierarchical<...> / automatic on a two_level), Other the v forms and
/// bundles (on a two_level: hierarchical<...>, automatic, or a flat
/// algorithm on its whole communicator).
template <class Even, class Other, class Comm>
std::string every_cell(Comm& comm) {
  const int p = comm.size();
  const int me = comm.rank();
  const auto P = static_cast<std::size_t>(p);
  std::string out;
  const auto fail = [&](const char* cell, form f, std::size_t at) {
    out += std::string(cell) + " (" + to_string(f) + "): wrong element " + std::to_string(at) + "; ";
  };
  for (const form f : {form::blocking, form::nonblocking, form::persistent}) {
    const int salt = static_cast<int>(f);
    // even all_gather: 3 elements each.
    {
      std::vector<std::uint32_t> mine(3), all(3 * P, 0);
      for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = matrix_value(me, -1, i, salt);
      run_cell<plait::op::all_gather, Even>(f, comm, mine, all);
      for (std::size_t j = 0; j < all.size(); ++j) {
        if (all[j] != matrix_value(static_cast<int>(j / 3), -1, j % 3, salt)) fail("all_gather", f, j);
      }
    }
    // even all_to_all: 2 elements per block.
    {
      std::vector<std::uint32_t> send(2 * P), recv(2 * P, 0);
      for (std::size_t j = 0; j < send.size(); ++j) send[j] = matrix_value(me, static_cast<int>(j / 2), j % 2, salt);
      run_cell<plait::op::all_to_all, Even>(f, comm, send, recv);
      for (std::size_t j = 0; j < recv.size(); ++j) {
        if (recv[j] != matrix_value(static_cast<int>(j / 2), me, j % 2, salt)) fail("all_to_all", f, j);
      }
    }
    // v forms: rank j contributes j % 3 elements (zeros included); rank s sends (s + d) % 3 to d.
    std::vector<int> parts(P), send_counts(P), recv_counts(P);
    std::size_t part_total = 0;
    std::size_t send_total = 0;
    std::size_t recv_total = 0;
    for (int j = 0; j < p; ++j) {
      parts[static_cast<std::size_t>(j)] = j % 3;
      send_counts[static_cast<std::size_t>(j)] = (me + j) % 3;
      recv_counts[static_cast<std::size_t>(j)] = (j + me) % 3;
      part_total += static_cast<std::size_t>(j % 3);
      send_total += static_cast<std::size_t>((me + j) % 3);
      recv_total += static_cast<std::size_t>((j + me) % 3);
    }
    std::vector<std::uint32_t> vmine(static_cast<std::size_t>(me % 3)), vall(part_total, 0);
    std::vector<std::uint32_t> vsend(send_total), vrecv(recv_total, 0);
    std::vector<double> wmine(vmine.size()), wall(part_total, 0), wsend(send_total), wrecv(recv_total, 0);
    const auto fill = [&](int cell) {
      for (std::size_t i = 0; i < vmine.size(); ++i) {
        vmine[i] = matrix_value(me, -1, i, salt + cell);
        wmine[i] = vmine[i] + 0.5;
      }
      std::size_t at = 0;
      for (int d = 0; d < p; ++d) {
        for (int i = 0; i < (me + d) % 3; ++i, ++at) {
          vsend[at] = matrix_value(me, d, static_cast<std::size_t>(i), salt + cell);
          wsend[at] = vsend[at] + 0.5;
        }
      }
    };
    const auto check = [&](const char* cell_name, int cell, bool doubles) {
      std::size_t at = 0;
      for (int s = 0; s < p; ++s) {
        for (int i = 0; i < s % 3; ++i, ++at) {
          const std::uint32_t want = matrix_value(s, -1, static_cast<std::size_t>(i), salt + cell);
          if (vall[at] != want || (doubles && wall[at] != want + 0.5)) fail(cell_name, f, at);
        }
      }
      at = 0;
      for (int s = 0; s < p; ++s) {
        for (int i = 0; i < (s + me) % 3; ++i, ++at) {
          const std::uint32_t want = matrix_value(s, me, static_cast<std::size_t>(i), salt + cell);
          if (vrecv[at] != want || (doubles && wrecv[at] != want + 0.5)) fail(cell_name, f, at);
        }
      }
    };
    fill(10);
    run_cell<plait::op::all_gather, Other>(f, comm, vmine, vall, parts);
    run_cell<plait::op::all_to_all, Other>(f, comm, vsend, vrecv, send_counts, recv_counts);
    check("v", 10, false);
    // bundles of even calls: a uint32 and a double member.
    {
      std::vector<std::uint32_t> mine(2), all(2 * P, 0);
      std::vector<double> dmine(2), dall(2 * P, 0);
      for (std::size_t i = 0; i < 2; ++i) {
        mine[i] = matrix_value(me, -1, i, salt + 20);
        dmine[i] = mine[i] + 0.25;
      }
      run_cell<plait::op::all_gather, Other>(f, comm, plait::bundle(mine, dmine), plait::bundle(all, dall));
      for (std::size_t j = 0; j < all.size(); ++j) {
        const std::uint32_t want = matrix_value(static_cast<int>(j / 2), -1, j % 2, salt + 20);
        if (all[j] != want || dall[j] != want + 0.25) fail("bundle all_gather", f, j);
      }
      std::vector<std::uint32_t> send(P), recv(P, 0);
      std::vector<double> dsend(P), drecv(P, 0);
      for (std::size_t j = 0; j < P; ++j) {
        send[j] = matrix_value(me, static_cast<int>(j), 0, salt + 30);
        dsend[j] = send[j] + 0.25;
      }
      run_cell<plait::op::all_to_all, Other>(f, comm, plait::bundle(send, dsend), plait::bundle(recv, drecv));
      for (std::size_t j = 0; j < P; ++j) {
        const std::uint32_t want = matrix_value(static_cast<int>(j), me, 0, salt + 30);
        if (recv[j] != want || drecv[j] != want + 0.25) fail("bundle all_to_all", f, j);
      }
    }
    // bundles of v calls.
    fill(40);
    run_cell<plait::op::all_gather, Other>(f, comm, plait::bundle(vmine, wmine), plait::bundle(vall, wall), parts);
    run_cell<plait::op::all_to_all, Other>(f, comm, plait::bundle(vsend, wsend), plait::bundle(vrecv, wrecv),
                                           send_counts, recv_counts);
    check("bundle v", 40, true);
  }
  return out;
}

}  // namespace plait_test

// A workload of many collectives in flight at once, for any transport with
// nonblocking collectives: mixed operations, algorithms and sizes (zero
// included), started in the same order on every rank and waited for in an
// order of each rank's own. Each result is compared with a serial reference
// (the same values the blocking tests use). Shared by the shm and MPI tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <plait/plait.hpp>

namespace plait_test {

/// Counts for `ranks` ranks from `seed`, some zero.
inline std::vector<int> in_flight_counts(int ranks, unsigned seed, int most = 5) {
  std::vector<int> c(static_cast<std::size_t>(ranks));
  std::mt19937 gen(seed);
  for (int& x : c) x = static_cast<int>(gen() % static_cast<unsigned>(most + 1));
  return c;
}

inline std::uint32_t in_flight_value(int source, std::size_t index, int salt) {
  return static_cast<std::uint32_t>((source + 1) * 1000003 + static_cast<int>(index) * 7919 + salt * 104729);
}

/// One all-gather's buffers and its expected result.
struct gathered {
  std::vector<std::uint32_t> send, recv, want;
  gathered(int rank, int size, std::size_t n, int salt) : send(n), recv(n * static_cast<std::size_t>(size)) {
    for (std::size_t i = 0; i < n; ++i) send[i] = in_flight_value(rank, i, salt);
    for (int r = 0; r < size; ++r) {
      for (std::size_t i = 0; i < n; ++i) want.push_back(in_flight_value(r, i, salt));
    }
  }
};

/// One all-to-all's buffers (block b elements) and its expected result.
struct exchanged {
  std::vector<std::uint32_t> send, recv, want;
  exchanged(int rank, int size, std::size_t b, int salt) {
    for (int d = 0; d < size; ++d) {
      for (std::size_t i = 0; i < b; ++i)
        send.push_back(in_flight_value(rank, i + 100 * static_cast<std::size_t>(d), salt));
    }
    for (int s = 0; s < size; ++s) {
      for (std::size_t i = 0; i < b; ++i)
        want.push_back(in_flight_value(s, i + 100 * static_cast<std::size_t>(rank), salt));
    }
    recv.assign(want.size(), 0);
  }
};

/// Starts nine collectives, then waits for them in a shuffled order (some
/// through test() loops); "" when every result equals its reference.
template <class Comm>
std::string many_in_flight(Comm& comm, unsigned seed) {
  const int p = comm.size();
  const int me = comm.rank();
  gathered ring_gather(me, p, 5, 1);
  exchanged pairwise_exchange(me, p, 3, 2);
  gathered empty_gather(me, p, 0, 3);
  gathered large_gather(me, p, 4096, 4);  // 16 KiB shards: the single-copy path on shm
  exchanged bruck_exchange(me, p, 7, 5);

  // all_gather_v with bruck, counts known to all.
  const auto gv_counts = in_flight_counts(p, seed);
  std::vector<std::uint32_t> gv_send, gv_want;
  for (int r = 0; r < p; ++r) {
    for (int i = 0; i < gv_counts[static_cast<std::size_t>(r)]; ++i) {
      gv_want.push_back(in_flight_value(r, static_cast<std::size_t>(i), 6));
      if (r == me) gv_send.push_back(gv_want.back());
    }
  }
  std::vector<std::uint32_t> gv_recv(gv_want.size());

  // all_to_all_v with direct: rank s sends row(s)[d] elements to d.
  const auto row = [&](int s) { return in_flight_counts(p, seed * 31u + static_cast<unsigned>(s)); };
  const auto send_counts = row(me);
  std::vector<int> recv_counts;
  for (int s = 0; s < p; ++s) recv_counts.push_back(row(s)[static_cast<std::size_t>(me)]);
  std::vector<std::uint32_t> av_send, av_want;
  for (int d = 0; d < p; ++d) {
    for (int i = 0; i < send_counts[static_cast<std::size_t>(d)]; ++i) {
      av_send.push_back(in_flight_value(me, static_cast<std::size_t>(i + 100 * d), 7));
    }
  }
  for (int s = 0; s < p; ++s) {
    for (int i = 0; i < recv_counts[static_cast<std::size_t>(s)]; ++i) {
      av_want.push_back(in_flight_value(s, static_cast<std::size_t>(i + 100 * me), 7));
    }
  }
  std::vector<std::uint32_t> av_recv(av_want.size());

  // A bundle: a float payload and a uint8 side array of another length.
  std::vector<float> out_send(4), out_recv(4 * static_cast<std::size_t>(p)), out_want;
  std::vector<std::uint8_t> side_send(3), side_recv(3 * static_cast<std::size_t>(p)), side_want;
  for (std::size_t i = 0; i < 4; ++i) out_send[i] = static_cast<float>(me * 10) + static_cast<float>(i);
  for (std::size_t i = 0; i < 3; ++i) side_send[i] = static_cast<std::uint8_t>(me * 3 + static_cast<int>(i));
  for (int r = 0; r < p; ++r) {
    for (std::size_t i = 0; i < 4; ++i) out_want.push_back(static_cast<float>(r * 10) + static_cast<float>(i));
    for (std::size_t i = 0; i < 3; ++i) side_want.push_back(static_cast<std::uint8_t>(r * 3 + static_cast<int>(i)));
  }

  // in_place all-gather with automatic.
  gathered in_place_gather(me, p, 9, 8);
  std::copy(in_place_gather.send.begin(), in_place_gather.send.end(),
            in_place_gather.recv.begin() + static_cast<std::ptrdiff_t>(9 * me));

  std::vector<plait::collective_request> requests;
  requests.push_back(plait::iall_gather<plait::ring>(comm, ring_gather.send, ring_gather.recv));
  requests.push_back(plait::iall_to_all<plait::pairwise>(comm, pairwise_exchange.send, pairwise_exchange.recv));
  requests.push_back(plait::iall_gather<plait::recursive_doubling>(comm, empty_gather.send, empty_gather.recv));
  requests.push_back(plait::iall_gather_v<plait::bruck>(comm, gv_send, gv_recv, gv_counts));
  requests.push_back(plait::iall_gather<plait::direct>(comm, large_gather.send, large_gather.recv));
  requests.push_back(plait::iall_to_all_v<plait::direct>(comm, av_send, send_counts, av_recv, recv_counts));
  requests.push_back(plait::iall_to_all<plait::bruck>(comm, bruck_exchange.send, bruck_exchange.recv));
  requests.push_back(
      plait::iall_gather<plait::ring>(comm, plait::bundle(out_send, side_send), plait::bundle(out_recv, side_recv)));
  requests.push_back(plait::iall_gather(comm, plait::in_place, in_place_gather.recv));

  std::vector<std::size_t> order(requests.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937 gen(seed * 7919u + static_cast<unsigned>(me));
  std::shuffle(order.begin(), order.end(), gen);
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k % 2 == 0) {
      requests[order[k]].wait();
    } else {
      while (!requests[order[k]].test()) {
      }
    }
  }
  for (auto& r : requests) {  // complete ones return at once
    if (!r.test()) return "a completed request's test() returned false";
    r.wait();
  }

  std::string verdict;
  const auto check = [&](const auto& got, const auto& want, const char* what) {
    if (verdict.empty() && got != want) verdict = std::string(what) + " differs from the reference";
  };
  check(ring_gather.recv, ring_gather.want, "iall_gather<ring>");
  check(pairwise_exchange.recv, pairwise_exchange.want, "iall_to_all<pairwise>");
  check(empty_gather.recv, empty_gather.want, "iall_gather of nothing");
  check(gv_recv, gv_want, "iall_gather_v<bruck>");
  check(large_gather.recv, large_gather.want, "iall_gather<direct> of 16 KiB shards");
  check(av_recv, av_want, "iall_to_all_v<direct>");
  check(bruck_exchange.recv, bruck_exchange.want, "iall_to_all<bruck>");
  check(out_recv, out_want, "bundle member 0");
  check(side_recv, side_want, "bundle member 1");
  check(in_place_gather.recv, in_place_gather.want, "iall_gather in place");
  return verdict;
}

}  // namespace plait_test

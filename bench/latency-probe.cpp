// Per-call latency probe for machines that others load (docs/performance.md,
// "Uneven collectives and bundles"). plait-bench averages iterations, so one
// preemption spoils a sample; here every call is timed alone, each of the
// two ranks is pinned to a core of its own (a wait is never a context
// switch), and the minimum and the 10th percentile over many calls are
// reported: preemptions only add time, so they are what a quiet machine
// shows. Variants alternate call by call, after a barrier each.
//
//   mpiexec -n 2 [nice -n -15] latency-probe [--calls N] [--persistent]
//
// --persistent: a one-shot all_gather against all_gather_init's start + wait,
// iall_gather + wait and the MPI library's (persistent, where MPI 4) call,
// with the median too.
//
// bundle: plait-bench --op bundle's call (an all_to_all of two members,
// 15/16 and 1/16 of the size) as one plait::bundle against the two members
// one call each, on shm (plait::mpi::node_local_shm). all_to_all_v: shm
// against MPI_Alltoallv, with plait-bench's seeded Zipf counts; and the even
// all_to_all of the same size against MPI_Alltoall.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "plait/mpi.hpp"
#include "reference.hpp"

namespace {

struct timing {
  double min = 1e30;
  std::vector<double> all;
  [[nodiscard]] double p10() {
    std::sort(all.begin(), all.end());
    return all[all.size() / 10];
  }
  [[nodiscard]] double median() {
    std::sort(all.begin(), all.end());
    return all[all.size() / 2];
  }
};

/// Times each variant `calls` times, alternating, after 20 untimed rounds.
std::vector<timing> probe(MPI_Comm world, int calls, const std::vector<std::function<void()>>& variants) {
  std::vector<timing> t(variants.size());
  for (int i = 0; i < calls + 20; ++i) {
    for (std::size_t v = 0; v < variants.size(); ++v) {
      MPI_Barrier(world);
      const auto start = std::chrono::steady_clock::now();
      variants[v]();
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      if (i < 20) continue;
      t[v].min = std::min(t[v].min, us);
      t[v].all.push_back(us);
    }
  }
  return t;
}

}  // namespace

/// --persistent: one all_gather on shm per call against the same bound once
/// by all_gather_init (start + wait per call), iall_gather + wait, and the
/// MPI library's MPI_Allgather (and MPI_Allgather_init + MPI_Start/MPI_Wait
/// where it is MPI 4), 4 KiB to 256 KiB; on two ranks also the one message
/// each way that such an all-gather needs, alone (shm and MPI point to point).
void probe_persistent(plait::mpi::communicator& world, plait::shm::communicator& shm, int calls) {
  const auto p = static_cast<std::size_t>(world.size());
  if (world.rank() == 0) {
    std::printf("# all_gather, %zu ranks, %d calls per variant; us: min / 10th percentile / median\n", p, calls);
  }
  for (std::size_t bytes = 4096; bytes <= (std::size_t{256} << 10); bytes *= 4) {
    std::vector<std::byte> shard(bytes / p, std::byte{1}), full(shard.size() * p);  // P shards: about `bytes`
    auto bound = plait::all_gather_init<plait::ring>(shm, shard, full);
    std::vector<std::function<void()>> variants{[&] { plait::all_gather<plait::ring>(shm, shard, full); },
                                                [&] {
                                                  bound.start();
                                                  bound.wait();
                                                },
                                                [&] { plait::iall_gather<plait::ring>(shm, shard, full).wait(); },
                                                [&] {
                                                  MPI_Allgather(shard.data(), static_cast<int>(shard.size()), MPI_BYTE,
                                                                full.data(), static_cast<int>(shard.size()), MPI_BYTE,
                                                                world.native_handle());
                                                }};
    // On two ranks, the all-gather's one message each way without any
    // collective around it: the transports' own floor for this size.
    const int peer = 1 - world.rank();
    std::vector<std::byte> arrived(shard.size());
    if (p == 2) {
      variants.emplace_back([&] {
        std::array<plait::shm::communicator::request, 2> exchange{shm.irecv(peer, arrived), shm.isend(peer, shard)};
        shm.wait_all(exchange, std::chrono::steady_clock::now() + std::chrono::seconds(60));
      });
      variants.emplace_back([&] {
        MPI_Sendrecv(shard.data(), static_cast<int>(shard.size()), MPI_BYTE, peer, 0, arrived.data(),
                     static_cast<int>(arrived.size()), MPI_BYTE, peer, 0, world.native_handle(), MPI_STATUS_IGNORE);
      });
    }
    const std::size_t native_at = variants.size();
#if MPI_VERSION >= 4
    MPI_Request native = MPI_REQUEST_NULL;
    MPI_Allgather_init(shard.data(), static_cast<int>(shard.size()), MPI_BYTE, full.data(),
                       static_cast<int>(shard.size()), MPI_BYTE, world.native_handle(), MPI_INFO_NULL, &native);
    variants.emplace_back([&] {
      MPI_Start(&native);
      MPI_Wait(&native, MPI_STATUS_IGNORE);
    });
#endif
    auto t = probe(MPI_COMM_WORLD, calls, variants);
    // Whether each all-gather delivers fresh contents call after call (a
    // time is worth comparing only then): three more calls each, every rank
    // with new bytes, results checked on every rank.
    std::vector<int> right(variants.size(), 1);
    for (std::size_t v = 0; v < variants.size(); ++v) {
      if (p == 2 && (v == 4 || v == 5)) continue;  // the point-to-point exchanges gather nothing
      for (int round = 1; round <= 3; ++round) {
        const auto value = [&](int rank) { return static_cast<std::byte>((round * 7 + rank * 3 + v) & 0xFF); };
        std::fill(shard.begin(), shard.end(), value(world.rank()));
        std::fill(full.begin(), full.end(), std::byte{0xEE});
        variants[v]();
        for (std::size_t i = 0; i < full.size(); ++i) {
          if (full[i] != value(static_cast<int>(i / shard.size()))) right[v] = 0;
        }
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, right.data(), static_cast<int>(right.size()), MPI_INT, MPI_MIN, world.native_handle());
    if (world.rank() == 0) {
      for (std::size_t v = 0; v < right.size(); ++v) {
        static const char* const names[] = {"one-shot",        "persistent",   "iall+wait",         "MPI_Allgather",
                                            "shm isend+irecv", "MPI_Sendrecv", "MPI_Allgather_init"};
        const std::size_t name = v == native_at ? 6 : v;
        if (!right[v])
          std::printf("# %zu B: %s delivered wrong results in a check after the timed calls\n", bytes, names[name]);
      }
      std::printf(
          "%8zu B  one-shot %5.2f / %5.2f / %5.2f  persistent %5.2f / %5.2f / %5.2f (%.2fx / %.2fx / %.2fx)"
          "  iall+wait %5.2f / %5.2f / %5.2f  MPI_Allgather %5.2f / %5.2f / %5.2f",
          bytes, t[0].min, t[0].p10(), t[0].median(), t[1].min, t[1].p10(), t[1].median(), t[1].min / t[0].min,
          t[1].p10() / t[0].p10(), t[1].median() / t[0].median(), t[2].min, t[2].p10(), t[2].median(), t[3].min,
          t[3].p10(), t[3].median());
      if (t.size() > native_at) {
        std::printf("  MPI_Allgather_init %5.2f / %5.2f / %5.2f", t[native_at].min, t[native_at].p10(),
                    t[native_at].median());
      }
      if (p == 2) {
        std::printf("  shm isend+irecv %5.2f / %5.2f / %5.2f  MPI_Sendrecv %5.2f / %5.2f / %5.2f", t[4].min, t[4].p10(),
                    t[4].median(), t[5].min, t[5].p10(), t[5].median());
      }
      std::printf("\n");
    }
#if MPI_VERSION >= 4
    MPI_Request_free(&native);
#endif
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int calls = 2000;
  bool persistent = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) calls = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--persistent") == 0) persistent = true;
  }
  if (persistent) {
    {
      plait::mpi::communicator world(MPI_COMM_WORLD);
      cpu_set_t core;
      CPU_ZERO(&core);
      CPU_SET(world.rank() % CPU_SETSIZE, &core);
      sched_setaffinity(0, sizeof core, &core);
      auto shm = plait::mpi::node_local_shm(world);
      probe_persistent(world, shm, calls);
    }
    MPI_Finalize();
    return 0;
  }
  {
    plait::mpi::communicator world(MPI_COMM_WORLD);
    const int rank = world.rank();
    const int ranks = world.size();
    cpu_set_t core;
    CPU_ZERO(&core);
    CPU_SET(rank % CPU_SETSIZE, &core);
    sched_setaffinity(0, sizeof core, &core);
    auto shm = plait::mpi::node_local_shm(world);
    const auto p = static_cast<std::size_t>(ranks);
    if (rank == 0) std::printf("# %d ranks, %d calls per variant and size; us: min / 10th percentile\n", ranks, calls);
    for (std::size_t bytes = 4096; bytes <= (std::size_t{4} << 20); bytes *= 4) {
      const int n = bytes <= (std::size_t{256} << 10) ? calls : std::max(calls / 8, 50);
      std::vector<std::byte> send(bytes, std::byte{1}), recv(bytes);
      const std::size_t first = bytes / 16 * 15 / p * p;
      const std::span<const std::byte> a = std::span<const std::byte>(send).first(first);
      const std::span<const std::byte> b = std::span<const std::byte>(send).subspan(first);
      const std::span<std::byte> ra = std::span<std::byte>(recv).first(first);
      const std::span<std::byte> rb = std::span<std::byte>(recv).subspan(first);
      auto bundle = probe(MPI_COMM_WORLD, n,
                          {[&] { plait::all_to_all(shm, plait::bundle(a, b), plait::bundle(ra, rb)); },
                           [&] {
                             plait::all_to_all(shm, a, ra);
                             plait::all_to_all(shm, b, rb);
                           }});
      // all_to_all_v with plait-bench's counts: rank s sends row(s)[d] bytes to d.
      const auto row = [&](int s) { return plait::bench::skewed_parts(bytes, ranks, 42u + static_cast<unsigned>(s)); };
      const std::vector<std::size_t> send_counts = row(rank);
      std::vector<std::size_t> recv_counts;
      for (int s = 0; s < ranks; ++s) recv_counts.push_back(row(s)[static_cast<std::size_t>(rank)]);
      std::vector<int> sc, sd, rc, rd;
      int at = 0;
      for (std::size_t c : send_counts) sc.push_back(static_cast<int>(c)), sd.push_back(at), at += static_cast<int>(c);
      at = 0;
      for (std::size_t c : recv_counts) rc.push_back(static_cast<int>(c)), rd.push_back(at), at += static_cast<int>(c);
      std::vector<std::byte> recv_v(static_cast<std::size_t>(at));
      auto v =
          probe(MPI_COMM_WORLD, n,
                {[&] { plait::all_to_all_v(shm, std::span<const std::byte>(send), send_counts, recv_v, recv_counts); },
                 [&] {
                   MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, recv_v.data(), rc.data(), rd.data(),
                                 MPI_BYTE, world.native_handle());
                 }});
      // The even all_to_all of the same size, for what the v-form adds.
      auto even = probe(MPI_COMM_WORLD, n,
                        {[&] { plait::all_to_all(shm, std::span<const std::byte>(send), std::span<std::byte>(recv)); },
                         [&] {
                           MPI_Alltoall(send.data(), static_cast<int>(bytes / p), MPI_BYTE, recv.data(),
                                        static_cast<int>(bytes / p), MPI_BYTE, world.native_handle());
                         }});
      if (rank == 0) {
        std::printf(
            "%8zu B  bundle %8.2f / %8.2f  two calls %8.2f / %8.2f  ratio %.2fx / %.2fx | all_to_all_v shm %8.2f / "
            "%8.2f  "
            "MPI_Alltoallv %8.2f / %8.2f  ratio %.2fx / %.2fx | all_to_all shm %8.2f  MPI_Alltoall %8.2f  ratio "
            "%.2fx\n",
            bytes, bundle[0].min, bundle[0].p10(), bundle[1].min, bundle[1].p10(), bundle[1].min / bundle[0].min,
            bundle[1].p10() / bundle[0].p10(), v[0].min, v[0].p10(), v[1].min, v[1].p10(), v[1].min / v[0].min,
            v[1].p10() / v[0].p10(), even[0].min, even[1].min, even[1].min / even[0].min);
      }
    }
  }
  MPI_Finalize();
}

// The tour (scripts/demo): plait's two collectives on 4 processes over shared
// memory, each result checked against a serial reference, then short timing
// tables from the benchmark harness (bench/harness.hpp, the code behind
// bench/plait-bench) on no more ranks than cores: small-message latency in
// microseconds, large-message time beside memcpy. Needs no MPI. Exits non-zero
// when any rank's result differs from the reference.
// plait-example-timeout: 300
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <plait/plait.hpp>

#include "../bench/harness.hpp"
#include "../bench/reference.hpp"

namespace {

constexpr int ranks = 4;

/// Element i of rank r's data: readable in a debugger, unique across ranks.
int value(int rank, std::size_t i) { return rank * 1'000'000 + static_cast<int>(i); }

/// Throws on this rank when `what` is non-empty; rank 0 says "verified" only
/// once every rank has found its result right.
void report(plait::shm::communicator& comm, const std::string& what, const std::string& done) {
  const bool failed = plait::bench::any_rank(comm, !what.empty());
  if (!what.empty()) throw std::runtime_error("rank " + std::to_string(comm.rank()) + ": " + what);
  if (failed) throw std::runtime_error("another rank found a wrong result");
  if (comm.rank() == 0) std::printf("  %s\n", done.c_str());
}

void all_gather_demo(plait::shm::communicator& comm) {
  const std::size_t n = 1000;  // ints per rank
  std::vector<int> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = value(comm.rank(), i);
  std::vector<int> all(n * ranks);
  plait::all_gather<plait::ring>(comm, mine, all);

  // Serial reference: shard j of the result is rank j's data.
  std::string wrong;
  for (int j = 0; j < ranks && wrong.empty(); ++j) {
    for (std::size_t i = 0; i < n; ++i) {
      if (all[static_cast<std::size_t>(j) * n + i] != value(j, i)) {
        wrong = "all_gather: element " + std::to_string(i) + " of shard " + std::to_string(j) + " is " +
                std::to_string(all[static_cast<std::size_t>(j) * n + i]);
        break;
      }
    }
  }
  report(comm, wrong,
         "all_gather<ring>: 4 shards of 1000 ints each -> 4000 ints in rank order on every rank: verified");
}

void all_to_all_demo(plait::shm::communicator& comm) {
  const std::size_t n = 250;  // ints per block; P blocks per rank
  std::vector<int> out(n * ranks);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = value(comm.rank(), i);
  std::vector<int> in(n * ranks);
  plait::all_to_all<plait::pairwise>(comm, out, in);

  // Serial reference: block s of the result is block `rank` of rank s's data.
  std::string wrong;
  for (int s = 0; s < ranks && wrong.empty(); ++s) {
    for (std::size_t i = 0; i < n; ++i) {
      const int expected = value(s, static_cast<std::size_t>(comm.rank()) * n + i);
      if (in[static_cast<std::size_t>(s) * n + i] != expected) {
        wrong = "all_to_all: element " + std::to_string(i) + " of the block from rank " + std::to_string(s) + " is " +
                std::to_string(in[static_cast<std::size_t>(s) * n + i]) + ", expected " + std::to_string(expected);
        break;
      }
    }
  }
  report(comm, wrong,
         "all_to_all<pairwise>: block j of every rank went to rank j (a distributed transpose of 4 x 4 blocks of "
         "250 ints): verified");
}

/// Buffers from comm.allocate live in shared memory every rank has mapped: a
/// peer copies straight out of them (no kernel call). Here an in-place
/// all-gather: each rank writes its shard into its own slice and gathers the rest.
void shared_buffer_demo(plait::shm::communicator& comm) {
  const std::size_t n = 4096;  // ints per rank: 16 KiB shards, above the in-place threshold
  plait::shm::shared_buffer<int> all = comm.allocate<int>(n * ranks);  // collective
  const std::size_t first = static_cast<std::size_t>(comm.rank()) * n;
  for (std::size_t i = 0; i < n; ++i) all[first + i] = value(comm.rank(), i);
  plait::all_gather<plait::ring>(comm, plait::in_place, all);

  std::string wrong;
  for (std::size_t k = 0; k < all.size() && wrong.empty(); ++k) {
    const int j = static_cast<int>(k / n);
    if (all[k] != value(j, k % n)) wrong = "in-place all_gather: element " + std::to_string(k) + " is wrong";
  }
  const std::uint64_t expected = (ranks - 1) * n * sizeof(int);  // every peer's shard, read in place
  if (wrong.empty() && comm.bytes_read_in_place() != expected) {
    wrong =
        "read " + std::to_string(comm.bytes_read_in_place()) + " bytes in place, expected " + std::to_string(expected);
  }
  report(comm, wrong,
         "all_gather<ring>(in_place) on comm.allocate<int>: every peer's 16 KiB shard copied straight out of "
         "shared memory (bytes_read_in_place = 3 x 16 KiB per rank): verified");
}

/// The ranks the timing runs on: one per core this process may use, 2 to 4.
/// More ranks than cores time the scheduler (a rank waits for its peer to be
/// scheduled), not the copies. 1 when there is a single core: no table.
int timing_ranks() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return cores < 2 ? 1 : std::min(cores, 4);
}

/// Fails every rank if any rank's timed results were wrong.
void check_timed(plait::shm::communicator& comm, const std::string& wrong) {
  const bool failed = plait::bench::any_rank(comm, !wrong.empty());
  if (!wrong.empty()) throw std::runtime_error("rank " + std::to_string(comm.rank()) + ": " + wrong);
  if (failed) throw std::runtime_error("another rank found a wrong result in the timed runs");
}

/// Small messages cost synchronisation, not bandwidth: their time per call in
/// microseconds is what to read, so no bandwidth ratio is shown for them.
void latency_table(plait::shm::communicator& comm) {
  namespace bench = plait::bench;
  const int p = comm.size();
  const bench::timing how{20, 200, 5, 0};
  if (comm.rank() == 0) std::printf("  %-10s %10s %14s %14s\n", "shard", "", "all_gather us", "all_to_all us");
  for (const std::size_t shard_bytes : {std::size_t{8}, std::size_t{1024}}) {
    std::vector<std::byte> shard(shard_bytes);
    std::vector<std::byte> gathered(shard_bytes * static_cast<std::size_t>(p));
    std::vector<std::byte> send(gathered.size());
    std::vector<std::byte> recv(gathered.size());
    bench::fill_pattern(comm.rank(), shard);
    bench::fill_pattern(comm.rank(), send);
    const std::vector<std::function<void()>> variants = {
        [&] { plait::all_gather(comm, shard, gathered); },
        [&] { plait::all_to_all(comm, send, recv); },
    };
    const auto seconds = bench::measure(comm, how, variants);
    std::string wrong = bench::check_all_gather(p, gathered);
    if (wrong.empty()) wrong = bench::check_all_to_all(comm.rank(), p, recv);
    check_timed(comm, wrong);
    if (comm.rank() == 0) {
      std::printf("  %-10s %10s %14.1f %14.1f\n", bench::size_text(shard_bytes).c_str(), "per rank", seconds[0] * 1e6,
                  seconds[1] * 1e6);
    }
  }
}

/// Large messages cost bandwidth: plait beside memcpy, every rank copying
/// what it would receive at the same time (the ceiling of a copy-based
/// transport), as a ratio of times. From 16 MiB: a smaller memcpy, repeated,
/// runs from the cache while the collective's handshakes do not shrink, and
/// the ratio then says little about either.
void bandwidth_table(plait::shm::communicator& comm) {
  namespace bench = plait::bench;
  const int p = comm.size();
  const auto ranks = static_cast<std::size_t>(p);
  const bench::timing how{2, 5, 3};
  if (comm.rank() == 0) {
    std::printf("  %-10s %10s %10s %10s %12s\n", "operation", "size", "plait us", "memcpy us", "of memcpy");
  }
  for (const std::size_t bytes : {std::size_t{16} << 20, std::size_t{32} << 20}) {
    const std::size_t part = bytes / ranks;
    std::vector<std::byte> shard(part);
    std::vector<std::byte> gathered(part * ranks);
    std::vector<std::byte> send(part * ranks);
    std::vector<std::byte> recv(part * ranks);
    bench::fill_pattern(comm.rank(), shard);
    bench::fill_pattern(comm.rank(), send);
    std::vector<std::byte> copy_from(part * (ranks - 1));
    std::vector<std::byte> copy_to(copy_from.size());
    const std::vector<std::function<void()>> variants = {
        [&] { plait::all_gather<plait::ring>(comm, shard, gathered); },
        [&] { plait::all_to_all<plait::pairwise>(comm, send, recv); },
        [&] { std::copy(copy_from.begin(), copy_from.end(), copy_to.begin()); },
    };
    const auto seconds = bench::measure(comm, how, variants);
    std::string wrong = bench::check_all_gather(p, gathered);
    if (wrong.empty()) wrong = bench::check_all_to_all(comm.rank(), p, recv);
    check_timed(comm, wrong);
    if (comm.rank() != 0) continue;
    const char* names[2] = {"all_gather", "all_to_all"};
    for (int v = 0; v < 2; ++v) {
      std::printf("  %-10s %10s %10.0f %10.0f %11.2fx\n", names[v], bench::size_text(bytes).c_str(), seconds[v] * 1e6,
                  seconds[2] * 1e6, seconds[2] / seconds[v]);
    }
  }
}

void timing(plait::shm::communicator& comm) {
  if (comm.rank() == 0) {
    std::printf("\nSmall messages, %d ranks (one per core): time per call, median of 5 samples of 200 calls.\n",
                comm.size());
    std::fflush(stdout);
  }
  latency_table(comm);
  if (comm.rank() == 0) {
    std::printf(
        "\nLarge messages, %d ranks: size = the gathered buffer (all_gather) or one rank's send buffer\n"
        "(all_to_all); memcpy = every rank copying (P-1)/P of size at once.\n",
        comm.size());
    std::fflush(stdout);
  }
  bandwidth_table(comm);
  if (comm.rank() == 0) {
    std::printf(
        "Read: 'of memcpy' is memcpy's time over plait's; 1.00x means plait moves the data as fast as a plain\n"
        "copy of it, the most a copy-based transport can do (a shared machine makes the figures vary).\n");
    std::fflush(stdout);
  }
}

}  // namespace

int main() {
  std::printf(
      "plait tour: collectives on %d processes (fork) sharing one POSIX shared-memory segment.\n"
      "Each rank checks its result against a serial reference it computes on its own.\n\n",
      ranks);
  std::fflush(stdout);
  try {
    plait::shm::run_processes(ranks, [](plait::shm::communicator& comm) {
      all_gather_demo(comm);
      all_to_all_demo(comm);
      shared_buffer_demo(comm);
    });
    const int timed = timing_ranks();
    if (timed < 2) {
      std::printf(
          "\nTiming skipped: this process may use one core only, and two ranks on one core time the\n"
          "scheduler, not plait.\n");
    } else {
      plait::shm::run_processes(timed, timing);
    }
    std::printf(
        "\nplait over MPI beside the MPI library's own MPI_Allgather / MPI_Alltoall: scripts/bench (and the\n"
        "last part of scripts/demo, when MPI is installed); the latest measured tables are in docs/performance.md.\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tour FAILED: %s\n", e.what());
    return 1;
  }
  std::printf("\nAll results verified.\n");
  return 0;
}

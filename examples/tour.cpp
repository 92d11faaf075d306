// The tour (scripts/demo): plait's two collectives on 4 processes over shared
// memory, each result checked against a serial reference, then a short
// bandwidth table from the benchmark harness (bench/harness.hpp), the same code
// that bench/plait-bench uses for the full sweep. Needs no MPI. Exits non-zero
// when any rank's result differs from the reference.
// plait-example-timeout: 300
#include <algorithm>
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <tuple>
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

/// A short sweep on the benchmark harness: plait's two collectives and a
/// memcpy ceiling (every rank copying what it would receive, all at once).
void bandwidth_table(plait::shm::communicator& comm) {
  namespace bench = plait::bench;
  const bench::size_sweep sweep{4096, std::size_t{1} << 20, 4.0};
  const bench::timing how{2, 5, 3};
  std::vector<bench::row> rows;
  for (const std::size_t bytes : sweep.sizes(ranks)) {
    const std::size_t part = bytes / ranks;
    std::vector<std::byte> shard(part);
    std::vector<std::byte> gathered(bytes);
    std::vector<std::byte> send(bytes);
    std::vector<std::byte> recv(bytes);
    bench::fill_pattern(comm.rank(), shard);
    bench::fill_pattern(comm.rank(), send);
    std::vector<std::byte> copy_from(bytes - part);
    std::vector<std::byte> copy_to(bytes - part);
    const std::vector<std::function<void()>> variants = {
        [&] { plait::all_gather<plait::ring>(comm, shard, gathered); },
        [&] { plait::all_to_all<plait::pairwise>(comm, send, recv); },
        [&] { std::copy(copy_from.begin(), copy_from.end(), copy_to.begin()); },
    };
    const auto seconds = bench::measure(comm, how, variants);
    // The timed runs must have produced the right bytes too.
    std::string wrong = bench::check_all_gather(ranks, gathered);
    if (wrong.empty()) wrong = bench::check_all_to_all(comm.rank(), ranks, recv);
    const bool failed = bench::any_rank(comm, !wrong.empty());
    if (!wrong.empty()) throw std::runtime_error("rank " + std::to_string(comm.rank()) + ": " + wrong);
    if (failed) throw std::runtime_error("another rank found a wrong result in the timed runs");
    rows.push_back({"all_gather", "plait", ranks, bytes, seconds[0], "ok"});
    rows.push_back({"all_gather", "memcpy", ranks, bytes, seconds[2], "-"});
    rows.push_back({"all_to_all", "plait", ranks, bytes, seconds[1], "ok"});
    rows.push_back({"all_to_all", "memcpy", ranks, bytes, seconds[2], "-"});
  }
  if (comm.rank() != 0) return;
  std::stable_sort(rows.begin(), rows.end(), [](const bench::row& a, const bench::row& b) {
    return std::tie(a.operation, a.bytes) < std::tie(b.operation, b.bytes);
  });
  bench::print_table(std::cout, rows);
  std::cout.flush();
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
      if (comm.rank() == 0) {
        std::printf(
            "\nBandwidth (bench/harness.hpp, short sweep; bench/plait-bench runs the full one).\n"
            "size = the gathered buffer (all_gather) or one rank's send buffer (all_to_all);\n"
            "memcpy = every rank copying (P-1)/P of size at the same time, the ceiling a copy-based\n"
            "transport can approach. %d ranks on this machine's cores: expect scheduler noise.\n\n",
            ranks);
        std::fflush(stdout);
      }
      bandwidth_table(comm);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tour FAILED: %s\n", e.what());
    return 1;
  }
  std::printf("\nAll results verified.\n");
  return 0;
}

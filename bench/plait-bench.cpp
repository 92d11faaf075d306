// plait-bench: nccl-tests-style bandwidth sweep of plait's collectives, side by
// side in one run with the native MPI collective and a memcpy ceiling.
//
//   mpirun -np 2 build/default/bench/plait-bench -b 4K -e 64M -f 2 --op all_gather,all_to_all
//   mpirun -np 2 build/default/bench/plait-bench --op reduce_scatter,all_reduce --transport shm,mpi
//
// Built against MPI (the usual case) its ranks are MPI processes: plait over
// shared memory gets its group from plait::mpi::node_local_shm, plait over MPI
// is plait::mpi::communicator, and the baseline is MPI_Allgather/MPI_Alltoall
// (MPI_Reduce_scatter_block/MPI_Allreduce for the reductions, float sum) on
// the same processes. Built without MPI it forks its ranks itself
// (plait::shm::run_processes, `-p` of them) and compares plait with memcpy only.
//
// Variants measured at each size (samples interleaved, see bench/harness.hpp):
//   plait-shm   plait over its shared-memory transport (--transport shm)
//   plait-shm-chunked  the same, with single copy turned off (--transport shm-chunked):
//               every message goes through the slots, copied in and out
//   plait-shm-shared  plait over shared memory from and into buffers of
//               comm.allocate (--transport shm-shared): peers read them in place
//   plait-shm-pool  the same from and into std::vectors with plait::shm::allocator
//               (--transport shm-pool): each rank's own pool, mapped by the peers
//   plait-mpi   plait over MPI point-to-point (--transport mpi)
//   plait-shm-separate  (--op bundle) the bundle's two tensors, one call each
//   <variant>-nb         (--nonblocking) the same call as iall_* + wait()
//   <variant>-persistent (--persistent) the call bound once by *_init; each
//               sample is start() + wait()
//   mpi-persistent  (--persistent, MPI 4 libraries: MPICH 4) MPI_Allgather_init /
//               MPI_Alltoall_init once, then MPI_Start + MPI_Wait
//   compute     (--overlap US) a compute loop of about US microseconds
//   <variant>-overlap  (--overlap US) iall_*, the compute loop (test() every
//               tenth of it), wait(): after the table, each size's fraction of
//               the call's time hidden, (call + compute - overlapped) / call
//   mpi         the MPI library's own MPI_Allgather / MPI_Alltoall (MPI_Allgatherv /
//               MPI_Alltoallv for the v-forms, two MPI_Alltoall for a bundle)
//   oneccl      (--oneccl, in a build with oneCCL: scripts/bench --oneccl) Intel
//               oneCCL's allgatherv, alltoall, reduce_scatter and allreduce on the
//               same processes and buffers (out of place; bench/oneccl.hpp)
//   memcpy      every rank copies (P-1)/P x size bytes (what it must receive)
//               between two private buffers, all ranks at once: the rate a
//               copy-based transport cannot beat, so its busbw is the ceiling
//   add         the reductions' ceiling (reduce_scatter, all_reduce, in place of
//               memcpy): every rank computes c[i] = a[i] + b[i] on floats in
//               private buffers over the bytes busbw counts, (P-1)/P x size
//               (all_reduce: 2(P-1)/P x size), all ranks at once: a transport
//               that must add what it receives to what it holds cannot beat it
// With --rewrite-inputs every call of every variant (the ceilings included)
// first rewrites the buffer it reads from a private copy, as a program that
// produces new data every step does; without it the inputs never change
// between calls (as in nccl-tests), so a variant that reads a peer's buffer
// in place (plait-shm-shared, -pool) may find it still in its own cache.
// The table's ratio columns divide the first variant's busbw by each other's.
// Progress goes to stderr, the table to stdout (rank 0), files with --json/--csv.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>

#ifdef PLAIT_BENCH_MPI
#include <mpi.h>

#include <plait/mpi.hpp>
#else
#include <plait/plait.hpp>
#endif
#include <plait/algorithm/algorithm_id.hpp>

#include "harness.hpp"
#ifdef PLAIT_BENCH_ONECCL
#include "oneccl.hpp"
#endif
#include "reference.hpp"

namespace {

namespace bench = plait::bench;

struct options {
  bench::size_sweep sweep{};
  bench::timing how{};
  std::vector<std::string> ops{"all_gather"};
  std::vector<std::string> transports{"shm"};
  std::optional<plait::algorithm_id> algorithm;  // nullopt: automatic
  bool verify = true;
  bool baselines = true;
  bool in_place = false;        // all_gather only: the shard is already in its slice of recv
  bool rewrite_inputs = false;  // each call first rewrites the buffer it reads
  bool nonblocking = false;     // add iall_* + wait() variants (all_gather, all_to_all)
  bool persistent = false;      // add *_init, start() + wait() variants (all_gather, all_to_all)
  bool oneccl = false;          // add oneCCL's collective (a build with oneCCL only)
  double overlap_us = 0;        // > 0: add compute and iall + compute + wait variants
  int processes = 2;            // without MPI only
  std::string json;
  std::string csv;
  std::string command_line;
  std::string loadavg;  // when the run started
};

std::string loadavg();

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: plait-bench [options]\n"
               "  -b, --minbytes SIZE      smallest size (default 4K; suffixes K, M, G)\n"
               "  -e, --maxbytes SIZE      largest size (default 64M)\n"
               "  -f, --stepfactor F       size multiplier between steps (default 2)\n"
               "  --op LIST                all_gather, all_to_all, all_gather_v, all_to_all_v, bundle,\n"
               "                           reduce_scatter, all_reduce (float sum), comma-separated (default\n"
               "                           all_gather); the v-forms split the size\n"
               "                           by a skewed, MoE-like distribution (bench/reference.hpp,\n"
               "                           skewed_parts: Zipf 1.1, seeded); bundle is an all_to_all of\n"
               "                           two tensors (15/16 and 1/16 of the size) as one plait::bundle,\n"
               "                           against the same two moved one call each\n"
               "  --transport LIST         plait's transports to measure: shm, shm-chunked (single copy off),\n"
               "                           shm-shared (buffers from comm.allocate),\n"
               "                           shm-pool (std::vector with plait::shm::allocator), mpi\n"
               "                           (default shm)\n"
               "  --algorithm NAME         ring, tree, pairwise, bruck, recursive_doubling, direct,\n"
               "                           neighbor_exchange, chain, recursive_halving or automatic\n"
               "                           (default automatic)\n"
               "  -n, --iters N            calls per timed sample (default 20)\n"
               "  -w, --warmup_iters N     untimed calls per variant and size (default 5)\n"
               "  -r, --repetitions N      interleaved samples per variant, in a new order each round;\n"
               "                           the median is reported (default 5)\n"
               "  --scrub SIZE             bytes every rank reads before each sample, so no variant pays\n"
               "                           for the previous one's dirty cache lines, then one untimed call\n"
               "                           (default 64M; 0 = neither)\n"
               "  -c, --check 0|1          verify every variant's result once per size (default 1)\n"
               "  --no-baselines           measure plait only (no native MPI, no memcpy)\n"
               "  --in-place               all_gather in place (plait::in_place, MPI_IN_PLACE) like nccl-tests'\n"
               "                           in-place column; all_to_all stays out of place\n"
               "  --rewrite-inputs         each call of each variant first rewrites the buffer it reads, as\n"
               "                           a program with new data every step (out of place only)\n"
               "  -p, --processes N        ranks to fork when built without MPI (default 2)\n"
               "  --nonblocking            also time each plait call of all_gather/all_to_all as iall_* + wait()\n"
               "                           (--nonblocking, --persistent, --overlap: all_gather, all_to_all only)\n"
               "  --persistent             also time it bound once by *_init, each call start() + wait()\n"
               "                           (and MPI_Allgather_init/MPI_Alltoall_init where the MPI has them)\n"
               "  --overlap US             also time a compute loop of US microseconds alone and behind an\n"
               "                           iall_* (test() between tenths of it), and print the share hidden\n"
               "  --oneccl                 also time Intel oneCCL's collective on the same buffers (out of\n"
               "                           place; a build with oneCCL: scripts/bench --oneccl)\n"
               "  --json FILE, --csv FILE  also write the results there\n"
               "size = the gathered buffer (all_gather, all_gather_v) or one rank's send buffer\n"
               "(all_to_all, all_to_all_v, bundle, reduce_scatter, all_reduce);\n"
               "busbw = size/time x (P-1)/P (all_reduce: x 2(P-1)/P), in GB/s (1e9 B/s).\n");
  std::exit(code);
}

options parse(int argc, char** argv) {
  options o;
  o.loadavg = loadavg();
  for (int i = 0; i < argc; ++i) {
    if (i != 0) o.command_line += ' ';
    o.command_line.append(argv[i]);
  }
  auto value = [&](int& i) -> std::string_view {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "plait-bench: %s needs a value\n", argv[i]);
      usage(2);
    }
    return argv[++i];
  };
  auto integer = [&](int& i) {
    const std::string_view text = value(i);
    char* end = nullptr;
    const long n = std::strtol(std::string(text).c_str(), &end, 10);
    if (n < 0 || n > 1'000'000) {
      std::fprintf(stderr, "plait-bench: %s wants a count, not %s\n", argv[i - 1], std::string(text).c_str());
      usage(2);
    }
    return static_cast<int>(n);
  };
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "-h" || arg == "--help")
        usage(0);
      else if (arg == "-b" || arg == "--minbytes")
        o.sweep.min_bytes = bench::parse_size(value(i));
      else if (arg == "-e" || arg == "--maxbytes")
        o.sweep.max_bytes = bench::parse_size(value(i));
      else if (arg == "-f" || arg == "--stepfactor")
        o.sweep.factor = std::strtod(std::string(value(i)).c_str(), nullptr);
      else if (arg == "--op")
        o.ops = bench::split_list(value(i));
      else if (arg == "--transport")
        o.transports = bench::split_list(value(i));
      else if (arg == "--algorithm") {
        const std::string_view name = value(i);
        if (name != "automatic") {
          o.algorithm = plait::algorithm_from_string(name);
          if (!o.algorithm) {
            std::fprintf(stderr, "plait-bench: unknown algorithm %s\n", std::string(name).c_str());
            usage(2);
          }
        }
      } else if (arg == "-n" || arg == "--iters")
        o.how.iterations = integer(i);
      else if (arg == "-w" || arg == "--warmup_iters")
        o.how.warmup = integer(i);
      else if (arg == "-r" || arg == "--repetitions")
        o.how.repetitions = integer(i);
      else if (arg == "--scrub")
        o.how.scrub_bytes = bench::parse_size(value(i));
      else if (arg == "-c" || arg == "--check")
        o.verify = integer(i) != 0;
      else if (arg == "--no-baselines")
        o.baselines = false;
      else if (arg == "--in-place")
        o.in_place = true;
      else if (arg == "--rewrite-inputs")
        o.rewrite_inputs = true;
      else if (arg == "--nonblocking")
        o.nonblocking = true;
      else if (arg == "--persistent")
        o.persistent = true;
      else if (arg == "--oneccl") {
#ifdef PLAIT_BENCH_ONECCL
        o.oneccl = true;
#else
        std::fprintf(stderr, "plait-bench: --oneccl needs a build with oneCCL (scripts/bench --oneccl makes one)\n");
        usage(2);
#endif
      } else if (arg == "--overlap")
        o.overlap_us = std::strtod(std::string(value(i)).c_str(), nullptr);
      else if (arg == "-p" || arg == "--processes")
        o.processes = integer(i);
      else if (arg == "--json")
        o.json = value(i);
      else if (arg == "--csv")
        o.csv = value(i);
      else {
        std::fprintf(stderr, "plait-bench: unknown option %s\n", argv[i]);
        usage(2);
      }
    }
  } catch (const plait::error& e) {
    std::fprintf(stderr, "plait-bench: %s\n", e.what());
    usage(2);
  }
  for (const auto& op : o.ops) {
    if (op != "all_gather" && op != "all_to_all" && op != "all_gather_v" && op != "all_to_all_v" && op != "bundle" &&
        op != "reduce_scatter" && op != "all_reduce") {
      std::fprintf(stderr, "plait-bench: unknown --op %s\n", op.c_str());
      usage(2);
    }
  }
  for (const auto& t : o.transports) {
    if (t != "shm" && t != "shm-chunked" && t != "shm-shared" && t != "shm-pool" && t != "mpi") {
      std::fprintf(stderr, "plait-bench: unknown --transport %s\n", t.c_str());
      usage(2);
    }
  }
  if (o.rewrite_inputs && o.in_place) {
    std::fprintf(stderr, "plait-bench: --rewrite-inputs measures out of place only\n");
    usage(2);
  }
  if (o.sweep.min_bytes > o.sweep.max_bytes || o.sweep.max_bytes == 0) {
    std::fprintf(stderr, "plait-bench: -b must be at most -e, and -e above 0\n");
    usage(2);
  }
  return o;
}

bool wants(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

/// `make.template operator()<A>()` for the algorithm `id` names (automatic
/// when none): the run-time choice of algorithm every plait variant shares.
template <class Op, class Make>
std::function<void()> with_algorithm(int ranks, std::optional<plait::algorithm_id> id, Make&& make) {
  if (!id) return make.template operator()<plait::automatic>();
  if (!plait::supports<Op>(*id, ranks)) {
    throw plait::error(plait::errc::unsupported, std::string(plait::to_string(*id)) + " cannot run " +
                                                     std::string(Op::name) + " on " + std::to_string(ranks) + " ranks");
  }
  return plait::visit_algorithm(*id, [&]<class A>(std::type_identity<A>) -> std::function<void()> {
    if constexpr (plait::schedules<A, Op>) {
      return make.template operator()<A>();
    } else {
      return {};  // unreachable: supports() said no above
    }
  });
}

/// One plait call of Op under the run-time algorithm choice, as a callable.
/// `in_place` (all-gather): `send` is ignored, the shard is in its slice of `recv`.
template <class Op, class Comm>
std::function<void()> plait_call(Comm& comm, std::optional<plait::algorithm_id> id, std::span<const std::byte> send,
                                 std::span<std::byte> recv, bool in_place) {
  auto call = [&comm, send, recv, in_place]<class A>() {
    return std::function<void()>([&comm, send, recv, in_place] {
      if constexpr (std::is_same_v<Op, plait::op::all_gather>) {
        if (in_place) {
          plait::all_gather<A>(comm, plait::in_place, recv);
        } else {
          plait::all_gather<A>(comm, send, recv);
        }
      } else {
        plait::all_to_all<A>(comm, send, recv);
      }
    });
  };
  return with_algorithm<Op>(comm.size(), id, call);
}

/// One plait v-form call of Op (all_gather_v, all_to_all_v) under the
/// run-time algorithm choice, as a callable; the counts are bytes.
template <class Op, class Comm>
std::function<void()> plait_v_call(Comm& comm, std::optional<plait::algorithm_id> id, std::span<const std::byte> send,
                                   std::span<std::byte> recv, std::vector<std::size_t> send_counts,
                                   std::vector<std::size_t> recv_counts) {
  auto call = [&comm, send, recv, send_counts, recv_counts]<class A>() {
    return std::function<void()>([&comm, send, recv, send_counts, recv_counts] {
      if constexpr (std::is_same_v<Op, plait::op::all_gather>) {
        plait::all_gather_v<A>(comm, send, recv, recv_counts);
      } else {
        plait::all_to_all_v<A>(comm, send, send_counts, recv, recv_counts);
      }
    });
  };
  return with_algorithm<Op>(comm.size(), id, call);
}

/// One plait reduction (Op: op::reduce_scatter<> or op::all_reduce<>), float
/// sum, under the run-time algorithm choice, as a callable. `send` and `recv`
/// hold floats (reduce_scatter: recv is this rank's block).
template <class Op, class Comm>
std::function<void()> plait_reduce_call(Comm& comm, std::optional<plait::algorithm_id> id,
                                        std::span<const std::byte> send, std::span<std::byte> recv) {
  const std::span<const float> in(reinterpret_cast<const float*>(send.data()), send.size() / sizeof(float));
  const std::span<float> out(reinterpret_cast<float*>(recv.data()), recv.size() / sizeof(float));
  auto call = [&comm, in, out]<class A>() {
    return std::function<void()>([&comm, in, out] {
      if constexpr (std::is_same_v<Op, plait::op::all_reduce<>>) {
        plait::all_reduce<A>(comm, in, out, plait::sum{});
      } else {
        plait::reduce_scatter<A>(comm, in, out, plait::sum{});
      }
    });
  };
  return with_algorithm<Op>(comm.size(), id, call);
}

/// c[i] = a[i] + b[i]: the reductions' ceiling. Not inlined into the timed
/// lambda and with restrict pointers, so that it is the vectorised stream
/// loop and the compiler cannot drop it.
[[gnu::noinline]] void add_floats(const float* __restrict a, const float* __restrict b, float* __restrict c,
                                  std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

/// The call of plait_call as a nonblocking one (iall_*, then wait()) or a
/// persistent one (bound once by *_init here; each call start() + wait()).
template <class Op, class Comm>
std::function<void()> plait_form_call(Comm& comm, std::optional<plait::algorithm_id> id,
                                      std::span<const std::byte> send, std::span<std::byte> recv, bool in_place,
                                      bool persistent) {
  auto call = [&comm, send, recv, in_place, persistent]<class A>() -> std::function<void()> {
    constexpr bool gather = std::is_same_v<Op, plait::op::all_gather>;
    if (persistent) {
      std::shared_ptr<plait::persistent_collective> bound;
      if constexpr (gather) {
        bound = std::make_shared<plait::persistent_collective>(
            in_place ? plait::all_gather_init<A>(comm, plait::in_place, recv)
                     : plait::all_gather_init<A>(comm, send, recv));
      } else {
        bound = std::make_shared<plait::persistent_collective>(plait::all_to_all_init<A>(comm, send, recv));
      }
      return [bound] {
        bound->start();
        bound->wait();
      };
    }
    return [&comm, send, recv, in_place] {
      if constexpr (gather) {
        (in_place ? plait::iall_gather<A>(comm, plait::in_place, recv) : plait::iall_gather<A>(comm, send, recv))
            .wait();
      } else {
        plait::iall_to_all<A>(comm, send, recv).wait();
      }
    };
  };
  return with_algorithm<Op>(comm.size(), id, call);
}

/// A compute loop of a known length: arithmetic on registers, `steps` times
/// `step_iterations` (calibrated to microseconds by compute_rate), with
/// `between()` after every step (a test() of the collective it overlaps).
inline double compute_loop(std::size_t iterations, const std::function<void()>& between, int steps = 10) {
  double x = 1.0;
  for (int s = 0; s < steps; ++s) {
    for (std::size_t i = 0; i < iterations / static_cast<std::size_t>(steps); ++i) x = x * 1.0000001 + 1e-9;
    if (between) between();
  }
  return x;
}

/// Loop iterations per microsecond on this core (the median of a few tries).
inline double compute_rate() {
  std::vector<double> rates;
  for (int t = 0; t < 5; ++t) {
    const auto start = std::chrono::steady_clock::now();
    volatile double sink = compute_loop(2000000, {});
    (void)sink;
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(2000000.0 / us);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

/// iall_* of Op, the compute loop with a test() after every tenth, then wait().
template <class Op, class Comm>
std::function<void()> plait_overlap_call(Comm& comm, std::optional<plait::algorithm_id> id,
                                         std::span<const std::byte> send, std::span<std::byte> recv,
                                         std::size_t iterations) {
  auto call = [&comm, send, recv, iterations]<class A>() -> std::function<void()> {
    return [&comm, send, recv, iterations] {
      plait::collective_request r;
      if constexpr (std::is_same_v<Op, plait::op::all_gather>) {
        r = plait::iall_gather<A>(comm, send, recv);
      } else {
        r = plait::iall_to_all<A>(comm, send, recv);
      }
      volatile double sink = compute_loop(iterations, [&r] { (void)r.test(); });
      (void)sink;
      r.wait();
    };
  };
  return with_algorithm<Op>(comm.size(), id, call);
}

/// The bundle benchmark's call: two tensors of one all_to_all, bundled or one call each.
template <class Comm>
std::function<void()> plait_bundle_call(Comm& comm, std::span<const std::byte> send, std::span<std::byte> recv,
                                        std::size_t first_bytes, bool bundled) {
  return [&comm, send, recv, first_bytes, bundled] {
    const auto a = send.first(first_bytes);
    const auto b = send.subspan(first_bytes);
    const auto ra = recv.first(first_bytes);
    const auto rb = recv.subspan(first_bytes);
    if (bundled) {
      plait::all_to_all(comm, plait::bundle(a, b), plait::bundle(ra, rb));
    } else {
      plait::all_to_all(comm, a, ra);
      plait::all_to_all(comm, b, rb);
    }
  };
}

/// What every rank holds for one size of one operation.
struct buffers {
  std::vector<std::byte> send;
  std::vector<std::byte> recv;
  std::vector<std::byte> copy_from;
  std::vector<std::byte> copy_to;
  std::vector<std::size_t> send_counts;  // bytes per rank (v-forms)
  std::vector<std::size_t> recv_counts;
  std::size_t first_bytes = 0;                       // the bundle's first member (bundle)
  std::vector<float> add_a, add_b, add_c;            // the add ceiling (reductions)
  plait::shm::shared_buffer<std::byte> shared_send;  // for plait-shm-shared
  plait::shm::shared_buffer<std::byte> shared_recv;
  std::optional<std::vector<std::byte, plait::shm::allocator<std::byte>>> pool_send;  // for plait-shm-pool
  std::optional<std::vector<std::byte, plait::shm::allocator<std::byte>>> pool_recv;
};

/// The MPI library's persistent collective for an operation and its buffers
/// (MPI 4: MPI_Allgather_init, MPI_Alltoall_init), as start + wait; empty
/// where the library has none.
using native_persistent_maker = std::function<std::function<void()>(const std::string& op, buffers&)>;

/// Another collectives library timed beside the native MPI (--oneccl): its
/// column's name and its call for an operation and buffers (empty where it
/// has none).
struct library_baseline {
  std::string name;
  std::function<std::function<void()>(const std::string& op, buffers&)> bind;
};

/// plait's shared-memory communicators under test (null when not measured).
struct shm_variants {
  plait::shm::communicator* plain = nullptr;
  plait::shm::communicator* chunked = nullptr;  // single copy off
  plait::shm::communicator* shared = nullptr;   // buffers from allocate
  plait::shm::communicator* pool = nullptr;     // vectors from its memory_resource
};

/// Runs the sweep. `Timing` is the communicator used to reduce times across
/// ranks (the world's, with MPI); `shm` and `mpi` are plait's transports under
/// test (null when not measured); `native` runs the MPI baseline (empty
/// without MPI); `barrier` separates samples; `libraries` are further
/// baselines.
template <class Timing, class Mpi>
std::vector<bench::row> sweep(const options& o, Timing& timing, const shm_variants& shm, Mpi* mpi,
                              const std::function<void(const std::string& op, buffers&)>& native_setup,
                              const std::function<void()>& native, const std::function<void()>& barrier,
                              const native_persistent_maker& native_persistent = {},
                              const std::vector<library_baseline>& libraries = {}) {
  const int rank = timing.rank();
  const int ranks = timing.size();
  std::vector<bench::row> rows;
  const auto overlap_iterations =
      o.overlap_us > 0 ? static_cast<std::size_t>(o.overlap_us * compute_rate()) : std::size_t{0};
  for (const auto& op_name : o.ops) {
    const bool gather = op_name == "all_gather";
    const bool gather_v = op_name == "all_gather_v";
    const bool exchange_v = op_name == "all_to_all_v";
    const bool bundled = op_name == "bundle";
    const bool reduce_scatter = op_name == "reduce_scatter";
    const bool all_reduce = op_name == "all_reduce";
    const bool reduction = reduce_scatter || all_reduce;
    const bool in_place = gather && o.in_place;
    // The v-forms' rows of the count matrix: rank s sends row(s)[d] bytes to d.
    const auto p = static_cast<std::size_t>(ranks);
    for (const std::size_t bytes : o.sweep.sizes(reduction ? p * sizeof(float) : p)) {
      const std::size_t part = bytes / p;
      const auto row = [&](int s) { return bench::skewed_parts(bytes, ranks, 42u + static_cast<unsigned>(s)); };
      buffers b;
      std::size_t own = part;  // bytes of this rank's own block (not received)
      if (gather_v) {
        b.recv_counts = bench::skewed_parts(bytes, ranks, 7u);
        own = b.recv_counts[static_cast<std::size_t>(rank)];
        b.send.resize(own);
        b.recv.resize(bytes);
      } else if (exchange_v) {
        b.send_counts = row(rank);
        std::size_t total = 0;
        for (int s = 0; s < ranks; ++s) total += b.recv_counts.emplace_back(row(s)[static_cast<std::size_t>(rank)]);
        own = b.send_counts[static_cast<std::size_t>(rank)];
        b.send.resize(bytes);
        b.recv.resize(total);
      } else if (reduction) {
        b.send.resize(bytes);
        b.recv.resize(reduce_scatter ? part : bytes);
      } else {
        b.send.resize(gather ? part : bytes);
        b.recv.resize(bytes);
      }
      // The bundle's members: 15/16 and 1/16 of the size, each P equal blocks.
      if (bundled) b.first_bytes = bytes / 16 * 15 / p * p;
      if (reduction) {
        // The add ceiling runs over the bytes busbw counts.
        const std::size_t floats = (all_reduce ? 2 : 1) * (bytes - part) / sizeof(float);
        b.add_a.assign(floats, 1.0f);
        b.add_b.assign(floats, 2.0f);
        b.add_c.assign(floats, 0.0f);
      } else {
        b.copy_from.resize(b.recv.size() - own, std::byte{1});
        b.copy_to.resize(b.recv.size() - own);
      }
      if (reduction) {
        bench::fill_reduction_input(rank, {reinterpret_cast<float*>(b.send.data()), b.send.size() / sizeof(float)});
      } else if (bundled) {
        bench::fill_pattern(rank, std::span(b.send).first(b.first_bytes));
        bench::fill_pattern(rank, std::span(b.send).subspan(b.first_bytes));
      } else {
        bench::fill_pattern(rank, b.send);
      }
      if (shm.shared != nullptr) {  // collective: every rank sweeps the same sizes
        b.shared_send = shm.shared->allocate<std::byte>(b.send.size());
        b.shared_recv = shm.shared->allocate<std::byte>(b.recv.size());
        std::copy(b.send.begin(), b.send.end(), b.shared_send.begin());
      }
      if (shm.pool != nullptr) {  // not collective: each rank's own pool
        const plait::shm::allocator<std::byte> in_pool{*shm.pool};
        b.pool_send.emplace(b.send.begin(), b.send.end(), in_pool);
        b.pool_recv.emplace(b.recv.size(), std::byte{}, in_pool);
      }

      std::vector<std::string> names;
      std::vector<std::function<void()>> variants;
      std::vector<std::span<std::byte>> results;  // where each variant's result lands
      std::vector<std::span<std::byte>> inputs;   // what each variant reads (--rewrite-inputs)
      // The variants added since the last note read `input`.
      auto note_input = [&](std::span<std::byte> input) { inputs.resize(names.size(), input); };
      auto add_plait = [&](auto* comm, const char* name, std::span<const std::byte> send, std::span<std::byte> recv) {
        if (comm == nullptr) return;
        names.emplace_back(name);
        results.push_back(recv);
        using comm_type = std::remove_pointer_t<decltype(comm)>;
        if (reduction) {
          variants.push_back(
              all_reduce ? plait_reduce_call<plait::op::all_reduce<>, comm_type>(*comm, o.algorithm, send, recv)
                         : plait_reduce_call<plait::op::reduce_scatter<>, comm_type>(*comm, o.algorithm, send, recv));
        } else if (gather_v || exchange_v) {
          variants.push_back(gather_v ? plait_v_call<plait::op::all_gather, comm_type>(*comm, o.algorithm, send, recv,
                                                                                       b.send_counts, b.recv_counts)
                                      : plait_v_call<plait::op::all_to_all, comm_type>(*comm, o.algorithm, send, recv,
                                                                                       b.send_counts, b.recv_counts));
        } else if (bundled) {
          variants.push_back(plait_bundle_call(*comm, send, recv, b.first_bytes, true));
          names.emplace_back(std::string(name) + "-separate");
          results.push_back(recv);
          variants.push_back(plait_bundle_call(*comm, send, recv, b.first_bytes, false));
        } else {
          variants.push_back(
              gather ? plait_call<plait::op::all_gather, comm_type>(*comm, o.algorithm, send, recv, in_place)
                     : plait_call<plait::op::all_to_all, comm_type>(*comm, o.algorithm, send, recv, false));
          if (o.overlap_us > 0) {
            names.emplace_back(std::string(name) + "-overlap");
            results.push_back(recv);
            variants.push_back(gather ? plait_overlap_call<plait::op::all_gather, comm_type>(*comm, o.algorithm, send,
                                                                                             recv, overlap_iterations)
                                      : plait_overlap_call<plait::op::all_to_all, comm_type>(*comm, o.algorithm, send,
                                                                                             recv, overlap_iterations));
          }
          for (const bool persistent : {false, true}) {
            if (!(persistent ? o.persistent : o.nonblocking)) continue;
            names.emplace_back(std::string(name) + (persistent ? "-persistent" : "-nb"));
            results.push_back(recv);
            variants.push_back(gather ? plait_form_call<plait::op::all_gather, comm_type>(*comm, o.algorithm, send,
                                                                                          recv, in_place, persistent)
                                      : plait_form_call<plait::op::all_to_all, comm_type>(*comm, o.algorithm, send,
                                                                                          recv, false, persistent));
          }
        }
      };
      add_plait(shm.plain, "plait-shm", b.send, b.recv);
      add_plait(shm.chunked, "plait-shm-chunked", b.send, b.recv);
      note_input(b.send);
      add_plait(shm.shared, "plait-shm-shared", b.shared_send.span(), b.shared_recv.span());
      note_input(b.shared_send.span());
      if (shm.pool != nullptr) {
        add_plait(shm.pool, "plait-shm-pool", *b.pool_send, *b.pool_recv);
        note_input(*b.pool_send);
      }
      add_plait(mpi, "plait-mpi", b.send, b.recv);
      if (o.baselines && native) {
        native_setup(op_name, b);
        names.emplace_back("mpi");
        results.push_back(b.recv);
        variants.push_back(native);
        if (o.persistent && native_persistent && (gather || op_name == "all_to_all")) {
          if (auto bound = native_persistent(op_name, b)) {
            names.emplace_back("mpi-persistent");
            results.push_back(b.recv);
            variants.push_back(std::move(bound));
          }
        }
      }
      if (o.baselines) {
        for (const auto& library : libraries) {
          if (auto call = library.bind(op_name, b)) {
            names.push_back(library.name);
            results.push_back(b.recv);
            variants.push_back(std::move(call));
          }
        }
      }
      note_input(b.send);
      if (o.overlap_us > 0 && (gather || op_name == "all_to_all")) {
        names.emplace_back("compute");
        results.emplace_back();
        variants.push_back([overlap_iterations] {
          volatile double sink = compute_loop(overlap_iterations, {});
          (void)sink;
        });
        note_input({});  // reads nothing
      }
      if (o.baselines && reduction) {
        names.emplace_back("add");
        results.emplace_back();
        variants.push_back([&b] { add_floats(b.add_a.data(), b.add_b.data(), b.add_c.data(), b.add_c.size()); });
        note_input(std::as_writable_bytes(std::span(b.add_a)));
      } else if (o.baselines) {
        names.emplace_back("memcpy");
        results.emplace_back();
        variants.push_back([&b] { std::memcpy(b.copy_to.data(), b.copy_from.data(), b.copy_from.size()); });
        note_input(b.copy_from);
      }
      if (o.rewrite_inputs) {
        for (std::size_t v = 0; v < variants.size(); ++v) {
          if (inputs[v].empty()) continue;
          auto saved = std::make_shared<std::vector<std::byte>>(inputs[v].begin(), inputs[v].end());
          variants[v] = [input = inputs[v], saved, call = std::move(variants[v])] {
            std::memcpy(input.data(), saved->data(), input.size());
            call();
          };
        }
      }
      // In place, every variant's result buffer starts with this rank's shard in its slice.
      auto restore_shard = [&](std::size_t v) {
        if (!results[v].empty())
          std::copy(b.send.begin(), b.send.end(),
                    results[v].begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank) * part));
      };
      if (in_place) {
        for (std::size_t v = 0; v < names.size(); ++v) restore_shard(v);
      }

      // Verify each variant that communicates, twice, each time on a cleared
      // buffer: a persistent variant's second start must deliver as its first
      // (MPICH 4.0.2's MPI_Allgather_init does not).
      std::vector<std::string> checks(names.size(), "-");
      if (o.verify) {
        for (std::size_t check = 0; check < 2 * names.size(); ++check) {
          const std::size_t v = check % names.size();
          if (names[v] == "memcpy" || names[v] == "add" || names[v] == "compute") continue;
          const std::span<std::byte> recv = results[v];
          std::fill(recv.begin(), recv.end(), std::byte{0});
          if (in_place) restore_shard(v);
          barrier();
          variants[v]();
          std::string wrong;
          if (reduction) {
            const std::span<const float> got(reinterpret_cast<const float*>(recv.data()), recv.size() / sizeof(float));
            wrong =
                bench::check_sum(op_name, ranks, reduce_scatter ? static_cast<std::size_t>(rank) * got.size() : 0, got);
          } else if (gather_v) {
            wrong = bench::check_all_gather_v(b.recv_counts, recv);
          } else if (exchange_v) {
            wrong = bench::check_all_to_all_v(rank, ranks, row, recv);
          } else if (bundled) {
            wrong = bench::check_all_to_all(rank, ranks, recv.first(b.first_bytes)) +
                    bench::check_all_to_all(rank, ranks, recv.subspan(b.first_bytes));
          } else {
            wrong = gather ? bench::check_all_gather(ranks, recv) : bench::check_all_to_all(rank, ranks, recv);
          }
          if (!wrong.empty())
            std::fprintf(stderr, "plait-bench: rank %d: %s: %s\n", rank, names[v].c_str(), wrong.c_str());
          if (bench::any_rank(timing, !wrong.empty())) {
            checks[v] = "FAIL";
          } else if (checks[v] != "FAIL") {
            checks[v] = "ok";
          }
        }
      }

      const auto seconds = bench::measure(timing, o.how, std::span<const std::function<void()>>(variants), barrier);
      std::ostringstream progress;
      progress << "plait-bench: " << op_name << ' ' << bench::size_text(bytes) << ':';
      for (std::size_t v = 0; v < names.size(); ++v) {
        rows.push_back({op_name, names[v], ranks, bytes, seconds[v], checks[v]});
        progress << ' ' << names[v] << ' ' << rows.back().busbw() << " GB/s" << (checks[v] == "FAIL" ? " (FAIL)" : "");
      }
      if (rank == 0) std::fprintf(stderr, "%s\n", progress.str().c_str());
      if (o.overlap_us > 0 && rank == 0) {
        const auto time_of = [&](const std::string& n) {
          for (std::size_t v = 0; v < names.size(); ++v) {
            if (names[v] == n) return seconds[v];
          }
          return 0.0;
        };
        for (const std::string base : {"plait-shm", "plait-shm-chunked", "plait-shm-shared", "plait-mpi"}) {
          const double call = time_of(base), both = time_of(base + "-overlap"), alone = time_of("compute");
          if (call <= 0 || both <= 0) continue;
          std::printf("overlap %s %s %s: call %.1f us, compute %.1f us, overlapped %.1f us, hidden %.0f%%\n",
                      op_name.c_str(), bench::size_text(bytes).c_str(), base.c_str(), call * 1e6, alone * 1e6,
                      both * 1e6, 100.0 * (call + alone - both) / call);
        }
      }
    }
  }
  return rows;
}

/// /proc/loadavg's first three fields: how busy the machine was (others' work skews results).
std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? one + " " + five + " " + fifteen : "unknown";
}

std::string first_line_of(const char* path, std::string_view key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "unknown";
}

/// Table on stdout, files on request; returns false when any check failed.
bool report(const options& o, const std::vector<bench::row>& rows,
            std::vector<std::pair<std::string, std::string>> meta) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::time_t now = std::time(nullptr);
  char when[64] = {};
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  meta.insert(meta.begin(), {{"command", o.command_line},
                             {"date", when},
                             {"host", host},
                             {"cpu", first_line_of("/proc/cpuinfo", "model name")},
                             {"cores", std::to_string(sysconf(_SC_NPROCESSORS_ONLN))},
                             {"loadavg at start", o.loadavg},
                             {"loadavg at end", loadavg()},
                             {"algorithm", o.algorithm ? std::string(plait::to_string(*o.algorithm)) : "automatic"},
                             {"iterations", std::to_string(o.how.iterations)},
                             {"repetitions", std::to_string(o.how.repetitions)},
                             {"warmup", std::to_string(o.how.warmup)},
                             {"scrub bytes", std::to_string(o.how.scrub_bytes)},
                             {"in place", o.in_place ? "all_gather in place" : "no"},
                             {"inputs", o.rewrite_inputs ? "rewritten before each call" : "unchanged between calls"}});
  for (const auto& [key, value] : meta) std::cout << "# " << key << ": " << value << '\n';
  bench::print_table(std::cout, rows);
  std::cout.flush();
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    bench::write_json(out, rows, meta);
    if (!out) std::fprintf(stderr, "plait-bench: cannot write %s\n", o.json.c_str());
  }
  if (!o.csv.empty()) {
    std::ofstream out(o.csv);
    bench::write_csv(out, rows);
    if (!out) std::fprintf(stderr, "plait-bench: cannot write %s\n", o.csv.c_str());
  }
  return std::none_of(rows.begin(), rows.end(), [](const bench::row& r) { return r.check == "FAIL"; });
}

}  // namespace

#ifdef PLAIT_BENCH_MPI

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    const options o = parse(argc, argv);
    try {
      plait::mpi::communicator world{MPI_COMM_WORLD};
      const int ranks = world.size();
      std::optional<plait::shm::communicator> shm;
      if (wants(o.transports, "shm")) {
        shm.emplace(plait::mpi::node_local_shm(world));
        if (shm->size() != ranks) {
          throw plait::error(plait::errc::unsupported, "--transport shm needs every rank on one node (" +
                                                           std::to_string(shm->size()) + " of " +
                                                           std::to_string(ranks) + " share this one)");
        }
      }
      std::optional<plait::shm::communicator> shm_chunked;
      if (wants(o.transports, "shm-chunked")) {
        shm_chunked.emplace(plait::mpi::node_local_shm(world));
        shm_chunked->set_single_copy_bytes(SIZE_MAX);
      }
      std::optional<plait::shm::communicator> shm_shared;
      if (wants(o.transports, "shm-shared")) shm_shared.emplace(plait::mpi::node_local_shm(world));
      std::optional<plait::shm::communicator> shm_pool;
      if (wants(o.transports, "shm-pool")) shm_pool.emplace(plait::mpi::node_local_shm(world));
      if ((shm_chunked && shm_chunked->size() != ranks) || (shm_shared && shm_shared->size() != ranks) ||
          (shm_pool && shm_pool->size() != ranks)) {
        throw plait::error(plait::errc::unsupported, "the shm transports need every rank on one node");
      }
      plait::mpi::communicator* mpi = wants(o.transports, "mpi") ? &world : nullptr;
      MPI_Comm native_comm = world.native_handle();
      int native_count = 0;
      std::string native_op;
      const void* const in_place_marker = MPI_IN_PLACE;
      const void* native_send = nullptr;
      void* native_recv = nullptr;
      // The v-forms' counts and packed displacements, and the bundle's split.
      std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
      int first_count = 0;
      const auto as_int = [](const std::vector<std::size_t>& in, std::vector<int>& counts, std::vector<int>& displs) {
        counts.assign(in.begin(), in.end());
        displs.assign(in.size(), 0);
        for (std::size_t i = 1; i < in.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
      };
      auto native_setup = [&](const std::string& op, buffers& b) {
        native_op = op;
        native_count = static_cast<int>(b.recv.size() / static_cast<std::size_t>(ranks));
        if (op == "reduce_scatter") native_count = static_cast<int>(b.recv.size() / sizeof(float));  // per block
        if (op == "all_reduce") native_count = static_cast<int>(b.recv.size() / sizeof(float));
        native_send = op == "all_gather" && o.in_place ? in_place_marker : b.send.data();
        native_recv = b.recv.data();
        as_int(b.send_counts, send_counts, send_displs);
        as_int(b.recv_counts, recv_counts, recv_displs);
        first_count = static_cast<int>(b.first_bytes / static_cast<std::size_t>(ranks));
      };
      auto native = [&] {
        int code = MPI_SUCCESS;
        if (native_op == "all_gather") {
          code = MPI_Allgather(native_send, native_count, MPI_BYTE, native_recv, native_count, MPI_BYTE, native_comm);
        } else if (native_op == "reduce_scatter") {
          code = MPI_Reduce_scatter_block(native_send, native_recv, native_count, MPI_FLOAT, MPI_SUM, native_comm);
        } else if (native_op == "all_reduce") {
          code = MPI_Allreduce(native_send, native_recv, native_count, MPI_FLOAT, MPI_SUM, native_comm);
        } else if (native_op == "all_gather_v") {
          code = MPI_Allgatherv(native_send, recv_counts[static_cast<std::size_t>(world.rank())], MPI_BYTE, native_recv,
                                recv_counts.data(), recv_displs.data(), MPI_BYTE, native_comm);
        } else if (native_op == "all_to_all_v") {
          code = MPI_Alltoallv(native_send, send_counts.data(), send_displs.data(), MPI_BYTE, native_recv,
                               recv_counts.data(), recv_displs.data(), MPI_BYTE, native_comm);
        } else if (native_op == "bundle") {
          const auto* send = static_cast<const std::byte*>(native_send);
          auto* recv = static_cast<std::byte*>(native_recv);
          const int second = native_count - first_count;
          code = MPI_Alltoall(send, first_count, MPI_BYTE, recv, first_count, MPI_BYTE, native_comm);
          if (code == MPI_SUCCESS) {
            const std::size_t offset = static_cast<std::size_t>(first_count) * static_cast<std::size_t>(ranks);
            code = MPI_Alltoall(send + offset, second, MPI_BYTE, recv + offset, second, MPI_BYTE, native_comm);
          }
        } else {
          code = MPI_Alltoall(native_send, native_count, MPI_BYTE, native_recv, native_count, MPI_BYTE, native_comm);
        }
        if (code != MPI_SUCCESS) throw plait::error(plait::errc::transport, "native MPI collective failed");
      };
      // MPI_Barrier, not the polled one: its exit skew would count as collective time.
      auto barrier = [&] { MPI_Barrier(native_comm); };
      native_persistent_maker native_persistent = [&](const std::string& op, buffers& b) -> std::function<void()> {
#if MPI_VERSION >= 4
        const int count = static_cast<int>(b.recv.size() / static_cast<std::size_t>(ranks));
        auto request = std::shared_ptr<MPI_Request>(new MPI_Request(MPI_REQUEST_NULL), [](MPI_Request* r) {
          if (*r != MPI_REQUEST_NULL) MPI_Request_free(r);
          delete r;
        });
        const void* send = op == "all_gather" && o.in_place ? MPI_IN_PLACE : b.send.data();
        const int code = op == "all_gather" ? MPI_Allgather_init(send, count, MPI_BYTE, b.recv.data(), count, MPI_BYTE,
                                                                 native_comm, MPI_INFO_NULL, request.get())
                                            : MPI_Alltoall_init(send, count, MPI_BYTE, b.recv.data(), count, MPI_BYTE,
                                                                native_comm, MPI_INFO_NULL, request.get());
        if (code != MPI_SUCCESS) throw plait::error(plait::errc::transport, "MPI persistent collective init failed");
        return [request] {
          MPI_Start(request.get());
          MPI_Wait(request.get(), MPI_STATUS_IGNORE);
        };
#else
        (void)op;
        (void)b;
        return {};  // MPI 3 (Open MPI 4.1) has no persistent collectives
#endif
      };
      std::vector<library_baseline> libraries;
      std::vector<std::pair<std::string, std::string>> meta;
#ifdef PLAIT_BENCH_ONECCL
      std::optional<bench::oneccl::library> oneccl;
      if (o.oneccl) {
        oneccl.emplace(native_comm);
        libraries.push_back({"oneccl", [&](const std::string& op, buffers& b) -> std::function<void()> {
                               if (op == "all_gather" && o.in_place) return {};  // measured out of place only
                               return oneccl->bind(op, b.send.data(), b.recv.data(), b.recv.size());
                             }});
        meta.emplace_back("oneccl", bench::oneccl::library::description());
      }
#endif
      const shm_variants shms{shm ? &*shm : nullptr, shm_chunked ? &*shm_chunked : nullptr,
                              shm_shared ? &*shm_shared : nullptr, shm_pool ? &*shm_pool : nullptr};
      const auto rows = sweep(o, world, shms, mpi, native_setup, native, barrier, native_persistent, libraries);
      char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
      int length = 0;
      MPI_Get_library_version(library, &length);
      std::string mpi_library(library, static_cast<std::size_t>(length));
      if (const auto newline = mpi_library.find('\n'); newline != std::string::npos) mpi_library.resize(newline);
      // Some libraries count the terminating NUL (and trailing blanks) in `length`.
      while (!mpi_library.empty() && (mpi_library.back() == '\0' || mpi_library.back() == ' ')) mpi_library.pop_back();
      meta.insert(meta.begin(), {{"ranks", std::to_string(ranks)}, {"launcher", "mpirun"}, {"mpi", mpi_library}});
      if (world.rank() == 0 && !report(o, rows, std::move(meta))) {
        status = 1;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "plait-bench: %s\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

#else

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  if (wants(o.transports, "mpi")) {
    std::fprintf(stderr, "plait-bench: built without MPI: only --transport shm\n");
    return 2;
  }
  try {
    plait::shm::run_processes(o.processes, [&](plait::shm::communicator& comm) {
      auto barrier = [&] { comm.barrier(); };
      // The chunked variant is a second group over the same ranks (split
      // makes one), with single copy turned off.
      std::optional<plait::shm::communicator> chunked;
      if (wants(o.transports, "shm-chunked")) {
        chunked.emplace(comm.split(0, comm.rank()));
        chunked->set_single_copy_bytes(SIZE_MAX);
      }
      std::optional<plait::shm::communicator> shared;
      if (wants(o.transports, "shm-shared")) shared.emplace(comm.split(0, comm.rank()));
      std::optional<plait::shm::communicator> pool;
      if (wants(o.transports, "shm-pool")) pool.emplace(comm.split(0, comm.rank()));
      const shm_variants shms{wants(o.transports, "shm") ? &comm : nullptr, chunked ? &*chunked : nullptr,
                              shared ? &*shared : nullptr, pool ? &*pool : nullptr};
      const auto rows = sweep(o, comm, shms, static_cast<plait::shm::communicator*>(nullptr), {}, {}, barrier);
      if (comm.rank() == 0 &&
          !report(o, rows, {{"ranks", std::to_string(comm.size())}, {"launcher", "run_processes (no MPI)"}})) {
        throw plait::error(plait::errc::transport, "verification failed");
      }
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plait-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

#endif

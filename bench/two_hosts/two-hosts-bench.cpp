// two-hosts-bench: plait's hierarchical collectives against plait flat over
// MPI and the MPI library's own collective, for ranks spread over several
// hosts (scripts/bench-two-hosts runs it across two emulated hosts).
//
//   mpirun -np 4 --hostfile hosts two-hosts-bench -b 4K -e 64M -f 4 --link veth0 --json out.json
//
// Variants (--variants, samples interleaved as in bench/harness.hpp):
//   plait-hierarchical  plait::hierarchical<Inner, Outer> on plait::mpi::node_levels(world):
//                       shm inside a host, MPI between the same local ranks of every host
//   plait-flat          plait (automatic) on plait::mpi::communicator over the whole world
//   native              MPI_Allgather / MPI_Alltoall; the row's variant is --native-name
//                       (default "mpi"), so a run under Open MPI's han can say so
// With --link IFACE, rank 0 (which must run on the host that owns IFACE) reads
// /sys/class/net/IFACE/statistics/{tx,rx}_bytes around one more call of each
// variant per size: the bytes that crossed the slow link, next to the
// hierarchical schedules' payload formula (docs/performance.md).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <plait/mpi.hpp>

#include "../harness.hpp"
#include "../reference.hpp"

// The two-level API (DESIGN.md 2b) comes with plait/levels/two_level.hpp;
// without it the hierarchical variant is refused, never measured as something else.
#if __has_include(<plait/levels/two_level.hpp>)
#define PLAIT_TWO_HOSTS_HIERARCHICAL 1
#endif

namespace {

namespace bench = plait::bench;

struct options {
  bench::size_sweep sweep{};
  bench::timing how{.warmup = 1, .iterations = 10, .repetitions = 5, .scrub_bytes = 0};
  std::size_t sample_bytes = std::size_t{16} << 20;  // a sample of a large size runs fewer calls
  std::vector<std::string> ops{"all_gather", "all_to_all"};
  std::vector<std::string> variants{"hierarchical", "flat", "native"};
  std::string native_name = "mpi";
  std::string link;
  std::string json;
};

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: two-hosts-bench [options]\n"
               "  -b, -e, -f SIZE/FACTOR   size sweep (default 4K to 64M, x2; suffixes K, M, G)\n"
               "  -n N                     calls per sample at most (default 10)\n"
               "  --sample-bytes SIZE      fewer calls per sample once calls x size passes this (default 16M)\n"
               "  -w N, -r N               warm-up calls (default 1), samples per variant (default 5)\n"
               "  --op LIST                all_gather,all_to_all (default both)\n"
               "  --variants LIST          hierarchical,flat,native (default all three)\n"
               "  --native-name NAME       the native variant's name in the results (default mpi)\n"
               "  --link IFACE             count the bytes on IFACE (rank 0's host) for one call per variant\n"
               "  --json FILE              also write the results there\n"
               "size = the gathered buffer (all_gather) or one rank's send buffer (all_to_all)\n"
#ifdef PLAIT_TWO_HOSTS_HIERARCHICAL
               "hierarchical variant: available\n"
#else
               "hierarchical variant: not in this build (no plait/levels/two_level.hpp)\n"
#endif
  );
  std::exit(code);
}

options parse(int argc, char** argv) {
  options o;
  o.sweep.factor = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") usage(0);
    if (arg == "-b")
      o.sweep.min_bytes = bench::parse_size(value());
    else if (arg == "-e")
      o.sweep.max_bytes = bench::parse_size(value());
    else if (arg == "-f")
      o.sweep.factor = std::strtod(value().c_str(), nullptr);
    else if (arg == "-n")
      o.how.iterations = std::max(1, std::atoi(value().c_str()));
    else if (arg == "-w")
      o.how.warmup = std::max(0, std::atoi(value().c_str()));
    else if (arg == "-r")
      o.how.repetitions = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--sample-bytes")
      o.sample_bytes = bench::parse_size(value());
    else if (arg == "--op")
      o.ops = bench::split_list(value());
    else if (arg == "--variants")
      o.variants = bench::split_list(value());
    else if (arg == "--native-name")
      o.native_name = value();
    else if (arg == "--link")
      o.link = value();
    else if (arg == "--json")
      o.json = value();
    else {
      std::fprintf(stderr, "two-hosts-bench: unknown option %s\n", argv[i]);
      usage(2);
    }
  }
  for (const auto& op : o.ops) {
    if (op != "all_gather" && op != "all_to_all") {
      std::fprintf(stderr, "two-hosts-bench: unknown --op %s\n", op.c_str());
      usage(2);
    }
  }
  for (const auto& v : o.variants) {
    if (v != "hierarchical" && v != "flat" && v != "native") {
      std::fprintf(stderr, "two-hosts-bench: unknown variant %s\n", v.c_str());
      usage(2);
    }
  }
  return o;
}

bool wants(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

/// One of /sys/class/net/IFACE/statistics/{tx,rx}_bytes.
long long link_counter(const std::string& iface, const char* which) {
  std::ifstream in("/sys/class/net/" + iface + "/statistics/" + which);
  long long value = -1;
  in >> value;
  if (!in) throw plait::error(plait::errc::invalid_argument, "cannot read the byte counters of " + iface);
  return value;
}

/// A measured point, and what crossed the link during one counted call.
struct result {
  bench::row row;
  long long link_tx = -1;        // bytes rank 0's host sent on the link (-1: not counted)
  long long link_rx = -1;        // bytes it received
  long long formula_bytes = -1;  // the schedule's payload one way (hierarchical only)
  long long slow_messages = -1;  // the schedule's messages on the slow level one way (hierarchical only)
};

void write_json(std::ostream& out, const std::vector<result>& results,
                const std::vector<std::pair<std::string, std::string>>& meta) {
  using bench::detail::json_string;
  out << "{\n  \"meta\": {";
  for (std::size_t i = 0; i < meta.size(); ++i)
    out << (i ? ",\n" : "\n") << "    " << json_string(meta[i].first) << ": " << json_string(meta[i].second);
  out << "\n  },\n  \"rows\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const result& x = results[i];
    const bench::row& r = x.row;
    out << (i ? ",\n" : "\n") << "    {\"operation\": " << json_string(r.operation)
        << ", \"variant\": " << json_string(r.variant) << ", \"ranks\": " << r.ranks << ", \"bytes\": " << r.bytes
        << ", \"seconds\": " << bench::detail::number(r.seconds)
        << ", \"algbw_gbps\": " << bench::detail::number(r.algbw())
        << ", \"busbw_gbps\": " << bench::detail::number(r.busbw()) << ", \"check\": " << json_string(r.check)
        << ", \"link_tx_bytes\": " << x.link_tx << ", \"link_rx_bytes\": " << x.link_rx
        << ", \"formula_bytes\": " << x.formula_bytes << ", \"slow_messages\": " << x.slow_messages << "}";
  }
  out << "\n  ]\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    const options o = parse(argc, argv);
    try {
      plait::mpi::communicator world{MPI_COMM_WORLD};
      const int rank = world.rank();
      const int ranks = world.size();
      MPI_Comm native_comm = world.native_handle();
      auto barrier = [&] { MPI_Barrier(native_comm); };
#ifdef PLAIT_TWO_HOSTS_HIERARCHICAL
      std::optional<plait::mpi::node_levels> levels;  // owns its two communicators: built in place
      if (wants(o.variants, "hierarchical")) levels.emplace(world);
      // Rank 0's node (node 0: ids are smallest world ranks) and the smallest node, for the formula.
      const int local_ranks = levels ? levels->node_size_of(0) : 0;
      const int relays = levels ? levels->smallest_node_size() : 0;
      const int node_count = levels ? levels->node_count() : 0;
#else
      if (wants(o.variants, "hierarchical")) {
        throw plait::error(plait::errc::unsupported,
                           "this plait has no two-level API (plait/levels/two_level.hpp): run without "
                           "the hierarchical variant");
      }
      int local_ranks = 0;  // no levels: no formula
      int relays = 0;
      int node_count = 0;
#endif
      std::vector<result> results;
      const auto p = static_cast<std::size_t>(ranks);
      for (const auto& op : o.ops) {
        const bool gather = op == "all_gather";
        for (const std::size_t bytes : o.sweep.sizes(p)) {
          const std::size_t block = bytes / p;
          std::vector<std::byte> send(gather ? block : bytes);
          std::vector<std::byte> recv(bytes);
          bench::fill_pattern(rank, send);
          const int count = static_cast<int>(block);
          std::vector<std::string> names;
          std::vector<std::function<void()>> calls;
#ifdef PLAIT_TWO_HOSTS_HIERARCHICAL
          if (levels) {
            names.emplace_back("plait-hierarchical");
            if (gather) {
              calls.emplace_back([&] {
                plait::all_gather<plait::hierarchical<plait::ring, plait::recursive_doubling>>(*levels, send, recv);
              });
            } else {
              calls.emplace_back([&] {
                plait::all_to_all<plait::hierarchical<plait::pairwise, plait::pairwise>>(*levels, send, recv);
              });
            }
          }
#endif
          if (wants(o.variants, "flat")) {
            names.emplace_back("plait-flat");
            calls.emplace_back(
                [&] { gather ? plait::all_gather(world, send, recv) : plait::all_to_all(world, send, recv); });
          }
          if (wants(o.variants, "native")) {
            names.push_back(o.native_name);
            calls.emplace_back([&] {
              const int code =
                  gather ? MPI_Allgather(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, native_comm)
                         : MPI_Alltoall(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, native_comm);
              if (code != MPI_SUCCESS) throw plait::error(plait::errc::transport, "native MPI collective failed");
            });
          }
          std::vector<result> here(names.size());
          for (std::size_t v = 0; v < names.size(); ++v) {
            std::fill(recv.begin(), recv.end(), std::byte{0});
            barrier();
            calls[v]();
            const std::string wrong =
                gather ? bench::check_all_gather(ranks, recv) : bench::check_all_to_all(rank, ranks, recv);
            if (!wrong.empty())
              std::fprintf(stderr, "two-hosts-bench: rank %d: %s: %s\n", rank, names[v].c_str(), wrong.c_str());
            here[v].row = {op, names[v], ranks, bytes, 0, bench::any_rank(world, !wrong.empty()) ? "FAIL" : "ok"};
          }
          bench::timing how = o.how;
          how.iterations = static_cast<int>(
              std::clamp<std::size_t>(o.sample_bytes / bytes, 1, static_cast<std::size_t>(o.how.iterations)));
          const auto seconds = bench::measure(world, how, std::span<const std::function<void()>>(calls), barrier);
          for (std::size_t v = 0; v < names.size(); ++v) here[v].row.seconds = seconds[v];
          if (!o.link.empty()) {
            for (std::size_t v = 0; v < names.size(); ++v) {
              // Read before the barrier: once it opens, a peer's eager send
              // of this call may cross the link before rank 0 would read.
              const long long tx = rank == 0 ? link_counter(o.link, "tx_bytes") : 0;
              const long long rx = rank == 0 ? link_counter(o.link, "rx_bytes") : 0;
              barrier();
              calls[v]();
              barrier();
              if (rank == 0) {
                here[v].link_tx = link_counter(o.link, "tx_bytes") - tx;
                here[v].link_rx = link_counter(o.link, "rx_bytes") - rx;
              }
            }
          }
          // The hierarchical schedules' slow-level payload from rank 0's node
          // (L_0 ranks) to the others: all-gather, its L_0 shards to each of
          // the N-1 other nodes; all-to-all, its L_0 ranks' blocks for the
          // P - L_0 ranks elsewhere. Messages: one per other node from each
          // of the M ranks that cross (M = the smallest node's size: L with
          // equal nodes, where every rank sends its shard, or one message
          // of L blocks, to its N-1 same-local-rank peers).
          if (local_ranks > 0 && names.front() == "plait-hierarchical") {
            const auto nodes = static_cast<long long>(node_count);
            const auto local = static_cast<long long>(local_ranks);
            const auto shard = static_cast<long long>(block);
            here.front().formula_bytes =
                gather ? local * (nodes - 1) * shard : local * (static_cast<long long>(ranks) - local) * shard;
            here.front().slow_messages = static_cast<long long>(relays) * (nodes - 1);
          }
          if (rank == 0) {
            std::fprintf(stderr, "two-hosts-bench: %s %s:", op.c_str(), bench::size_text(bytes).c_str());
            for (const result& x : here)
              std::fprintf(stderr, " %s %.1f us", x.row.variant.c_str(), x.row.seconds * 1e6);
            std::fprintf(stderr, "\n");
          }
          results.insert(results.end(), here.begin(), here.end());
        }
      }
      if (rank == 0) {
        std::vector<bench::row> rows;
        for (const result& x : results) rows.push_back(x.row);
        bench::print_table(std::cout, rows);
        if (!o.link.empty()) {
          std::cout << "link bytes for one call (tx / rx on " << o.link << "):\n";
          for (const result& x : results) {
            std::cout << "  " << x.row.operation << ' ' << bench::size_text(x.row.bytes) << ' ' << x.row.variant << ": "
                      << x.link_tx << " / " << x.link_rx;
            if (x.formula_bytes >= 0) std::cout << " (formula " << x.formula_bytes << " payload each way)";
            std::cout << '\n';
          }
        }
        if (!o.json.empty()) {
          std::ofstream out(o.json);
          write_json(out, results,
                     {{"ranks", std::to_string(ranks)},
                      {"local ranks", std::to_string(local_ranks)},
                      {"smallest node", std::to_string(relays)},
                      {"native", o.native_name},
                      {"iterations", std::to_string(o.how.iterations)},
                      {"repetitions", std::to_string(o.how.repetitions)}});
          if (!out) std::fprintf(stderr, "two-hosts-bench: cannot write %s\n", o.json.c_str());
        }
        for (const result& x : results) status |= x.row.check == "FAIL" ? 1 : 0;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "two-hosts-bench: %s\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

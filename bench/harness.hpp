// plait's benchmark harness: size sweeps, warm-up and timed samples, timing
// across ranks, nccl-tests' bandwidth figures, and result rows that print as a
// table, JSON or CSV. Used by bench/plait-bench and by the tour
// (examples/tour.cpp), so the demo's numbers and the benchmark's come from the
// same code.
//
// How a time is measured (the same for every variant: plait, native MPI, memcpy):
//   - a *sample* is: barrier, then `iterations` back-to-back calls timed on
//     each rank with a steady clock; the rank's sample time is the elapsed time
//     divided by `iterations`;
//   - the sample's time is the *maximum over ranks* (a collective is done when
//     its slowest rank is done);
//   - the reported time is the *median over `repetitions` samples*. Samples of
//     the variants compared at one size are interleaved (A B C A B C ...), so a
//     noisy stretch of the machine hits every variant alike.
//   Warm-up calls (untimed) run before the first sample of each variant.
//
// Bandwidth, as nccl-tests defines it:
//   bytes  = all-gather: the full gathered buffer (P x the shard);
//            all-to-all, reduce-scatter: one rank's send buffer (P blocks);
//            all-reduce: one rank's buffer;
//   algbw  = bytes / time;
//   busbw  = algbw x (P-1)/P (all-reduce: x 2(P-1)/P, a reduce-scatter and an
//            all-gather): the rate at which each rank receives from its peers,
//            comparable across P and with a link's (or memory's) speed.
//   GB/s means 1e9 bytes per second.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <map>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plait/core/error.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace bench {

/// Sizes from min_bytes to max_bytes, each `factor` times the last (like
/// nccl-tests' -b/-e/-f). Every size is rounded down to a multiple of
/// `granularity` (the smallest unit the operation can split evenly, such as
/// P x the element size) and sizes that round to the same value appear once.
struct size_sweep {
  std::size_t min_bytes = 4096;
  std::size_t max_bytes = std::size_t{64} << 20;
  double factor = 2.0;

  [[nodiscard]] std::vector<std::size_t> sizes(std::size_t granularity = 1) const {
    if (factor <= 1.0 && min_bytes != max_bytes) {
      throw error(errc::invalid_argument, "size sweep factor must be > 1 (got " + std::to_string(factor) + ")");
    }
    if (granularity == 0) granularity = 1;
    std::vector<std::size_t> out;
    for (double s = static_cast<double>(min_bytes); s <= static_cast<double>(max_bytes) * (1 + 1e-9); s *= factor) {
      const auto raw = static_cast<std::size_t>(std::llround(s));
      const std::size_t rounded = std::max(granularity, raw / granularity * granularity);
      if (out.empty() || out.back() != rounded) out.push_back(rounded);
      if (min_bytes == max_bytes) break;
    }
    return out;
  }
};

/// How long to measure each variant at each size.
struct timing {
  int warmup = 5;       ///< untimed calls before the first sample
  int iterations = 20;  ///< calls per sample
  int repetitions = 5;  ///< samples; the median is reported
  /// Bytes every rank reads before each sample (0: none), so that the write-back
  /// of the lines the previous variant left dirty is not charged to the next one;
  /// one untimed call of the variant follows the scrub.
  std::size_t scrub_bytes = std::size_t{64} << 20;
};

/// busbw / algbw for P ranks: (P-1)/P (0 for one rank, which moves no bytes).
[[nodiscard]] inline double bus_factor(int ranks) noexcept {
  return ranks > 0 ? static_cast<double>(ranks - 1) / ranks : 0.0;
}

/// busbw / algbw of `operation` for P ranks: 2(P-1)/P for "all_reduce" (it
/// moves the data through a reduce-scatter and an all-gather), else (P-1)/P.
[[nodiscard]] inline double bus_factor(std::string_view operation, int ranks) noexcept {
  return (operation == "all_reduce" ? 2.0 : 1.0) * bus_factor(ranks);
}

/// One measured point: an operation, a variant (what ran it), a size.
struct row {
  std::string operation;  ///< "all_gather", "all_to_all"
  std::string variant;    ///< "plait-shm", "mpi", "memcpy", ...
  int ranks = 0;
  std::size_t bytes = 0;  ///< nccl-tests' size (see the top of this file)
  double seconds = 0;     ///< median over samples of the max over ranks, per call
  std::string check;      ///< "ok", "FAIL" or "-" (not verified)

  [[nodiscard]] double algbw() const noexcept { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
  [[nodiscard]] double busbw() const noexcept { return algbw() * bus_factor(operation, ranks); }
};

namespace detail {

inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  if (values.size() % 2 == 1) return *middle;
  const double upper = *middle;
  return (upper + *std::max_element(values.begin(), middle)) / 2;
}

/// Element-wise maximum over ranks, known to every rank afterwards. Runs on any
/// plait transport with point-to-point messages (gather to rank 0, then back),
/// under a fresh collective tag so it never mixes with other traffic.
template <transport Comm>
std::vector<double> max_over_ranks(Comm& comm, std::vector<double> values) {
  const int ranks = comm.size();
  if (ranks <= 1) return values;
  const int tag = comm.next_tag();
  const auto bytes = std::as_writable_bytes(std::span(values));
  if (comm.rank() == 0) {
    std::vector<double> theirs(values.size());
    for (int peer = 1; peer < ranks; ++peer) {
      comm.recv(peer, std::as_writable_bytes(std::span(theirs)), tag);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::max(values[i], theirs[i]);
    }
    for (int peer = 1; peer < ranks; ++peer) comm.send(peer, bytes, tag);
  } else {
    comm.send(0, bytes, tag);
    comm.recv(0, bytes, tag);
  }
  return values;
}

}  // namespace detail

/// Same as detail::max_over_ranks for one flag: true on every rank if true on any.
template <transport Comm>
bool any_rank(Comm& comm, bool flag) {
  return detail::max_over_ranks(comm, {flag ? 1.0 : 0.0}).front() != 0;
}

/// Measures variants (callables, one call = one operation) at one size, with
/// their samples interleaved. Collective over `comm`: every rank passes the
/// same number of variants in the same order. Returns, per variant, the median
/// over samples of the maximum over ranks of the time per call, in seconds.
/// `barrier` separates samples; pass the variants' own barrier when they run on
/// another communicator (it defaults to comm.barrier()).
template <transport Comm>
std::vector<double> measure(Comm& comm, const timing& how, std::span<const std::function<void()>> variants,
                            const std::function<void()>& barrier = {}) {
  using seconds = std::chrono::duration<double>;
  auto sync = [&] { barrier ? barrier() : comm.barrier(); };
  for (const auto& run : variants) {
    for (int i = 0; i < how.warmup; ++i) run();
  }
  const auto reps = static_cast<std::size_t>(std::max(1, how.repetitions));
  const int iterations = std::max(1, how.iterations);
  // samples[v * reps + r]: this rank's time per call in sample r of variant v.
  std::vector<double> samples(variants.size() * reps);
  // A new order every round, the same on every rank (a fixed seed): with a
  // fixed rotation a variant always followed the same other one, and paid for
  // its dirty cache lines (bench/cma-vs-copy measured identical code 1.27-1.43x
  // apart that way). The scrub before each sample takes that write-back out
  // of the timed region.
  std::vector<std::size_t> order(variants.size());
  for (std::size_t v = 0; v < order.size(); ++v) order[v] = v;
  std::uint64_t seed = 0x9e3779b97f4a7c15ULL;
  auto next_random = [&seed] {  // splitmix64: the same sequence everywhere, unlike std's distributions
    std::uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::vector<std::uint64_t> scrub(how.scrub_bytes / sizeof(std::uint64_t), 1);
  volatile std::uint64_t scrub_sink = 0;
  for (std::size_t r = 0; r < reps; ++r) {
    for (std::size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[next_random() % k]);
    for (const std::size_t v : order) {
      std::uint64_t sum = 0;
      for (std::size_t i = 0; i < scrub.size(); i += 8) sum += scrub[i];  // one read per 64-byte line
      scrub_sink = scrub_sink + sum;
      // One untimed call after the scrub: the sample then measures the variant
      // in its own steady state (its code and small buffers cached, its own
      // lines dirty), as back-to-back calls in an application would run, and
      // not the first call out of a cold cache (2.5-4 us instead of 1.5 us at
      // 4 KiB here when the scrub was followed by timed calls at once).
      if (!scrub.empty()) variants[v]();
      sync();
      const auto start = clock::now();
      for (int i = 0; i < iterations; ++i) variants[v]();
      samples[v * reps + r] = seconds(clock::now() - start).count() / iterations;
    }
  }
  samples = detail::max_over_ranks(comm, std::move(samples));
  std::vector<double> out;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    out.push_back(detail::median({samples.begin() + static_cast<std::ptrdiff_t>(v * reps),
                                  samples.begin() + static_cast<std::ptrdiff_t>((v + 1) * reps)}));
  }
  return out;
}

/// "a,b,c" as {"a", "b", "c"} (command-line lists).
inline std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

/// "4 KiB", "16 MiB", "1000 B": sizes as people read them.
inline std::string size_text(std::size_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 3 && std::fmod(value, 1024) == 0) {
    value /= 1024;
    ++unit;
  }
  std::ostringstream out;
  out << value << ' ' << units[unit];
  return out.str();
}

/// Parses "4096", "4K", "64M", "1G" (binary multiples, like nccl-tests).
inline std::size_t parse_size(std::string_view text) {
  if (text.empty()) throw error(errc::invalid_argument, "empty size");
  std::size_t multiplier = 1;
  switch (text.back()) {
    case 'k':
    case 'K': multiplier = std::size_t{1} << 10; break;
    case 'm':
    case 'M': multiplier = std::size_t{1} << 20; break;
    case 'g':
    case 'G': multiplier = std::size_t{1} << 30; break;
    default: break;
  }
  if (multiplier != 1) text.remove_suffix(1);
  std::size_t value = 0;
  if (text.empty()) throw error(errc::invalid_argument, "size has no digits");
  for (char c : text) {
    if (c < '0' || c > '9') throw error(errc::invalid_argument, "not a size: " + std::string(text));
    value = value * 10 + static_cast<std::size_t>(c - '0');
  }
  return value * multiplier;
}

/// A table, one line per (operation, size), the variants side by side (time in
/// microseconds and busbw in GB/s each), then the first variant's busbw as a
/// ratio of each other variant's.
inline void print_table(std::ostream& out, const std::vector<row>& rows) {
  std::vector<std::string> variants;
  for (const row& r : rows) {
    if (std::find(variants.begin(), variants.end(), r.variant) == variants.end()) variants.push_back(r.variant);
  }
  std::vector<std::pair<std::string, std::size_t>> keys;
  std::map<std::pair<std::string, std::size_t>, std::map<std::string, const row*>> cells;
  for (const row& r : rows) {
    const auto key = std::pair{r.operation, r.bytes};
    if (cells.find(key) == cells.end()) keys.push_back(key);
    cells[key][r.variant] = &r;
  }
  const auto saved_flags = out.flags();
  const auto saved_precision = out.precision();
  // The operation column fits the longest name ("reduce_scatter"), at least 11 as before.
  int operation_width = 11;
  for (const auto& key : keys) operation_width = std::max(operation_width, static_cast<int>(key.first.size()) + 1);
  out << std::left << std::setw(operation_width) << "operation" << std::right << std::setw(10) << "size";
  for (const auto& v : variants) out << " | " << std::setw(22) << (v + " us  busbw");
  for (std::size_t i = 1; i < variants.size(); ++i) out << " | " << std::setw(14) << (variants[0] + "/" + variants[i]);
  out << "  check\n";
  out << std::fixed;
  for (const auto& key : keys) {
    const auto& line = cells[key];
    out << std::left << std::setw(operation_width) << key.first << std::right << std::setw(10) << size_text(key.second);
    std::string check = "-";
    for (const auto& v : variants) {
      const auto it = line.find(v);
      if (it == line.end()) {
        out << " | " << std::setw(22) << "";
        continue;
      }
      out << " | " << std::setw(12) << std::setprecision(1) << it->second->seconds * 1e6 << std::setw(10)
          << std::setprecision(2) << it->second->busbw();
      if (it->second->check == "FAIL")
        check = "FAIL";
      else if (it->second->check == "ok" && check == "-")
        check = "ok";
    }
    for (std::size_t i = 1; i < variants.size(); ++i) {
      const auto first = line.find(variants[0]);
      const auto other = line.find(variants[i]);
      if (first == line.end() || other == line.end() || other->second->busbw() <= 0) {
        out << " | " << std::setw(14) << "-";
      } else {
        out << " | " << std::setw(13) << std::setprecision(2) << first->second->busbw() / other->second->busbw() << 'x';
      }
    }
    out << "  " << check << '\n';
  }
  out << "(us: median over samples of the slowest rank's time per call; busbw in GB/s = bytes/time x (P-1)/P, "
         "all_reduce x 2(P-1)/P)\n";
  out.flags(saved_flags);
  out.precision(saved_precision);
}

namespace detail {
inline std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
inline std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  std::ostringstream out;
  out << std::setprecision(9) << value;
  return out.str();
}
}  // namespace detail

/// {"meta": {key: value, ...}, "rows": [{operation, variant, ranks, bytes,
/// seconds, algbw_gbps, busbw_gbps, check}, ...]}; `meta` carries what makes
/// the run reproducible (command line, machine, MPI library).
inline void write_json(std::ostream& out, const std::vector<row>& rows,
                       const std::vector<std::pair<std::string, std::string>>& meta = {}) {
  out << "{\n  \"meta\": {";
  for (std::size_t i = 0; i < meta.size(); ++i) {
    out << (i ? ",\n" : "\n") << "    " << detail::json_string(meta[i].first) << ": "
        << detail::json_string(meta[i].second);
  }
  out << (meta.empty() ? "" : "\n  ") << "},\n  \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const row& r = rows[i];
    out << (i ? ",\n" : "\n") << "    {\"operation\": " << detail::json_string(r.operation)
        << ", \"variant\": " << detail::json_string(r.variant) << ", \"ranks\": " << r.ranks
        << ", \"bytes\": " << r.bytes << ", \"seconds\": " << detail::number(r.seconds)
        << ", \"algbw_gbps\": " << detail::number(r.algbw()) << ", \"busbw_gbps\": " << detail::number(r.busbw())
        << ", \"check\": " << detail::json_string(r.check) << "}";
  }
  out << (rows.empty() ? "" : "\n  ") << "]\n}\n";
}

/// One header line, then one line per row (same fields as the JSON rows).
inline void write_csv(std::ostream& out, const std::vector<row>& rows) {
  out << "operation,variant,ranks,bytes,seconds,algbw_gbps,busbw_gbps,check\n";
  for (const row& r : rows) {
    out << r.operation << ',' << r.variant << ',' << r.ranks << ',' << r.bytes << ',' << detail::number(r.seconds)
        << ',' << detail::number(r.algbw()) << ',' << detail::number(r.busbw()) << ',' << r.check << '\n';
  }
}

}  // namespace bench
}  // namespace v0
}  // namespace plait

// slot-floor: how fast can two processes on this machine all-reduce a small
// float vector through shared memory at all, and how close is plait? A
// standalone experiment (issue 30), not a test. Two ranks (forked by
// plait::shm::run_processes, pinned to CPUs 0 and 1) time, interleaved:
//
//   round-trip   one flag written by each rank in turn: the cross-core
//                latency every round pays (the machine's, nothing else)
//   floor-0      the vectors already in shared memory, as `allocate`
//                buffers are: each rank posts that its vector is ready,
//                waits for the peer's, adds both vectors into its result,
//                then posts that it has read and waits for the peer's (the
//                caller may write its vector once the call returns)
//   floor-1      the one-round protocol with nothing around it: each rank
//                copies its vector into its own buffer, posts a flag, waits
//                for the peer's and adds both buffers into its result
//   floor-2      the two-round one (direct's): each rank adds the peer's
//                half of the vector to its own half, posts that half, and
//                copies the peer's half of the result
//   plait        plait::all_reduce(comm, in, out, plait::sum{}) on the same
//                two ranks (automatic: the shared slots at these sizes)
//   plait-alloc  the same on vectors from comm.allocate
//
// The floors' buffers alternate and each rank waits for its peer's flag of
// the round before, as plait's shared slots do; they check nothing, name
// nothing and choose nothing. With --fresh each call first rewrites its
// rank's input (from a private copy), as a program that produces a new vector
// every step does: the peer's copy of those lines in its cache is gone, and a
// `write` variant times the rewrite alone. Without it the inputs never change
// between calls, as in plait-bench and nccl-tests, and a peer reading another
// rank's input in place finds it in its own cache. Each variant runs `calls`
// calls per sample; the figure is the fastest sample of `rounds` (the
// machine's fast state: its two vCPUs' placement changes while it runs,
// docs/performance.md) and the median.
//
// Usage: slot-floor [--sizes 256,1K,4K,16K] [--rounds 9] [--calls 20000] [--fresh]
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <plait/plait.hpp>

namespace {

constexpr std::size_t line = 64;
constexpr std::size_t largest_bytes = std::size_t{64} << 10;

struct alignas(line) flag {
  std::atomic<std::uint64_t> value{0};
};

/// What the two ranks share, mapped before the fork.
struct shared_area {
  flag posted[2];
  flag ping[2];
  alignas(line) float buffer[2][2][largest_bytes / sizeof(float)];  // [rank][round % 2]
  alignas(line) float input[2][largest_bytes / sizeof(float)];      // floor-0's vectors, [rank]
};

std::size_t parse_size(std::string_view text) {
  std::size_t n = std::strtoull(std::string(text).c_str(), nullptr, 10);
  if (text.ends_with('K')) n <<= 10;
  if (text.ends_with('M')) n <<= 20;
  return n;
}

void wait_for(const flag& f, std::uint64_t at_least) {
  while (f.value.load(std::memory_order_acquire) < at_least) {
  }
}

/// One rank's side of the floors.
class floors {
 public:
  floors(shared_area& area, int rank) : area_(area), me_(rank), peer_(1 - rank) {}

  void round_trip() {
    ++pings_;
    if (me_ == 0) {
      area_.ping[0].value.store(pings_, std::memory_order_release);
      wait_for(area_.ping[1], pings_);
    } else {
      wait_for(area_.ping[0], pings_);
      area_.ping[1].value.store(pings_, std::memory_order_release);
    }
  }

  /// `in` is this rank's vector in the shared area (area.input[rank]).
  void in_shared_memory(std::span<const float> in, std::span<float> out) {
    const std::size_t n = in.size();
    post_begin();
    const float* theirs = area_.input[peer_];
    post_end();
    const float* first = me_ == 0 ? in.data() : theirs;
    const float* second = me_ == 0 ? theirs : in.data();
    for (std::size_t i = 0; i < n; ++i) out[i] = first[i] + second[i];
    post_begin();
    post_end();
  }

  void one_round(std::span<const float> in, std::span<float> out) {
    const std::size_t n = in.size();
    float* mine = post_begin();
    std::memcpy(mine, in.data(), n * sizeof(float));
    const float* theirs = post_end();
    const float* first = me_ == 0 ? mine : theirs;  // rank order: x0 + x1 on both ranks
    const float* second = me_ == 0 ? theirs : mine;
    for (std::size_t i = 0; i < n; ++i) out[i] = first[i] + second[i];
  }

  void two_rounds(std::span<const float> in, std::span<float> out) {
    const std::size_t half = in.size() / 2;
    const std::size_t own = static_cast<std::size_t>(me_) * half;
    const std::size_t other = static_cast<std::size_t>(peer_) * half;
    float* mine = post_begin();
    std::memcpy(mine, in.data() + other, half * sizeof(float));  // the peer's half of this rank's vector
    const float* theirs = post_end();
    for (std::size_t i = 0; i < half; ++i) {
      out[own + i] = me_ == 0 ? in[own + i] + theirs[i] : theirs[i] + in[own + i];
    }
    mine = post_begin();
    std::memcpy(mine, out.data() + own, half * sizeof(float));
    theirs = post_end();
    std::memcpy(out.data() + other, theirs, half * sizeof(float));
  }

 private:
  // A buffer is written again two rounds on, once the peer has posted the
  // round between (it posts only after reading): plait's rule.
  float* post_begin() {
    ++round_;
    return area_.buffer[me_][round_ % 2];
  }
  const float* post_end() {
    area_.posted[me_].value.store(round_, std::memory_order_release);
    wait_for(area_.posted[peer_], round_);
    return area_.buffer[peer_][round_ % 2];
  }

  shared_area& area_;
  int me_;
  int peer_;
  std::uint64_t round_ = 0;
  std::uint64_t pings_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {256, 1024, 4096, 16384};
  int rounds = 9;
  int calls = 20000;
  bool fresh = false;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view option = argv[i];
    if (option == "--fresh") {
      fresh = true;
      --i;
      continue;
    }
    if (i + 1 == argc) break;
    const std::string_view value = argv[i + 1];
    if (option == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else if (option == "--calls") {
      calls = std::atoi(argv[i + 1]);
    } else if (option == "--sizes") {
      sizes.clear();
      std::size_t start = 0;
      while (start <= value.size()) {
        const std::size_t end = std::min(value.find(',', start), value.size());
        sizes.push_back(parse_size(value.substr(start, end - start)));
        start = end + 1;
      }
    } else {
      std::fprintf(stderr, "usage: slot-floor [--sizes 256,1K,4K,16K] [--rounds 9] [--calls 20000] [--fresh]\n");
      return 2;
    }
  }
  for (std::size_t s : sizes) {
    if (s == 0 || s > largest_bytes || s % (2 * sizeof(float)) != 0) {
      std::fprintf(stderr, "slot-floor: sizes must be even numbers of floats, at most %zu bytes\n", largest_bytes);
      return 2;
    }
  }
  void* mapped = mmap(nullptr, sizeof(shared_area), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    std::perror("slot-floor: mmap");
    return 1;
  }
  auto* area = new (mapped) shared_area;

  plait::shm::run_processes(2, [&](plait::shm::communicator& comm) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(comm.rank(), &set);
    sched_setaffinity(0, sizeof set, &set);
    floors floor(*area, comm.rank());
    if (comm.rank() == 0) {
      std::printf(
          "# slot-floor: 2 processes on CPUs 0 and 1, %d calls a sample, %d rounds%s; us a call, "
          "fastest and median sample\n",
          calls, rounds, fresh ? ", inputs rewritten before each call" : "");
      std::printf("%-8s %-12s %10s %10s\n", "bytes", "variant", "fastest", "median");
    }
    for (std::size_t bytes : sizes) {
      const std::size_t n = bytes / sizeof(float);
      std::vector<float> in(n), out(n);
      for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 97) + static_cast<float>(comm.rank());
      const std::span<float> shared_in(area->input[comm.rank()], n);
      std::copy(in.begin(), in.end(), shared_in.begin());
      auto allocated_in = comm.allocate<float>(n);  // collective: both ranks sweep the same sizes
      auto allocated_out = comm.allocate<float>(n);
      std::copy(in.begin(), in.end(), allocated_in.begin());
      const std::vector<float> pristine = in;
      struct variant {
        const char* name;
        std::function<void()> call;
        std::vector<double> us;
      };
      std::vector<variant> variants;
      // `input` is what the call reads (rewritten first with --fresh).
      const auto add = [&](const char* name, std::span<float> input, std::function<void()> call) {
        if (fresh && !input.empty()) {
          call = [&pristine, input, call = std::move(call)] {
            std::memcpy(input.data(), pristine.data(), input.size_bytes());
            call();
          };
        }
        variants.push_back({name, std::move(call), {}});
      };
      add("round-trip", {}, [&] { floor.round_trip(); });
      if (fresh) add("write", in, [] {});
      add("floor-0", shared_in, [&] { floor.in_shared_memory(shared_in, out); });
      add("floor-1", in, [&] { floor.one_round(in, out); });
      add("floor-2", in, [&] { floor.two_rounds(in, out); });
      add("plait", in,
          [&] { plait::all_reduce(comm, std::span<const float>(in), std::span<float>(out), plait::sum{}); });
      add("plait-alloc", allocated_in.span(), [&] {
        plait::all_reduce(comm, std::span<const float>(allocated_in.span()), allocated_out.span(), plait::sum{});
      });
      for (int r = 0; r < rounds; ++r) {
        // The order rotates each round; both ranks rotate alike.
        for (std::size_t k = 0; k < variants.size(); ++k) {
          variant& v = variants[(k + static_cast<std::size_t>(r)) % variants.size()];
          for (int i = 0; i < calls / 10; ++i) v.call();  // warm up
          comm.barrier();
          const auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < calls; ++i) v.call();
          const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          v.us.push_back(seconds * 1e6 / calls);
        }
      }
      for (std::size_t i = 0; i < n; ++i) {
        const float want = 2 * static_cast<float>(i % 97) + 1;
        for (const float got : {out[i], allocated_out.data()[i]}) {
          if (got != want) {
            std::fprintf(stderr, "slot-floor: rank %d, %zu bytes: element %zu is %g, not %g\n", comm.rank(), bytes, i,
                         static_cast<double>(got), static_cast<double>(want));
            std::exit(1);
          }
        }
      }
      if (comm.rank() == 0) {
        for (variant& v : variants) {
          std::sort(v.us.begin(), v.us.end());
          std::printf("%-8zu %-12s %10.3f %10.3f\n", bytes, v.name, v.us.front(), v.us[v.us.size() / 2]);
        }
      }
    }
  });
  return 0;
}

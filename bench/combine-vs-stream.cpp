// combine-vs-stream: how close is plait's host combine to what one core can
// stream? A standalone experiment (issue 30), not a test. It times the loop a
// reduction's fold run calls for every arriving partial (the type-erased
// kernel of plait/reduction/kernel.hpp, through its function pointer, as
// fold_plans calls it) against the one-core streaming ceiling compiled with
// the same flags in this file:
//
//   add          the ceiling: c[i] = a[i] + b[i] on float (for every type:
//                bytes are bytes; double and int32 have their own rows too)
//   add-T        the same loop on T (double, int32)
//   cvt-T        16-bit types: convert both to float, add, round back (bf16:
//                shift and round-to-nearest-even; half: plait::half's own
//                conversions), the loop the issue compares bf16 with
//   plait-T      kernel_for<T>(plait::sum{}).combine, out disjoint from both
//   plait-T:in   the same, out == left (acc = acc + arriving: what the fold
//                run does once a block holds a partial)
//
// Each variant runs `iters` calls per sample (sized to about 4 ms of this
// thread's CPU time, which leaves out the time other processes held the core
// on a shared machine); variants are interleaved in a new random order every
// round, and the figure is the median over rounds. Sizes are bytes of one operand; throughput counts the
// bytes of both reads and the write (3 x size / time), as a STREAM add does.
// The ratio column is plait's time against its ceiling (add for fp32, fp64 and
// int32 of the same bytes; cvt-T for the 16-bit types): 1.0 means as fast.
//
// Usage: combine-vs-stream [--sizes 4K,64K,1M,16M,64M] [--rounds 9]
//                          [--types f32,f64,i32,bf16,f16] [--cpu N]
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "plait/reduction/kernel.hpp"

namespace {

// This thread's CPU time: on a shared machine the time another process held
// the core is not the loop's (the variants' order is random all the same).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

std::size_t parse_size(const std::string& text) {
  char* end = nullptr;
  std::size_t value = std::strtoull(text.c_str(), &end, 10);
  if (*end == 'K' || *end == 'k') value <<= 10;
  if (*end == 'M' || *end == 'm') value <<= 20;
  if (*end == 'G' || *end == 'g') value <<= 30;
  return value;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > at) parts.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return parts;
}

// The ceilings: plain loops, noinline so that each is compiled as a loop over
// its own arguments, as the kernel is.
template <class T>
[[gnu::noinline]] void add_loop(const T* __restrict a, const T* __restrict b, T* __restrict c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

// bfloat16 <-> float as a streaming loop would write them: a shift, and
// round-to-nearest-even with NaN made quiet.
inline float bf16_to_float(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }
inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const std::uint32_t quiet = (x >> 16) | 0x40u;
  return static_cast<std::uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

[[gnu::noinline]] void cvt_bf16(const std::uint16_t* __restrict a, const std::uint16_t* __restrict b,
                                std::uint16_t* __restrict c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

[[gnu::noinline]] void cvt_half(const plait::half* __restrict a, const plait::half* __restrict b,
                                plait::half* __restrict c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = plait::half(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

struct variant {
  std::string name;
  std::string ceiling;  // the variant this one's ratio is taken against (empty: none)
  std::function<void(std::size_t bytes)> call;
  std::vector<double> samples;  // seconds per call
  std::size_t iters = 1;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Random but finite values of every type, so that no NaN or denormal path
// takes part unless the data has one.
void fill(std::byte* data, std::size_t bytes, const std::string& type, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-100.0f, 100.0f);
  if (type == "f32") {
    for (std::size_t i = 0; i < bytes / 4; ++i) plait::detail::store_element(data, i, value(rng));
  } else if (type == "f64") {
    for (std::size_t i = 0; i < bytes / 8; ++i) plait::detail::store_element(data, i, double(value(rng)));
  } else if (type == "i32") {
    for (std::size_t i = 0; i < bytes / 4; ++i) plait::detail::store_element(data, i, std::int32_t(rng()));
  } else if (type == "bf16") {
    for (std::size_t i = 0; i < bytes / 2; ++i) plait::detail::store_element(data, i, plait::bfloat16(value(rng)));
  } else {
    for (std::size_t i = 0; i < bytes / 2; ++i) plait::detail::store_element(data, i, plait::half(value(rng)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (const char* s : {"4K", "16K", "64K", "256K", "1M", "4M", "16M", "64M"}) sizes.push_back(parse_size(s));
  std::vector<std::string> types = {"f32", "f64", "i32", "bf16", "f16"};
  int rounds = 9;
  int cpu = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--sizes") {
      sizes.clear();
      for (const std::string& s : split(value)) sizes.push_back(parse_size(s));
    } else if (flag == "--rounds") {
      rounds = std::atoi(value.c_str());
    } else if (flag == "--types") {
      types = split(value);
    } else if (flag == "--cpu") {
      cpu = std::atoi(value.c_str());
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
  }

  const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
  // 64-byte aligned, as the engine's allocations are; the kernel does not rely on it.
  auto make = [&] { return static_cast<std::byte*>(std::aligned_alloc(64, (largest + 63) / 64 * 64)); };
  std::byte* a = make();
  std::byte* b = make();
  std::byte* c = make();

  const plait::detail::reduction_kernel kernels[] = {
      plait::detail::kernel_for<float>(plait::sum{}),        plait::detail::kernel_for<double>(plait::sum{}),
      plait::detail::kernel_for<std::int32_t>(plait::sum{}), plait::detail::kernel_for<plait::bfloat16>(plait::sum{}),
      plait::detail::kernel_for<plait::half>(plait::sum{}),
  };
  const char* kernel_types[] = {"f32", "f64", "i32", "bf16", "f16"};

  std::printf("# combine-vs-stream: one core%s, medians of %d interleaved rounds; GB/s = 3 x size / time\n",
              cpu >= 0 ? " (pinned)" : "", rounds);
  std::printf("%-10s %-6s %-12s %10s %9s %7s\n", "size", "type", "variant", "us/call", "GB/s", "ratio");
  for (const std::size_t size : sizes) {
    for (const std::string& type : types) {
      fill(a, size, type, 11);
      fill(b, size, type, 12);
      fill(c, size, type, 13);
      std::vector<variant> variants;
      auto add = [&](std::string name, std::string ceiling_name, std::function<void(std::size_t)> call) {
        variants.push_back({std::move(name), std::move(ceiling_name), std::move(call), {}, 1});
      };
      add("add", "", [&](std::size_t bytes) {
        add_loop(reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b), reinterpret_cast<float*>(c),
                 bytes / 4);
      });
      std::string ceiling = "add";
      if (type == "f64") {
        add("add-f64", "", [&](std::size_t bytes) {
          add_loop(reinterpret_cast<const double*>(a), reinterpret_cast<const double*>(b), reinterpret_cast<double*>(c),
                   bytes / 8);
        });
      } else if (type == "i32") {
        // Unsigned: the wrap plait::sum gives signed integers, without undefined behaviour.
        add("add-i32", "", [&](std::size_t bytes) {
          add_loop(reinterpret_cast<const std::uint32_t*>(a), reinterpret_cast<const std::uint32_t*>(b),
                   reinterpret_cast<std::uint32_t*>(c), bytes / 4);
        });
      } else if (type == "bf16") {
        ceiling = "cvt-bf16";
        add("cvt-bf16", "", [&](std::size_t bytes) {
          cvt_bf16(reinterpret_cast<const std::uint16_t*>(a), reinterpret_cast<const std::uint16_t*>(b),
                   reinterpret_cast<std::uint16_t*>(c), bytes / 2);
        });
      } else if (type == "f16") {
        ceiling = "cvt-f16";
        add("cvt-f16", "", [&](std::size_t bytes) {
          cvt_half(reinterpret_cast<const plait::half*>(a), reinterpret_cast<const plait::half*>(b),
                   reinterpret_cast<plait::half*>(c), bytes / 2);
        });
      }
      const std::size_t k = static_cast<std::size_t>(
          std::find_if(std::begin(kernel_types), std::end(kernel_types), [&](const char* t) { return type == t; }) -
          std::begin(kernel_types));
      const plait::detail::reduction_kernel& kernel = kernels[k];
      add("plait-" + type, ceiling,
          [&](std::size_t bytes) { kernel.combine(kernel.state, a, b, c, bytes / kernel.element_bytes); });
      add("plait-" + type + ":in", ceiling,
          [&](std::size_t bytes) { kernel.combine(kernel.state, c, b, c, bytes / kernel.element_bytes); });
      // Calls per sample: about 4 ms of the ceiling.
      for (variant& v : variants) {
        const double start = cpu_seconds();
        v.call(size);
        const double once = cpu_seconds() - start;
        v.iters = std::max<std::size_t>(1, static_cast<std::size_t>(4e-3 / std::max(once, 1e-9)));
        v.call(size);  // warm
      }
      std::mt19937 order_rng(static_cast<unsigned>(size) ^ 0x5eed);
      std::vector<std::size_t> order(variants.size());
      for (int r = 0; r < rounds; ++r) {
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), order_rng);
        for (std::size_t i : order) {
          variant& v = variants[i];
          const double start = cpu_seconds();
          for (std::size_t it = 0; it < v.iters; ++it) v.call(size);
          v.samples.push_back((cpu_seconds() - start) / static_cast<double>(v.iters));
        }
      }
      for (const variant& v : variants) {
        const double t = median(v.samples);
        double ratio = 0;
        for (const variant& w : variants) {
          if (!v.ceiling.empty() && w.name == v.ceiling) ratio = median(w.samples) / t;
        }
        char ratio_text[16] = "";
        if (ratio > 0) std::snprintf(ratio_text, sizeof ratio_text, "%.2f", ratio);
        std::printf("%-10zu %-6s %-12s %10.2f %9.2f %7s\n", size, type.c_str(), v.name.c_str(), t * 1e6,
                    3.0 * static_cast<double>(size) / t / 1e9, ratio_text);
      }
      std::fflush(stdout);
    }
  }
  std::free(a);
  std::free(b);
  std::free(c);
  return 0;
}

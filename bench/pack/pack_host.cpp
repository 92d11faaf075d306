// Host packing bandwidth: plait::pack and plait::unpack of strided regions
// (runs of R bytes, 2R apart) against one memcpy of the same number of bytes,
// measured in the same run. Prints one row per run size: GB/s of memcpy,
// pack and unpack, and pack/unpack as a fraction of memcpy (the target is
// >= 0.8 for runs of a few hundred bytes and more). Every timed pack is
// verified once. `--quick` runs a tiny size for the smoke test.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include <plait/core/region.hpp>

namespace {

using clock_type = std::chrono::steady_clock;

template <class Fn>
double best_seconds(int repeats, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = clock_type::now();
    fn();
    const auto t1 = clock_type::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string_view(argv[1]) == "--quick";
  const std::size_t total = quick ? (std::size_t{1} << 16) : (std::size_t{64} << 20);  // packed bytes per call
  const int repeats = quick ? 1 : 7;
  const std::size_t run_sizes[] = {8, 16, 64, 256, 1024, 4096, 65536};

  std::printf("# host pack/unpack: %zu MiB packed per call, runs 2R apart, best of %d\n", total >> 20, repeats);
  std::printf("%10s %12s %12s %12s %8s %8s\n", "run_bytes", "memcpy_GB/s", "pack_GB/s", "unpack_GB/s", "pack/mc",
              "unpk/mc");
  int failures = 0;
  for (std::size_t run : run_sizes) {
    const std::size_t runs = total / run;
    std::vector<std::byte> user(runs * run * 2);
    std::vector<std::byte> packed(runs * run);
    std::vector<std::byte> copy(runs * run);
    for (std::size_t i = 0; i < user.size(); ++i) user[i] = static_cast<std::byte>(i * 31 + 7);
    plait::region r = plait::region::contiguous(user.data(), run);
    r.dims = 1;
    r.extent[0] = runs;
    r.stride[0] = static_cast<std::ptrdiff_t>(2 * run);

    plait::pack(r, packed.data());
    for (std::size_t k = 0; k < runs; ++k) {
      if (std::memcmp(packed.data() + k * run, user.data() + 2 * k * run, run) != 0) {
        ++failures;
        break;
      }
    }
    const double bytes = static_cast<double>(runs * run);
    const double t_memcpy = best_seconds(repeats, [&] { std::memcpy(copy.data(), user.data(), runs * run); });
    const double t_pack = best_seconds(repeats, [&] { plait::pack(r, packed.data()); });
    const double t_unpack = best_seconds(repeats, [&] { plait::unpack(packed.data(), r); });
    std::printf("%10zu %12.2f %12.2f %12.2f %8.2f %8.2f\n", run, bytes / t_memcpy / 1e9, bytes / t_pack / 1e9,
                bytes / t_unpack / 1e9, t_memcpy / t_pack, t_memcpy / t_unpack);
  }
  if (failures != 0) {
    std::printf("pack-bench-host: packed bytes differ from the source for %d run sizes\n", failures);
    return 1;
  }
  return 0;
}

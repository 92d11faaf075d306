// Device packing bandwidth for scripts/gpu-check: plait::device::pack and
// unpack of strided regions (runs of R bytes, 2R apart) against a
// device-to-device cudaMemcpyAsync of the same number of bytes, timed with
// CUDA events on one stream in the same run. Bandwidth counts the packed
// bytes once (as memcpy's does). Target: >= 0.85 of memcpy for runs >= 16
// bytes. Each size's packed bytes are verified once against the host packer.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <vector>

#include <plait/core/region.hpp>
#include <plait/cuda.hpp>

namespace {

#define PLAIT_BENCH_CHECK(call)                                                          \
  do {                                                                                   \
    const cudaError_t plait_bench_e = (call);                                            \
    if (plait_bench_e != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(plait_bench_e)); \
      return 2;                                                                          \
    }                                                                                    \
  } while (0)

template <class Fn>
float best_ms(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, int repeats, Fn&& fn) {
  float best = 1e30f;
  for (int r = 0; r < repeats; ++r) {
    cudaEventRecord(start, stream);
    fn();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    best = std::min(best, ms);
  }
  return best;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("pack-bench-device: no CUDA device; nothing measured\n");
    return 0;
  }
  const std::size_t total = std::size_t{256} << 20;  // packed bytes per call
  const int repeats = 10;
  const std::size_t run_sizes[] = {4, 8, 16, 32, 64, 256, 1024, 4096, 65536};

  std::byte* user = nullptr;
  std::byte* packed = nullptr;
  std::byte* copy = nullptr;
  PLAIT_BENCH_CHECK(cudaMalloc(reinterpret_cast<void**>(&user), 2 * total));
  PLAIT_BENCH_CHECK(cudaMalloc(reinterpret_cast<void**>(&packed), total));
  PLAIT_BENCH_CHECK(cudaMalloc(reinterpret_cast<void**>(&copy), total));
  PLAIT_BENCH_CHECK(cudaMemset(user, 0x11, 2 * total));
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  PLAIT_BENCH_CHECK(cudaStreamCreate(&stream));
  PLAIT_BENCH_CHECK(cudaEventCreate(&start));
  PLAIT_BENCH_CHECK(cudaEventCreate(&stop));

  // A recognisable pattern for the one verification per size.
  std::vector<std::byte> host(2 * total);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::byte>((i * 2654435761u) >> 11);
  PLAIT_BENCH_CHECK(cudaMemcpy(user, host.data(), host.size(), cudaMemcpyHostToDevice));

  std::printf("# device pack/unpack: %zu MiB packed per call, runs 2R apart, best of %d\n", total >> 20, repeats);
  std::printf("%10s %12s %12s %12s %8s %8s\n", "run_bytes", "memcpy_GB/s", "pack_GB/s", "unpack_GB/s", "pack/mc",
              "unpk/mc");
  int failures = 0;
  for (std::size_t run : run_sizes) {
    const std::size_t runs = total / run;
    plait::region r = plait::region::contiguous(user, run);
    r.dims = 1;
    r.extent[0] = runs;
    r.stride[0] = static_cast<std::ptrdiff_t>(2 * run);

    PLAIT_BENCH_CHECK(plait::device::pack(r, packed, stream));
    PLAIT_BENCH_CHECK(cudaStreamSynchronize(stream));
    std::vector<std::byte> got(runs * run);
    std::vector<std::byte> want(runs * run);
    PLAIT_BENCH_CHECK(cudaMemcpy(got.data(), packed, got.size(), cudaMemcpyDeviceToHost));
    plait::region on_host = r;
    on_host.data = host.data();
    plait::pack(on_host, want.data());
    if (got != want) ++failures;

    const double bytes = static_cast<double>(runs * run);
    const float t_memcpy = best_ms(stream, start, stop, repeats, [&] {
      cudaMemcpyAsync(copy, packed, runs * run, cudaMemcpyDeviceToDevice, stream);
    });
    const float t_pack = best_ms(stream, start, stop, repeats, [&] { plait::device::pack(r, packed, stream); });
    const float t_unpack = best_ms(stream, start, stop, repeats, [&] { plait::device::unpack(packed, r, stream); });
    std::printf("%10zu %12.1f %12.1f %12.1f %8.2f %8.2f\n", run, bytes / t_memcpy / 1e6, bytes / t_pack / 1e6,
                bytes / t_unpack / 1e6, t_memcpy / t_pack, t_memcpy / t_unpack);
  }
  PLAIT_BENCH_CHECK(cudaGetLastError());
  cudaFree(user);
  cudaFree(packed);
  cudaFree(copy);
  cudaStreamDestroy(stream);
  if (failures != 0) {
    std::printf("pack-bench-device: device pack differs from the host packer for %d run sizes\n", failures);
    return 1;
  }
  return 0;
}

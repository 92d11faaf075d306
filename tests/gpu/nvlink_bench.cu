// busbw sweep of the NVLink transport, like nccl-tests' all_gather_perf: P
// ranks (processes bootstrapped over shm, rank r on GPU r % device_count),
// all-gather of S bytes in total (S/P per rank) with plait::ring, for S from
// 64 KiB to 256 MiB. Per size: time per call (max over ranks of the mean over
// iterations, timed with CUDA events on each rank's stream), algbw = S / time,
// busbw = algbw x (P-1)/P, and a cudaMemcpy device-to-device ceiling of S
// bytes on rank 0's GPU measured in the same run. Every size is verified once.
// Then the same calls with both buffers registered (register_buffer:
// zero-copy, peers read the send data in place instead of through staging):
// its busbw in the `zc_busbw` column, verified too.
//
// With one GPU the ranks share it (time-sliced between processes): the
// numbers then measure the protocol's overhead, not NVLink.
//
// Usage: nvlink_bench [ranks=2] [max_bytes=268435456]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <plait/algorithm/ring.hpp>
#include <plait/cuda.hpp>
#include <plait/plait.hpp>

#include "../support/harness.hpp"
#include "pack_checks.cuh"  // gpu_checks::gpu_present

namespace {

struct result {
  double seconds = 0;
  double memcpy_seconds = 0;
  bool ok = true;
};

int iterations_for(std::size_t bytes) {
  // Enough to average out launch jitter, few enough that ranks sharing one
  // GPU (time-sliced between processes) finish the sweep in seconds.
  return static_cast<int>(std::clamp<std::size_t>((std::size_t{512} << 20) / std::max<std::size_t>(bytes, 1), 3, 20));
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::size_t max_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (std::size_t{256} << 20);
  if (!gpu_checks::gpu_present()) {
    std::printf("nvlink_bench: no CUDA device; nothing run\n");
    return 0;
  }
  std::vector<std::size_t> sizes;
  for (std::size_t s = std::size_t{64} << 10; s <= max_bytes; s *= 4) sizes.push_back(s / (16 * ranks) * (16 * ranks));

  // One slot per size for rank 0's findings; the other ranks only send their times to it.
  const auto verdicts = plait_test::run_ranks(plait_test::mode::processes, ranks, [&](plait::shm::communicator& boot) {
    int count = 1;
    cudaGetDeviceCount(&count);
    const int device = boot.rank() % count;
    cudaSetDevice(device);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    std::string report;
    {
      plait::nvlink::communicator gpu(boot, device, stream);
      cudaEvent_t start = nullptr, stop = nullptr;
      cudaEventCreate(&start);
      cudaEventCreate(&stop);
      if (boot.rank() == 0) {
        char line[256];
        std::snprintf(line, sizeof line, "# nvlink all_gather<ring>, %d ranks on %d GPU(s), staging %u x %llu bytes\n",
                      ranks, count, gpu.shape().slots, static_cast<unsigned long long>(gpu.shape().slot_bytes));
        report += line;
        report +=
            "#      bytes  iters    time_us  algbw_GB/s  busbw_GB/s  memcpy_GB/s  verified  zc_time_us  zc_busbw_GB/s  "
            "zc_verified\n";
      }
      for (std::size_t total : sizes) {
        const std::size_t shard = total / static_cast<std::size_t>(ranks);
        std::byte* send = nullptr;
        std::byte* recv = nullptr;
        cudaMalloc(&send, shard);
        cudaMalloc(&recv, total);
        cudaMemset(send, boot.rank() + 1, shard);
        cudaMemset(recv, 0, total);
        const std::span<const std::byte> in(send, shard);
        const std::span<std::byte> out(recv, total);
        // Warm up and verify.
        plait::all_gather<plait::ring>(gpu, in, out);
        gpu.synchronize();
        std::vector<unsigned char> host(total);
        cudaMemcpy(host.data(), recv, total, cudaMemcpyDeviceToHost);
        bool ok = true;
        for (std::size_t i = 0; i < total; ++i) ok = ok && host[i] == static_cast<unsigned char>(i / shard + 1);
        const int iters = iterations_for(total);
        gpu.barrier();
        cudaEventRecord(start, stream);
        for (int i = 0; i < iters; ++i) plait::all_gather<plait::ring>(gpu, in, out);
        cudaEventRecord(stop, stream);
        gpu.synchronize();
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        // Zero-copy: the same calls with both buffers registered (registration not timed).
        float zc_ms = 0;
        bool zc_ok = true;
        {
          auto registered_in = gpu.register_buffer(in);
          auto registered_out = gpu.register_buffer(out);
          cudaMemsetAsync(recv, 0, total, stream);
          plait::all_gather<plait::ring>(gpu, in, out);
          gpu.synchronize();
          cudaMemcpy(host.data(), recv, total, cudaMemcpyDeviceToHost);
          for (std::size_t i = 0; i < total; ++i) zc_ok = zc_ok && host[i] == static_cast<unsigned char>(i / shard + 1);
          zc_ok = zc_ok && registered_in.zero_copy_peers() == ranks - 1;
          gpu.barrier();
          cudaEventRecord(start, stream);
          for (int i = 0; i < iters; ++i) plait::all_gather<plait::ring>(gpu, in, out);
          cudaEventRecord(stop, stream);
          gpu.synchronize();
          cudaEventElapsedTime(&zc_ms, start, stop);
        }
        double mine[4] = {ms / 1e3 / iters, ok ? 1.0 : 0.0, zc_ms / 1e3 / iters, zc_ok ? 1.0 : 0.0};
        std::vector<double> all(4 * static_cast<std::size_t>(ranks));
        plait::all_gather<plait::ring>(boot, std::span<const double>(mine, 4), all);
        if (boot.rank() == 0) {
          double seconds = 0;
          double zc_seconds = 0;
          bool verified = true;
          bool zc_verified = true;
          for (int r = 0; r < ranks; ++r) {
            const std::size_t at = 4 * static_cast<std::size_t>(r);
            seconds = std::max(seconds, all[at]);
            verified = verified && all[at + 1] == 1.0;
            zc_seconds = std::max(zc_seconds, all[at + 2]);
            zc_verified = zc_verified && all[at + 3] == 1.0;
          }
          // Ceiling: one device-to-device copy of the whole result on this GPU.
          cudaEventRecord(start, stream);
          for (int i = 0; i < iters; ++i) cudaMemcpyAsync(recv, send, shard, cudaMemcpyDeviceToDevice, stream);
          cudaEventRecord(stop, stream);
          cudaStreamSynchronize(stream);
          float copy_ms = 0;
          cudaEventElapsedTime(&copy_ms, start, stop);
          const double copy_seconds = copy_ms / 1e3 / iters;
          const double algbw = static_cast<double>(total) / seconds / 1e9;
          const double busbw = algbw * (ranks - 1) / ranks;
          const double zc_busbw = static_cast<double>(total) / zc_seconds / 1e9 * (ranks - 1) / ranks;
          char line[320];
          std::snprintf(line, sizeof line, "%12zu %6d %10.1f %11.2f %11.2f %12.2f  %8s  %10.1f  %13.2f  %11s\n", total,
                        iters, seconds * 1e6, algbw, busbw, static_cast<double>(shard) / copy_seconds / 1e9,
                        verified ? "yes" : "NO", zc_seconds * 1e6, zc_busbw, zc_verified ? "yes" : "NO");
          report += line;
          if (!verified || !zc_verified) report += "VERIFY FAILED\n";
        }
        cudaFree(send);
        cudaFree(recv);
      }
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
    }
    cudaStreamDestroy(stream);
    if (boot.rank() == 0) std::fputs(report.c_str(), stdout);
    std::fflush(stdout);
    return report.find("VERIFY FAILED") == std::string::npos ? std::string() : std::string("verification failed");
  });
  const std::string failures = plait_test::failures(verdicts);
  if (!failures.empty()) {
    std::printf("nvlink_bench: %s", failures.c_str());
    return 1;
  }
  return 0;
}

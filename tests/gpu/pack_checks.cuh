// GPU checks of device packing, as plain code: run by the Catch2 test
// tests/test_pack_cuda.cu and by the standalone program tests/gpu/pack_check.cu
// that scripts/gpu-check builds where there is no Catch2. Each check returns
// "" or what went wrong.
#pragma once

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <plait/cuda.hpp>

#include "../support/pack_cases.hpp"

namespace gpu_checks {

/// Whether a CUDA device is usable, asked in a forked child so this process
/// does not initialise CUDA (a process that has must not fork, and the shm
/// transport's run_processes forks).
inline bool gpu_present() {
  const pid_t child = fork();
  if (child < 0) return false;
  if (child == 0) {
    int count = 0;
    _exit(cudaGetDeviceCount(&count) == cudaSuccess && count > 0 ? 0 : 1);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

inline std::string cuda_text(cudaError_t e, const char* what) {
  return std::string(what) + ": " + cudaGetErrorString(e);
}

/// Device memory for pack_cases::check_random; downloads wait for `stream`.
struct device_buffers {
  using handle = std::size_t;
  cudaStream_t stream = nullptr;
  std::vector<std::pair<std::byte*, std::size_t>> blocks;

  explicit device_buffers(cudaStream_t s) : stream(s) {}
  device_buffers(const device_buffers&) = delete;
  device_buffers& operator=(const device_buffers&) = delete;
  ~device_buffers() {
    for (auto& [p, n] : blocks) cudaFree(p);
  }
  handle upload(const std::vector<std::byte>& bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes.size() + 1) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
    cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
    blocks.emplace_back(static_cast<std::byte*>(p), bytes.size());
    return blocks.size() - 1;
  }
  std::byte* data(handle h) { return blocks[h].first; }
  std::vector<std::byte> download(handle h) {
    cudaStreamSynchronize(stream);
    std::vector<std::byte> out(blocks[h].second);
    cudaMemcpy(out.data(), blocks[h].first, out.size(), cudaMemcpyDeviceToHost);
    return out;
  }
};

/// Random regions through the CUDA kernels, compared with the host packer.
inline std::string random_regions() {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return "cudaStreamCreate failed";
  std::string verdict;
  {
    device_buffers memory(stream);
    cudaError_t status = cudaSuccess;
    int vector_cases = 0;
    verdict =
        pack_cases::check_random(plait::device::detail::launcher{stream, &status}, memory, 300, 11u, &vector_cases);
    if (verdict.empty() && status != cudaSuccess) verdict = cuda_text(status, "kernel launch");
    if (verdict.empty() && vector_cases < 20) verdict = "too few cases took the 16-byte path";
  }
  cudaStreamDestroy(stream);
  return verdict;
}

/// A 64 MiB strided region (16-byte runs, 32 bytes apart) packed and unpacked
/// on a stream, with the gaps checked to be untouched.
inline std::string large_strided() {
  const std::size_t runs = std::size_t{4} << 20;
  const std::size_t span = runs * 32;
  std::vector<std::byte> host(span);
  for (std::size_t i = 0; i < span; ++i) host[i] = static_cast<std::byte>(i * 2654435761u >> 13);
  plait::region r = plait::region::contiguous(host.data(), 16);
  r.dims = 1;
  r.extent[0] = runs;
  r.stride[0] = 32;
  std::vector<std::byte> want(r.bytes());
  plait::pack(r, want.data());

  std::byte* user = nullptr;
  std::byte* packed = nullptr;
  std::byte* back = nullptr;
  cudaStream_t stream = nullptr;
  std::string verdict;
  if (cudaMalloc(reinterpret_cast<void**>(&user), span) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&packed), r.bytes()) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&back), span) != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess) {
    verdict = "allocation failed";
  } else {
    cudaMemcpy(user, host.data(), span, cudaMemcpyHostToDevice);
    cudaMemset(back, 0x5A, span);
    plait::region on_device = r;
    on_device.data = user;
    plait::region into = r;
    into.data = back;
    cudaError_t e = plait::device::pack(on_device, packed, stream);
    if (e == cudaSuccess) e = plait::device::unpack(packed, into, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
      verdict = cuda_text(e, "pack/unpack");
    } else {
      std::vector<std::byte> got(r.bytes());
      cudaMemcpy(got.data(), packed, got.size(), cudaMemcpyDeviceToHost);
      if (got != want) verdict = "device pack differs from host pack";
      std::vector<std::byte> restored(span);
      cudaMemcpy(restored.data(), back, span, cudaMemcpyDeviceToHost);
      for (std::size_t i = 0; verdict.empty() && i < span; ++i) {
        const bool in_run = (i % 32) < 16;
        if (restored[i] != (in_run ? host[i] : std::byte{0x5A})) verdict = "unpack wrong at byte " + std::to_string(i);
      }
    }
  }
  cudaFree(user);
  cudaFree(packed);
  cudaFree(back);
  if (stream != nullptr) cudaStreamDestroy(stream);
  return verdict;
}

/// Every check, by name.
inline std::vector<std::pair<std::string, std::function<std::string()>>> all() {
  return {{"device pack/unpack of random regions matches the host packer", random_regions},
          {"device pack/unpack of a 64 MiB strided region on a stream", large_strided}};
}

}  // namespace gpu_checks

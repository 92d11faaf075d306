// GPU checks of the NVLink transport (plait::nvlink::communicator), as plain
// code: run by the Catch2 test tests/test_nvlink_cuda.cu and by the
// standalone program tests/gpu/nvlink_check.cu that scripts/gpu-check builds
// where there is no Catch2 and no MPI. Each check returns "" or what went wrong.
//
// Ranks are shm processes (the CUDA IPC path) or shm threads of one process
// (the same-process path, peer access when devices differ), all on device
// `rank % device_count`, so a single GPU exercises every path. The parent
// process never initialises CUDA itself (it forks the ranks).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <plait/algorithm/automatic.hpp>
#include <plait/algorithm/bruck.hpp>
#include <plait/algorithm/direct.hpp>
#include <plait/algorithm/neighbor_exchange.hpp>
#include <plait/algorithm/pairwise.hpp>
#include <plait/algorithm/recursive_doubling.hpp>
#include <plait/algorithm/ring.hpp>
#include <plait/algorithm/tree.hpp>
#include <plait/cuda.hpp>
#include <plait/plait.hpp>

#include "../support/harness.hpp"

namespace nvlink_checks {

/// Device memory holding a copy of a host vector; copied back on request.
/// Stream-ordered (cudaMallocAsync / cudaFreeAsync on the rank's stream):
/// cudaFree would wait for the whole device, including a thread-rank's step
/// kernel that waits for this rank's next launch.
template <class T>
class device_vector {
 public:
  device_vector(const std::vector<T>& host, cudaStream_t stream) : size_(host.size()), stream_(stream) {
    void* p = nullptr;
    if (cudaMallocAsync(&p, std::max<std::size_t>(size_, 1) * sizeof(T), stream_) != cudaSuccess) {
      throw std::runtime_error("cudaMallocAsync failed");
    }
    data_ = static_cast<T*>(p);
    if (size_ != 0) cudaMemcpyAsync(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice, stream_);
    cudaStreamSynchronize(stream_);  // the host vector may go away
  }
  device_vector(const device_vector&) = delete;
  device_vector& operator=(const device_vector&) = delete;
  ~device_vector() { cudaFreeAsync(data_, stream_); }
  [[nodiscard]] std::span<T> span() const { return {data_, size_}; }
  [[nodiscard]] T* data() const { return data_; }
  [[nodiscard]] std::vector<T> host() const {
    std::vector<T> out(size_);
    if (size_ != 0) cudaMemcpyAsync(out.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost, stream_);
    cudaStreamSynchronize(stream_);
    return out;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_;
  cudaStream_t stream_;
};

inline int device_for(int rank) {
  int count = 1;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) count = 1;
  return rank % count;
}

/// Runs body(gpu) on `ranks` shm ranks (processes or threads), each with an
/// NVLink communicator on its own stream.
template <class Fn>
std::string run_group(plait_test::mode m, int ranks, Fn&& body, plait::nvlink::options shape = {}) {
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& boot) -> std::string {
    const int device = device_for(boot.rank());
    cudaSetDevice(device);
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return "cudaStreamCreate failed";
    std::string verdict;
    try {
      plait::nvlink::communicator gpu(boot, device, stream, shape);
      // A hang becomes a timeout naming rank and peer well inside gpu-check's limit.
      gpu.set_timeout(std::chrono::seconds(60));
      verdict = body(gpu);
    } catch (const std::exception& e) {
      verdict = e.what();
    }
    cudaStreamDestroy(stream);
    return verdict;
  });
  return plait_test::failures(verdicts);
}

template <class T, class Algorithm>
std::string gather(plait::nvlink::communicator& gpu, std::size_t n) {
  std::vector<T> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = plait_test::make_value<T>(gpu.rank(), i);
  device_vector<T> send(mine, gpu.stream());
  device_vector<T> recv(std::vector<T>(n * static_cast<std::size_t>(gpu.size())), gpu.stream());
  plait::all_gather<Algorithm>(gpu, std::span<const T>(send.span()), recv.span());
  gpu.synchronize();
  std::vector<T> want;
  for (int r = 0; r < gpu.size(); ++r) {
    for (std::size_t i = 0; i < n; ++i) want.push_back(plait_test::make_value<T>(r, i));
  }
  return plait_test::compare(recv.host(), want, "all_gather n=" + std::to_string(n));
}

template <class T, class Algorithm>
std::string exchange(plait::nvlink::communicator& gpu, std::size_t n) {
  const auto p = static_cast<std::size_t>(gpu.size());
  std::vector<T> out(n * p);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = plait_test::make_value<T>(gpu.rank(), i);
  device_vector<T> send(out, gpu.stream());
  device_vector<T> recv(std::vector<T>(n * p), gpu.stream());
  plait::all_to_all<Algorithm>(gpu, std::span<const T>(send.span()), recv.span());
  gpu.synchronize();
  std::vector<T> want;
  for (std::size_t src = 0; src < p; ++src) {
    for (std::size_t i = 0; i < n; ++i) {
      want.push_back(plait_test::make_value<T>(static_cast<int>(src), static_cast<std::size_t>(gpu.rank()) * n + i));
    }
  }
  return plait_test::compare(recv.host(), want, "all_to_all n=" + std::to_string(n));
}

/// all-gather along dimension 1 of [2, s, h] tensors (strided blocks: device packing).
template <class Algorithm>
std::string gather_along_1(plait::nvlink::communicator& gpu, std::size_t s, std::size_t h) {
  const auto p = static_cast<std::size_t>(gpu.size());
  std::vector<float> mine(2 * s * h);
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>(gpu.rank() * 100000 + static_cast<int>(i));
  device_vector<float> send(mine, gpu.stream());
  device_vector<float> recv(std::vector<float>(2 * s * p * h, -1.0f), gpu.stream());
  plait::tensor_view<const float, 3> x(send.data(), {2, s, h});
  plait::tensor_view<float, 3> y(recv.data(), {2, s * p, h});
  plait::all_gather<Algorithm, plait::along<1>>(gpu, x, y);
  gpu.synchronize();
  const std::vector<float> got = recv.host();
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t j = 0; j < s * p; ++j) {
      for (std::size_t k = 0; k < h; ++k) {
        const std::size_t from = j / s;
        const float want =
            static_cast<float>(static_cast<int>(from) * 100000 + static_cast<int>((b * s + j % s) * h + k));
        if (got[(b * s * p + j) * h + k] != want)
          return "along<1> wrong at (" + std::to_string(b) + "," + std::to_string(j) + "," + std::to_string(k) + ")";
      }
    }
  }
  return {};
}

template <class Algorithm>
std::string gather_all_sizes(plait::nvlink::communicator& gpu) {
  std::string v;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{37}, std::size_t{300000}}) {
    v += gather<std::uint64_t, Algorithm>(gpu, n);
    v += gather<plait_test::triple, Algorithm>(gpu, n);
  }
  v += gather_along_1<Algorithm>(gpu, 3, 5);
  return v;
}

template <class Algorithm>
std::string exchange_all_sizes(plait::nvlink::communicator& gpu) {
  std::string v;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{37}, std::size_t{100000}}) {
    v += exchange<std::uint16_t, Algorithm>(gpu, n);
    v += exchange<plait_test::triple, Algorithm>(gpu, n);
  }
  return v;
}

/// A receive nobody sends: the device wait ends at the timeout, the error
/// word says so, and synchronize() raises it as errc::timeout.
inline std::string device_timeout(plait::nvlink::communicator& gpu) {
  if (gpu.rank() != 0 || gpu.size() < 2) return {};
  gpu.set_timeout(std::chrono::milliseconds(300));
  device_vector<std::byte> in(std::vector<std::byte>(64), gpu.stream());
  try {
    gpu.recv(1, in.span(), 77);  // enqueued: returns at once
    gpu.synchronize();
    return "no timeout";
  } catch (const plait::error& e) {
    if (e.code() != plait::errc::timeout) return std::string("not a timeout: ") + e.what();
  }
  try {
    gpu.synchronize();
    return "not poisoned after the device timeout";
  } catch (const plait::error&) {
  }
  return {};
}

/// Sizes that disagree are size_mismatch, found on the device.
inline std::string device_size_mismatch(plait::nvlink::communicator& gpu) {
  if (gpu.size() != 2) return {};
  gpu.set_timeout(std::chrono::seconds(2));
  device_vector<std::byte> out(std::vector<std::byte>(100), gpu.stream());
  device_vector<std::byte> in(std::vector<std::byte>(gpu.rank() == 0 ? 50 : 100), gpu.stream());
  const int peer = 1 - gpu.rank();
  std::vector<plait::nvlink::communicator::request> r{gpu.irecv(peer, in.span(), 3),
                                                      gpu.isend(peer, std::span<const std::byte>(out.span()), 3)};
  try {
    gpu.wait_all(r);
    gpu.synchronize();
    if (gpu.rank() == 0) return "no size_mismatch";
  } catch (const plait::error& e) {
    if (gpu.rank() == 0 && e.code() != plait::errc::size_mismatch) return std::string("rank 0: ") + e.what();
    if (gpu.rank() == 1 && e.code() != plait::errc::timeout) return std::string("rank 1: ") + e.what();
  }
  return {};
}

/// Host (pageable) memory is refused before anything is enqueued.
inline std::string host_memory_refused(plait::nvlink::communicator& gpu) {
  std::vector<std::byte> host(16);
  try {
    (void)gpu.isend((gpu.rank() + 1) % gpu.size(), host, 1);
    return "pageable host memory accepted";
  } catch (const plait::error& e) {
    if (e.code() != plait::errc::invalid_argument) return std::string("not invalid_argument: ") + e.what();
  }
  return {};
}

/// Every check, by name.
inline std::vector<std::pair<std::string, std::function<std::string()>>> all() {
  using plait_test::mode;
  std::vector<std::pair<std::string, std::function<std::string()>>> out;
  // Processes first: the parent must not have touched CUDA when it forks
  // them, and thread-ranks initialise CUDA in the parent.
  for (mode m : {mode::processes, mode::threads}) {
    // Processes sharing a GPU progress one time slice at a time: fewer groups.
    const std::vector<int> sizes = m == mode::processes ? std::vector<int>{2, 4} : std::vector<int>{2, 3, 4};
    for (int p : sizes) {
      const std::string where = std::string(plait_test::to_string(m)) + " P=" + std::to_string(p);
      out.emplace_back("all_gather ring/pairwise/bruck/direct/tree/recursive_doubling/automatic, " + where, [m, p] {
        return run_group(m, p, [](plait::nvlink::communicator& gpu) {
          return gather_all_sizes<plait::ring>(gpu) + gather_all_sizes<plait::pairwise>(gpu) +
                 gather_all_sizes<plait::bruck>(gpu) + gather_all_sizes<plait::direct>(gpu) +
                 gather_all_sizes<plait::tree>(gpu) + gather_all_sizes<plait::recursive_doubling>(gpu) +
                 gather_all_sizes<plait::automatic>(gpu) +
                 (gpu.size() % 2 == 0 ? gather_all_sizes<plait::neighbor_exchange>(gpu) : std::string());
        });
      });
      out.emplace_back("all_to_all ring/pairwise/bruck/direct/automatic, " + where, [m, p] {
        return run_group(m, p, [](plait::nvlink::communicator& gpu) {
          return exchange_all_sizes<plait::ring>(gpu) + exchange_all_sizes<plait::pairwise>(gpu) +
                 exchange_all_sizes<plait::bruck>(gpu) + exchange_all_sizes<plait::direct>(gpu) +
                 exchange_all_sizes<plait::automatic>(gpu);
        });
      });
    }
    out.emplace_back(std::string("small slots (many chunks, slot reuse), ") + plait_test::to_string(m), [m] {
      return run_group(
          m, 3, [](plait::nvlink::communicator& gpu) { return gather<std::uint32_t, plait::ring>(gpu, 100003); },
          plait::nvlink::options{2, 4096});
    });
    out.emplace_back(std::string("host memory refused, ") + plait_test::to_string(m),
                     [m] { return run_group(m, 2, host_memory_refused); });
    out.emplace_back(std::string("device-side timeout, ") + plait_test::to_string(m),
                     [m] { return run_group(m, 2, device_timeout); });
    out.emplace_back(std::string("device-side size mismatch, ") + plait_test::to_string(m),
                     [m] { return run_group(m, 2, device_size_mismatch); });
  }
  return out;
}

}  // namespace nvlink_checks

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
#include <cstdio>
#include <functional>
#include <stdexcept>
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

/// Device memory from cudaMalloc (exportable by CUDA IPC, unlike the
/// stream-ordered pool). cudaMalloc/cudaFree may wait for the whole device,
/// so callers use it only while no step of any rank can be running: right
/// after a collective synchronize + barrier, and free before the next barrier.
class ipc_buffer {
 public:
  explicit ipc_buffer(std::size_t bytes) {
    if (cudaMalloc(&data_, bytes) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
  }
  ipc_buffer(const ipc_buffer&) = delete;
  ipc_buffer& operator=(const ipc_buffer&) = delete;
  ~ipc_buffer() { cudaFree(data_); }
  [[nodiscard]] std::byte* data() const { return static_cast<std::byte*>(data_); }

 private:
  void* data_ = nullptr;
};

/// register_buffer: a ring all-gather whose send and receive buffers are
/// registered (both inside larger cudaMalloc allocations, at an offset, so
/// the IPC export of an interior pointer is exercised) gives the right
/// result, every peer maps them (IPC for processes, addresses for threads),
/// and every byte sent is read in place; after unregistering, the same call
/// goes through staging again.
inline std::string register_zero_copy(plait::nvlink::communicator& gpu) {
  gpu.barrier();
  constexpr std::size_t n = 200003;  // odd: channel parts of uneven length
  const auto p = static_cast<std::size_t>(gpu.size());
  std::string verdict;
  {
    ipc_buffer send_memory(n * 8 + 4096 + 64), recv_memory(n * p * 8 + 8192);
    auto* send = reinterpret_cast<std::uint64_t*>(send_memory.data() + 4096 + 16);
    auto* recv = reinterpret_cast<std::uint64_t*>(recv_memory.data() + 128);
    std::vector<std::uint64_t> mine(n);
    for (std::size_t i = 0; i < n; ++i) mine[i] = plait_test::make_value<std::uint64_t>(gpu.rank(), i);
    cudaMemcpy(send, mine.data(), n * 8, cudaMemcpyHostToDevice);
    {
      auto a = gpu.register_buffer(std::span<std::uint64_t>(send, n));
      auto b = gpu.register_buffer(std::span<std::uint64_t>(recv, n * p));
      if (a.zero_copy_peers() != gpu.size() - 1 || b.zero_copy_peers() != gpu.size() - 1) {
        verdict += "peers mapping the buffers: " + std::to_string(a.zero_copy_peers()) + " and " +
                   std::to_string(b.zero_copy_peers()) + " of " + std::to_string(gpu.size() - 1) + "; ";
      }
      const auto zero_copy = gpu.bytes_zero_copy();
      const auto sent = gpu.bytes_sent();
      for (int round = 0; round < 3; ++round) {
        plait::all_gather<plait::ring>(gpu, std::span<const std::uint64_t>(send, n),
                                       std::span<std::uint64_t>(recv, n * p));
      }
      gpu.synchronize();
      if (gpu.size() > 1 && gpu.bytes_zero_copy() - zero_copy != gpu.bytes_sent() - sent)
        verdict += "not every byte sent was read in place; ";
      std::vector<std::uint64_t> got(n * p);
      cudaMemcpy(got.data(), recv, got.size() * 8, cudaMemcpyDeviceToHost);
      for (std::size_t i = 0; i < got.size() && verdict.size() < 200; ++i) {
        if (got[i] != plait_test::make_value<std::uint64_t>(static_cast<int>(i / n), i % n)) {
          verdict += "registered all_gather wrong at " + std::to_string(i) + "; ";
          break;
        }
      }
    }  // unregistered (collective)
    const auto zero_copy = gpu.bytes_zero_copy();
    plait::all_gather<plait::ring>(gpu, std::span<const std::uint64_t>(send, n), std::span<std::uint64_t>(recv, n * p));
    gpu.synchronize();
    if (gpu.bytes_zero_copy() != zero_copy) verdict += "read in place after unregistering; ";
  }  // cudaFree: before anyone's next launch
  gpu.barrier();
  return verdict;
}

/// register_buffer on stream-ordered pool memory (not IPC-exportable): the
/// registration succeeds, thread peers still read it in place, process peers
/// fall back to staging, and the result is right either way.
inline std::string register_pool_memory(plait::nvlink::communicator& gpu) {
  std::vector<std::uint32_t> mine(5000, static_cast<std::uint32_t>(gpu.rank()));
  device_vector<std::uint32_t> send(mine, gpu.stream());
  device_vector<std::uint32_t> recv(std::vector<std::uint32_t>(mine.size() * static_cast<std::size_t>(gpu.size())),
                                    gpu.stream());
  std::string verdict;
  {
    auto a = gpu.register_buffer(send.span());
    auto b = gpu.register_buffer(recv.span());
    std::printf("  (pool memory: %d of %d peers read it in place)\n", b.zero_copy_peers(), gpu.size() - 1);
    plait::all_gather<plait::ring>(gpu, std::span<const std::uint32_t>(send.span()), recv.span());
    gpu.synchronize();
  }
  const std::vector<std::uint32_t> got = recv.host();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != i / mine.size()) return "pool-memory all_gather wrong at " + std::to_string(i);
  }
  return verdict;
}

/// register_buffer refuses pageable host memory on every rank (before anything is mapped).
inline std::string register_host_memory_refused(plait::nvlink::communicator& gpu) {
  std::vector<std::byte> host(64);
  device_vector<std::byte> device(host, gpu.stream());
  try {
    auto r = gpu.rank() == 0 ? gpu.register_buffer(std::span<const std::byte>(host))
                             : gpu.register_buffer(std::span<const std::byte>(device.span()));
    return "pageable host memory registered";
  } catch (const plait::error& e) {
    if (e.code() != plait::errc::invalid_argument ||
        std::string(e.what()).find("rank 0 cannot register") == std::string::npos)
      return std::string("not the expected refusal: ") + e.what();
  }
  return {};
}

/// Check mode on device buffers: signatures go over the bootstrap in host
/// memory, so disagreeing sizes are size_mismatch naming both calls on every rank.
inline std::string check_mode_mismatch(plait::nvlink::communicator& gpu) {
  gpu.set_check_mode(true);
  const std::size_t n = gpu.rank() == 1 ? 3 : 2;
  device_vector<int> send(std::vector<int>(n), gpu.stream());
  device_vector<int> recv(std::vector<int>(n * static_cast<std::size_t>(gpu.size())), gpu.stream());
  std::string verdict;
  try {
    plait::all_gather<plait::ring>(gpu, std::span<const int>(send.span()), recv.span());
    verdict = "the disagreeing call went through";
  } catch (const plait::error& e) {
    const std::string text = e.what();
    if (e.code() != plait::errc::size_mismatch || text.find("blocks of 8 8") == std::string::npos ||
        text.find("rank 1 calls all_gather<ring> with blocks of 12 12") == std::string::npos)
      verdict = "not the expected size_mismatch: " + text;
  }
  // Agreeing calls still run with check mode on.
  if (verdict.empty()) verdict = gather<std::uint64_t, plait::ring>(gpu, 1000);
  gpu.set_check_mode(false);
  return verdict;
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
    out.emplace_back(std::string("register_buffer zero-copy (interior pointers), P=3, ") + plait_test::to_string(m),
                     [m] { return run_group(m, 3, register_zero_copy); });
    out.emplace_back(std::string("register_buffer on pool memory, P=2, ") + plait_test::to_string(m),
                     [m] { return run_group(m, 2, register_pool_memory); });
    out.emplace_back(std::string("register_buffer refuses host memory, ") + plait_test::to_string(m),
                     [m] { return run_group(m, 2, register_host_memory_refused); });
    out.emplace_back(std::string("check mode size mismatch, P=3, ") + plait_test::to_string(m),
                     [m] { return run_group(m, 3, check_mode_mismatch); });
  }
  return out;
}

}  // namespace nvlink_checks

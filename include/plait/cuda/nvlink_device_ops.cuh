// The CUDA device-operations policy of the NVLink transport: the protocol of
// protocol.hpp on GPUs.
//   - staging area: one cudaMalloc per rank, exported with
//     cudaIpcGetMemHandle, opened by peers in other processes with
//     cudaIpcOpenMemHandle; peers that are threads of the same process use
//     its address (with peer access enabled when their device differs);
//   - registered user buffers (register_buffer): exported with
//     cudaIpcGetMemHandle on their allocation's base (found through the
//     driver's cuMemGetAddressRange, reached with
//     cudaGetDriverEntryPointByVersion so nothing links libcuda), opened by
//     peers in other processes with cudaIpcOpenMemHandle, used by address by
//     peers that are threads; memory IPC cannot export (stream-ordered pool
//     allocations) still goes by address to threads and through staging to
//     processes;
//   - a step is one kernel on the stream, one thread block per lane; every
//     thread of a block copies (16-byte vectors when aligned, loads through
//     L2 so a peer's fresh writes are seen), thread 0 owns the flags through
//     ::cuda::atomic_ref at system scope;
//   - a step with combining receives (a reduction's, irecv_combine) runs the
//     step kernel instantiated for the reduction: a receive lane folds each
//     chunk into its destination as it reads it (arriving elements through
//     L2, as the copy's), the same per-element function as the host's;
//   - a wait in a lane is bounded by the step's timeout (%globaltimer); the
//     first failing lane claims the error word (pinned, mapped host memory),
//     every other lane stops, and the host raises it as plait::error on the
//     next call or synchronize() without ever waiting for the stream itself;
//   - the executor's staging and scratch come from cudaMallocAsync on the
//     stream, packing and local copies from plait::device::pack / unpack,
//     and a reduction's combines (prepare, finish, plait::accumulate's
//     conversions) from plait/cuda/combine.cuh, all kernels on the stream;
//     nothing on the hot path is a call that synchronises implicitly
//     (cudaMalloc, cudaFree, cudaMemset, same-device cudaMemcpy), which
//     matters when thread-ranks share a GPU and spin waiting for each other.
// Failed CUDA calls become plait::error(errc::transport, cudaGetErrorString).
#pragma once

#if !defined(__CUDACC__)
#error "<plait/cuda/nvlink_device_ops.cuh> holds CUDA kernels: compile with nvcc (include <plait/cuda.hpp>)"
#endif

#include <cudaTypedefs.h>  // PFN_cuMemGetAddressRange (a type only: libcuda is not linked)
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include <cuda/atomic>

#include "plait/core/error.hpp"
#include "plait/core/receive_combine.hpp"
#include "plait/core/region.hpp"
#include "plait/cuda/combine.cuh"
#include "plait/cuda/pack.cuh"
#include "plait/reduction/kernel.hpp"
#include "plait/transport/nvlink/communicator.hpp"
#include "plait/transport/nvlink/protocol.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {
namespace detail {

/// Throws plait::error(errc::transport, "<what>: <CUDA's error string>") unless `status` is success.
inline void check_cuda(cudaError_t status, std::string_view what) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error so later calls report their own
  throw error(errc::transport, std::string(what) + ": " + cudaGetErrorString(status));
}

/// Makes `device` current for one host call and restores the caller's device.
class device_guard {
 public:
  explicit device_guard(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard() { (void)cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

inline constexpr unsigned lane_threads = 512;

/// Loads one Word at `at` through L2 into `value`, if `at` is aligned for it.
template <class Word>
__device__ bool load_word(const std::byte* at, void* value) {
  if (reinterpret_cast<std::uintptr_t>(at) % sizeof(Word) != 0) return false;
  const Word bits = __ldcg(reinterpret_cast<const Word*>(at));
  memcpy(value, &bits, sizeof(Word));
  return true;
}

/// Element i of a peer's chunk, loaded through L2 (__ldcg) as the copy's
/// words are: a peer's fresh writes are not in this SM's L1.
template <class W>
__device__ W arriving_element(const std::byte* data, std::uint64_t i) {
  W value;
  const std::byte* at = data + i * sizeof(W);
  bool loaded = false;
  if constexpr (sizeof(W) == 16) {
    loaded = load_word<uint4>(at, &value);
  } else if constexpr (sizeof(W) == 8) {
    loaded = load_word<unsigned long long>(at, &value);
  } else if constexpr (sizeof(W) == 4) {
    loaded = load_word<unsigned int>(at, &value);
  } else if constexpr (sizeof(W) == 2) {
    loaded = load_word<unsigned short>(at, &value);
  }
  if (!loaded) {
    unsigned char raw[sizeof(W)];
    for (std::size_t k = 0; k < sizeof(W); ++k) raw[k] = __ldcg(reinterpret_cast<const unsigned char*>(at) + k);
    memcpy(static_cast<void*>(&value), raw, sizeof(W));
  }
  return value;
}

/// A step without combining receives.
struct no_combine {
  __device__ void operator()(std::byte* /*out*/, const std::byte* /*arriving*/, const combine_operand& /*o*/,
                             std::uint64_t /*bytes*/) const {}
};

/// A receive lane's fold of one chunk: out[i] = arriving[i] op held[i] (or
/// held[i] op arriving[i]) on elements of W, every thread of the block its
/// share, with the reduction value copied into the kernel's parameters. The
/// same reduction function the host kernel calls, so the same bits.
template <class W, class R>
struct lane_combine {
  R reduction;
  __device__ void operator()(std::byte* out, const std::byte* arriving, const combine_operand& o,
                             std::uint64_t bytes) const {
    namespace reducing = ::plait::detail;
    const std::uint64_t n = bytes / sizeof(W);
    const bool aligned =
        (reinterpret_cast<std::uintptr_t>(out) | reinterpret_cast<std::uintptr_t>(o.held)) % alignof(W) == 0;
    for (std::uint64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const W theirs = arriving_element<W>(arriving, i);
      const W held = reducing::element_at<W>(o.held, i, aligned);
      reducing::set_element<W>(out, i, o.arriving_left ? reduction(theirs, held) : reduction(held, theirs), aligned);
    }
  }
};

template <class T, class R>
using lane_combine_for = lane_combine<typename ::plait::detail::wire_combine<T, R>::element,
                                      typename ::plait::detail::wire_combine<T, R>::reduction>;

/// Bytes of the step kernel's parameters with fold `Combine`.
template <class Combine>
constexpr std::size_t step_parameter_bytes() {
  const std::size_t fold_at = (sizeof(step_args) + alignof(Combine) - 1) / alignof(Combine) * alignof(Combine);
  const std::size_t pointers_at = (fold_at + sizeof(Combine) + alignof(void*) - 1) / alignof(void*) * alignof(void*);
  return pointers_at + 2 * sizeof(void*);
}
// Steps travel as kernel parameters, which are limited to 4 KiB.
static_assert(step_parameter_bytes<no_combine>() <= 4096, "plait: nvlink step_args outgrew the kernel parameter space");

/// The protocol's memory operations for one lane = one thread block. Every
/// thread calls each function; values come from thread 0 through shared
/// memory, so all threads take the same branches.
template <class Combine>
struct block_ops {
  std::uint64_t* word;     // __shared__
  unsigned char* scratch;  // __shared__, 64 bytes, 16-aligned
  const Combine* fold;     // a combining receive's fold (kernel parameter)

  __device__ std::uint64_t load(const std::uint64_t* flag) const {
    if (threadIdx.x == 0) {
      ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_system> f(*const_cast<std::uint64_t*>(flag));
      *word = f.load(::cuda::memory_order_acquire);
    }
    __syncthreads();
    const std::uint64_t v = *word;
    __syncthreads();
    return v;
  }
  __device__ void store(std::uint64_t* flag, std::uint64_t value) const {
    __syncthreads();  // every thread's part of the copy is issued before thread 0 publishes
    if (threadIdx.x == 0) {
      __threadfence_system();
      ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_system> f(*flag);
      f.store(value, ::cuda::memory_order_release);
    }
  }
  template <class T>
  __device__ T read(const T* p) const {
    static_assert(sizeof(T) <= 64);
    if (threadIdx.x == 0) {
      const volatile unsigned char* from = reinterpret_cast<const volatile unsigned char*>(p);
      for (unsigned i = 0; i < sizeof(T); ++i) scratch[i] = from[i];
    }
    __syncthreads();
    T v;
    memcpy(&v, scratch, sizeof(T));
    __syncthreads();
    return v;
  }
  template <class T>
  __device__ void write(T* p, const T& value) const {
    if (threadIdx.x == 0) *p = value;  // published by the next store()
  }
  template <class Word>
  __device__ static void copy_words(std::byte* dst, const std::byte* src, std::uint64_t n) {
    auto* to = reinterpret_cast<Word*>(dst);
    const auto* from = reinterpret_cast<const Word*>(src);
    for (std::uint64_t i = threadIdx.x; i < n; i += blockDim.x) to[i] = __ldcg(from + i);
  }
  /// A peer's registered buffer is mapped here (IPC or peer access): a plain copy.
  __device__ bool copy_from(std::byte* dst, const registration_entry& e, std::uint64_t offset,
                            std::uint64_t bytes) const {
    copy(dst, reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(e.address)) + offset, bytes);
    return true;
  }
  __device__ void copy(std::byte* dst, const std::byte* src, std::uint64_t bytes) const {
    const auto bits = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src);
    std::uint64_t head = 0;
    if ((bits & 15) == 0) {
      head = bytes / 16 * 16;
      copy_words<uint4>(dst, src, bytes / 16);
    } else if ((bits & 7) == 0) {
      head = bytes / 8 * 8;
      copy_words<unsigned long long>(dst, src, bytes / 8);
    } else if ((bits & 3) == 0) {
      head = bytes / 4 * 4;
      copy_words<unsigned int>(dst, src, bytes / 4);
    }
    copy_words<unsigned char>(dst + head, src + head, bytes - head);
  }

  /// A combining receive's chunk: folded where it lies in the slot.
  __device__ void combine(std::byte* dst, const std::byte* src, const combine_operand& o, std::uint64_t bytes) const {
    (*fold)(dst, src, o, bytes);
  }
  /// Straight out of a peer's registered buffer, mapped here.
  __device__ bool combine_from(std::byte* dst, const registration_entry& e, std::uint64_t offset,
                               const combine_operand& o, std::uint64_t bytes) const {
    combine(dst, reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(e.address)) + offset, o, bytes);
    return true;
  }

  /// Nanoseconds from the GPU's global timer, the same for every thread.
  __device__ std::uint64_t now() const {
    if (threadIdx.x == 0) {
      std::uint64_t t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      *word = t;
    }
    __syncthreads();
    const std::uint64_t v = *word;
    __syncthreads();
    return v;
  }
  /// True once some lane of this communicator has claimed the error word.
  __device__ bool stopped(const unsigned* claim) const {
    if (threadIdx.x == 0) *word = *reinterpret_cast<const volatile unsigned*>(claim);
    __syncthreads();
    const bool v = *word != 0;
    __syncthreads();
    return v;
  }
};

/// Thread 0 of the first failing lane writes the fault to the host-visible word.
__device__ inline void report(const fault& f, fault* host_word, unsigned* claim) {
  if (threadIdx.x != 0) return;
  if (atomicCAS(claim, 0u, 1u) != 0u) return;
  volatile fault* out = host_word;
  out->peer = f.peer;
  out->is_send = f.is_send;
  out->expected = f.expected;
  out->found = f.found;
  out->done = f.done;
  out->bytes = f.bytes;
  __threadfence_system();
  out->code = f.code;  // last: the host reads the code first
  __threadfence_system();
}

/// One step: block b drives lane b until it finishes, fails, times out, or
/// another lane has failed. Combine folds the step's combining receives.
template <class Combine>
__global__ void __launch_bounds__(lane_threads)
    step_kernel(const __grid_constant__ step_args a, const __grid_constant__ Combine fold, fault* host_word,
                unsigned* claim) {
  __shared__ std::uint64_t word;
  __shared__ alignas(16) unsigned char scratch[64];
  block_ops<Combine> ops{&word, scratch, &fold};
  const lane& l = a.lanes[blockIdx.x];
  cursor c;
  start_lane(ops, a, l, c);
  const std::uint64_t start = ops.now();
  unsigned idle = 0;
  for (;;) {
    fault f{};
    const progress p = advance(ops, a, l, c, f);
    if (p == progress::finished) return;
    if (p == progress::failed) {
      report(f, host_word, claim);
      return;
    }
    if (p == progress::moved) {
      idle = 0;
      continue;
    }
    if (ops.stopped(claim)) return;
    if (ops.now() - start > a.timeout_ns) {
      set_fault(f, fault_code::timeout, l, 0, 0, c, current_message(a, l, c));
      report(f, host_word, claim);
      return;
    }
    // Back off a little while the peer catches up (it may share this GPU).
    if (idle < 64) ++idle;
    __nanosleep(32 * idle);
  }
}

/// Loads a kernel now. With lazy loading (the default since CUDA 12.2) a
/// first launch may wait for the whole context, and a thread-rank sharing
/// this GPU may be spinning in a step kernel that waits for our launch.
template <class Kernel>
void preload(Kernel kernel) {
  cudaFuncAttributes attributes{};
  check_cuda(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes (preloading a kernel)");
}

template <class Chunk>
void preload_packing() {
  namespace packing = ::plait::detail;
  preload(::plait::device::detail::for_each_kernel<packing::copy_functor<Chunk>>);
  preload(::plait::device::detail::for_each_kernel<packing::pack_functor<Chunk, std::uint32_t>>);
  preload(::plait::device::detail::for_each_kernel<packing::pack_functor<Chunk, std::uint64_t>>);
  preload(::plait::device::detail::for_each_kernel<packing::unpack_functor<Chunk, std::uint32_t>>);
  preload(::plait::device::detail::for_each_kernel<packing::unpack_functor<Chunk, std::uint64_t>>);
}

/// Enqueues a step whose combining receives fold with reduction R on T
/// (reduction value at `state`): device_reduction::combining_step.
template <class T, class R>
int launch_combining_step(void* stream, const void* state, const void* step, void* error_word, void* claim) {
  using fold = lane_combine_for<T, R>;
  static_assert(step_parameter_bytes<fold>() <= 4096,
                "plait: this reduction's value does not fit the step kernel's parameters");
  const auto& a = *static_cast<const step_args*>(step);
  step_kernel<fold><<<a.lane_count, lane_threads, 0, static_cast<cudaStream_t>(stream)>>>(
      a, fold{*static_cast<const typename ::plait::detail::wire_combine<T, R>::reduction*>(state)},
      static_cast<fault*>(error_word), static_cast<unsigned*>(claim));
  return static_cast<int>(cudaGetLastError());
}

/// R's device launchers on T (plait/cuda/combine.cuh's) and its combining step.
template <class T, class R>
inline constexpr ::plait::detail::device_reduction combining_table = [] {
  ::plait::detail::device_reduction d = ::plait::detail::work_table<::plait::device::detail::stream_runner, T, R>;
  d.combining_step = &launch_combining_step<T, R>;
  return d;
}();

/// Every kernel the transport launches: the step kernel and each packing kernel.
inline void preload_kernels() {
  preload(step_kernel<no_combine>);
  preload_packing<std::uint8_t>();
  preload_packing<std::uint16_t>();
  preload_packing<std::uint32_t>();
  preload_packing<std::uint64_t>();
  preload_packing<::plait::detail::chunk16>();
}

}  // namespace detail

/// The CUDA policy: see the top of this file.
class cuda_device_ops {
 public:
  using stream_type = cudaStream_t;

  /// 4 channels (thread blocks) per pair, each with 4 chunks of 256 KiB in
  /// flight: 4 MiB per peer, 32 MiB of staging per rank for 8 ranks.
  static constexpr std::uint32_t default_slots = 4;
  static constexpr std::uint64_t default_slot_bytes = 256 << 10;
  static constexpr std::uint32_t default_channels = 4;

  /// The executor's memory on the device, ordered on the communicator's stream.
  class engine {
   public:
    /// Device bytes freed in stream order (cudaFreeAsync) when dropped.
    class buffer {
     public:
      buffer() = default;
      buffer(std::byte* data, std::size_t bytes, cudaStream_t stream) : data_(data), size_(bytes), stream_(stream) {}
      buffer(buffer&& other) noexcept { *this = std::move(other); }
      buffer& operator=(buffer&& other) noexcept {
        if (this != &other) {
          release();
          data_ = std::exchange(other.data_, nullptr);
          size_ = std::exchange(other.size_, 0);
          stream_ = other.stream_;
        }
        return *this;
      }
      buffer(const buffer&) = delete;
      buffer& operator=(const buffer&) = delete;
      ~buffer() { release(); }
      [[nodiscard]] std::byte* data() const noexcept { return data_; }
      [[nodiscard]] std::size_t size() const noexcept { return size_; }

     private:
      void release() noexcept {
        if (data_ != nullptr) (void)cudaFreeAsync(data_, stream_);
        data_ = nullptr;
        size_ = 0;
      }
      std::byte* data_ = nullptr;
      std::size_t size_ = 0;
      cudaStream_t stream_ = nullptr;
    };

    engine(cuda_device_ops& ops, const cudaStream_t* stream) : ops_(&ops), stream_(stream) {}

    /// Reductions on device buffers combine here (op/fold_run.hpp): the
    /// fold plan's element work as kernels on the stream, with launchers
    /// that device_kernel attaches to the plan when the call starts.
    static constexpr bool folds_on_device = true;

    buffer allocate(std::size_t bytes) {
      if (bytes == 0) return {};
      detail::device_guard on(ops_->device_);
      void* p = nullptr;
      detail::check_cuda(cudaMallocAsync(&p, bytes, *stream_), "cudaMallocAsync");
      return {static_cast<std::byte*>(p), bytes, *stream_};
    }
    void pack(const region& src, std::byte* dst) {
      detail::device_guard on(ops_->device_);
      detail::check_cuda(device::pack(src, dst, *stream_), "device pack");
    }
    void unpack(const std::byte* src, const region& dst) {
      detail::device_guard on(ops_->device_);
      detail::check_cuda(device::unpack(src, dst, *stream_), "device unpack");
    }
    /// Local copies are kernels too, never cudaMemcpy device-to-device: a
    /// same-device copy may keep other streams' kernels from running
    /// concurrently, and a thread-rank sharing this GPU may be spinning in
    /// one, waiting for this rank's next step.
    void copy(const region& src, const region& dst) {
      if (src.bytes() == 0) return;
      if (src.is_contiguous()) {
        unpack(src.data, dst);
      } else if (dst.is_contiguous()) {
        pack(src, dst.data);
      } else {
        buffer bounce = allocate(src.bytes());
        pack(src, bounce.data());
        unpack(bounce.data(), dst);
      }
    }

    /// The device launchers of `reduction` on T, its kernels loaded now
    /// (see plait::device::preload_reduction). A reduction no device runs
    /// is a compile error naming what can.
    /// With them, the step kernel that folds combining receives with it.
    template <class T, class Reduction>
    const ::plait::detail::device_reduction* device_kernel(const Reduction& reduction) {
      const ::plait::detail::device_reduction* kernel = device::reduction_kernel_for<T>(reduction);
      detail::device_guard on(ops_->device_);
      detail::check_cuda(device::preload_reduction<T>(reduction), "cudaFuncGetAttributes (loading a combine kernel)");
      if constexpr (::plait::detail::device_combinable<Reduction, T>()) {
        detail::preload(detail::step_kernel<detail::lane_combine_for<T, Reduction>>);
        kernel = &detail::combining_table<T, Reduction>;
      }
      return kernel;
    }
    void copy_bytes(std::byte* to, const std::byte* from, std::size_t bytes) {
      if (bytes != 0 && to != from) unpack(from, region::contiguous(to, bytes));
    }
    void combine(const ::plait::detail::reduction_kernel& k, const std::byte* left, const std::byte* right,
                 std::byte* out, std::size_t elements) {
      detail::device_guard on(ops_->device_);
      launched(device_of(k).combine(stream(), k.state, left, right, out, elements), "device combine", k);
    }
    void prepare(const ::plait::detail::reduction_kernel& k, const std::byte* in, std::byte* out,
                 std::size_t elements) {
      detail::device_guard on(ops_->device_);
      launched(device_of(k).prepare(stream(), k.state, in, out, elements), "device prepare", k);
    }
    void finish(const ::plait::detail::reduction_kernel& k, std::byte* data, std::size_t elements, int ranks) {
      detail::device_guard on(ops_->device_);
      launched(device_of(k).finish(stream(), k.state, data, elements, ranks), "device finish", k);
    }
    void to_wire(const ::plait::detail::reduction_kernel& k, const std::byte* in, std::byte* out,
                 std::size_t elements) {
      detail::device_guard on(ops_->device_);
      launched(device_of(k).to_wire(stream(), in, out, elements), "device widening", k);
    }
    void from_wire(const ::plait::detail::reduction_kernel& k, const std::byte* in, std::byte* out,
                   std::size_t elements) {
      detail::device_guard on(ops_->device_);
      launched(device_of(k).from_wire(stream(), in, out, elements), "device rounding", k);
    }

   private:
    void* stream() const noexcept { return static_cast<void*>(*stream_); }
    /// The kernel's device launchers; every plan that reaches this engine
    /// through reduce_scatter or all_reduce has them (op/fold_collective.hpp).
    static const ::plait::detail::device_reduction& device_of(const ::plait::detail::reduction_kernel& k) {
      if (k.device == nullptr) {
        throw error(errc::unsupported, std::string(k.name) +
                                           " reached the NVLink device transport without its device kernels (a "
                                           "fold plan made outside reduce_scatter and all_reduce)");
      }
      return *k.device;
    }
    static void launched(int status, std::string_view what, const ::plait::detail::reduction_kernel& k) {
      detail::check_cuda(static_cast<cudaError_t>(status), std::string(what) + " (" + std::string(k.name) + ")");
    }

    cuda_device_ops* ops_;
    const cudaStream_t* stream_;
  };

  explicit cuda_device_ops(int device) : device_(device) {
    detail::device_guard on(device_);
    detail::preload_kernels();
    void* word = nullptr;
    detail::check_cuda(cudaHostAlloc(&word, sizeof(detail::fault), cudaHostAllocMapped), "cudaHostAlloc (error word)");
    word_ = static_cast<detail::fault*>(word);
    std::memset(static_cast<void*>(word_), 0, sizeof(detail::fault));
    void* device_word = nullptr;
    if (const cudaError_t e = cudaHostGetDevicePointer(&device_word, word, 0); e != cudaSuccess) {
      (void)cudaFreeHost(word_);
      detail::check_cuda(e, "cudaHostGetDevicePointer (error word)");
    }
    word_on_device_ = static_cast<detail::fault*>(device_word);
    void* claim = nullptr;
    if (const cudaError_t e = cudaMalloc(&claim, sizeof(unsigned)); e != cudaSuccess) {
      (void)cudaFreeHost(word_);
      detail::check_cuda(e, "cudaMalloc (error claim)");
    }
    claim_ = static_cast<unsigned*>(claim);
    (void)cudaMemset(claim_, 0, sizeof(unsigned));
  }
  cuda_device_ops(const cuda_device_ops&) = delete;
  cuda_device_ops& operator=(const cuda_device_ops&) = delete;
  ~cuda_device_ops() {
    (void)cudaSetDevice(device_);
    (void)cudaFree(claim_);
    (void)cudaFreeHost(word_);
  }

  std::byte* allocate_area(std::size_t bytes) {
    detail::device_guard on(device_);
    void* p = nullptr;
    detail::check_cuda(cudaMalloc(&p, bytes), "cudaMalloc (staging area)");
    // Zero flags must be in memory before any peer maps the area: wait here
    // (setup, not the hot path; cudaMemset alone may return early).
    cudaError_t e = cudaMemsetAsync(p, 0, bytes, nullptr);
    if (e == cudaSuccess) e = cudaStreamSynchronize(nullptr);
    if (e != cudaSuccess) {
      (void)cudaFree(p);
      detail::check_cuda(e, "cudaMemset (staging area)");
    }
    return static_cast<std::byte*>(p);
  }
  void write_area(std::byte* area, const void* src, std::size_t bytes) {
    detail::device_guard on(device_);
    // Synchronised: a pageable copy may return before it lands, and peers read it next.
    detail::check_cuda(cudaMemcpyAsync(area, src, bytes, cudaMemcpyHostToDevice, nullptr), "cudaMemcpy (area header)");
    detail::check_cuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize (area header)");
  }
  void read_area(void* dst, const std::byte* area, std::size_t bytes) {
    detail::device_guard on(device_);
    detail::check_cuda(cudaMemcpy(dst, area, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (peer area header)");
  }

  std::array<std::byte, 64> export_area(std::byte* area, std::size_t /*bytes*/) {
    static_assert(sizeof(cudaIpcMemHandle_t) <= 64);
    detail::device_guard on(device_);
    cudaIpcMemHandle_t handle{};
    detail::check_cuda(cudaIpcGetMemHandle(&handle, area), "cudaIpcGetMemHandle");
    std::array<std::byte, 64> out{};
    std::memcpy(out.data(), &handle, sizeof handle);
    return out;
  }
  void unexport_area() noexcept {}

  std::byte* import_area(const std::array<std::byte, 64>& handle, std::size_t /*bytes*/, bool same_process,
                         std::byte* address, int owner_device) {
    detail::device_guard on(device_);
    if (same_process) {
      enable_peer_access(owner_device);
      return address;
    }
    cudaIpcMemHandle_t h{};
    std::memcpy(&h, handle.data(), sizeof h);
    void* p = nullptr;
    detail::check_cuda(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return static_cast<std::byte*>(p);
  }

  /// A registered user buffer: an IPC handle of its allocation and its offset
  /// there. ok false when IPC cannot export it (other processes then use staging).
  detail::buffer_export export_buffer(const std::byte* data, std::size_t /*bytes*/) {
    detail::device_guard on(device_);
    detail::buffer_export out;
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &entry, 3020, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess || entry == nullptr) {
      (void)cudaGetLastError();
      return out;
    }
    CUdeviceptr base = 0;
    std::size_t size = 0;
    if (reinterpret_cast<PFN_cuMemGetAddressRange_v3020>(entry)(&base, &size, reinterpret_cast<CUdeviceptr>(data)) !=
        CUDA_SUCCESS) {
      return out;
    }
    cudaIpcMemHandle_t handle{};
    if (cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)) != cudaSuccess) {
      (void)cudaGetLastError();  // e.g. memory from a stream-ordered pool
      return out;
    }
    static_assert(sizeof(cudaIpcMemHandle_t) <= 64);
    std::memcpy(out.handle.data(), &handle, sizeof handle);
    out.offset = reinterpret_cast<CUdeviceptr>(data) - base;
    out.ok = true;
    return out;
  }
  /// Maps a peer's registered buffer: its address for threads of this
  /// process (peer access when the devices differ), else its IPC handle.
  detail::buffer_import import_buffer(const detail::buffer_export& theirs, std::byte* address, std::size_t bytes,
                                      bool same_process, std::int64_t /*pid*/, int owner_device) {
    detail::device_guard on(device_);
    detail::buffer_import in;
    in.entry.bytes = bytes;
    if (same_process) {
      enable_peer_access(owner_device);
      in.entry.address = reinterpret_cast<std::uintptr_t>(address);
      in.ok = true;
      return in;
    }
    cudaIpcMemHandle_t h{};
    std::memcpy(&h, theirs.handle.data(), sizeof h);
    void* p = nullptr;
    if (cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
      (void)cudaGetLastError();
      return in;  // this pair goes through staging
    }
    in.mapping = static_cast<std::byte*>(p);
    in.entry.address = reinterpret_cast<std::uintptr_t>(in.mapping) + theirs.offset;
    in.ok = true;
    return in;
  }
  void release_buffer(std::byte* mapping) noexcept {
    (void)cudaSetDevice(device_);
    (void)cudaIpcCloseMemHandle(mapping);
  }

  /// The owner's device, made reachable from ours (threads of one process).
  void enable_peer_access(int owner_device) {
    if (owner_device == device_) return;
    int can = 0;
    detail::check_cuda(cudaDeviceCanAccessPeer(&can, device_, owner_device), "cudaDeviceCanAccessPeer");
    if (can == 0) {
      throw error(errc::unsupported, "device " + std::to_string(device_) + " cannot access device " +
                                         std::to_string(owner_device) + " (no peer access between them)");
    }
    const cudaError_t e = cudaDeviceEnablePeerAccess(owner_device, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
    } else {
      detail::check_cuda(e, "cudaDeviceEnablePeerAccess");
    }
  }
  void release_import(std::byte* area, std::size_t /*bytes*/, bool mapped) noexcept {
    if (!mapped) return;
    (void)cudaSetDevice(device_);
    (void)cudaIpcCloseMemHandle(area);
  }
  void release_area(std::byte* area, std::size_t /*bytes*/) noexcept {
    (void)cudaSetDevice(device_);
    (void)cudaFree(area);
  }

  /// Null if a kernel on this device can use `data`, else why not: pageable
  /// host memory would fault inside the step kernel and break the context.
  /// (cudaPointerGetAttributes asks the driver; it does not synchronise.)
  const char* check_buffer(const std::byte* data) const noexcept {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
      (void)cudaGetLastError();
      return "the buffer is not memory CUDA knows (pass device memory)";
    }
    if (attributes.type == cudaMemoryTypeUnregistered) {
      return "the buffer is pageable host memory; the NVLink transport moves device memory "
             "(check mode, PLAIT_CHECK, is not supported on it)";
    }
    if (attributes.type == cudaMemoryTypeHost && attributes.devicePointer == nullptr) {
      return "the buffer is pinned host memory not mapped into the device";
    }
    return nullptr;
  }

  /// Whether a combining receive described by `how` can run here: its
  /// reduction came with the step kernel that folds it (device_kernel).
  [[nodiscard]] static bool combines(const receive_combine& how) noexcept {
    return how.kernel != nullptr && how.kernel->device != nullptr && how.kernel->device->combining_step != nullptr;
  }

  /// Enqueues the step as one kernel on `stream` and returns at once: the
  /// step kernel of the reduction `how` describes when the step has
  /// combining receives, else the plain one.
  void run_step(const detail::step_args& a, cudaStream_t stream, const receive_combine* how) {
    if (a.lane_count == 0) return;
    detail::device_guard on(device_);
    if (how == nullptr) {
      detail::step_kernel<<<a.lane_count, detail::lane_threads, 0, stream>>>(a, detail::no_combine{}, word_on_device_,
                                                                             claim_);
      detail::check_cuda(cudaGetLastError(), "launching the NVLink step kernel");
      return;
    }
    const ::plait::detail::reduction_kernel& k = *how->kernel;  // combines(*how) held when it was posted
    detail::check_cuda(static_cast<cudaError_t>(k.device->combining_step(stream, k.state, &a, word_on_device_, claim_)),
                       "launching the NVLink step kernel that combines on receive (" + std::string(k.name) + ")");
  }

  /// The first failure any step has reported (code none if none yet). Reads
  /// mapped host memory: no synchronisation with the stream.
  [[nodiscard]] detail::fault error_word() const noexcept {
    detail::fault f{};
    f.code = std::atomic_ref<std::uint32_t>(word_->code).load(std::memory_order_acquire);
    if (f.code == 0) return f;
    const volatile detail::fault* w = word_;
    f.peer = w->peer;
    f.is_send = w->is_send;
    f.expected = w->expected;
    f.found = w->found;
    f.done = w->done;
    f.bytes = w->bytes;
    return f;
  }

  void synchronize(cudaStream_t stream) {
    detail::device_guard on(device_);
    detail::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }

  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  int device_;
  detail::fault* word_ = nullptr;
  detail::fault* word_on_device_ = nullptr;
  unsigned* claim_ = nullptr;
};

/// The NVLink P2P transport on CUDA devices:
///   plait::nvlink::communicator gpu(bootstrap, device, stream);
using communicator = basic_communicator<cuda_device_ops>;

}  // namespace nvlink
}  // namespace v0
}  // namespace plait

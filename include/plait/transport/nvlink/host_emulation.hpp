// The host emulation of the NVLink device-operations policy: the protocol of
// protocol.hpp and the communicator of communicator.hpp, unchanged, over
//   - a POSIX shared-memory object per rank standing in for its device
//     staging area (its name standing in for the cudaIpcMemHandle_t; created
//     O_EXCL mode 0600, checked for owner, mode and size when opened, and
//     unlinked once every peer has mapped it);
//   - raw addresses for peers that are threads of this process (the
//     peer-access path of several GPUs in one process);
//   - std::memcpy for copy kernels and std::atomic_ref for system-scope flags;
//   - registered buffers (register_buffer) of peers that are threads read by
//     address, of peers that are processes read with process_vm_readv (the
//     owner's pid and address stand in for the CUDA IPC handle); a pair whose
//     kernel forbids cross-memory attach (ptrace scope) falls back to staging;
//   - a combining receive (irecv_combine) folds each chunk with the fold's
//     host function, straight out of the slot or a peer thread's buffer, or
//     out of pieces read from a peer process into a buffer that stays in cache;
//   - a step run to completion on the calling thread, lanes round-robin;
//     once it has waited long enough to sleep, it checks now and then that
//     the processes of the peers it waits for still exist, so a peer process
//     that died is errc::peer_lost within milliseconds, not at the timeout.
// "Device memory" is host memory here, so every algorithm and layout test of
// the shm transport runs on it unchanged, on threads and on processes.
//
//   plait::shm::run_processes(4, [](plait::shm::communicator& boot) {
//     plait::nvlink::emulated_communicator gpu(boot, /*device*/ 0);
//     plait::all_gather<plait::ring>(gpu, send, recv);
//   });
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "plait/core/backoff.hpp"
#include "plait/core/error.hpp"
#include "plait/core/receive_combine.hpp"
#include "plait/core/region.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/core/wait_loop.hpp"
#include "plait/transport/nvlink/communicator.hpp"
#include "plait/transport/nvlink/protocol.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {

/// The device-operations policy of the host emulation.
class host_emulation {
 public:
  /// Streams do not exist on the host; every step completes inside wait_all.
  struct stream_type {
    /// Distinguishes streams in tests; nothing is ordered by it.
    int id = 0;
  };

  /// Small by default: areas live in /dev/shm, one per rank.
  static constexpr std::uint32_t default_slots = 4;
  /// Bytes of one staging slot by default.
  static constexpr std::uint64_t default_slot_bytes = 16 << 10;
  /// Two, so that every test splits messages across channels as a GPU does.
  static constexpr std::uint32_t default_channels = 2;

  /// What the executor allocates, packs and copies with. It counts its work
  /// so tests can see that device transports go through it.
  class engine {
   public:
    /// Staging the executor allocates: host bytes.
    using buffer = std::vector<std::byte>;
    /// Its memory and the "device" buffers are host memory: reductions
    /// combine there with their host kernels (op/fold_run.hpp).
    static constexpr bool host_reachable = true;
    /// Needs no state of the policy or the stream.
    engine(host_emulation& /*ops*/, const stream_type* /*stream*/) {}
    /// `bytes` of staging (counted).
    buffer allocate(std::size_t bytes) {
      ++allocations;
      return buffer(bytes);
    }
    /// Packs `src` into `dst` (counted).
    void pack(const region& src, std::byte* dst) {
      ++packs;
      plait::pack(src, dst);
    }
    /// Unpacks `src` into `dst` (counted).
    void unpack(const std::byte* src, const region& dst) {
      ++unpacks;
      plait::unpack(src, dst);
    }
    /// Copies `src` to `dst` (counted).
    void copy(const region& src, const region& dst) {
      ++copies;
      plait::copy(src, dst);
    }
    /// How many allocate, pack, unpack and copy calls this engine has served.
    ///@{
    std::uint64_t allocations = 0, packs = 0, unpacks = 0, copies = 0;
    ///@}
  };

  /// The device number is ignored: every "device" is this host.
  explicit host_emulation(int /*device*/) {}
  host_emulation(const host_emulation&) = delete;
  host_emulation& operator=(const host_emulation&) = delete;
  ~host_emulation() { unexport_area(); }

  /// A zero-filled area of `bytes`, in a fresh shared-memory object.
  std::byte* allocate_area(std::size_t bytes) {
    std::random_device entropy;
    const std::uint64_t salt = (std::uint64_t{entropy()} << 32) ^ entropy();
    name_ = "/plait-nvl-" + std::to_string(getpid()) + "-" + std::to_string(salt);
    const int fd = shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) fail("shm_open(" + name_ + ")");
    linked_ = true;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      const int saved = errno;
      close(fd);
      errno = saved;
      fail("ftruncate");
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) fail("mmap");
    return static_cast<std::byte*>(p);
  }
  /// Writes `bytes` from `src` into an area (a memcpy here).
  void write_area(std::byte* area, const void* src, std::size_t bytes) { std::memcpy(area, src, bytes); }
  /// Reads `bytes` of an area into `dst` (a memcpy here).
  void read_area(void* dst, const std::byte* area, std::size_t bytes) { std::memcpy(dst, area, bytes); }

  /// The handle: the object's name.
  std::array<std::byte, 64> export_area(std::byte* /*area*/, std::size_t /*bytes*/) {
    std::array<std::byte, 64> handle{};
    std::memcpy(handle.data(), name_.data(), std::min(name_.size(), handle.size() - 1));
    return handle;
  }
  /// Every peer has mapped the area: the name goes, the mappings stay.
  void unexport_area() noexcept {
    if (linked_) shm_unlink(name_.c_str());
    linked_ = false;
  }

  /// Maps a peer's area: its raw address when it is a thread of this process
  /// (peer access), else by its handle (IPC), checked before use.
  std::byte* import_area(const std::array<std::byte, 64>& handle, std::size_t bytes, bool same_process,
                         std::byte* address, int /*device*/) {
    if (same_process) return address;
    const auto* text = reinterpret_cast<const char*>(handle.data());
    const std::size_t length = strnlen(text, handle.size());
    const std::string name(text, length);
    if (length == handle.size() || name.rfind("/plait-nvl-", 0) != 0 ||
        name.find_first_not_of("/plait-nvl0123456789", 0) != std::string::npos) {
      throw error(errc::transport, "malformed staging-area handle from a peer");
    }
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) fail("shm_open(" + name + ")");
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 0777) != 0600 ||
        static_cast<std::size_t>(st.st_size) != bytes) {
      close(fd);
      throw error(errc::transport, "staging area " + name + " has the wrong owner, mode or size");
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) fail("mmap");
    return static_cast<std::byte*>(p);
  }
  /// Unmaps a peer's area mapped by import_area.
  void release_import(std::byte* area, std::size_t bytes, bool mapped) noexcept {
    if (mapped) munmap(area, bytes);
  }
  /// Unmaps this rank's own area and removes its name.
  void release_area(std::byte* area, std::size_t bytes) noexcept {
    munmap(area, bytes);
    unexport_area();
  }

  /// A registered user buffer: nothing to export but its address (the
  /// communicator sends address and pid along).
  detail::buffer_export export_buffer(const std::byte* /*data*/, std::size_t /*bytes*/) {
    detail::buffer_export out;
    out.ok = true;
    return out;
  }
  /// Reaches a peer's registered buffer: by address from a thread of this
  /// process, else through process_vm_readv, probed here with one byte (a
  /// kernel that forbids it makes the pair fall back to staging).
  detail::buffer_import import_buffer(const detail::buffer_export& /*theirs*/, std::byte* address, std::size_t bytes,
                                      bool same_process, std::int64_t pid, int /*device*/) {
    detail::buffer_import in;
    in.entry.address = reinterpret_cast<std::uintptr_t>(address);
    in.entry.bytes = bytes;
    in.entry.pid = same_process ? 0 : pid;
    if (!same_process) {
      std::byte probe{};
      iovec local{&probe, 1};
      iovec remote{address, 1};
      if (process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) != 1) return in;
    }
    in.ok = true;
    return in;
  }
  /// Nothing to release: import_buffer maps nothing.
  void release_buffer(std::byte* /*mapping*/) noexcept {}

  /// Peers in other processes, watched while a step waits for them.
  void watch_peer(int peer, std::int64_t pid) noexcept {
    if (peer >= 0 && peer < detail::max_ranks) pids_[static_cast<std::size_t>(peer)] = pid;
  }

  /// Bytes this rank copied into or out of staging slots, and bytes it read
  /// straight from peers' registered buffers (tests check zero-copy with them).
  [[nodiscard]] std::uint64_t staging_bytes() const noexcept { return staged_; }
  /// Bytes read straight from peers' registered buffers.
  [[nodiscard]] std::uint64_t direct_bytes() const noexcept { return direct_; }

  /// Whether a combining receive described by `how` can run here: the
  /// fold's host function does it.
  [[nodiscard]] static bool combines(const receive_combine& how) noexcept { return how.combine != nullptr; }

  /// Runs the step to completion (or failure) on this thread; `how` describes
  /// its combining receives (null when it has none).
  void run_step(const detail::step_args& a, stream_type /*stream*/, const receive_combine* how) {
    lane_ops ops{&staged_, &direct_, how, &bounce_};
    std::array<detail::cursor, detail::max_lanes> cursors{};
    std::array<bool, detail::max_lanes> finished{};
    for (std::uint32_t i = 0; i < a.lane_count; ++i) detail::start_lane(ops, a, a.lanes[i], cursors[i]);
    // timeout_ns is what was left of the caller's deadline, up to 2^64 - 1 ns
    // for an unbounded one: after() saturates instead of wrapping to the past.
    plait::detail::wait_loop loop(plait::detail::after(std::chrono::duration<std::uint64_t, std::nano>(a.timeout_ns)),
                                  std::chrono::nanoseconds::zero(), plait::detail::backoff::default_yield_polls, 8);
    for (;;) {
      bool moved = false;
      bool all = true;
      for (std::uint32_t i = 0; i < a.lane_count; ++i) {
        while (!finished[i]) {
          detail::fault f{};
          const detail::progress p = detail::advance(ops, a, a.lanes[i], cursors[i], f);
          if (p == detail::progress::moved) {
            moved = true;
            continue;
          }
          if (p == detail::progress::finished) {
            finished[i] = true;
            moved = true;
          } else if (p == detail::progress::failed) {
            error_ = f;
            return;
          }
          break;
        }
        all = all && finished[i];
      }
      if (all) return;
      if (moved) {
        loop.moved();
        continue;
      }
      // Asleep between polls: cheap enough to ask whether the peers we wait for still exist.
      if (loop.slow_check_due()) {
        for (std::uint32_t i = 0; i < a.lane_count; ++i) {
          const detail::lane& l = a.lanes[i];
          const std::int64_t pid = pids_[static_cast<std::size_t>(l.peer)];
          if (finished[i] || pid <= 0 || kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
          detail::set_fault(error_, detail::fault_code::peer_lost, l, static_cast<std::uint64_t>(pid), 0, cursors[i],
                            detail::current_message(a, l, cursors[i]));
          return;
        }
      }
      if (loop.expired()) {
        for (std::uint32_t i = 0; i < a.lane_count; ++i) {
          if (finished[i]) continue;
          const detail::lane& l = a.lanes[i];
          detail::set_fault(error_, detail::fault_code::timeout, l, 0, 0, cursors[i],
                            detail::current_message(a, l, cursors[i]));
          return;
        }
      }
      loop.pause();
    }
  }

  /// Every host address is "device memory" here.
  const char* check_buffer(const std::byte* /*data*/) const noexcept { return nullptr; }

  /// The first failure of any step, code none if there was none.
  [[nodiscard]] detail::fault error_word() const noexcept { return error_; }
  /// Nothing to wait for: steps complete inside wait_all.
  void synchronize(stream_type /*stream*/) {}

 private:
  /// The protocol's memory operations on the host.
  struct lane_ops {
    std::uint64_t* staged;
    std::uint64_t* direct;
    const receive_combine* how;
    std::vector<std::byte>* bounce;
    std::uint64_t load(const std::uint64_t* flag) const noexcept {
      return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(flag)).load(std::memory_order_acquire);
    }
    void store(std::uint64_t* flag, std::uint64_t value) const noexcept {
      std::atomic_ref<std::uint64_t>(*flag).store(value, std::memory_order_release);
    }
    template <class T>
    T read(const T* p) const noexcept {
      return *p;
    }
    template <class T>
    void write(T* p, const T& value) const noexcept {
      *p = value;
    }
    void copy(std::byte* dst, const std::byte* src, std::uint64_t bytes) const noexcept {
      if (bytes != 0) std::memcpy(dst, src, bytes);
      *staged += bytes;
    }
    /// False when the owner process is gone (or the read fails part way).
    bool copy_from(std::byte* dst, const detail::registration_entry& e, std::uint64_t offset,
                   std::uint64_t bytes) const noexcept {
      const std::byte* src = source_of(e, offset);
      if (e.pid == 0) {
        if (bytes != 0) std::memcpy(dst, src, bytes);
      } else if (!read_process(e.pid, dst, src, bytes)) {
        return false;
      }
      *direct += bytes;
      return true;
    }
    /// dst = src op held (or held op src), element by element, with the fold's own function.
    void combine(std::byte* dst, const std::byte* src, const detail::combine_operand& o, std::uint64_t bytes) const {
      fold(dst, src, o, bytes);
      *staged += bytes;
    }
    /// combine() straight out of a peer thread's buffer, or out of pieces of
    /// a peer process's read into a buffer that stays in cache.
    bool combine_from(std::byte* dst, const detail::registration_entry& e, std::uint64_t offset,
                      const detail::combine_operand& o, std::uint64_t bytes) const {
      const std::byte* src = source_of(e, offset);
      if (e.pid == 0) {
        fold(dst, src, o, bytes);
      } else {
        const std::uint64_t piece = combine_piece_bytes / how->granule * how->granule;
        if (bounce->size() < piece) bounce->resize(piece);
        for (std::uint64_t done = 0; done < bytes; done += piece) {
          const std::uint64_t n = bytes - done < piece ? bytes - done : piece;
          if (!read_process(e.pid, bounce->data(), src + done, n)) return false;
          fold(dst + done, bounce->data(), {o.held + done, o.arriving_left}, n);
        }
      }
      *direct += bytes;
      return true;
    }

   private:
    /// Pieces of a peer process's buffer a combining receive reads at a time.
    static constexpr std::uint64_t combine_piece_bytes = 64 << 10;

    void fold(std::byte* dst, const std::byte* arriving, const detail::combine_operand& o, std::uint64_t bytes) const {
      if (bytes == 0) return;
      how->combine(how->context, o.arriving_left ? arriving : o.held, o.arriving_left ? o.held : arriving, dst, bytes);
    }
    static const std::byte* source_of(const detail::registration_entry& e, std::uint64_t offset) noexcept {
      return reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(e.address)) + offset;
    }
    /// Reads `bytes` at `src` in process `pid` into dst; false when it is gone.
    static bool read_process(std::int64_t pid, std::byte* dst, const std::byte* src, std::uint64_t bytes) noexcept {
      std::uint64_t done = 0;
      while (done < bytes) {
        iovec local{dst + done, bytes - done};
        iovec remote{const_cast<std::byte*>(src) + done, bytes - done};
        const ssize_t n = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          return false;
        }
        done += static_cast<std::uint64_t>(n);
      }
      return true;
    }
  };

  [[noreturn]] static void fail(const std::string& what) {
    throw error(errc::transport, what + ": " + std::strerror(errno));
  }

  std::string name_;
  bool linked_ = false;
  std::array<std::int64_t, detail::max_ranks> pids_{};  // 0: a thread of this process, not watched
  std::uint64_t staged_ = 0;
  std::uint64_t direct_ = 0;
  std::vector<std::byte> bounce_;  // a combining receive's pieces of a peer process's buffer
  detail::fault error_{};
};

/// The NVLink transport on the host emulation: what CI tests.
using emulated_communicator = basic_communicator<host_emulation>;

}  // namespace nvlink
}  // namespace v0
}  // namespace plait

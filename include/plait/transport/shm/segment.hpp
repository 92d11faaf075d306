// One POSIX shared-memory segment per group: its layout, creation, attachment
// and cleanup. Everything a peer can write is treated as untrusted: sizes and
// counters read from the segment are checked against what this rank expects
// before they are used.
//
// Layout (offsets derive from the geometry alone, never from the segment):
//   segment_header | rank_record[P] | channel[P*P]
//   channel (src -> dst) = channel_header | slot[slots] ; slot = slot_header | payload[slot_bytes]
//
// A slot holds either a chunk of a message (kind chunk: the payload is the
// bytes) or, for single-copy transfers, a reference (kind reference: the
// payload starts with a reference_descriptor naming the sender's buffer, which
// the receiver copies from directly and then acknowledges in `state`).
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plait/core/backoff.hpp"
#include "plait/core/error.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {
namespace shm::detail {

inline constexpr std::uint64_t segment_magic = 0x706c616974736731ULL;  // "plaitsg1"
inline constexpr std::uint32_t segment_version = 3;                    // 3: references into shared buffers
inline constexpr std::size_t cache_line = 64;

static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free &&
                  std::atomic_ref<std::uint32_t>::is_always_lock_free,
              "plait::shm needs lock-free 32- and 64-bit atomics to share them between processes");

template <class T>
std::atomic_ref<T> atomic(T& value) noexcept {
  return std::atomic_ref<T>(value);
}

struct alignas(cache_line) segment_header {
  std::uint64_t magic;  // stored last by the creator (release): the segment is initialised
  std::uint32_t version;
  std::uint32_t ranks;
  std::uint32_t slots;
  std::uint32_t slot_bytes;
  std::uint64_t total_bytes;
  alignas(cache_line) std::uint32_t attached;  // ranks attached so far
  std::uint32_t failed_rank;                   // 0, or 1 + the first rank that failed
  alignas(cache_line) std::uint32_t barrier_count;
  alignas(cache_line) std::uint32_t barrier_generation;
};

/// Per-rank record: liveness, and how a rank failed (read back by run_processes).
struct alignas(cache_line) rank_record {
  std::int32_t pid;
  std::int32_t code;  // plait::errc of the failure, 0 if none
  std::int32_t step;
  std::int32_t peer;
  char operation[120];
  char detail[1024];
};

struct alignas(cache_line) channel_header {
  std::uint64_t head;                      // slots written so far (by the sender)
  alignas(cache_line) std::uint64_t tail;  // slots consumed so far (by the receiver)
};

struct slot_header {
  std::uint32_t tag;
  std::uint32_t kind;  // slot_kind
  std::uint64_t message_bytes;
  std::uint64_t offset;
  std::uint64_t chunk_bytes;
};

/// What a slot carries.
enum class slot_kind : std::uint32_t {
  chunk = 0,      ///< chunk_bytes of the message at `offset`, in the payload
  reference = 1,  ///< the whole message stays in the sender's buffer; see reference_descriptor
};

/// Where a single-copy message lives, at the start of a reference slot's
/// payload. The receiver moves `state` from posted to copying before it reads
/// the sender's buffer and to done (or refused, when the kernel does not let it
/// read another process's memory) before it releases the slot; a sender that
/// fails moves it from posted to withdrawn, so no receiver starts reading a
/// buffer its owner has given up. Everything but `state` is written once by
/// the sender before it publishes the slot.
struct reference_descriptor {
  std::uint64_t address;  ///< the sender's buffer, in the sender's address space
  std::int32_t pid;       ///< the sender's process
  std::uint32_t state;    ///< reference_state
  std::uint64_t window;   ///< 0, or the shared buffer (window id) the message lies in ...
  std::uint64_t offset;   ///< ... at this offset of the sender's part: the receiver reads its own mapping
};

enum class reference_state : std::uint32_t { posted = 1, copying = 2, done = 3, refused = 4, withdrawn = 5 };

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

/// The sizes every rank computes on its own; the segment must agree.
struct geometry {
  std::uint32_t ranks = 1;
  std::uint32_t slots = 4;
  std::uint32_t slot_bytes = 64 * 1024;

  [[nodiscard]] constexpr std::size_t slot_stride() const {
    return round_up(sizeof(slot_header) + slot_bytes, cache_line);
  }
  [[nodiscard]] constexpr std::size_t channel_bytes() const {
    return round_up(sizeof(channel_header), cache_line) + slots * slot_stride();
  }
  [[nodiscard]] constexpr std::size_t records_offset() const { return round_up(sizeof(segment_header), cache_line); }
  [[nodiscard]] constexpr std::size_t channels_offset() const {
    return round_up(records_offset() + ranks * sizeof(rank_record), 4096);
  }
  [[nodiscard]] constexpr std::size_t total_bytes() const {
    return channels_offset() + static_cast<std::size_t>(ranks) * ranks * channel_bytes();
  }
};

/// Largest group one segment serves: keeps P*P channels addressable and the
/// segment within reason.
inline constexpr int max_ranks = 1024;

/// What a segment header must say for this rank to use it; "" when it agrees.
/// The header is written by another process: nothing in it is trusted.
inline std::string check_segment_header(const segment_header& h, const geometry& expected) {
  if (h.version != segment_version)
    return "version " + std::to_string(h.version) + " (expected " + std::to_string(segment_version) + ")";
  if (h.ranks != expected.ranks)
    return "ranks " + std::to_string(h.ranks) + " (expected " + std::to_string(expected.ranks) + ")";
  if (h.slots != expected.slots || h.slot_bytes != expected.slot_bytes) return "a different slot geometry";
  if (h.total_bytes != expected.total_bytes())
    return "size " + std::to_string(h.total_bytes) + " (expected " + std::to_string(expected.total_bytes()) + ")";
  return {};
}

/// Why a slot cannot be the next chunk of the message a receiver expects.
enum class slot_problem { none, tag_mismatch, size_mismatch, corrupt };

/// Checks a slot header (a copy: the peer may change the original meanwhile)
/// against the receive in progress: `expected_tag`, `expected_bytes` in all,
/// `done` received so far. When it returns none, copying chunk_bytes to
/// offset `done` stays inside the receive buffer and inside the slot.
inline slot_problem check_slot(const slot_header& h, std::uint32_t expected_tag, std::uint64_t expected_bytes,
                               std::uint64_t done, std::uint64_t slot_bytes) noexcept {
  if (h.tag != expected_tag) return slot_problem::tag_mismatch;
  if (h.message_bytes != expected_bytes) return slot_problem::size_mismatch;
  if (done > expected_bytes || h.offset != done || h.chunk_bytes > slot_bytes ||
      h.chunk_bytes > expected_bytes - done || (h.chunk_bytes == 0 && expected_bytes != 0)) {
    return slot_problem::corrupt;
  }
  return slot_problem::none;
}

/// Checks a reference slot's header (a copy) against the receive in progress:
/// it must announce the whole message, untouched so far.
inline slot_problem check_reference(const slot_header& h, std::uint32_t expected_tag, std::uint64_t expected_bytes,
                                    std::uint64_t done) noexcept {
  if (h.tag != expected_tag) return slot_problem::tag_mismatch;
  if (h.message_bytes != expected_bytes) return slot_problem::size_mismatch;
  if (done != 0 || h.offset != 0 || h.chunk_bytes != 0 || expected_bytes == 0) return slot_problem::corrupt;
  return slot_problem::none;
}

/// Slots waiting in a channel whose writer reports `head` and reader `tail`, or
/// -1 when the counters cannot be true of a channel of `slots` slots.
inline std::int64_t pending_slots(std::uint64_t head, std::uint64_t tail, std::uint32_t slots) noexcept {
  if (head < tail || head - tail > slots) return -1;
  return static_cast<std::int64_t>(head - tail);
}

inline std::string random_name() {
  std::random_device device;
  std::string name = "/plait-";
  static constexpr char hex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {  // 128 random bits
    std::uint32_t bits = device();
    for (int j = 0; j < 4; ++j) {
      name += hex[bits & 0xF];
      name += hex[(bits >> 4) & 0xF];
      bits >>= 8;
    }
  }
  return name;
}

inline std::string system_message(std::string_view what, const std::string& name) {
  return std::string(what) + " " + name + ": " + std::strerror(errno);
}

/// Maps `bytes` of the shared-memory object open on `fd` (read-write,
/// shared) and closes `fd` either way; throws naming `what` and `name`.
inline std::byte* map_and_close(int fd, std::size_t bytes, std::string_view what, const std::string& name,
                                const error_context& at) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int saved = errno;
  close(fd);
  if (base == MAP_FAILED) {
    errno = saved;
    throw error(errc::transport, system_message("cannot map " + std::string(what), name), at);
  }
  return static_cast<std::byte*>(base);
}

/// A mapped segment. Owning one keeps the mapping alive; the creator unlinks
/// the name once every rank is attached, or when it goes away, whichever is first.
class segment {
 public:
  segment(const segment&) = delete;
  segment& operator=(const segment&) = delete;
  ~segment() {
    unlink();
    if (base_ != nullptr) munmap(base_, bytes_);
  }

  /// Creates a fresh segment (O_EXCL, mode 0600) and initialises it.
  static std::shared_ptr<segment> create(const std::string& name, const geometry& shape, const error_context& at) {
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      if (errno == EEXIST) {
        throw error(errc::invalid_argument,
                    "shared-memory segment " + name +
                        " already exists: another group uses this name, or a crashed "
                        "one left it behind (remove /dev/shm" +
                        name + ")",
                    at);
      }
      throw error(errc::transport, system_message("cannot create shared-memory segment", name), at);
    }
    std::shared_ptr<segment> s(new segment(name, shape.total_bytes(), true));
    // fchmod: the umask may have cleared bits of 0600 but never adds any; make it exact.
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, static_cast<off_t>(s->bytes_)) != 0) {
      const std::string message = system_message("cannot size shared-memory segment", name);
      close(fd);
      throw error(errc::transport, message, at);
    }
    s->map(fd, at);
    auto& h = s->header();
    h.version = segment_version;
    h.ranks = shape.ranks;
    h.slots = shape.slots;
    h.slot_bytes = shape.slot_bytes;
    h.total_bytes = shape.total_bytes();
    s->set_shape(shape);
    atomic(h.magic).store(segment_magic, std::memory_order_release);
    return s;
  }

  /// Creates a segment whose name never outlives this call: for groups whose
  /// ranks all inherit the mapping (threads, forked children).
  static std::shared_ptr<segment> create_private(const geometry& shape, const error_context& at) {
    auto s = create(random_name(), shape, at);
    s->unlink();
    return s;
  }

  /// Opens a segment another rank creates, waiting for it until `until`.
  /// Checks owner, mode, size and header against this rank's expectations.
  static std::shared_ptr<segment> open(const std::string& name, const geometry& shape, deadline until,
                                       const error_context& at) {
    plait::detail::backoff wait;
    for (;;) {
      const int fd = shm_open(name.c_str(), O_RDWR, 0);
      if (fd < 0) {
        if (errno != ENOENT)
          throw error(errc::transport, system_message("cannot open shared-memory segment", name), at);
        if (clock::now() > until) {
          throw error(errc::timeout, "shared-memory segment " + name + " was not created in time (is rank 0 running?)",
                      at);
        }
        wait.pause();
        continue;
      }
      struct stat info {};
      if (fstat(fd, &info) != 0) {
        const std::string message = system_message("cannot inspect shared-memory segment", name);
        close(fd);
        throw error(errc::transport, message, at);
      }
      if (info.st_uid != geteuid() || (info.st_mode & 0777) != 0600) {
        close(fd);
        throw error(errc::invalid_argument,
                    "shared-memory segment " + name + " is not owned by this user with mode 0600; refusing to use it",
                    at);
      }
      if (static_cast<std::size_t>(info.st_size) != shape.total_bytes()) {
        close(fd);
        if (info.st_size != 0) {
          throw error(errc::invalid_argument,
                      "shared-memory segment " + name + " has " + std::to_string(info.st_size) + " bytes where " +
                          std::to_string(shape.total_bytes()) + " were expected (a group of another size?)",
                      at);
        }
        if (clock::now() > until) throw error(errc::timeout, "shared-memory segment " + name + " was never sized", at);
        wait.pause();  // the creator has not sized it yet
        continue;
      }
      std::shared_ptr<segment> s(new segment(name, shape.total_bytes(), false));
      s->map(fd, at);
      s->set_shape(shape);
      auto& h = s->header();
      while (atomic(h.magic).load(std::memory_order_acquire) != segment_magic) {
        if (clock::now() > until)
          throw error(errc::timeout, "shared-memory segment " + name + " was never initialised", at);
        wait.pause();
      }
      const segment_header copy = h;  // check a snapshot, not memory a peer may still change
      if (const std::string problem = check_segment_header(copy, shape); !problem.empty()) {
        throw error(errc::invalid_argument,
                    "shared-memory segment " + name + " describes a different group: " + problem, at);
      }
      return s;
    }
  }

  /// Removes the name (idempotent); the mapping stays valid.
  void unlink() noexcept {
    if (owner_ && !unlinked_.exchange(true)) shm_unlink(name_.c_str());
  }

  [[nodiscard]] const geometry& shape() const noexcept { return shape_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] segment_header& header() const noexcept { return *reinterpret_cast<segment_header*>(base_); }
  [[nodiscard]] rank_record& record(int rank) const noexcept {
    return reinterpret_cast<rank_record*>(base_ + shape_.records_offset())[rank];
  }
  [[nodiscard]] channel_header& channel(int source, int destination) const noexcept {
    return *reinterpret_cast<channel_header*>(channel_base(source, destination));
  }
  [[nodiscard]] slot_header& slot(int source, int destination, std::uint64_t index) const noexcept {
    return *reinterpret_cast<slot_header*>(slot_base(source, destination, index));
  }
  [[nodiscard]] std::byte* payload(int source, int destination, std::uint64_t index) const noexcept {
    return slot_base(source, destination, index) + sizeof(slot_header);
  }

  /// Notes that `rank` runs in this process (a thread of it). Process-local
  /// knowledge, never read from the segment: only such peers' buffers are
  /// copied with a plain memcpy; others go through the kernel, which checks
  /// every address a peer names.
  void mark_local(int rank) noexcept {
    if (rank >= 0 && static_cast<std::uint32_t>(rank) < shape_.ranks) {
      local_[static_cast<std::size_t>(rank)].store(true, std::memory_order_release);
    }
  }
  [[nodiscard]] bool is_local(int rank) const noexcept {
    return rank >= 0 && static_cast<std::uint32_t>(rank) < shape_.ranks &&
           local_[static_cast<std::size_t>(rank)].load(std::memory_order_acquire);
  }
  [[nodiscard]] reference_descriptor& reference(int source, int destination, std::uint64_t index) const noexcept {
    return *reinterpret_cast<reference_descriptor*>(payload(source, destination, index));
  }

  /// Marks `rank` as the group's first failure (later failures keep the first).
  /// Returns true when this call was the first.
  bool mark_failed(int rank) const noexcept {
    std::uint32_t expected = 0;
    return atomic(header().failed_rank).compare_exchange_strong(expected, static_cast<std::uint32_t>(rank) + 1);
  }
  /// The first failed rank, or -1. Checked against the group size: the value comes from shared memory.
  [[nodiscard]] int failed_rank() const noexcept {
    const std::uint32_t value = atomic(header().failed_rank).load(std::memory_order_acquire);
    if (value == 0) return -1;
    return value <= shape_.ranks ? static_cast<int>(value) - 1 : static_cast<int>(shape_.ranks);
  }

 private:
  segment(std::string name, std::size_t bytes, bool owner) : name_(std::move(name)), bytes_(bytes), owner_(owner) {}

  void set_shape(const geometry& shape) {
    shape_ = shape;
    local_ = std::make_unique<std::atomic<bool>[]>(shape.ranks);  // value-initialised: false
  }

  void map(int fd, const error_context& at) { base_ = map_and_close(fd, bytes_, "shared-memory segment", name_, at); }
  [[nodiscard]] std::byte* channel_base(int source, int destination) const noexcept {
    const auto index = static_cast<std::size_t>(source) * shape_.ranks + static_cast<std::size_t>(destination);
    return base_ + shape_.channels_offset() + index * shape_.channel_bytes();
  }
  [[nodiscard]] std::byte* slot_base(int source, int destination, std::uint64_t index) const noexcept {
    return channel_base(source, destination) + round_up(sizeof(channel_header), cache_line) +
           static_cast<std::size_t>(index % shape_.slots) * shape_.slot_stride();
  }

  std::string name_;
  std::size_t bytes_;
  bool owner_;
  std::atomic<bool> unlinked_{false};
  std::byte* base_ = nullptr;
  geometry shape_{};
  std::unique_ptr<std::atomic<bool>[]> local_;  // which ranks are threads of this process (see mark_local)
};

}  // namespace shm::detail
}  // namespace v0
}  // namespace plait

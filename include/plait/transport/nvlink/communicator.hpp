// plait::nvlink::basic_communicator<Ops> — the NVLink P2P transport, written
// once against a device-operations policy `Ops`:
//   - plait::nvlink::communicator (<plait/cuda.hpp>) is basic_communicator<cuda_device_ops>:
//     device memory, CUDA IPC or peer access, kernels on a stream;
//   - plait::nvlink::emulated_communicator (<plait/transport/nvlink/host_emulation.hpp>)
//     is basic_communicator<host_emulation>: the same protocol over shared
//     memory, memcpy and std::atomic_ref, so CI tests it on CPUs.
//
// Construction is collective over a bootstrap communicator (shm or MPI, held
// by reference): every rank allocates one staging area, the ranks exchange
// and validate its handle, and map each other's areas. isend/irecv only
// record; wait_all turns everything recorded into one step (see protocol.hpp)
// that the policy runs (the emulation on the calling thread, CUDA as one
// kernel on the communicator's stream, without waiting for it). Failures the
// step finds (a wait past the timeout, a mismatched message) go to an error
// word that the next call, or synchronize(), raises as plait::error; the
// communicator is poisoned from then on.
//
// register_buffer (collective) registers a user buffer for zero-copy: every
// rank exports its buffer (a CUDA IPC handle, or in the emulation its address
// and pid), peers map it once and write where they reach it into the registry
// of their own staging area. While the returned handle lives, sends whose
// bytes lie inside it are read by the peers straight from it (no staging);
// the handle's destruction (collective again) unmaps it everywhere. Lookups
// go through the live handles only: there is no address-keyed cache that
// could go stale after a free.
//
// Not included by <plait/plait.hpp> (protocol.hpp's functions change under nvcc).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

#include "plait/core/call_stamp.hpp"
#include "plait/core/communicator_core.hpp"
#include "plait/core/error.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/transport/nvlink/protocol.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {

/// Shape of the staging area (per rank: size() inbound channels of `slots`
/// chunks of `slot_bytes`). Every rank of a group must pass the same values.
struct options {
  std::uint32_t slots = 0;       ///< chunks in flight per peer and channel; 0: the policy's default
  std::uint64_t slot_bytes = 0;  ///< bytes per chunk (a multiple of 16); 0: the policy's default
  /// Parallel channels per pair (a message is split across them: several
  /// thread blocks per transfer on a GPU); 0: the policy's default. At most
  /// 16, and at most 128 / size(): more is reduced to that, the same way on every rank.
  std::uint32_t channels = 0;
};

namespace detail {

using plait::detail::seconds_text;

/// The bootstrap communicator behind a type-erased face: the NVLink
/// communicator only exchanges small host records over it, barriers and splits.
class bootstrap_link {
 public:
  virtual ~bootstrap_link() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// Every rank's `mine` (same size everywhere) into `all`, in rank order.
  virtual void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  virtual void barrier() = 0;
  /// The bootstrap's split; null for plait::no_group.
  virtual std::unique_ptr<bootstrap_link> split(int color, int key) = 0;
};

template <class Comm>
class bootstrap_over;

/// Refers to a user's communicator (which must outlive the NVLink communicator).
template <class Comm>
class bootstrap_ref : public bootstrap_link {
 public:
  explicit bootstrap_ref(Comm& comm) : comm_(&comm) {}
  [[nodiscard]] int rank() const override { return comm_->rank(); }
  [[nodiscard]] int size() const override { return comm_->size(); }
  void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    const int tag = comm_->next_tag();
    const int n = comm_->size();
    std::vector<typename Comm::request> requests;
    const std::uint64_t before = comm_->bytes_sent();
    for (int peer = 0; peer < n; ++peer) {
      std::span<std::byte> theirs = all.subspan(static_cast<std::size_t>(peer) * mine.size(), mine.size());
      if (peer == comm_->rank()) {
        std::copy(mine.begin(), mine.end(), theirs.begin());
        continue;
      }
      requests.push_back(comm_->irecv(peer, theirs, tag));
      requests.push_back(comm_->isend(peer, mine, tag));
    }
    comm_->wait_all(std::span(requests), clock::now() + comm_->timeout());
    if constexpr (requires { comm_->discount_control_bytes(std::uint64_t{}); }) {
      comm_->discount_control_bytes(comm_->bytes_sent() - before);  // handles are control traffic
    }
  }
  void barrier() override { comm_->barrier(); }
  std::unique_ptr<bootstrap_link> split(int color, int key) override {
    Comm child = comm_->split(color, key);
    if (color == no_group) return nullptr;
    return std::make_unique<bootstrap_over<Comm>>(std::move(child));
  }

 protected:
  Comm* comm_;
};

/// Owns a communicator that split() made.
template <class Comm>
class bootstrap_over : public bootstrap_ref<Comm> {
 public:
  explicit bootstrap_over(Comm&& comm) : bootstrap_ref<Comm>(owned_), owned_(std::move(comm)) { this->comm_ = &owned_; }

 private:
  Comm owned_;
};

/// What a rank tells its peers about its staging area. Fixed size, checked
/// field by field: a peer's record is never trusted.
struct area_record {
  std::uint32_t magic;
  std::uint32_t version;
  std::int32_t rank;
  std::int32_t device;
  std::int64_t pid;
  std::uint64_t host;  ///< hash of the host name: IPC works only inside one node
  std::uint32_t ranks;
  std::uint32_t slots;
  std::uint64_t slot_bytes;
  std::uint32_t channels;
  std::uint32_t reserved;
  std::uint64_t area_bytes;
  std::uint64_t address;  ///< valid in the owner's process (peers that are its threads use it)
  std::array<std::byte, 64> handle;
  std::uint64_t checksum;

  [[nodiscard]] std::uint64_t digest() const noexcept {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over everything before the checksum
    const auto* p = reinterpret_cast<const unsigned char*>(this);
    for (std::size_t i = 0; i < offsetof(area_record, checksum); ++i) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
  }
};
static_assert(std::is_trivially_copyable_v<area_record>);

/// What a policy gives for a buffer it exports (register_buffer): a handle
/// peers in other processes open, and where the buffer starts inside the
/// allocation the handle names. ok false: other processes cannot map it.
struct buffer_export {
  bool ok = false;
  std::array<std::byte, 64> handle{};
  std::uint64_t offset = 0;
};

/// A peer's registered buffer as reached here: the registry entry (its
/// serial set by the communicator) and what release_buffer closes (or null).
/// ok false: this pair falls back to staging.
struct buffer_import {
  bool ok = false;
  registration_entry entry{};
  std::byte* mapping = nullptr;
};

/// Why a rank cannot register its buffer; every rank learns every rank's.
enum class registration_status : std::uint32_t { ok = 0, empty, null, overlap, not_device, too_many };

inline const char* describe(registration_status s) noexcept {
  switch (s) {
    case registration_status::ok: return "registered";
    case registration_status::empty: return "empty (nothing to register)";
    case registration_status::null: return "a null buffer of nonzero size";
    case registration_status::overlap: return "it overlaps a buffer already registered with this communicator";
    case registration_status::not_device: return "it is not memory the device can use";
    case registration_status::too_many: return "too many live registrations (at most 16 per communicator)";
  }
  return "unknown status";
}

/// What a rank tells its peers about a buffer it registers; checked like area_record.
struct buffer_record {
  std::uint32_t magic;
  std::int32_t rank;
  std::uint32_t status;  ///< a registration_status
  std::uint32_t id;      ///< registry slot, < max_registrations when status is ok
  std::uint64_t serial;
  std::int64_t pid;
  std::uint64_t address;  ///< valid in the owner's process
  std::uint64_t bytes;
  std::uint32_t exported;  ///< buffer_export::ok
  std::int32_t device;     ///< the owner's device
  std::uint64_t offset;    ///< buffer_export::offset
  std::array<std::byte, 64> handle;
  std::uint64_t checksum;

  [[nodiscard]] std::uint64_t digest() const noexcept {
    std::uint64_t h = 1469598103934665603ULL;
    const auto* p = reinterpret_cast<const unsigned char*>(this);
    for (std::size_t i = 0; i < offsetof(buffer_record, checksum); ++i) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
  }
};
static_assert(std::is_trivially_copyable_v<buffer_record>);
inline constexpr std::uint32_t buffer_magic = 0x52424c50;  // "PLBR"

inline std::uint64_t host_hash() {
  std::array<char, 256> name{};
  gethostname(name.data(), name.size() - 1);
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : name) {
    if (c == '\0') break;
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return h;
}

// The device compares stamps as bits; it must agree with plait::stamps_conflict.
static_assert(stamp_bits_conflict(call_stamp::of(call_kind::all_gather, "x").bits(),
                                  call_stamp::of(call_kind::all_to_all, "x").bits()));
static_assert(stamp_bits_conflict(call_stamp::of(call_kind::all_gather, "x").bits(),
                                  call_stamp::of(call_kind::all_gather, "y").bits()));
static_assert(!stamp_bits_conflict(call_stamp::of(call_kind::all_gather, "x").bits(),
                                   call_stamp::of(call_kind::all_gather, "x").bits()));
static_assert(!stamp_bits_conflict(call_stamp{}.bits(), call_stamp::of(call_kind::all_gather, "x").bits()));

}  // namespace detail

/// The NVLink P2P transport over policy Ops. Movable, not copyable. Rank,
/// size, timeouts, tags and call stamps, poisoning, check mode and payload
/// accounting are plait::communicator_core's (its accessors are this
/// communicator's).
template <class Ops>
class basic_communicator : public communicator_core {
 public:
  using transport_concept = transport_tag;
  using memory_space = device_memory;
  using stream_type = typename Ops::stream_type;
  using engine_type = typename Ops::engine;

  /// Complete once wait_all has returned: the transfer is then ordered on the
  /// stream (on a GPU it has not necessarily happened yet; synchronize() waits).
  struct request {
    std::uint64_t sequence = 0;
  };

  /// A null communicator (what split gives a rank that passed plait::no_group).
  basic_communicator() = default;

  /// Collective over `bootstrap`: allocates this rank's staging area on
  /// `device`, exchanges handles, maps every peer's area. `stream` orders all
  /// work unless a call overrides it (use_stream).
  template <transport Bootstrap>
  basic_communicator(Bootstrap& bootstrap, int device, stream_type stream = {}, options shape = {})
      : basic_communicator(std::make_unique<detail::bootstrap_ref<Bootstrap>>(bootstrap), device, stream, shape) {}
  /// Deleted: the communicator refers to its bootstrap, so a temporary would dangle.
  template <transport Bootstrap>
  basic_communicator(Bootstrap&& bootstrap, int device, stream_type stream = {}, options shape = {}) = delete;

  /// The source becomes a null communicator.
  basic_communicator(basic_communicator&& other) noexcept
      : communicator_core(std::move(other)), s_(std::move(other.s_)) {
    other.attach(-1, 0);
  }
  basic_communicator& operator=(basic_communicator&& other) noexcept {
    if (this != &other) {
      communicator_core::operator=(std::move(other));
      s_ = std::move(other.s_);
      other.attach(-1, 0);
    }
    return *this;
  }
  basic_communicator(const basic_communicator&) = delete;
  basic_communicator& operator=(const basic_communicator&) = delete;
  ~basic_communicator() = default;

  explicit operator bool() const noexcept { return s_ != nullptr; }
  [[nodiscard]] int device() const noexcept { return s_ ? s_->device : -1; }
  [[nodiscard]] stream_type stream() const noexcept { return s_ ? s_->stream : stream_type{}; }
  /// The staging area's shape (every rank's).
  [[nodiscard]] options shape() const noexcept {
    return s_ ? options{s_->layout.shape.slots, s_->layout.shape.slot_bytes, s_->layout.shape.channels} : options{};
  }

  /// Records a send of device bytes; they must stay untouched until the
  /// transfer has run (after wait_all, in stream order).
  request isend(int peer, std::span<const std::byte> bytes, int tag = user_tag) {
    auto& s = live_state("isend");
    check_peer(peer, "isend");
    check_tag(tag, peer, "isend");
    post(s, peer, true, const_cast<std::byte*>(bytes.data()), bytes.size(), tag, "isend");
    count_sent(bytes.size());
    return {s.posted++};
  }

  /// Records a receive of exactly bytes.size() device bytes.
  request irecv(int peer, std::span<std::byte> bytes, int tag = user_tag) {
    auto& s = live_state("irecv");
    check_peer(peer, "irecv");
    check_tag(tag, peer, "irecv");
    post(s, peer, false, bytes.data(), bytes.size(), tag, "irecv");
    return {s.posted++};
  }

  /// Runs every transfer recorded so far (not only `requests`) as one step on
  /// the stream. The host emulation completes it before returning; the CUDA
  /// policy enqueues it and returns. `until` bounds every wait of the step.
  void wait_all(std::span<request> requests, deadline until) {
    auto& s = live_state("wait_all");
    for (const request& r : requests) {
      if (r.sequence >= s.posted) {
        throw error(errc::invalid_argument, "request " + std::to_string(r.sequence) + " was never posted",
                    where("wait_all"));
      }
    }
    if (s.pending.empty()) return;
    flush(s, until);
    raise_device_error();
  }
  void wait_all(std::span<request> requests) { wait_all(requests, clock::now() + timeout()); }
  void wait(request r) { wait_all(std::span<request>(&r, 1)); }
  void send(int peer, std::span<const std::byte> bytes, int tag = user_tag) { wait(isend(peer, bytes, tag)); }
  void recv(int peer, std::span<std::byte> bytes, int tag = user_tag) { wait(irecv(peer, bytes, tag)); }

  /// Waits for everything enqueued on the stream and raises any error the
  /// device found (or a CUDA error) as plait::error.
  void synchronize() {
    auto& s = live_state("synchronize");
    try {
      s.ops.synchronize(s.stream);
    } catch (const error& e) {
      poison_and_discard(e);
      throw;
    }
    raise_device_error();
  }

  /// synchronize(), then a barrier of the bootstrap communicator.
  void barrier() {
    synchronize();
    auto& s = live_state("barrier");
    try {
      s.boot->barrier();
    } catch (const error& e) {
      poison_and_discard(e);
      throw;
    }
  }

  /// Splits the group like the bootstrap's split (collective): ranks passing
  /// the same color form a new NVLink group with its own staging areas, on
  /// the same device and stream. plait::no_group gives a null communicator.
  basic_communicator split(int color, int key) {
    synchronize();
    auto& s = live_state("split");
    check_split_color(color);
    std::unique_ptr<detail::bootstrap_link> child = s.boot->split(color, key);
    if (!child) return {};
    return basic_communicator(std::move(child), s.device, s.stream, shape(), this);
  }

  /// Work of this communicator goes to `stream` until the returned guard ends.
  class stream_guard {
   public:
    stream_guard(basic_communicator& comm, stream_type stream) : comm_(&comm), previous_(comm.stream()) {
      comm_->live_state("use_stream").stream = stream;
    }
    stream_guard(const stream_guard&) = delete;
    stream_guard& operator=(const stream_guard&) = delete;
    ~stream_guard() {
      if (comm_->s_) comm_->s_->stream = previous_;
    }

   private:
    basic_communicator* comm_;
    stream_type previous_;
  };
  /// Per-call stream: `{ auto on = gpu.use_stream(s); plait::all_gather(gpu, ...); }`.
  [[nodiscard]] stream_guard use_stream(stream_type stream) { return stream_guard(*this, stream); }

  /// How the executor allocates, packs and copies this transport's memory
  /// (on the current stream).
  engine_type& copy_engine() { return live_state("copy_engine").engine; }

  /// The policy itself (tests and check programs look at it).
  Ops& policy() { return live_state("policy").ops; }

  /// Every rank's small host record `mine` into `all` over the bootstrap
  /// communicator: check mode exchanges its call signatures here, in host
  /// memory, never through the device staging areas.
  void exchange_control(std::span<const std::byte> mine, std::span<std::byte> all) {
    auto& s = live_state("check");
    if (all.size() != mine.size() * static_cast<std::size_t>(size())) {
      throw error(errc::invalid_argument, "control exchange of the wrong size", where("check"));
    }
    try {
      s.boot->all_gather(mine, all);
    } catch (const error& e) {
      poison_and_discard(e);
      throw;
    }
  }

  class registration;

  /// Collective: registers `bytes` (device memory; may be empty on any rank)
  /// for zero-copy. While the returned handle lives, sends whose bytes lie
  /// inside it are read by peers straight from it instead of through staging
  /// (peers that cannot map it, e.g. IPC refused, still get them through
  /// staging). The buffer must stay allocated while the handle lives.
  /// A null buffer of nonzero size, one overlapping a live registration, one
  /// the device cannot use, or a 17th live registration on any rank is
  /// errc::invalid_argument on every rank, before anything is mapped.
  /// Handles must be destroyed collectively too, in the same order on every
  /// rank, and before the communicator (which otherwise drops them).
  [[nodiscard]] registration register_buffer(std::span<const std::byte> bytes) {
    synchronize();  // no step of ours runs while the registry changes
    auto& s = live_state("register_buffer");
    return registration(s.link, add_registration(s, bytes));
  }
  /// register_buffer over a typed span (device memory, e.g. {ptr, n}).
  template <class T, std::size_t Extent>
  [[nodiscard]] registration register_buffer(std::span<T, Extent> range) {
    return register_buffer(std::as_bytes(range));
  }
  /// register_buffer over any contiguous lvalue range (a span, a vector, ...).
  template <class Range>
  requires requires(Range& r) { std::span(r); }
  [[nodiscard]] registration register_buffer(Range& range) { return register_buffer(std::as_bytes(std::span(range))); }

  /// Bytes of this rank's sends that peers read straight from registered buffers.
  [[nodiscard]] std::uint64_t bytes_zero_copy() const noexcept { return s_ ? s_->zero_copy_bytes : 0; }

 private:
  struct posted_message {
    int peer;
    bool is_send;
    detail::message what;
  };

  /// One collective registration as this rank sees it.
  struct registered {
    std::uint64_t serial = 0;                      ///< this rank's (nonzero; unique per communicator)
    std::uint32_t id = detail::max_registrations;  ///< our registry slot; max_registrations if empty
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    std::uint32_t readers = 0;         ///< ranks that read it straight from here (bit per rank)
    std::vector<std::uint32_t> ids;    ///< per peer: its slot we filled in our registry (max_registrations: none)
    std::vector<std::byte*> mappings;  ///< per peer: what release_buffer closes
  };

  /// What a communicator owns besides the core's settings, behind one pointer
  /// so that teardown happens once and registration handles reach it after
  /// the communicator moved (they need only the bootstrap, the policy and the
  /// registry: the core's fields stay in the communicator itself).
  struct state {
    std::unique_ptr<detail::bootstrap_link> boot;
    Ops ops;
    engine_type engine;
    int device = 0;
    stream_type stream{};
    detail::area_layout layout{};
    std::byte* area = nullptr;
    std::vector<std::byte*> peer_areas;
    std::vector<bool> mapped;  // peer area opened through an IPC handle (else a raw address)
    std::vector<posted_message> pending;
    std::uint64_t posted = 0;
    std::uint64_t zero_copy_bytes = 0;
    std::vector<registered> registrations;  // live handles only
    std::uint64_t serial_counter = 0;
    /// What registration handles hold: null once this state is gone.
    std::shared_ptr<state*> link = std::make_shared<state*>(this);

    state(std::unique_ptr<detail::bootstrap_link> b, int dev, stream_type st)
        : boot(std::move(b)), ops(dev), engine(ops, &stream), device(dev), stream(st) {}
    state(const state&) = delete;
    state& operator=(const state&) = delete;

    /// Collective teardown: no peer may still write into our area, and we
    /// must not write into theirs once they are gone. Poisoned ranks take
    /// part too (their peers may be healthy); errors cannot escape a
    /// destructor, and the bootstrap's timeout bounds the wait.
    ~state() {
      try {
        ops.synchronize(stream);
      } catch (...) {
      }
      if (boot) {
        try {
          boot->barrier();
        } catch (...) {
        }
      }
      *link = nullptr;  // handles still alive become empty
      for (registered& r : registrations) {
        for (std::byte* m : r.mappings) {
          if (m != nullptr) ops.release_buffer(m);
        }
      }
      for (std::size_t p = 0; p < peer_areas.size(); ++p) {
        if (peer_areas[p] != nullptr && peer_areas[p] != area)
          ops.release_import(peer_areas[p], layout.total, mapped[p]);
      }
      if (area != nullptr) ops.release_area(area, layout.total);
    }
  };

  /// A group over `boot`: with the default settings (PLAIT_TIMEOUT, PLAIT_CHECK
  /// read now), or those of `parent` when split from it.
  basic_communicator(std::unique_ptr<detail::bootstrap_link> boot, int device, stream_type stream, options shape,
                     const basic_communicator* parent = nullptr)
      : communicator_core(parent != nullptr ? parent->child(boot->rank(), boot->size())
                                            : communicator_core(boot->rank(), boot->size())) {
    const int rank = boot->rank();
    const int size = boot->size();
    const error_context at = where("nvlink::communicator");
    if (size > detail::max_ranks) {
      throw error(
          errc::unsupported,
          "an NVLink group holds at most " + std::to_string(detail::max_ranks) + " ranks, not " + std::to_string(size),
          at);
    }
    detail::geometry g{static_cast<std::uint32_t>(size), shape.slots != 0 ? shape.slots : Ops::default_slots,
                       shape.slot_bytes != 0 ? shape.slot_bytes : Ops::default_slot_bytes,
                       shape.channels != 0 ? shape.channels : Ops::default_channels};
    if (g.slots > 1024 || g.slot_bytes % 16 != 0 || g.slot_bytes > (std::uint64_t{1} << 30) ||
        g.channels > detail::max_channels) {
      throw error(errc::invalid_argument,
                  "staging shape " + std::to_string(g.slots) + " slots of " + std::to_string(g.slot_bytes) +
                      " bytes, " + std::to_string(g.channels) +
                      " channels: slots must be 1..1024, slot_bytes a multiple of 16 " + "up to 1 GiB, channels 1..16",
                  at);
    }
    // Every lane of a step must fit one launch: fewer channels for large groups.
    g.channels = std::min<std::uint32_t>(g.channels, static_cast<std::uint32_t>(detail::max_lanes / (2 * size)));
    auto s = std::make_unique<state>(std::move(boot), device, stream);
    s->layout = detail::area_layout::of(g);
    s->area = s->ops.allocate_area(s->layout.total);
    const detail::area_header header{detail::area_magic, detail::protocol_version, rank, g.ranks, g.slots, g.channels,
                                     g.slot_bytes};
    s->ops.write_area(s->area, &header, sizeof header);

    detail::area_record mine{};
    mine.magic = detail::area_magic;
    mine.version = detail::protocol_version;
    mine.rank = rank;
    mine.device = device;
    mine.pid = static_cast<std::int64_t>(getpid());
    mine.host = detail::host_hash();
    mine.ranks = g.ranks;
    mine.slots = g.slots;
    mine.slot_bytes = g.slot_bytes;
    mine.channels = g.channels;
    mine.area_bytes = s->layout.total;
    mine.address = reinterpret_cast<std::uintptr_t>(s->area);
    mine.handle = s->ops.export_area(s->area, s->layout.total);
    mine.checksum = mine.digest();

    std::vector<detail::area_record> all(static_cast<std::size_t>(size));
    s->boot->all_gather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
    s->peer_areas.assign(static_cast<std::size_t>(size), nullptr);
    s->mapped.assign(static_cast<std::size_t>(size), false);
    for (int peer = 0; peer < size; ++peer) {
      const auto p = static_cast<std::size_t>(peer);
      if (peer == rank) {
        s->peer_areas[p] = s->area;
        continue;
      }
      const detail::area_record& r = all[p];
      check_record(r, mine, peer);
      const bool same_process = r.pid == mine.pid;
      s->peer_areas[p] =
          s->ops.import_area(r.handle, r.area_bytes, same_process,
                             reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(r.address)), r.device);
      s->mapped[p] = !same_process;
      if constexpr (requires { s->ops.watch_peer(peer, r.pid); }) {
        if (!same_process) s->ops.watch_peer(peer, r.pid);  // a policy that can tell a dead process
      }
      detail::area_header theirs{};
      s->ops.read_area(&theirs, s->peer_areas[p], sizeof theirs);
      if (theirs.magic != detail::area_magic || theirs.version != detail::protocol_version || theirs.rank != peer ||
          theirs.ranks != g.ranks || theirs.slots != g.slots || theirs.slot_bytes != g.slot_bytes ||
          theirs.channels != g.channels) {
        throw error(errc::transport,
                    "the staging area mapped from rank " + std::to_string(peer) +
                        " does not carry that rank's header (stale or foreign handle)",
                    where("nvlink::communicator", peer));
      }
    }
    // Everyone has mapped everyone: names standing in for handles can go.
    s->boot->barrier();
    s->ops.unexport_area();
    s_ = std::move(s);
  }

  void check_record(const detail::area_record& r, const detail::area_record& mine, int peer) const {
    const error_context from = where("nvlink::communicator", peer);
    auto bad = [&](const std::string& what) {
      return error(errc::transport, "rank " + std::to_string(peer) + " sent a bad staging-area record: " + what, from);
    };
    if (r.magic != detail::area_magic || r.checksum != r.digest()) throw bad("corrupt or foreign");
    if (r.version != detail::protocol_version) throw bad("protocol version " + std::to_string(r.version));
    if (r.rank != peer) throw bad("it names rank " + std::to_string(r.rank));
    if (r.ranks != mine.ranks) throw bad("group of " + std::to_string(r.ranks) + " ranks");
    if (r.slots != mine.slots || r.slot_bytes != mine.slot_bytes || r.channels != mine.channels) {
      throw error(errc::size_mismatch,
                  "rank " + std::to_string(peer) + " uses " + std::to_string(r.slots) + " slots of " +
                      std::to_string(r.slot_bytes) + " bytes in " + std::to_string(r.channels) +
                      " channels, this rank " + std::to_string(mine.slots) + " of " + std::to_string(mine.slot_bytes) +
                      " in " + std::to_string(mine.channels) + " (pass the same nvlink::options everywhere)",
                  from);
    }
    if (r.channels == 0 || r.channels > detail::max_channels ||
        r.area_bytes != detail::area_layout::of({r.ranks, r.slots, r.slot_bytes, r.channels}).total) {
      throw bad("area of " + std::to_string(r.area_bytes) + " bytes");
    }
    if (r.pid <= 0) throw bad("pid " + std::to_string(r.pid));
    if (r.host != mine.host) {
      throw error(errc::unsupported,
                  "rank " + std::to_string(peer) +
                      " runs on another node; NVLink groups stay inside one node "
                      "(split the bootstrap by node first)",
                  from);
    }
  }

  /// The state, once the core says the communicator is usable and the device
  /// has reported no failure since the last call.
  state& live_state(std::string_view operation) {
    require_usable(operation);
    raise_device_error();
    return *s_;
  }

  void post(state& s, int peer, bool is_send, std::byte* data, std::size_t bytes, int tag, std::string_view operation) {
    if (s.pending.size() == static_cast<std::size_t>(detail::max_messages)) {
      throw error(errc::unsupported,
                  "more than " + std::to_string(detail::max_messages) +
                      " transfers recorded before one wait_all (call wait_all more often)",
                  where(operation, peer));
    }
    if (data == nullptr && bytes != 0) {
      throw error(errc::invalid_argument, "null buffer of " + std::to_string(bytes) + " bytes", where(operation, peer));
    }
    if (bytes > detail::max_message_bytes) {
      throw error(errc::unsupported, "a message of " + std::to_string(bytes) + " bytes (at most 2^56 - 1)",
                  where(operation, peer));
    }
    if (bytes != 0) {
      if (const char* problem = s.ops.check_buffer(data)) {
        throw error(errc::invalid_argument, problem, where(operation, peer));
      }
    }
    std::uint32_t source = 0;
    if (is_send && bytes != 0) {
      // Only live handles are searched: a freed buffer is never found here.
      for (const registered& r : s.registrations) {
        if (r.id < detail::max_registrations && (r.readers >> peer & 1U) != 0 && data >= r.data &&
            static_cast<std::size_t>(data - r.data) <= r.bytes &&
            r.bytes - static_cast<std::size_t>(data - r.data) >= bytes) {
          source = r.id + 1;
          s.zero_copy_bytes += bytes;
          break;
        }
      }
    }
    // Both ends write the stamp of their own call under `tag`; the receiver compares them (protocol.hpp).
    s.pending.push_back({peer, is_send,
                         detail::message{.data = data,
                                         .bytes = bytes,
                                         .source = source,
                                         .tag = static_cast<std::uint32_t>(tag),
                                         .stamp = stamp_of(tag).bits()}});
  }

  void write_entry(state& s, int owner, std::uint32_t id, const detail::registration_entry& e) {
    s.ops.write_area(reinterpret_cast<std::byte*>(s.layout.entry(s.area, owner, id)), &e, sizeof e);
  }

  /// The collective part of register_buffer; returns the registration's serial.
  std::uint64_t add_registration(state& s, std::span<const std::byte> bytes) {
    auto* data = const_cast<std::byte*>(bytes.data());
    detail::buffer_record mine{};
    mine.magic = detail::buffer_magic;
    mine.rank = rank();
    mine.pid = static_cast<std::int64_t>(getpid());
    mine.address = reinterpret_cast<std::uintptr_t>(data);
    mine.bytes = bytes.size();
    mine.id = detail::max_registrations;
    mine.device = s.device;
    const char* problem = nullptr;
    auto status = detail::registration_status::ok;
    std::size_t live = 0;
    for (const registered& r : s.registrations) live += r.id < detail::max_registrations ? 1 : 0;
    if (bytes.empty()) {
      status = detail::registration_status::empty;
    } else if (data == nullptr) {
      status = detail::registration_status::null;
    } else if (std::any_of(s.registrations.begin(), s.registrations.end(), [&](const registered& r) {
                 return r.bytes != 0 && data < r.data + r.bytes && r.data < data + bytes.size();
               })) {
      status = detail::registration_status::overlap;
    } else if ((problem = s.ops.check_buffer(data)) != nullptr) {
      status = detail::registration_status::not_device;
    } else if (live >= detail::max_registrations) {
      status = detail::registration_status::too_many;
    }
    const std::uint64_t serial = ++s.serial_counter;
    mine.serial = serial;
    if (status == detail::registration_status::ok) {
      std::uint32_t id = 0;
      while (
          std::any_of(s.registrations.begin(), s.registrations.end(), [&](const registered& r) { return r.id == id; }))
        ++id;
      mine.id = id;
      const detail::buffer_export ex = s.ops.export_buffer(data, bytes.size());
      mine.exported = ex.ok ? 1 : 0;
      mine.offset = ex.offset;
      mine.handle = ex.handle;
    }
    mine.status = static_cast<std::uint32_t>(status);
    mine.checksum = mine.digest();

    std::vector<detail::buffer_record> all(static_cast<std::size_t>(size()));
    try {
      s.boot->all_gather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
    } catch (const error& e) {
      poison_and_discard(e);
      throw;
    }
    for (int peer = 0; peer < size(); ++peer) {
      const detail::buffer_record& r = all[static_cast<std::size_t>(peer)];
      const auto st = static_cast<detail::registration_status>(r.status);
      if (r.magic != detail::buffer_magic || r.checksum != r.digest() || r.rank != peer ||
          r.status > static_cast<std::uint32_t>(detail::registration_status::too_many) ||
          (st == detail::registration_status::ok && (r.id >= detail::max_registrations || r.serial == 0))) {
        const error e(errc::transport, "rank " + std::to_string(peer) + " sent a corrupt buffer registration",
                      where("register_buffer", peer));
        poison_and_discard(e);
        throw e;
      }
    }
    // Refused anywhere: refused everywhere, with the first refusing rank named, before anything is mapped.
    for (int peer = 0; peer < size(); ++peer) {
      const auto st = static_cast<detail::registration_status>(all[static_cast<std::size_t>(peer)].status);
      if (st == detail::registration_status::ok || st == detail::registration_status::empty) continue;
      std::string why = "rank " + std::to_string(peer) + " cannot register its buffer of " +
                        std::to_string(all[static_cast<std::size_t>(peer)].bytes) + " bytes: " + detail::describe(st);
      if (peer == rank() && problem != nullptr) why += std::string(" (") + problem + ")";
      throw error(errc::invalid_argument, why, where("register_buffer", peer));
    }

    registered reg;
    reg.serial = serial;
    reg.id = mine.id;
    reg.data = status == detail::registration_status::ok ? data : nullptr;
    reg.bytes = status == detail::registration_status::ok ? bytes.size() : 0;
    reg.ids.assign(static_cast<std::size_t>(size()), detail::max_registrations);
    reg.mappings.assign(static_cast<std::size_t>(size()), nullptr);
    std::uint32_t reached = 0;  // ranks whose buffer this rank reads directly
    try {
      for (int peer = 0; peer < size(); ++peer) {
        const detail::buffer_record& r = all[static_cast<std::size_t>(peer)];
        if (r.status != static_cast<std::uint32_t>(detail::registration_status::ok)) continue;
        detail::buffer_import in;
        if (peer == rank()) {
          in.ok = true;
          in.entry = {reinterpret_cast<std::uintptr_t>(data), bytes.size(), 0, 0};
        } else {
          const bool same_process = r.pid == mine.pid;
          if (!same_process && r.exported == 0) continue;  // not mappable elsewhere: staging for this pair
          detail::buffer_export theirs;
          theirs.ok = true;
          theirs.handle = r.handle;
          theirs.offset = r.offset;
          try {
            in = s.ops.import_buffer(theirs, reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(r.address)),
                                     static_cast<std::size_t>(r.bytes), same_process, r.pid, r.device);
          } catch (const error&) {
            in.ok = false;  // e.g. IPC refused: this pair uses staging
          }
          if (!in.ok) continue;
        }
        in.entry.serial = r.serial;
        write_entry(s, peer, r.id, in.entry);
        reg.ids[static_cast<std::size_t>(peer)] = r.id;
        reg.mappings[static_cast<std::size_t>(peer)] = in.mapping;
        reached |= 1U << peer;
      }
      std::vector<std::uint32_t> reach(static_cast<std::size_t>(size()));
      s.boot->all_gather(std::as_bytes(std::span(&reached, 1)), std::as_writable_bytes(std::span(reach)));
      for (int peer = 0; peer < size(); ++peer) {
        if ((reach[static_cast<std::size_t>(peer)] >> rank() & 1U) != 0) reg.readers |= 1U << peer;
      }
    } catch (const error& e) {
      drop(s, reg);
      poison_and_discard(e);
      throw;
    }
    s.registrations.push_back(std::move(reg));
    return serial;
  }

  /// Clears what `reg` put into our registry and closes its mappings (local).
  static void drop(state& s, registered& reg) noexcept {
    for (int peer = 0; peer < static_cast<int>(reg.ids.size()); ++peer) {
      const auto p = static_cast<std::size_t>(peer);
      if (reg.ids[p] < detail::max_registrations) {
        try {
          s.ops.write_area(reinterpret_cast<std::byte*>(s.layout.entry(s.area, peer, reg.ids[p])), &zero_entry,
                           sizeof zero_entry);
        } catch (...) {
        }
        reg.ids[p] = detail::max_registrations;
      }
      if (reg.mappings[p] != nullptr) s.ops.release_buffer(reg.mappings[p]);
      reg.mappings[p] = nullptr;
    }
  }
  static constexpr detail::registration_entry zero_entry{};

  /// The collective part of a registration handle's destruction: nobody reads
  /// the buffers any more (streams synchronized, barrier), then everyone
  /// unmaps, then a barrier so the owner may free its buffer on return.
  static void remove_registration(state& s, std::uint64_t serial) noexcept {
    const auto it = std::find_if(s.registrations.begin(), s.registrations.end(),
                                 [&](const registered& r) { return r.serial == serial; });
    if (it == s.registrations.end()) return;
    try {
      s.ops.synchronize(s.stream);
    } catch (...) {
    }
    try {
      s.boot->barrier();
    } catch (...) {
    }
    drop(s, *it);
    s.registrations.erase(it);
    try {
      s.boot->barrier();
    } catch (...) {
    }
  }

  /// Groups the recorded transfers into lanes and hands the step to the policy.
  void flush(state& s, deadline until) {
    auto args = std::make_unique<detail::step_args>();
    args->layout = s.layout;
    args->self = s.area;
    for (int p = 0; p < size(); ++p) args->peer_area[p] = s.peer_areas[static_cast<std::size_t>(p)];
    args->rank = rank();
    const auto left = until - clock::now();
    args->timeout_ns =
        left.count() > 0
            ? static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(left).count())
            : 0;
    // Lanes in first-posting order, one per channel; each lane's messages keep posting order.
    std::uint32_t next = 0;
    std::vector<bool> taken(s.pending.size(), false);
    for (std::size_t i = 0; i < s.pending.size(); ++i) {
      if (taken[i]) continue;
      detail::lane l{static_cast<std::int16_t>(s.pending[i].peer),
                     static_cast<std::uint8_t>(s.pending[i].is_send),
                     0,
                     static_cast<std::uint8_t>(next),
                     0,
                     0};
      for (std::size_t j = i; j < s.pending.size(); ++j) {
        if (taken[j] || s.pending[j].peer != l.peer || s.pending[j].is_send != (l.is_send != 0)) continue;
        taken[j] = true;
        args->messages[next++] = s.pending[j].what;
        ++l.count;
      }
      for (std::uint32_t channel = 0; channel < s.layout.shape.channels; ++channel) {
        l.channel = static_cast<std::uint8_t>(channel);
        args->lanes[args->lane_count++] = l;
      }
    }
    s.pending.clear();
    try {
      s.ops.run_step(*args, s.stream);
    } catch (const error& e) {
      poison_and_discard(e);
      throw;
    }
  }

  /// Throws the step failure the policy recorded, if any (and poisons).
  void raise_device_error() {
    const detail::fault f = s_->ops.error_word();
    if (f.code == static_cast<std::uint32_t>(detail::fault_code::none)) return;
    const error e = device_error(f);
    poison_and_discard(e);
    throw e;
  }

  /// The plait::error a fault of the device's error word stands for.
  [[nodiscard]] error device_error(const detail::fault& f) const {
    const error_context at = where({}, f.peer);
    const std::string direction = f.is_send != 0 ? "send " : "receive ";
    const std::string message = direction + std::to_string(f.bytes) + " bytes (" + std::to_string(f.done) + " done)";
    switch (static_cast<detail::fault_code>(f.code)) {
      case detail::fault_code::timeout:
        return error(errc::timeout, "timed out after " + detail::seconds_text(timeout()) + " waiting to " + message,
                     at);
      case detail::fault_code::tag_mismatch:
        return error(errc::transport,
                     "message with tag " + std::to_string(f.found) + " arrived where tag " +
                         std::to_string(f.expected) +
                         " was expected: the ranks called different operations or in a different order",
                     at);
      case detail::fault_code::size_mismatch:
        return error(errc::size_mismatch,
                     "peer sent " + std::to_string(f.found) + " bytes where this rank expects " +
                         std::to_string(f.expected) + " (do the ranks agree on the sizes?)",
                     at);
      case detail::fault_code::corrupt:
        return error(errc::transport,
                     "corrupt channel while trying to " + message + ": expected " + std::to_string(f.expected) +
                         ", the peer's flags or header say " + std::to_string(f.found),
                     at);
      case detail::fault_code::peer_lost:
        return error(errc::peer_lost,
                     "the process of rank " + std::to_string(f.peer) +
                         " is gone (it ended, or its registered buffer cannot be read) while trying to " + message,
                     at);
      case detail::fault_code::call_mismatch:
        return error(errc::size_mismatch,
                     "rank " + std::to_string(f.peer) + " sent a message of " +
                         plait::describe(call_stamp::from_bits(static_cast<std::uint32_t>(f.found))) +
                         " where this rank runs " +
                         plait::describe(call_stamp::from_bits(static_cast<std::uint32_t>(f.expected))) +
                         " under the same tag: the ranks called different collectives",
                     at);
      case detail::fault_code::none: break;
    }
    return error(errc::transport, "unknown device error code " + std::to_string(f.code), at);
  }

  /// Poisons (the core keeps the first failure) and drops what was recorded:
  /// nothing recorded may run after the throw.
  void poison_and_discard(const error& e) noexcept {
    poison(e);
    if (s_) s_->pending.clear();
  }

  std::unique_ptr<state> s_;
};

/// A live registration (see register_buffer). Move-only; destruction is
/// collective. Empty once moved from, reset, or its communicator is gone.
template <class Ops>
class basic_communicator<Ops>::registration {
 public:
  registration() = default;
  registration(registration&& other) noexcept
      : link_(std::move(other.link_)), serial_(std::exchange(other.serial_, 0)) {}
  registration& operator=(registration&& other) noexcept {
    if (this != &other) {
      reset();
      link_ = std::move(other.link_);
      serial_ = std::exchange(other.serial_, 0);
    }
    return *this;
  }
  registration(const registration&) = delete;
  registration& operator=(const registration&) = delete;
  ~registration() { reset(); }

  /// Unregisters now (collective): peers unmap the buffer.
  void reset() noexcept {
    if (link_ && *link_ != nullptr && serial_ != 0) basic_communicator::remove_registration(**link_, serial_);
    link_.reset();
    serial_ = 0;
  }

  /// Live: registered with a communicator that still exists.
  explicit operator bool() const noexcept { return find() != nullptr; }
  /// The registered bytes (empty if this rank registered nothing).
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    const registered* r = find();
    return r != nullptr ? std::span<const std::byte>(r->data, r->bytes) : std::span<const std::byte>{};
  }
  /// Other ranks that read this buffer directly (the rest get its bytes through staging).
  [[nodiscard]] int zero_copy_peers() const noexcept {
    const registered* r = find();
    if (r == nullptr || r->id >= detail::max_registrations) return 0;
    return std::popcount(r->readers) - 1;  // ourselves always
  }

 private:
  friend class basic_communicator;
  registration(std::shared_ptr<state*> link, std::uint64_t serial) : link_(std::move(link)), serial_(serial) {}
  const registered* find() const noexcept {
    if (!link_ || *link_ == nullptr) return nullptr;
    for (const registered& r : (*link_)->registrations) {
      if (r.serial == serial_) return &r;
    }
    return nullptr;
  }

  std::shared_ptr<state*> link_;
  std::uint64_t serial_ = 0;
};

}  // namespace nvlink
}  // namespace v0
}  // namespace plait

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
// register_buffer (collective) registers a user buffer for zero-copy
// (registry.hpp); while the returned handle (registration.hpp) lives, sends
// whose bytes lie inside it are read by the peers straight from it.
//
// The pieces, one job per file: bootstrap.hpp (the bootstrap communicator
// behind a type-erased face), records.hpp (what ranks tell each other at
// setup and registration), endpoint.hpp (what one rank owns: its staging
// areas, policy and pending transfers), registry.hpp and registration.hpp
// (zero-copy buffers), protocol.hpp (the step itself, host and device).
//
// Not included by <plait/plait.hpp> (protocol.hpp's functions change under nvcc).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plait/core/blocking_calls.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/communicator_core.hpp"
#include "plait/core/error.hpp"
#include "plait/core/receive_combine.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/transport/nvlink/bootstrap.hpp"
#include "plait/transport/nvlink/endpoint.hpp"
#include "plait/transport/nvlink/faults.hpp"
#include "plait/transport/nvlink/protocol.hpp"
#include "plait/transport/nvlink/registration.hpp"

namespace plait {
inline namespace v0 {
namespace nvlink {

namespace detail {

using plait::detail::seconds_text;

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
class basic_communicator : public communicator_core, public blocking_calls<basic_communicator<Ops>> {
 public:
  /// Opts in to plait::transport.
  using transport_concept = transport_tag;
  /// Buffers are device memory.
  using memory_space = device_memory;
  /// The device-operations policy's stream (cudaStream_t, or the emulation's).
  using stream_type = typename Ops::stream_type;
  /// The copy engine the executor allocates, packs and copies through.
  using engine_type = typename Ops::engine;

  /// Complete once wait_all has returned: the transfer is then ordered on the
  /// stream (on a GPU it has not necessarily happened yet; synchronize() waits).
  struct request {
    /// Its place among this rank's posted transfers.
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
  /// Movable, as the constructor; the source becomes a null communicator.
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

  /// False for a null communicator.
  explicit operator bool() const noexcept { return s_ != nullptr; }
  /// The device this rank's staging area lives on, -1 for a null communicator.
  [[nodiscard]] int device() const noexcept { return s_ ? s_->device : -1; }
  /// The stream work is ordered on now.
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

  /// Records a receive that folds its message into `into` as it arrives
  /// (core/receive_combine.hpp): each chunk straight out of the slot, or of
  /// the peer's registered buffer, inside the step (on a GPU, in the step
  /// kernel instantiated for the reduction; in the emulation, through the
  /// fold's host function). `how` and its operand stay valid until the step
  /// has run; combines_on_receive(how.granule) must hold, and every combining
  /// receive of one step must come from the same reduction (one fold run's
  /// step), at most max_combining_receives() of them.
  request irecv_combine(int peer, std::span<std::byte> into, const receive_combine& how, int tag = user_tag) {
    auto& s = live_state("irecv_combine");
    check_peer(peer, "irecv_combine");
    check_tag(tag, peer, "irecv_combine");
    if (!combines_on_receive(how.granule) || into.size() % how.granule != 0 || !s.ops.combines(how)) {
      throw error(errc::invalid_argument,
                  "cannot combine elements of " + std::to_string(how.granule) + " bytes on receive here",
                  where("irecv_combine", peer));
    }
    const receive_combine* first = s.step_combine;
    if (first != nullptr && (first->combine != how.combine || first->context != how.context ||
                             first->kernel != how.kernel || first->granule != how.granule)) {
      throw error(errc::unsupported, "combining receives of two reductions in one step (call wait_all between them)",
                  where("irecv_combine", peer));
    }
    const std::uint32_t k = s.combines.count;
    if (k == static_cast<std::uint32_t>(detail::max_combining_receives)) {
      throw error(errc::unsupported,
                  "more than " + std::to_string(detail::max_combining_receives) +
                      " combining receives recorded before one wait_all",
                  where("irecv_combine", peer));
    }
    post(s, peer, false, into.data(), into.size(), tag, "irecv_combine");
    s.pending.back().what.source = k + 1;
    s.combines.held[k] = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(how.held));
    if (how.arriving_left) s.combines.arriving_left |= 1u << k;
    s.combines.count = k + 1;
    s.step_combine = &how;
    s.combined_bytes += into.size();
    return {s.posted++};
  }
  /// Whether irecv_combine can combine elements of `granule` bytes: every
  /// chunk is then a whole number of them (a channel's part starts at a
  /// multiple of 16 bytes, a chunk at a multiple of the slot size).
  [[nodiscard]] bool combines_on_receive(std::size_t granule) const noexcept {
    return s_ && granule != 0 && 16 % granule == 0 && s_->layout.shape.slot_bytes % granule == 0;
  }
  /// Combining receives one step holds at most (a fold run lands the rest in staging).
  [[nodiscard]] static constexpr std::size_t max_combining_receives() noexcept {
    return detail::max_combining_receives;
  }
  /// Payload bytes this rank posted to combine as they arrive (irecv_combine):
  /// how to tell a reduction skipped its staging copy.
  [[nodiscard]] std::uint64_t bytes_combined_on_receive() const noexcept { return s_ ? s_->combined_bytes : 0; }

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
  /// wait_all with the deadline now + timeout().
  void wait_all(std::span<request> requests) { wait_all(requests, deadline_from_now()); }
  // wait(request), send and recv: blocking_calls (core/blocking_calls.hpp).
  /// The rank's own code threw in a collective call (op/abandon.hpp): poisons
  /// the communicator with `why` and drops what the call recorded. The peers
  /// learn of it only from their timeouts: the transport has no failure
  /// record they read.
  void abandon_call(const error& why) noexcept { poison_and_discard(why); }

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
    /// Sends the communicator's work to `stream` until destroyed.
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

  /// A live registration of a buffer (register_buffer).
  using registration = detail::registration_handle<Ops>;

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
    const std::uint64_t serial = s.registry.add(*s.boot, s.device, bytes, where("register_buffer"),
                                                [this](const error& e) { poison_and_discard(e); });
    return registration(s.link, serial);
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
  using state = detail::endpoint<Ops>;

  /// A group over `boot`: with the default settings (PLAIT_TIMEOUT, PLAIT_CHECK
  /// read now), or those of `parent` when split from it.
  basic_communicator(std::unique_ptr<detail::bootstrap_link> boot, int device, stream_type stream, options shape,
                     const basic_communicator* parent = nullptr)
      : communicator_core(parent != nullptr ? parent->child(boot->rank(), boot->size())
                                            : communicator_core(boot->rank(), boot->size())) {
    const error_context at = where("nvlink::communicator");
    const detail::geometry g = state::geometry_for(shape, boot->size(), at);
    auto s = std::make_unique<state>(std::move(boot), device, stream);
    s->open(g, at);
    s_ = std::move(s);
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
      source = s.registry.source_of(data, bytes, peer);  // live handles only: never a freed buffer
      if (source != 0) s.zero_copy_bytes += bytes;
    }
    // Both ends write the stamp of their own call under `tag`; the receiver compares them (protocol.hpp).
    s.pending.push_back({peer, is_send,
                         detail::message{.data = data,
                                         .bytes = bytes,
                                         .source = source,
                                         .tag = static_cast<std::uint32_t>(tag),
                                         .stamp = stamp_of(tag).bits()}});
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
    args->combines = s.combines;
    const receive_combine* how = std::exchange(s.step_combine, nullptr);
    s.combines = {};
    try {
      s.ops.run_step(*args, s.stream, how);
    } catch (const error& e) {
      poison_and_discard(e);
      throw;
    }
  }

  /// Throws the step failure the policy recorded, if any (and poisons).
  void raise_device_error() {
    const detail::fault f = s_->ops.error_word();
    if (f.code == static_cast<std::uint32_t>(detail::fault_code::none)) return;
    const error e = detail::fault_error(f, where({}, f.peer), timeout());
    poison_and_discard(e);
    throw e;
  }

  /// Poisons (the core keeps the first failure) and drops what was recorded:
  /// nothing recorded may run after the throw.
  void poison_and_discard(const error& e) noexcept {
    poison(e);
    if (s_) {
      s_->pending.clear();
      s_->combines = {};
      s_->step_combine = nullptr;
    }
  }

  std::unique_ptr<state> s_;
};
}  // namespace nvlink
}  // namespace v0
}  // namespace plait

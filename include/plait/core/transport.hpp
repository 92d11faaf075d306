// The transport concept: what a communicator must offer for plait's executor
// to run any schedule on it. Transports move bytes between ranks; they never
// see algorithms or layouts.
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "plait/core/call_stamp.hpp"
#include "plait/core/error.hpp"
#include "plait/core/receive_combine.hpp"

namespace plait {
inline namespace v0 {

/// The clock deadlines and timeouts are measured on.
using clock = std::chrono::steady_clock;
/// The point in time after which a wait gives up with errc::timeout.
using deadline = clock::time_point;

/// Memory spaces: where a transport's buffers live. Host transports pack
/// non-contiguous blocks on the CPU, device transports with kernels.
struct host_memory {};
struct device_memory {};

/// Opt-in tag: `using transport_concept = plait::transport_tag;`.
struct transport_tag {};

/// Color for split(): this rank joins no group and gets a null communicator.
inline constexpr int no_group = -1;

/// The default tag of user point-to-point messages. Collectives take fresh
/// tags from next_tag(), which never returns this one.
inline constexpr int user_tag = 0;

/// A communicator type plait can run collectives on. Between two ranks,
/// messages with the same tag match in the order they were posted.
///   rank(), size()                          this rank and the group's size
///   isend(peer, bytes, tag) -> request      post a send; bytes stay untouched until completion
///   irecv(peer, bytes, tag) -> request      post a receive of exactly bytes.size() bytes
///   wait_all(span<request>, deadline)       complete them all or throw plait::error
///   next_tag()                              a fresh tag for one collective call (same on every rank)
///   timeout()                               how long one wait may take
///   bytes_sent()                            payload bytes this rank has sent
///   barrier()
/// Optional capabilities, the complete list: the op layer probes for each
/// with the concept of the same name below (plait::detail) and works without
/// it. A communicator derived from plait::communicator_core
/// (core/communicator_core.hpp) has the ones marked [core] already.
///   isend_with_copy(peer, bytes, copy, tag) -> request          sends_with_copy
///        isend, and `copy` holds the same bytes once the send completes (the
///        receiver may write it while it reads): an all-gather's own shard is
///        then read once (docs/architecture.md, "Data flow", step 6)
///   locate_send(bytes, copy) -> send_place                        locates_sends
///   isend_with_copy(peer, bytes, copy, tag, const send_place&) -> request
///        the lookups a send makes (where its bytes lie in memory the peers
///        map), taken once and passed back by a send that repeats on the same
///        buffers: a persistent collective's later starts skip them
///   isendv(peer, span<const span<const byte>>, tag) -> request   sends_vectored
///   irecvv(peer, span<const span<byte>>, tag) -> request
///        a message made of several contiguous pieces, gathered on send and
///        scattered on receive (the list and the bytes stay untouched until
///        completion); it matches any message of the same total length, plain
///        or vectored: a bundle's message goes from and into its members'
///        buffers without the executor's staging copy. An optional
///        `static constexpr std::size_t vectored_min_bytes` keeps smaller
///        messages staged (where describing the pieces costs more than packing)
///   copy_engine() -> engine&                                     has_copy_engine
///        buffers are not host memory: the executor allocates, packs and
///        copies through the engine (op/executor.hpp lists its members)
///   exchange_control(span<const byte> mine, span<byte> all)      exchanges_control
///        an all-gather of small host records for check mode, when the
///        transport's own buffers cannot hold them (device memory)
///   discount_control_bytes(uint64_t)                             discounts_control_bytes [core]
///        takes control traffic (check-mode signatures) out of bytes_sent()
///   check_mode() -> bool, check_mode_reads_environment           has_check_mode [core]
///        check mode on for this communicator; PLAIT_CHECK already read once
///   next_tag(call_stamp) -> int                                  stamps_calls [core]
///        a tag that remembers what the call is, so a transport with a message
///        header can refuse a message of another collective (call_stamp)
///   irecv_combine(peer, bytes, const receive_combine&, tag) -> request   combines_on_receive
///   combines_on_receive(granule) -> bool
///        a receive that combines each arriving piece into `bytes` with the
///        reduction (core/receive_combine.hpp) where it can read it, instead
///        of landing the message in staging first (the fold run's fused
///        combine); the second member says whether elements of `granule`
///        bytes can be combined that way (else the fold run stages)
///   static cost_model()                                          has_cost_model
///        what plait::automatic assumes about this transport (algorithm/automatic.hpp)
///   test_all(span<request>, deadline) -> bool                    tests_requests
///        one non-blocking look: true (all complete, as after wait_all) or
///        false (some pending); past the deadline it throws as wait_all does.
///        Nonblocking and persistent collectives need it (op/nonblocking.hpp)
///   static constexpr bool matches_by_tag = true                  matches_by_tag
///        a receive matches by peer and tag, whatever was sent before it with
///        other tags (MPI): several collectives then move at once; without it
///        they move one at a time, in the order they started
///        (core/progress_engine.hpp)
///   collective_progress(bool), active_progress()                 has_progress_engine [core]
///        the engine that holds this communicator's collectives in flight
///   abandon_call(const error&) noexcept                          abandons_calls
///        the rank's own code (a user reduction, a plan's) threw while a
///        collective call had transfers pending (op/abandon.hpp): drop them,
///        so that nothing writes into the call's buffers afterwards, make the
///        communicator unusable with `error`, and tell the peers, so that
///        their waits end naming this rank rather than at their timeout;
///        also a level of a two_level call that failed on its other level
///        (op/abandon_levels.hpp), `error` naming the peer to blame there
// clang-format 14 lays out requires-expressions badly (it unindents their
// bodies and splits every static_assert below): keep it off them.
// clang-format off
template <class C>
concept transport = std::same_as<typename C::transport_concept, transport_tag> &&
                    requires(C& comm, const C& const_comm, int peer, int tag, std::span<const std::byte> out,
                             std::span<std::byte> in, std::span<typename C::request> requests, deadline until) {
                      typename C::memory_space;
                      { const_comm.rank() } -> std::same_as<int>;
                      { const_comm.size() } -> std::same_as<int>;
                      { comm.isend(peer, out, tag) } -> std::same_as<typename C::request>;
                      { comm.irecv(peer, in, tag) } -> std::same_as<typename C::request>;
                      comm.wait_all(requests, until);
                      { comm.next_tag() } -> std::same_as<int>;
                      { const_comm.timeout() } -> std::convertible_to<clock::duration>;
                      { const_comm.bytes_sent() } -> std::same_as<std::uint64_t>;
                      comm.barrier();
                    };

namespace detail {
/// False for every C: a static_assert on it fails only in the branch that
/// instantiates it.
template <class C>
inline constexpr bool not_a_transport = false;

/// Names the first member a would-be transport lacks, so a user who writes a
/// transport, or passes something else as a communicator, gets one precise
/// message instead of a failed concept dump. True when C is a transport.
template <class C>
consteval bool check_transport() {
  if constexpr (std::is_const_v<C>) {
    static_assert(not_a_transport<C>,
                  "plait: the communicator is const: a collective takes a tag and posts transfers, so pass it by "
                  "non-const reference");
  } else if constexpr (!requires { typename C::transport_concept; }) {
    static_assert(not_a_transport<C>,
                  "plait: this communicator type is not a transport plait can run collectives on: pass a "
                  "plait::shm::communicator, plait::mpi::communicator or plait::nvlink::communicator, or a "
                  "plait::two_level or plait::mpi::node_levels of them; a type of your own that implements the "
                  "transport concept (core/transport.hpp) opts in with `using transport_concept = "
                  "plait::transport_tag;`");
  } else if constexpr (!std::same_as<typename C::transport_concept, transport_tag>) {
    static_assert(not_a_transport<C>,
                  "plait: a transport opts in with `using transport_concept = plait::transport_tag;`, not another "
                  "type");
  } else if constexpr (!requires { typename C::request; }) {
    static_assert(not_a_transport<C>, "plait: transport lacks the nested type `request`");
  } else if constexpr (!requires { typename C::memory_space; }) {
    static_assert(not_a_transport<C>,
                  "plait: transport lacks `using memory_space = plait::host_memory;` (or device_memory)");
  } else if constexpr (!requires(const C& c) { { c.rank() } -> std::same_as<int>; }) {
    static_assert(not_a_transport<C>, "plait: transport lacks `int rank() const`");
  } else if constexpr (!requires(const C& c) { { c.size() } -> std::same_as<int>; }) {
    static_assert(not_a_transport<C>, "plait: transport lacks `int size() const`");
  } else if constexpr (!requires(C& c, std::span<const std::byte> out) {
                   { c.isend(0, out, 0) } -> std::same_as<typename C::request>;
                 }) {
    static_assert(not_a_transport<C>,
                  "plait: transport lacks `request isend(int peer, std::span<const std::byte>, int tag)`");
  } else if constexpr (!requires(C& c, std::span<std::byte> in) {
                   { c.irecv(0, in, 0) } -> std::same_as<typename C::request>;
                 }) {
    static_assert(not_a_transport<C>,
                  "plait: transport lacks `request irecv(int peer, std::span<std::byte>, int tag)`");
  } else if constexpr (!requires(C& c, std::span<typename C::request> r, deadline d) { c.wait_all(r, d); }) {
    static_assert(not_a_transport<C>, "plait: transport lacks `void wait_all(std::span<request>, plait::deadline)`");
  } else if constexpr (!requires(C& c) { { c.next_tag() } -> std::same_as<int>; }) {
    static_assert(not_a_transport<C>, "plait: transport lacks `int next_tag()`");
  } else if constexpr (!requires(const C& c) { { c.timeout() } -> std::convertible_to<clock::duration>; }) {
    static_assert(not_a_transport<C>, "plait: transport lacks `plait::clock::duration timeout() const`");
  } else if constexpr (!requires(const C& c) { { c.bytes_sent() } -> std::same_as<std::uint64_t>; }) {
    static_assert(not_a_transport<C>, "plait: transport lacks `std::uint64_t bytes_sent() const`");
  } else if constexpr (!requires(C& c) { c.barrier(); }) {
    static_assert(not_a_transport<C>, "plait: transport lacks `void barrier()`");
  } else {
    // Every member above checked as the concept states it: the two agree.
    static_assert(transport<C>, "plait: check_transport and the transport concept disagree");
    return true;
  }
  return false;
}

/// The optional capabilities listed above, one concept each.
template <class Comm>
concept sends_with_copy = requires(Comm& comm, std::span<const std::byte> out, std::span<std::byte> copy) {
  { comm.isend_with_copy(0, out, copy, 0) } -> std::same_as<typename Comm::request>;
};
template <class Comm>
concept locates_sends = sends_with_copy<Comm> && requires(Comm& comm, std::span<const std::byte> out,
                                                          std::span<std::byte> copy) {
  { comm.locate_send(out, copy) } -> std::same_as<typename Comm::send_place>;
  { comm.isend_with_copy(0, out, copy, 0, comm.locate_send(out, copy)) } -> std::same_as<typename Comm::request>;
};
template <class Comm>
concept sends_vectored = requires(Comm& comm, std::span<const std::span<const std::byte>> out,
                                  std::span<const std::span<std::byte>> in) {
  { comm.isendv(0, out, 0) } -> std::same_as<typename Comm::request>;
  { comm.irecvv(0, in, 0) } -> std::same_as<typename Comm::request>;
};
template <class Comm>
concept has_copy_engine = requires(Comm& comm) { comm.copy_engine(); };
template <class Comm>
concept exchanges_control = requires(Comm& comm, std::span<const std::byte> mine, std::span<std::byte> all) {
  comm.exchange_control(mine, all);
};
template <class Comm>
concept discounts_control_bytes = requires(Comm& comm, std::uint64_t bytes) { comm.discount_control_bytes(bytes); };
template <class Comm>
concept has_check_mode = requires(const Comm& comm) { { comm.check_mode() } -> std::convertible_to<bool>; };
template <class Comm>
concept stamps_calls = requires(Comm& comm, call_stamp stamp) { { comm.next_tag(stamp) } -> std::same_as<int>; };
template <class Comm>
concept combines_on_receive = requires(Comm& comm, const Comm& const_comm, std::span<std::byte> in,
                                      const receive_combine& how) {
  { comm.irecv_combine(0, in, how, 0) } -> std::same_as<typename Comm::request>;
  { const_comm.combines_on_receive(std::size_t{4}) } -> std::convertible_to<bool>;
};
template <class Comm>
concept has_cost_model = requires { Comm::cost_model(); };
template <class Comm>
concept tests_requests = requires(Comm& comm, std::span<typename Comm::request> requests, deadline until) {
  { comm.test_all(requests, until) } -> std::same_as<bool>;
};
template <class Comm>
concept matches_by_tag = requires { requires Comm::matches_by_tag; };
template <class Comm>
concept has_progress_engine = requires(Comm& comm, const Comm& const_comm) {
  comm.collective_progress(true);
  { const_comm.active_progress() } -> std::convertible_to<const void*>;
};
template <class Comm>
concept abandons_calls = requires(Comm& comm, const error& why) {
  { comm.abandon_call(why) } noexcept;
};

/// Messages of at least this many bytes go vectored on Comm (SIZE_MAX: never).
template <class Comm>
constexpr std::size_t vectored_min_bytes() {
  if constexpr (!sends_vectored<Comm>) {
    return SIZE_MAX;
  } else if constexpr (requires { Comm::vectored_min_bytes; }) {
    return Comm::vectored_min_bytes;
  } else {
    return 0;
  }
}

/// A tag for one collective call described by `stamp` (inside the call
/// enclosing_call, if any): transports that carry stamps record it, the
/// others just give a fresh tag.
template <class Comm>
int take_tag(Comm& comm, call_stamp stamp) {
  if constexpr (stamps_calls<Comm>) {
    return comm.next_tag(within(stamp, enclosing_call));
  } else {
    return comm.next_tag();
  }
}
// clang-format on
}  // namespace detail

}  // namespace v0
}  // namespace plait

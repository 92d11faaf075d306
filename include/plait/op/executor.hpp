// The executor: runs one rank's schedule on any transport. It is the only
// place where schedules meet bytes. Layouts tell it where each block lives (a
// block plan); it packs blocks that are not one contiguous run into a staging
// buffer, posts every transfer of a step at once, waits, and unpacks.
//
// A block plan is any object with:
//   std::size_t block_bytes(int block) const   size of any block of the operation
//   bool has_location(int block) const          the block lives in a user buffer on this rank
//   region location(int block) const           where (source if held initially, else destination)
//   void prepare() const                        local copies before the schedule (own shard -> recv)
//   void prepare(copy) const                    the same through copy(src, dst) on regions (device transports)
// Blocks without a location (all-to-all blocks in transit) go to scratch.
// Optionally (the all-gather plan):
//   region send_location(int block) const      where a single-block send reads `block` (its own shard: the send buffer)
//   int own_copy_block() const                 the block prepare() copies from send_location to location, or -1
//   void prepare_without_own_copy() const      prepare() less that copy
// With a transport that offers isend_with_copy (the shm transport), the
// executor then skips that local copy and hands it to the block's first send:
// the receiver, which reads the shard anyway, may write both copies, so the
// shard is read from memory once (docs/architecture.md, "Data flow").
//
// Memory is the transport's business: a transport whose buffers are not host
// memory (the NVLink transport) offers `copy_engine()`, an object with
//   buffer allocate(bytes)                      owning, with data() and size()
//   pack(region, dst) / unpack(src, region) / copy(region, region)
// and the executor does all its allocation, packing and local copies through
// it. Host transports get detail::host_engine (detail::byte_buffer and plait::pack).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/region.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/transport.hpp"

namespace plait {
inline namespace v0 {

template <class P>
concept block_plan = requires(const P& plan, int block) {
  { plan.block_bytes(block) } -> std::convertible_to<std::size_t>;
  { plan.has_location(block) } -> std::convertible_to<bool>;
  { plan.location(block) } -> std::same_as<region>;
  plan.prepare();
};

namespace detail {

/// Allocation, packing and local copies in host memory (buffers uninitialised:
/// the executor writes every byte before it reads it).
struct host_engine {
  using buffer = byte_buffer;
  buffer allocate(std::size_t bytes) { return buffer(bytes); }
  void pack(const region& src, std::byte* dst) { plait::pack(src, dst); }
  void unpack(const std::byte* src, const region& dst) { plait::unpack(src, dst); }
  void copy(const region& src, const region& dst) { plait::copy(src, dst); }
};

/// The transport's engine if it has one, else `host`.
template <class Comm>
auto& engine_for(Comm& comm, host_engine& host) {
  if constexpr (has_copy_engine<Comm>) {
    return comm.copy_engine();
  } else {
    return host;
  }
}

/// Blocks this rank forwards but neither starts nor ends with, by block
/// number (an array: block numbers are small and dense, and a hash map costs
/// every translation unit its instantiation).
template <class Engine>
class transit_store {
 public:
  explicit transit_store(Engine& engine) : engine_(&engine) {}
  region at(int block, std::size_t bytes) {
    const auto index = static_cast<std::size_t>(block);
    if (blocks_.size() <= index) {  // grows to the highest block number seen
      fixed_array<typename Engine::buffer> grown(std::max(index + 1, 2 * blocks_.size()));
      for (std::size_t i = 0; i < blocks_.size(); ++i) grown[i] = std::move(blocks_[i]);
      blocks_ = std::move(grown);
    }
    auto& storage = blocks_[index];
    if (storage.size() < bytes) storage = engine_->allocate(bytes);  // a block keeps its bytes between steps
    return region::contiguous(storage.data(), bytes);
  }

 private:
  Engine* engine_;
  fixed_array<typename Engine::buffer> blocks_;
};

/// The bytes of one message when its blocks are contiguous and adjacent in
/// order, so it can go straight from or into user memory; else an empty span
/// with data() == nullptr.
PLAIT_DECL std::span<std::byte> direct_span(std::span<const region> blocks);

template <class Plan>
concept defers_own_copy = requires(const Plan& plan, int block) {
  { plan.own_copy_block() } -> std::convertible_to<int>;
  plan.prepare_without_own_copy();
  { plan.send_location(block) } -> std::same_as<region>;
};

/// The step whose send may carry the local copy of `block`: the first step
/// that moves `block`, provided it only sends it, each time as a message of
/// that block alone (read from the send buffer, never from the result the
/// copy writes). -1 when there is no such step.
PLAIT_DECL int own_copy_step(const schedule& steps, int block);

/// One message of a step with its blocks located: blocks [first, first +
/// count) of the step's region list. The same type for every transport and
/// plan.
struct located_message {
  int peer = -1;
  std::size_t first = 0;
  std::size_t count = 0;
  std::size_t bytes = 0;
  std::span<std::byte> direct;  // where it goes straight from or into user memory, else data() == nullptr
  std::size_t staging_offset = 0;

  [[nodiscard]] bool staged() const { return direct.data() == nullptr && bytes != 0; }
};

/// Sets `m`'s bytes and either its direct span or its place in staging
/// (advancing `staged`), from its located blocks. Not a template.
PLAIT_DECL void place_message(located_message& m, std::span<const region> regions, std::size_t& staged);

}  // namespace detail

/// Runs `steps` for this rank on `comm`, moving the blocks `plan` locates.
/// `operation` names the call in errors ("all_gather<ring>"); `tag` keeps its
/// messages apart from other calls.
template <transport Comm, block_plan Plan>
void execute(Comm& comm, const schedule& steps, const Plan& plan, std::string_view operation, int tag) {
  detail::host_engine host;
  auto& engine = detail::engine_for(comm, host);
  using engine_type = std::remove_reference_t<decltype(engine)>;
  // The own shard's local copy rides with its first send (deferred_step), when
  // both transport and plan allow it and both ends of the copy are contiguous.
  int deferred_block = -1;
  int deferred_step = -1;
  if constexpr (!detail::has_copy_engine<Comm> && detail::sends_with_copy<Comm> && detail::defers_own_copy<Plan>) {
    deferred_block = plan.own_copy_block();
    if (deferred_block >= 0 && plan.block_bytes(deferred_block) != 0 &&
        plan.send_location(deferred_block).is_contiguous() && plan.location(deferred_block).is_contiguous()) {
      deferred_step = detail::own_copy_step(steps, deferred_block);
    }
  }
  if constexpr (detail::has_copy_engine<Comm>) {
    auto device_copy = [&](const region& src, const region& dst) { engine.copy(src, dst); };
    static_assert(
        requires { plan.prepare(device_copy); },
        "plait: this transport's memory is not host memory: the block plan needs prepare(copy)");
    plan.prepare(device_copy);
  } else if constexpr (detail::sends_with_copy<Comm> && detail::defers_own_copy<Plan>) {
    if (deferred_step >= 0) {
      plan.prepare_without_own_copy();
    } else {
      plan.prepare();
    }
  } else {
    plan.prepare();
  }
  detail::transit_store<engine_type> transit(engine);

  // Per step: every message's blocks, located, in one list; the messages
  // (receives first, then sends) point into it. Sized for the largest step.
  std::size_t most_messages = 0;
  std::size_t most_blocks = 0;
  for (const step& s : steps.steps) {
    std::size_t blocks = 0;
    for (const transfer& t : s.recvs) blocks += t.blocks.size();
    for (const transfer& t : s.sends) blocks += t.blocks.size();
    most_messages = std::max(most_messages, s.recvs.size() + s.sends.size());
    most_blocks = std::max(most_blocks, blocks);
  }
  // In place for up to 8 messages a step (every built-in schedule at P <= 5,
  // ring and pairwise at any P): small calls allocate nothing here.
  detail::small_array<region, 8> regions(most_blocks);
  detail::small_array<detail::located_message, 8> messages(most_messages);
  detail::small_array<typename Comm::request, 8> requests(most_messages);
  std::size_t located_blocks = 0;
  std::size_t located_messages = 0;
  typename engine_type::buffer staging;

  auto locate = [&](const transfer& t, bool sending) {
    detail::located_message& m = messages[located_messages++];
    m = {};
    m.peer = t.peer;
    m.first = located_blocks;
    m.count = t.blocks.size();
    for (int block : t.blocks) {
      // Host memory only. A device transport reads registered buffers in
      // place, and a caller who registered only the receive buffer (where
      // every block ends up) must still get that for its own shard.
      if constexpr (!detail::has_copy_engine<Comm> && requires { plan.send_location(block); }) {
        if (sending && t.blocks.size() == 1) {
          regions[located_blocks++] = plan.send_location(block);
          continue;
        }
      }
      regions[located_blocks++] =
          plan.has_location(block) ? plan.location(block) : transit.at(block, plan.block_bytes(block));
    }
  };

  for (std::size_t index = 0; index < steps.steps.size(); ++index) {
    const step& current = steps.steps[index];
    const int step_number = static_cast<int>(index);
    located_blocks = 0;
    located_messages = 0;
    for (const transfer& t : current.recvs) locate(t, false);
    for (const transfer& t : current.sends) locate(t, true);
    const std::size_t receives = current.recvs.size();
    std::size_t staged = 0;
    for (std::size_t i = 0; i < located_messages; ++i) {
      detail::place_message(messages[i], std::span<const region>(regions.data(), located_blocks), staged);
    }
    if (staging.size() < staged) staging = engine.allocate(staged);  // contents need not survive a step

    try {
      for (std::size_t i = 0; i < located_messages; ++i) {
        const detail::located_message& m = messages[i];
        if (i < receives) {
          std::span<std::byte> into =
              m.staged() ? std::span<std::byte>(staging.data() + m.staging_offset, m.bytes) : m.direct;
          requests[i] = comm.irecv(m.peer, into, tag);
          continue;
        }
        std::span<const std::byte> from = m.direct;
        if (m.staged()) {
          std::byte* out = staging.data() + m.staging_offset;
          for (std::size_t b = m.first; b < m.first + m.count; ++b) {
            engine.pack(regions[b], out);
            out += regions[b].bytes();
          }
          from = {staging.data() + m.staging_offset, m.bytes};
        }
        if constexpr (detail::sends_with_copy<Comm>) {
          // The first send of the deferred block in its step (a message of that
          // block alone, direct from the send buffer: own_copy_step checked)
          // carries the copy; one call site for both (compile cost).
          std::span<std::byte> copy;
          const auto& blocks = current.sends[i - receives].blocks;
          if (step_number == deferred_step && !blocks.empty() && blocks.front() == deferred_block) {
            const region own = plan.location(deferred_block);
            copy = std::span<std::byte>(own.data, own.bytes());
            deferred_step = -1;
          }
          requests[i] = comm.isend_with_copy(m.peer, from, copy, tag);
        } else {
          requests[i] = comm.isend(m.peer, from, tag);
        }
      }
      comm.wait_all(std::span(requests.data(), located_messages), clock::now() + comm.timeout());
      for (std::size_t i = 0; i < located_messages; ++i) requests[i] = {};  // complete: released now, as before
    } catch (const error& e) {
      throw e.within({comm.rank(), operation, step_number, -1});
    }

    for (std::size_t i = 0; i < receives; ++i) {
      const detail::located_message& m = messages[i];
      if (!m.staged()) continue;
      const std::byte* in = staging.data() + m.staging_offset;
      for (std::size_t b = m.first; b < m.first + m.count; ++b) {
        engine.unpack(in, regions[b]);
        in += regions[b].bytes();
      }
    }
  }
}

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/executor.ipp"
#endif

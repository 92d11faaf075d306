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
//
// Memory is the transport's business: a transport whose buffers are not host
// memory (the NVLink transport) offers `copy_engine()`, an object with
//   buffer allocate(bytes)                      owning, with data() and size()
//   pack(region, dst) / unpack(src, region) / copy(region, region)
// and the executor does all its allocation, packing and local copies through
// it. Host transports get detail::host_engine (std::vector and plait::pack).
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/error.hpp"
#include "plait/core/region.hpp"
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

/// Allocation, packing and local copies in host memory.
struct host_engine {
  using buffer = std::vector<std::byte>;
  buffer allocate(std::size_t bytes) { return buffer(bytes); }
  void pack(const region& src, std::byte* dst) { plait::pack(src, dst); }
  void unpack(const std::byte* src, const region& dst) { plait::unpack(src, dst); }
  void copy(const region& src, const region& dst) { plait::copy(src, dst); }
};

template <class Comm>
concept has_copy_engine = requires(Comm& comm) {
  comm.copy_engine();
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

/// Blocks this rank forwards but neither starts nor ends with.
template <class Engine>
class transit_store {
 public:
  explicit transit_store(Engine& engine) : engine_(&engine) {}
  region at(int block, std::size_t bytes) {
    auto& storage = blocks_[block];
    if (storage.size() < bytes) storage = engine_->allocate(bytes);  // a block keeps its bytes between steps
    return region::contiguous(storage.data(), bytes);
  }

 private:
  Engine* engine_;
  std::unordered_map<int, typename Engine::buffer> blocks_;
};

/// The bytes of one message when its blocks are contiguous and adjacent in
/// order, so it can go straight from or into user memory; else an empty span
/// with data() == nullptr.
inline std::span<std::byte> direct_span(const std::vector<region>& blocks) {
  if (blocks.empty()) return {};
  std::byte* start = blocks.front().data;
  std::byte* next = start;
  for (const region& r : blocks) {
    if (!r.is_contiguous() || (r.bytes() != 0 && r.data != next)) return {};
    if (r.bytes() != 0) next = r.data + r.bytes();
  }
  if (start == nullptr && next != nullptr) return {};
  return {start, static_cast<std::size_t>(next - start)};
}

}  // namespace detail

/// Runs `steps` for this rank on `comm`, moving the blocks `plan` locates.
/// `operation` names the call in errors ("all_gather<ring>"); `tag` keeps its
/// messages apart from other calls.
template <transport Comm, block_plan Plan>
void execute(Comm& comm, const schedule& steps, const Plan& plan, std::string_view operation, int tag) {
  detail::host_engine host;
  auto& engine = detail::engine_for(comm, host);
  using engine_type = std::remove_reference_t<decltype(engine)>;
  if constexpr (detail::has_copy_engine<Comm>) {
    auto device_copy = [&](const region& src, const region& dst) { engine.copy(src, dst); };
    static_assert(
        requires { plan.prepare(device_copy); },
        "plait: this transport's memory is not host memory: the block plan needs prepare(copy)");
    plan.prepare(device_copy);
  } else {
    plan.prepare();
  }
  detail::transit_store<engine_type> transit(engine);
  auto locate = [&](int block) -> region {
    return plan.has_location(block) ? plan.location(block) : transit.at(block, plan.block_bytes(block));
  };

  struct message {
    const transfer* what;
    std::vector<region> blocks;
    std::size_t bytes = 0;
    std::span<std::byte> direct;
    std::size_t staging_offset = 0;
  };
  std::vector<message> sends;
  std::vector<message> recvs;
  typename engine_type::buffer staging;
  std::vector<typename Comm::request> requests;

  auto describe = [&](const std::vector<transfer>& transfers, std::vector<message>& out, std::size_t& staged,
                      bool sending) {
    out.clear();
    for (const transfer& t : transfers) {
      message m{&t, {}, 0, {}, 0};
      m.blocks.reserve(t.blocks.size());
      for (int block : t.blocks) {
        // Host memory only. A device transport reads registered buffers in
        // place, and a caller who registered only the receive buffer (where
        // every block ends up) must still get that for its own shard.
        if constexpr (!detail::has_copy_engine<Comm> && requires { plan.send_location(block); }) {
          if (sending && t.blocks.size() == 1) {
            m.blocks.push_back(plan.send_location(block));
            m.bytes += m.blocks.back().bytes();
            continue;
          }
        }
        m.blocks.push_back(locate(block));
        m.bytes += m.blocks.back().bytes();
      }
      m.direct = detail::direct_span(m.blocks);
      if (m.direct.size() != m.bytes || (m.direct.data() == nullptr && m.bytes != 0)) {
        m.direct = {};
        m.staging_offset = staged;
        staged += m.bytes;
      }
      out.push_back(std::move(m));
    }
  };
  auto is_staged = [](const message& m) { return m.direct.data() == nullptr && m.bytes != 0; };

  for (std::size_t index = 0; index < steps.steps.size(); ++index) {
    const step& current = steps.steps[index];
    const int step_number = static_cast<int>(index);
    std::size_t staged = 0;
    describe(current.recvs, recvs, staged, false);
    describe(current.sends, sends, staged, true);
    if (staging.size() < staged) staging = engine.allocate(staged);  // contents need not survive a step

    requests.clear();
    requests.reserve(recvs.size() + sends.size());  // one allocation, not one per doubling
    try {
      for (message& m : recvs) {
        std::span<std::byte> into =
            is_staged(m) ? std::span<std::byte>(staging.data() + m.staging_offset, m.bytes) : m.direct;
        requests.push_back(comm.irecv(m.what->peer, into, tag));
      }
      for (message& m : sends) {
        std::span<const std::byte> from = m.direct;
        if (is_staged(m)) {
          std::byte* out = staging.data() + m.staging_offset;
          for (const region& r : m.blocks) {
            engine.pack(r, out);
            out += r.bytes();
          }
          from = {staging.data() + m.staging_offset, m.bytes};
        }
        requests.push_back(comm.isend(m.what->peer, from, tag));
      }
      comm.wait_all(std::span(requests), clock::now() + comm.timeout());
    } catch (const error& e) {
      throw e.within({comm.rank(), operation, step_number, -1});
    }

    for (const message& m : recvs) {
      if (!is_staged(m)) continue;
      const std::byte* in = staging.data() + m.staging_offset;
      for (const region& r : m.blocks) {
        engine.unpack(in, r);
        in += r.bytes();
      }
    }
  }
}

}  // namespace v0
}  // namespace plait

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
// A message whose blocks are each one contiguous run but not adjacent (a
// bundle's message: one block per member buffer) goes as a vectored message
// when the transport offers isendv/irecvv (sends_vectored): gathered from and
// scattered into the blocks by the transport, not packed through staging.
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
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/blame.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/region.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/block_plan.hpp"
#include "plait/op/abandon.hpp"
#include "plait/op/copy_engine.hpp"

namespace plait {
inline namespace v0 {

namespace detail {

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

/// The own shard's local copy (prepare()'s copy of own_copy_block() from its
/// send location into its place in the result), handed to the first send of
/// that shard when both transport and plan allow it and both ends of the
/// copy are contiguous: the receiver, which reads the shard anyway, writes
/// both copies. Where it cannot apply (a device transport, a transport
/// without isend_with_copy, a plan that does not defer) every member does
/// what no deferral does, at compile time.
template <class Comm, class Plan>
class own_copy_deferral {
 public:
  static constexpr bool possible = !has_copy_engine<Comm> && sends_with_copy<Comm> && defers_own_copy<Plan>;

  own_copy_deferral([[maybe_unused]] const schedule& steps, [[maybe_unused]] const Plan& plan) {
    if constexpr (possible) {
      const int block = plan.own_copy_block();
      if (block >= 0 && plan.block_bytes(block) != 0 && plan.send_location(block).is_contiguous() &&
          plan.location(block).is_contiguous()) {
        block_ = block;
        step_ = own_copy_step(steps, block);
      }
    }
  }

  /// The plan's local copies before the schedule, less the deferred one.
  void prepare(const Plan& plan) const {
    if constexpr (possible) {
      if (step_ >= 0) {
        plan.prepare_without_own_copy();
        return;
      }
    }
    plan.prepare();
  }

  /// Where the send of `blocks` in step `step_number` also copies to: the
  /// deferred copy's destination for the first send of the deferred block in
  /// its step (a message of that block alone, direct from the send buffer:
  /// own_copy_step checked), else empty. That send takes it: once.
  std::span<std::byte> take_copy([[maybe_unused]] int step_number, [[maybe_unused]] const std::vector<int>& blocks,
                                 [[maybe_unused]] const Plan& plan) {
    if constexpr (possible) {
      if (step_number == step_ && !blocks.empty() && blocks.front() == block_) {
        step_ = -1;
        const region own = plan.location(block_);
        return {own.data, own.bytes()};
      }
    }
    return {};
  }

 private:
  int block_ = -1;
  int step_ = -1;  // -1: nothing deferred, or already handed to its send
};

/// Comm::send_place for a transport that locates_sends, else an empty stand-in.
template <class Comm>
struct send_place_of {
  struct type {};
};
template <locates_sends Comm>
struct send_place_of<Comm> {
  using type = typename Comm::send_place;
};

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
  bool vectored = false;  // each block one contiguous run, not adjacent: the transport gathers or scatters them

  [[nodiscard]] bool staged() const { return direct.data() == nullptr && bytes != 0 && !vectored; }
};

/// Sets `m`'s bytes and either its direct span, or vectored (at least
/// `vectored_from` bytes, every block one contiguous run), or its place in
/// staging (advancing `staged`), from its located blocks. Not a template.
PLAIT_DECL void place_message(located_message& m, std::span<const region> regions, std::size_t& staged,
                              std::size_t vectored_from);

/// The most messages and the most blocks (over all its messages) of any one step of a schedule.
struct largest_step {
  std::size_t messages = 0;
  std::size_t blocks = 0;
};
PLAIT_DECL largest_step largest_step_of(const schedule& steps);

/// One rank's run of one schedule, in its phases: prepare (the plan's local
/// copies), then per step locate (where every message's blocks are, what
/// goes through staging), post (receives, then sends with packing), wait
/// (every transfer of the step, with the deadline) and unpack (staged
/// receives into their blocks). Used once, by execute.
template <class Comm, class Plan>
class schedule_run {
 public:
  schedule_run(Comm& comm, const schedule& steps, const Plan& plan, std::string_view operation, int tag)
      : schedule_run(comm, steps, plan, operation, tag, largest_step_of(steps)) {}

  /// Runs every step, blocking in the transport's waits.
  void run() { advance(true); }

  /// Moves the run on: the plan's local copies at the first call, then per
  /// step locate, post, wait and unpack. `blocking`: each step's wait is the
  /// transport's wait_all; otherwise one test_all look, and the run returns
  /// false while the step is pending (its deadline counts from its post, as
  /// a blocking wait's does). True once every step is done. An exception of
  /// the rank's own code abandons the call first (op/abandon.hpp).
  bool advance(bool blocking) {
    const auto step = [this] { return next_step_ < steps_.steps.size() ? static_cast<int>(next_step_) : -1; };
    return abandoning_on_throw(comm_, operation_, step, [&] { return advance_steps(blocking); });
  }

  /// Ready to run again from the first step under `tag`, on the same plan
  /// and buffers (a persistent collective's next start; staging and transit
  /// stay). From the first restart on, the run keeps every step's located
  /// messages, and once one run has completed, later ones post them as they
  /// are: nothing a location depends on (plan, buffers, transit blocks,
  /// staging offsets) changes between starts.
  void restart(int tag) {
    tag_ = tag;
    next_step_ = 0;
    prepared_ = false;
    posted_ = false;
    own_copy_ = own_copy_at_start_;
    if (!replays_locations_ && !keeps_locations_) {
      keeps_locations_ = true;
    } else if (!replays_locations_) {  // the run that kept them did not complete
      kept_steps_.clear();
      kept_regions_.clear();
      kept_messages_.clear();
      kept_places_.clear();
    }
  }

 private:
  /// advance's work, without its handler for foreign exceptions.
  bool advance_steps(bool blocking) {
    if (!prepared_) {
      prepare();
      prepared_ = true;
    }
    for (; next_step_ < steps_.steps.size(); ++next_step_) {
      const step& current = steps_.steps[next_step_];
      const int step_number = static_cast<int>(next_step_);
      try {
        const noted_wait<Comm> noted(comm_, operation_, tag_, step_number);  // what a timeout names
        if (!posted_) {
          if (replays_locations_) {
            replay_located(next_step_);
          } else {
            locate(current);
            if (keeps_locations_) keep_located();
          }
          post(current, step_number);
          posted_ = true;
          step_deadline_ = after(comm_.timeout());
        }
        if constexpr (tests_requests<Comm>) {
          if (blocking) {
            wait();
          } else if (!test()) {
            return false;
          }
        } else {
          wait();  // no look without blocking (the i-forms refuse such transports at compile time)
        }
      } catch (const error& e) {
        posted_ = false;
        throw e.within({comm_.rank(), operation_, step_number, -1});
      }
      posted_ = false;
      unpack();
    }
    if (keeps_locations_) replays_locations_ = true;  // every step is kept now
    return true;
  }

  using engine_type =
      std::remove_reference_t<decltype(engine_for(std::declval<Comm&>(), std::declval<host_engine&>()))>;
  // Host memory only: a transport with a copy engine packs on its device.
  static constexpr bool vectored = sends_vectored<Comm> && !has_copy_engine<Comm>;
  static constexpr std::size_t vectored_from = vectored ? vectored_min_bytes<Comm>() : SIZE_MAX;
  using send_place_type = typename send_place_of<Comm>::type;

  // In place for up to 8 messages a step (every built-in schedule at P <= 5,
  // ring and pairwise at any P): small calls allocate nothing here.
  schedule_run(Comm& comm, const schedule& steps, const Plan& plan, std::string_view operation, int tag,
               largest_step largest)
      : comm_(comm),
        steps_(steps),
        plan_(plan),
        operation_(operation),
        tag_(tag),
        engine_(engine_for(comm, host_)),
        own_copy_(steps, plan),
        own_copy_at_start_(own_copy_),
        transit_(engine_),
        regions_(largest.blocks),
        messages_(largest.messages),
        requests_(largest.messages),
        recv_pieces_(vectored ? largest.blocks : 0),
        send_pieces_(vectored ? largest.blocks : 0) {}

  void prepare() {
    if constexpr (has_copy_engine<Comm>) {
      auto device_copy = [this](const region& src, const region& dst) { engine_.copy(src, dst); };
      static_assert(
          requires { plan_.prepare(device_copy); },
          "plait: this transport's memory is not host memory: the block plan needs prepare(copy)");
      plan_.prepare(device_copy);
    } else {
      own_copy_.prepare(plan_);
    }
  }

  /// Every message's blocks, located, in one list (receives first, then
  /// sends), and the staging the step needs.
  void locate(const step& current) {
    located_blocks_ = 0;
    located_messages_ = 0;
    for (const transfer& t : current.recvs) locate_transfer(t, false);
    for (const transfer& t : current.sends) locate_transfer(t, true);
    receives_ = current.recvs.size();
    std::size_t staged = 0;
    for (std::size_t i = 0; i < located_messages_; ++i) {
      place_message(messages_[i], std::span<const region>(regions_.data(), located_blocks_), staged, vectored_from);
    }
    if (staging_.size() < staged) staging_ = engine_.allocate(staged);  // contents need not survive a step
    step_regions_ = regions_.data();
    step_messages_ = messages_.data();
  }

  /// Appends the step just located to the kept ones.
  void keep_located() {
    kept_steps_.push_back({kept_regions_.size(), located_blocks_, kept_messages_.size(), located_messages_, receives_});
    kept_regions_.insert(kept_regions_.end(), regions_.data(), regions_.data() + located_blocks_);
    kept_messages_.insert(kept_messages_.end(), messages_.data(), messages_.data() + located_messages_);
    if constexpr (locates_sends<Comm>) kept_places_.resize(kept_messages_.size());
  }

  /// Where message `i` of this step lies for the transport (locate_send):
  /// looked up while the run keeps its steps, the kept one once it replays
  /// them.
  const send_place_type& kept_place(std::size_t i, std::span<const std::byte> from, std::span<std::byte> copy) {
    send_place_type& place = kept_places_[kept_steps_[next_step_].first_message + i];
    if (!replays_locations_) place = comm_.locate_send(from, copy);
    return place;
  }

  /// Step `index` as it was located in the run that kept it.
  void replay_located(std::size_t index) {
    const kept_step& kept = kept_steps_[index];
    step_regions_ = kept_regions_.data() + kept.first_region;
    step_messages_ = kept_messages_.data() + kept.first_message;
    located_blocks_ = kept.regions;
    located_messages_ = kept.messages;
    receives_ = kept.receives;
  }

  void locate_transfer(const transfer& t, bool sending) {
    located_message& m = messages_[located_messages_++];
    m = {};
    m.peer = t.peer;
    m.first = located_blocks_;
    m.count = t.blocks.size();
    for (int block : t.blocks) {
      // Host memory only. A device transport reads registered buffers in
      // place, and a caller who registered only the receive buffer (where
      // every block ends up) must still get that for its own shard.
      if constexpr (!has_copy_engine<Comm> && requires { plan_.send_location(block); }) {
        if (sending && t.blocks.size() == 1) {
          regions_[located_blocks_++] = plan_.send_location(block);
          continue;
        }
      }
      regions_[located_blocks_++] =
          plan_.has_location(block) ? plan_.location(block) : transit_.at(block, plan_.block_bytes(block));
    }
  }

  /// Every receive, then every send (packed first if staged), of the step.
  void post(const step& current, int step_number) {
    for (std::size_t i = 0; i < located_messages_; ++i) {
      const located_message& m = step_messages_[i];
      if constexpr (vectored) {
        if (m.vectored) {
          requests_[i] = post_vectored(m, i < receives_);
          continue;
        }
      }
      if (i < receives_) {
        std::span<std::byte> into =
            m.staged() ? std::span<std::byte>(staging_.data() + m.staging_offset, m.bytes) : m.direct;
        requests_[i] = comm_.irecv(m.peer, into, tag_);
        continue;
      }
      std::span<const std::byte> from = m.direct;
      if (m.staged()) {
        std::byte* out = staging_.data() + m.staging_offset;
        for (std::size_t b = m.first; b < m.first + m.count; ++b) {
          engine_.pack(step_regions_[b], out);
          out += step_regions_[b].bytes();
        }
        from = {staging_.data() + m.staging_offset, m.bytes};
      }
      if constexpr (sends_with_copy<Comm>) {
        // One call site for plain sends and the one that carries the own copy (compile cost).
        const std::span<std::byte> copy = own_copy_.take_copy(step_number, current.sends[i - receives_].blocks, plan_);
        if constexpr (locates_sends<Comm>) {
          if (keeps_locations_) {
            requests_[i] = comm_.isend_with_copy(m.peer, from, copy, tag_, kept_place(i, from, copy));
            continue;
          }
        }
        requests_[i] = comm_.isend_with_copy(m.peer, from, copy, tag_);
      } else {
        requests_[i] = comm_.isend(m.peer, from, tag_);
      }
    }
  }

  /// A vectored message: its blocks as the transport's pieces (each block
  /// one contiguous run), in the step's piece list at the message's blocks.
  typename Comm::request post_vectored(const located_message& m, bool receive) {
    if (receive) {
      std::span<std::byte>* pieces = recv_pieces_.data() + m.first;
      for (std::size_t b = 0; b < m.count; ++b)
        pieces[b] = {step_regions_[m.first + b].data, step_regions_[m.first + b].bytes()};
      return comm_.irecvv(m.peer, std::span<const std::span<std::byte>>(pieces, m.count), tag_);
    }
    std::span<const std::byte>* pieces = send_pieces_.data() + m.first;
    for (std::size_t b = 0; b < m.count; ++b)
      pieces[b] = {step_regions_[m.first + b].data, step_regions_[m.first + b].bytes()};
    return comm_.isendv(m.peer, std::span<const std::span<const std::byte>>(pieces, m.count), tag_);
  }

  void wait() {
    comm_.wait_all(std::span(requests_.data(), located_messages_), after(comm_.timeout()));
    for (std::size_t i = 0; i < located_messages_; ++i) requests_[i] = {};  // complete: released now
  }

  /// One look at the step's transfers; true (and released) once all are
  /// complete. Only for transports with test_all.
  bool test() {
    if (!comm_.test_all(std::span(requests_.data(), located_messages_), step_deadline_)) return false;
    for (std::size_t i = 0; i < located_messages_; ++i) requests_[i] = {};
    return true;
  }

  void unpack() {
    for (std::size_t i = 0; i < receives_; ++i) {
      const located_message& m = step_messages_[i];
      if (!m.staged()) continue;
      const std::byte* in = staging_.data() + m.staging_offset;
      for (std::size_t b = m.first; b < m.first + m.count; ++b) {
        engine_.unpack(in, step_regions_[b]);
        in += step_regions_[b].bytes();
      }
    }
  }

  Comm& comm_;
  const schedule& steps_;
  const Plan& plan_;
  std::string_view operation_;
  int tag_;
  host_engine host_;  // used when the transport has no copy engine of its own
  engine_type& engine_;
  own_copy_deferral<Comm, Plan> own_copy_;
  own_copy_deferral<Comm, Plan> own_copy_at_start_;  // what restart() resets it to (no schedule scan per start)
  transit_store<engine_type> transit_;
  small_array<region, 8> regions_;
  small_array<located_message, 8> messages_;
  small_array<typename Comm::request, 8> requests_;
  // Vectored messages' blocks as pieces, at the step's block indices (posted
  // lists must stay valid until the step's wait).
  small_array<std::span<std::byte>, 8> recv_pieces_;
  small_array<std::span<const std::byte>, 8> send_pieces_;
  std::size_t located_blocks_ = 0;
  std::size_t located_messages_ = 0;
  std::size_t receives_ = 0;
  // The current step's located blocks and messages: regions_ and messages_,
  // or a kept step's.
  region* step_regions_ = nullptr;
  located_message* step_messages_ = nullptr;
  // A repeating run's steps as its first complete run located them
  // (restart()): where each step's blocks and messages start, and how many.
  struct kept_step {
    std::size_t first_region;
    std::size_t regions;
    std::size_t first_message;
    std::size_t messages;
    std::size_t receives;
  };
  std::vector<kept_step> kept_steps_;
  std::vector<region> kept_regions_;
  std::vector<located_message> kept_messages_;
  std::vector<send_place_type> kept_places_;  // per kept message: its send's lookups (locates_sends)
  bool keeps_locations_ = false;              // restarted: steps are kept as they are located
  bool replays_locations_ = false;            // one run completed keeping them: later runs replay them
  typename engine_type::buffer staging_;
  std::size_t next_step_ = 0;  // the step advance() works on
  bool prepared_ = false;      // the plan's local copies are done
  bool posted_ = false;        // next_step_'s transfers are posted
  deadline step_deadline_{};   // when next_step_'s transfers time out
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

// The run of a reduction's plan: schedule_run's specialisation for fold plans.
#include "plait/op/fold_run.hpp"  // IWYU pragma: export

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/executor.ipp"
#endif

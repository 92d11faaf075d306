// The fold run: one rank's schedule of a reduction (reduce_scatter,
// all_reduce) on any host-memory transport. It is the executor's run for fold
// plans (layout/fold_plans.hpp), with the same phases and the same interface
// (run, advance, restart), so every launch (blocking, nonblocking,
// persistent) serves reductions unchanged.
//
// Each block this rank works on has an accumulator: until something arrives
// for it, the rank's own contribution (read where it lies, or prepared once
// into the accumulator when the reduction prepares inputs, as premul_sum
// does). A send carries the accumulator. A receive lands in staging, and
// once the whole step has arrived the receives are applied in the order the
// schedule lists them: placed (the accumulator becomes the arriving block) or
// combined with the kernel, the arriving partial on the side the schedule
// says (the lower ranks' partial on the left), or the own contribution folded
// in (own_contribution). A receive of one block that meets no other arrival
// in its step and whose block does not leave in it skips staging: a placed
// one is received straight into the accumulator, a combined one, where the
// transport combines on receive (shm), is folded into the accumulator piece
// by piece as it arrives. After the last step every block the rank ends with
// is finished (avg divides) and written to its result: a result is written
// only then, so an in-place call reads its contributions until the end. Out
// of place, where a block's result is contiguous host memory of the block's
// own wire type, the accumulator is the result itself (no staging, and
// nothing left to copy at the end).
//
// Where the memory is the host's (shm, MPI, the NVLink host emulation) the
// host runs the plan's element work (layout/fold_plans.hpp's host_folds);
// where it is a device's (the CUDA NVLink transport), the transport's copy
// engine runs the same work as kernels on its stream. The run is the same.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "plait/algorithm/schedule.hpp"
#include "plait/core/blame.hpp"
#include "plait/core/error.hpp"
#include "plait/core/receive_combine.hpp"
#include "plait/core/region.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/stream_copy.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/fold_plans.hpp"
#include "plait/op/abandon.hpp"
#include "plait/op/copy_engine.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

template <class Comm, class Plan>
class schedule_run;

/// Whether a transport's copy engine works on memory the host can read and
/// write (`static constexpr bool host_reachable = true`: the NVLink host
/// emulation), so a reduction may combine there with its host kernel.
template <class Engine>
inline constexpr bool host_reachable_engine = requires {
  requires Engine::host_reachable;
};

/// Whether a transport's copy engine runs a reduction's element work on its
/// device (`static constexpr bool folds_on_device = true`: the CUDA NVLink
/// transport's): it has host_folds' members, and device_kernel<T>(r) gives
/// the launchers that op/fold_collective.hpp attaches to each plan member.
template <class Engine>
inline constexpr bool folds_on_device_engine = requires {
  requires Engine::folds_on_device;
};

/// The copy engine a Comm's runs use (host_engine when it has none).
template <class Comm>
using copy_engine_of =
    std::remove_reference_t<decltype(engine_for(std::declval<Comm&>(), std::declval<host_engine&>()))>;

/// schedule_run for a reduction's plan: see the top of this header.
template <class Comm, fold_plan Plan>
class schedule_run<Comm, Plan> {
  using engine_type = copy_engine_of<Comm>;
  using buffer = typename engine_type::buffer;
  static constexpr bool on_device = folds_on_device_engine<engine_type>;
  static_assert(!has_copy_engine<Comm> || host_reachable_engine<engine_type> || on_device,
                "plait: this transport's copy engine can neither be read by the host nor combine on its device: a "
                "reduction on it needs one of the two (host_reachable, as the NVLink host emulation's; or "
                "folds_on_device with host_folds' members and device_kernel<T>(r), as the CUDA NVLink transport's)");
  using folds_type = std::conditional_t<on_device, engine_type, host_folds>;

 public:
  schedule_run(Comm& comm, const schedule& steps, const Plan& plan, std::string_view operation, int tag)
      : comm_(comm),
        steps_(steps),
        plan_(plan),
        operation_(operation),
        tag_(tag),
        engine_(engine_for(comm, host_)),
        folds_(pick_folds(engine_, host_folds_)),
        blocks_(static_cast<std::size_t>(plan.ranks())) {}

  /// Runs every step, blocking in the transport's waits.
  void run() { advance(true); }

  /// Moves the run on, as schedule_run::advance does; true once done. An
  /// exception of the rank's own code (a user reduction's) abandons the call
  /// first (op/abandon.hpp).
  bool advance(bool blocking) {
    const auto step = [this] { return next_step_ < steps_.steps.size() ? static_cast<int>(next_step_) : -1; };
    return abandoning_on_throw(comm_, operation_, step, [&] { return advance_steps(blocking); });
  }

  /// Ready to run again from the first step under `tag` (a persistent
  /// collective's next start): the contributions are read again.
  void restart(int tag) {
    tag_ = tag;
    next_step_ = 0;
    started_ = false;
    posted_ = false;
    written_ = false;
  }

 private:
  /// advance's work, without its handler for foreign exceptions.
  bool advance_steps(bool blocking) {
    if (!started_) {
      for (block_state& b : blocks_) b.folded = false;
      started_ = true;
    }
    for (; next_step_ < steps_.steps.size(); ++next_step_) {
      const step& current = steps_.steps[next_step_];
      const int step_number = static_cast<int>(next_step_);
      try {
        const noted_wait<Comm> noted(comm_, operation_, tag_, step_number);  // what a timeout names
        if (!posted_) {
          post(current);
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
          wait();
        }
        posted_ = false;
        fold_arrivals(current);  // inside: a device combine's launch failure names the step too
      } catch (const error& e) {
        posted_ = false;
        throw e.within({comm_.rank(), operation_, step_number, -1});
      }
    }
    if (!written_) {  // once per run, however often a finished run is advanced
      write_results();
      written_ = true;
    }
    return true;
  }

  /// How one of a step's receives reaches its block (see the top of this header).
  enum class arrival_path : unsigned char { staged, placed, combined };

  struct block_state {
    buffer partial;       // the accumulator, where it cannot be the block's result itself
    bool folded = false;  // the accumulator holds the block (else the own contribution stands for it)
  };

  /// Whether an accumulator may be the block's result in the user's buffer
  /// (host memory the run writes with plain stores).
  static constexpr bool folds_in_results = !has_copy_engine<Comm> && requires(const Plan& p) { p.result_as_is(0); };

  /// The accumulator of `block`: its result where the plan allows (the last
  /// write of the result is then nothing but its finish, and an all-reduce
  /// saves a copy of its whole vector), else staging.
  std::byte* partial_of(int block) {
    if constexpr (folds_in_results) {
      if (std::byte* at = plan_.result_as_is(block)) return at;
    }
    block_state& b = blocks_[static_cast<std::size_t>(block)];
    const std::size_t bytes = plan_.block_bytes(block);
    if (b.partial.size() < bytes) b.partial = engine_.allocate(bytes);
    return b.partial.data();
  }

  /// The own contribution to `block`: where it lies when the plan allows,
  /// else read (and prepared) into `scratch`.
  const std::byte* own(int block, buffer& scratch) {
    if (const std::byte* as_is = plan_.contribution_as_is(block)) return as_is;
    const std::size_t bytes = plan_.block_bytes(block);
    if (scratch.size() < bytes) scratch = engine_.allocate(bytes);
    plan_.read_contribution(block, scratch.data(), folds_);
    return scratch.data();
  }

  /// What a send of `block` carries now.
  const std::byte* current(int block) {
    block_state& b = blocks_[static_cast<std::size_t>(block)];
    if (b.folded) return partial_of(block);
    if (const std::byte* as_is = plan_.contribution_as_is(block)) return as_is;
    // Read (and prepared) once into the accumulator, which then stands for it.
    std::byte* into = partial_of(block);
    plan_.read_contribution(block, into, folds_);
    b.folded = true;
    return into;
  }

  static bool names(const transfer& t, int block) {
    return std::find(t.blocks.begin(), t.blocks.end(), block) != t.blocks.end();
  }

  /// Whether receive `t` of `current_step` may skip staging, and how.
  arrival_path path_of(const step& current_step, const transfer& t) const {
    if (t.peer == own_contribution || t.blocks.size() != 1) return arrival_path::staged;
    const int block = t.blocks.front();
    if (plan_.block_bytes(block) == 0) return arrival_path::staged;
    // Another arrival for the block is applied in the schedule's order after
    // the step; a send of it reads the accumulator while this one arrives.
    for (const transfer& other : current_step.recvs) {
      if (&other != &t && names(other, block)) return arrival_path::staged;
    }
    for (const transfer& send : current_step.sends) {
      if (names(send, block)) return arrival_path::staged;
    }
    if (t.arrival == fold::none) return arrival_path::placed;
    if constexpr (combines_on_receive<Comm> &&
                  requires(const Plan& p, const std::byte* in, std::byte* out) { p.combine_part(in, in, out, 0); }) {
      const std::size_t granule = plan_.combine_granule();
      if (granule != 0 && comm_.combines_on_receive(granule)) return arrival_path::combined;
    }
    return arrival_path::staged;
  }

  /// A combining receive's combine: the plan's, on any whole elements.
  static void combine_with_plan(const void* plan, const std::byte* left, const std::byte* right, std::byte* out,
                                std::size_t bytes) {
    if constexpr (requires(const Plan& p, const std::byte* in, std::byte* o) { p.combine_part(in, in, o, 0); }) {
      static_cast<const Plan*>(plan)->combine_part(left, right, out, bytes);
    }
  }

  /// The plan's reduction as bytes, for a transport that combines in device
  /// code; null for a bundle's plan, whose blocks mix element types.
  const reduction_kernel* combine_kernel() const {
    if constexpr (requires(const Plan& p) { p.combine_kernel(); }) {
      return plan_.combine_kernel();
    } else {
      return nullptr;
    }
  }

  void post(const step& current_step) {
    requests_.clear();
    paths_.clear();
    for (const transfer& t : current_step.recvs) paths_.push_back(path_of(current_step, t));
    if constexpr (requires { comm_.max_combining_receives(); }) {
      // A transport that takes only so many combining receives a step: the rest land in staging.
      std::size_t combining = 0;
      for (arrival_path& path : paths_) {
        if (path == arrival_path::combined && ++combining > comm_.max_combining_receives()) {
          path = arrival_path::staged;
        }
      }
    }
    combines_.clear();
    combines_.reserve(current_step.recvs.size());  // requests point at them: no reallocation while posting
    // Staged receives into staging, one run per message, in list order.
    std::size_t recv_bytes = 0;
    for (std::size_t i = 0; i < current_step.recvs.size(); ++i) {
      const transfer& t = current_step.recvs[i];
      if (t.peer == own_contribution || paths_[i] != arrival_path::staged) continue;
      for (int b : t.blocks) recv_bytes += plan_.block_bytes(b);
    }
    std::size_t send_bytes = 0;
    for (const transfer& t : current_step.sends) {
      if (t.blocks.size() > 1) {
        for (int b : t.blocks) send_bytes += plan_.block_bytes(b);
      }
    }
    if (recv_staging_.size() < recv_bytes) recv_staging_ = engine_.allocate(recv_bytes);
    if (send_staging_.size() < send_bytes) send_staging_ = engine_.allocate(send_bytes);
    std::size_t at = 0;
    for (std::size_t i = 0; i < current_step.recvs.size(); ++i) {
      const transfer& t = current_step.recvs[i];
      if (t.peer == own_contribution) continue;
      if (paths_[i] != arrival_path::staged) {
        const int b = t.blocks.front();
        const std::size_t bytes = plan_.block_bytes(b);
        if (paths_[i] == arrival_path::placed) {
          requests_.push_back(comm_.irecv(t.peer, std::span<std::byte>(partial_of(b), bytes), tag_));
          continue;
        }
        if constexpr (combines_on_receive<Comm>) {
          const std::byte* held = current(b);  // the accumulator, or the contribution where it lies
          combines_.push_back(receive_combine{.held = held,
                                              .arriving_left = t.arrival == fold::from_left,
                                              .granule = plan_.combine_granule(),
                                              .combine = &combine_with_plan,
                                              .context = &plan_,
                                              .kernel = combine_kernel()});
          requests_.push_back(
              comm_.irecv_combine(t.peer, std::span<std::byte>(partial_of(b), bytes), combines_.back(), tag_));
        }
        continue;
      }
      std::size_t bytes = 0;
      for (int b : t.blocks) bytes += plan_.block_bytes(b);
      requests_.push_back(comm_.irecv(t.peer, std::span<std::byte>(recv_staging_.data() + at, bytes), tag_));
      at += bytes;
    }
    at = 0;
    for (const transfer& t : current_step.sends) {
      if (t.blocks.size() == 1) {
        const int b = t.blocks.front();
        requests_.push_back(comm_.isend(t.peer, std::span<const std::byte>(current(b), plan_.block_bytes(b)), tag_));
        continue;
      }
      std::byte* out = send_staging_.data() + at;
      std::size_t bytes = 0;
      for (int b : t.blocks) {
        folds_.copy_bytes(out + bytes, current(b), plan_.block_bytes(b));
        bytes += plan_.block_bytes(b);
      }
      requests_.push_back(comm_.isend(t.peer, std::span<const std::byte>(out, bytes), tag_));
      at += bytes;
    }
  }

  void wait() {
    comm_.wait_all(std::span(requests_.data(), requests_.size()), after(comm_.timeout()));
    for (auto& r : requests_) r = {};
  }

  bool test() {
    if (!comm_.test_all(std::span(requests_.data(), requests_.size()), step_deadline_)) return false;
    for (auto& r : requests_) r = {};
    return true;
  }

  /// The step's receives, in the schedule's order, into the accumulators.
  void fold_arrivals(const step& current_step) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < current_step.recvs.size(); ++i) {
      const transfer& t = current_step.recvs[i];
      if (paths_[i] != arrival_path::staged) {  // already in its accumulator
        blocks_[static_cast<std::size_t>(t.blocks.front())].folded = true;
        continue;
      }
      for (int b : t.blocks) {
        const std::size_t bytes = plan_.block_bytes(b);
        const std::byte* arriving = nullptr;
        if (t.peer == own_contribution) {
          arriving = own(b, arriving_scratch_);
        } else {
          arriving = recv_staging_.data() + at;
          at += bytes;
        }
        fold_into(b, arriving, t.arrival);
      }
    }
  }

  void fold_into(int block, const std::byte* arriving, fold arrival) {
    block_state& b = blocks_[static_cast<std::size_t>(block)];
    if (plan_.block_bytes(block) == 0) {
      b.folded = true;
      return;
    }
    std::byte* into = partial_of(block);
    if (arrival == fold::none) {
      folds_.copy_bytes(into, arriving, plan_.block_bytes(block));
    } else {
      const std::byte* held = b.folded ? into : own(block, held_scratch_);
      const std::byte* left = arrival == fold::from_left ? arriving : held;
      const std::byte* right = arrival == fold::from_left ? held : arriving;
      plan_.combine(block, left, right, into, folds_);
    }
    b.folded = true;
  }

  /// Every block this rank ends with, finished, into its result. A result is
  /// written only now: an in-place call's contributions are read until here.
  void write_results() {
    for (int block = 0; block < plan_.ranks(); ++block) {
      if (!plan_.has_result(block) || plan_.block_bytes(block) == 0) continue;
      block_state& b = blocks_[static_cast<std::size_t>(block)];
      plan_.write_result(block, b.folded ? partial_of(block) : own(block, held_scratch_), folds_);
    }
  }

  static folds_type& pick_folds(engine_type& engine, host_folds& host) {
    if constexpr (on_device) {
      (void)host;
      return engine;
    } else {
      (void)engine;
      return host;
    }
  }

  Comm& comm_;
  const schedule& steps_;
  const Plan& plan_;
  std::string_view operation_;
  int tag_;
  host_engine host_;  // used when the transport has no copy engine of its own
  engine_type& engine_;
  host_folds host_folds_;  // used when the memory is the host's
  folds_type& folds_;      // who runs the plan's element work
  std::vector<block_state> blocks_;
  std::vector<typename Comm::request> requests_;
  std::vector<arrival_path> paths_;        // the current step's receives, in list order
  std::vector<receive_combine> combines_;  // its combining receives' instructions
  buffer recv_staging_;
  buffer send_staging_;
  buffer arriving_scratch_;  // an own contribution folded in as an arrival
  buffer held_scratch_;      // the own contribution an arrival folds into
  std::size_t next_step_ = 0;
  bool started_ = false;
  bool posted_ = false;
  bool written_ = false;  // the results of this run are written
  deadline step_deadline_{};
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

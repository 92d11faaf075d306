// A pipeline boundary's send or receive in flight (boundary::isend,
// boundary::irecv in op/split_all_gather.hpp). The transfer of the pieces
// over inter is a collective of inter's progress engine, so it moves with
// every other collective in flight there and keeps their order on in-order
// transports. A receive in split mode adds the pieces' all-gathers over
// intra, as one collective of intra's engine whose tags are taken at the
// call; piece k's all-gather starts once piece k has arrived.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "plait/algorithm/select.hpp"
#include "plait/core/backoff.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/progress_engine.hpp"
#include "plait/core/region.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/op/in_flight.hpp"
#include "plait/op/nonblocking.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// An in-place all-gather whose block j is an arbitrary region (pieces of uneven shards).
class region_gather_plan {
 public:
  explicit region_gather_plan(std::vector<region> blocks) : blocks_(std::move(blocks)) {}
  [[nodiscard]] std::size_t block_bytes(int block) const { return blocks_[static_cast<std::size_t>(block)].bytes(); }
  [[nodiscard]] bool has_location(int /*block*/) const { return true; }
  [[nodiscard]] region location(int block) const { return blocks_[static_cast<std::size_t>(block)]; }
  void prepare() const {}  // in place: each rank's block is already where it belongs

 private:
  std::vector<region> blocks_;
};

/// "split_all_gather.all_gather<ring>": how errors name a boundary's all-gather.
PLAIT_DECL std::string boundary_gather_name(std::string_view algorithm);

/// The all-gather of one piece over `intra`, now (the blocking receive).
template <class Algorithm, class Intra>
void gather_piece_now(Intra& intra, std::vector<region> blocks) {
  const region_gather_plan plan(std::move(blocks));
  const int rank = intra.rank();
  auto planned = plan_schedule<Algorithm, op::all_gather, Intra>(rank, intra.size(), plan.block_bytes(rank));
  run_now{}(intra, planned.steps, plan, boundary_gather_name(planned.algorithm),
            call_stamp::of(call_kind::split_all_gather, planned.algorithm));
}

/// One boundary send or receive of pieces over `inter`, in inter's engine.
template <class Inter>
class boundary_transfer : public pending_collective {
 public:
  /// `pieces`: this rank's regions of x, sent or received one message each
  /// (user tag, in order).
  boundary_transfer(Inter& inter, int peer, bool sending, std::vector<region> pieces, std::string_view operation)
      : pending_collective(&advance_one, &finish_one),
        inter_(inter),
        peer_(peer),
        sending_(sending),
        pieces_(std::move(pieces)),
        operation_(operation),
        staging_(pieces_.size()) {}

  /// Queues `transfer` in inter's engine and takes a turn (it posts at once
  /// unless collectives started earlier must move first: in-order
  /// transports); the handle a collective_request takes over.
  static in_flight_handle start(std::unique_ptr<boundary_transfer> transfer) {
    Inter& inter = transfer->inter_;
    const in_flight_handle h = handle_for(inter, transfer.release(), &destroy_one);
    queue(h, true);
    return h;
  }

  /// Pieces [0, arrived()) are in x (a receive) or sent (a send). Read by
  /// the receive's all-gathers, on intra's side, without inter's lock.
  [[nodiscard]] std::size_t arrived() const noexcept { return arrived_.load(std::memory_order_acquire); }
  [[nodiscard]] std::size_t pieces() const noexcept { return pieces_.size(); }

 private:
  static bool advance_one(pending_collective& c) { return static_cast<boundary_transfer&>(c).advance(false); }
  static void finish_one(pending_collective& c) { static_cast<boundary_transfer&>(c).advance(true); }
  static void destroy_one(pending_collective* c) noexcept { delete static_cast<boundary_transfer*>(c); }

  bool advance(bool blocking) {
    try {
      if (!posted_) post();
      for (std::size_t k = arrived(); k < pieces_.size(); ++k) {
        auto mine = std::span(requests_).subspan(k, 1);
        if (blocking) {
          inter_.wait_all(mine, deadline_);
        } else if (!inter_.test_all(mine, deadline_)) {
          return false;
        }
        if (!sending_ && !pieces_[k].is_contiguous()) unpack(staging_[k].data(), pieces_[k]);
        arrived_.store(k + 1, std::memory_order_release);
      }
      return true;
    } catch (const error& e) {
      throw e.within({inter_.rank(), operation_, -1, peer_});
    }
  }

  /// Posts every piece: sends packed from staging where not contiguous;
  /// receives into staging where not contiguous.
  void post() {
    for (std::size_t k = 0; k < pieces_.size(); ++k) {
      const region& r = pieces_[k];
      std::span<std::byte> bytes = r.as_span();
      if (!r.is_contiguous()) {
        staging_[k].resize(r.bytes());
        if (sending_) pack(r, staging_[k].data());
        bytes = staging_[k];
      }
      requests_.push_back(sending_ ? inter_.isend(peer_, bytes, user_tag) : inter_.irecv(peer_, bytes, user_tag));
    }
    posted_ = true;
    deadline_ = after(inter_.timeout());
  }

  Inter& inter_;
  int peer_;
  bool sending_;
  std::vector<region> pieces_;
  std::string operation_;
  std::vector<std::vector<std::byte>> staging_;
  std::vector<typename Inter::request> requests_;
  std::atomic<std::size_t> arrived_{0};
  bool posted_ = false;
  deadline deadline_{};
};

/// A split-mode receive's all-gathers over intra, one per piece, as one
/// collective of intra's engine: their tags are taken when irecv is called
/// (the same order on every rank), and piece k's all-gather starts once the
/// inter transfer has brought piece k. Owns the inter transfer's request.
/// Waiting for a piece looks at inter's engine from within intra's (the
/// only order in which the two locks are ever taken).
template <class Inter, class Intra>
class boundary_gathers : public pending_collective {
 public:
  using transfer_type = boundary_transfer<Inter>;
  using gather_run = owned_run<Intra, region_gather_plan>;

  boundary_gathers(collective_request inter_part, const transfer_type& transfer,
                   std::vector<std::unique_ptr<gather_run>> gathers)
      : pending_collective(&advance_one, &finish_one),
        inter_part_(std::move(inter_part)),
        transfer_(transfer),
        gathers_(std::move(gathers)) {}

  /// Queues `gathers` in intra's engine; the handle a collective_request takes over.
  static in_flight_handle start(Intra& intra, std::unique_ptr<boundary_gathers> gathers) {
    const in_flight_handle h = handle_for(intra, gathers.release(), &destroy_one);
    queue(h, false);
    return h;
  }

 private:
  static bool advance_one(pending_collective& c) { return static_cast<boundary_gathers&>(c).advance(false); }
  static void finish_one(pending_collective& c) { static_cast<boundary_gathers&>(c).advance(true); }
  static void destroy_one(pending_collective* c) noexcept { delete static_cast<boundary_gathers*>(c); }

  bool advance(bool blocking) {
    for (; next_ < gathers_.size(); ++next_) {
      if (transfer_.arrived() <= next_) {
        if (!blocking) {
          inter_part_.test();
          if (transfer_.arrived() <= next_) return false;
        } else {
          backoff waiting(200000);
          while (transfer_.arrived() <= next_ && !inter_part_.test()) waiting.pause();
        }
      }
      if (!gathers_[next_]->advance(blocking)) return false;
    }
    inter_part_.wait();  // every piece has arrived: returns at once, or raises the transfer's failure
    return true;
  }

  collective_request inter_part_;
  const transfer_type& transfer_;  // owned by inter_part_
  std::vector<std::unique_ptr<gather_run>> gathers_;
  std::size_t next_ = 0;  // the piece whose all-gather runs next
};

}  // namespace detail
}  // namespace v0
}  // namespace plait

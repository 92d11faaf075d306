// plait::split_all_gather — the pipeline-boundary collective (Megatron-LM's
// "scatter/gather"). Two pipeline stages of t tensor-parallel ranks each hold
// the same activation. Instead of every sender pushing the whole tensor over
// the slow inter-node link, sender j sends only shard j of t (along the
// layout's dimension) to its receiver, and the t receivers rebuild the tensor
// with an all-gather over the fast intra-node link:
//
//   stage A (senders)          inter (slow)            stage B (receivers)
//   rank j: x = [s0 s1 .. st)  ── shard j only ──▶     rank j: x[.., sj, ..]
//                                                      all-gather over intra ─▶ x
//
// Cross-link bytes drop from t tensors to one. Extents that t does not divide
// are split into shards that differ by at most one slice (an uneven all-gather
// rebuilds them). Large activations are cut into pieces: every shard is split
// into the same number of pieces along the layout dimension, the sender posts
// all pieces at once, and the receivers all-gather piece k while pieces k+1...
// are still arriving. A naive mode (every sender sends the whole tensor) is
// there for comparison.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plait/algorithm/select.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/region.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/along.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/layout/tensor_plans.hpp"
#include "plait/op/boundary_transfer.hpp"
#include "plait/op/executor.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {

/// How a boundary moves an activation.
enum class boundary_mode {
  split,  ///< each sender sends its 1/t shard; receivers all-gather (the point of this collective)
  naive,  ///< each sender sends the whole tensor (for comparison)
};

/// Options of a boundary.
struct boundary_options {
  /// split (the point) or naive (for comparison).
  boundary_mode mode = boundary_mode::split;
  /// Target bytes of one pipelined piece of a shard; 0 sends each shard whole.
  std::size_t piece_bytes = std::size_t{4} << 20;
};

namespace detail {

/// The layout dimension of a split_all_gather layout: along<D>, or contiguous (dimension 0).
template <class Layout>
constexpr std::size_t boundary_dimension() {
  if constexpr (std::is_same_v<Layout, contiguous>) {
    return 0;
  } else {
    static_assert(
        requires { Layout::dimension; },
        "plait: split_all_gather takes plait::contiguous or plait::along<D> as its layout");
    return Layout::dimension;
  }
}

/// [begin, begin + count) of `total` split into `parts` parts that differ by at most one.
struct span_of {
  std::size_t begin;
  std::size_t count;
};
inline span_of part(std::size_t total, std::size_t parts, std::size_t index) {
  const std::size_t base = total / parts;
  const std::size_t extra = total % parts;
  return {index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

/// How many pieces each shard is cut into: enough that one is about
/// `piece_bytes`, never more than the smallest shard has slices (every piece
/// of every shard is >= 1 slice); 1 when piece_bytes is 0.
PLAIT_DECL std::size_t piece_count(std::size_t extent, std::size_t shards, std::size_t slice_bytes,
                                   std::size_t piece_bytes);

}  // namespace detail

/// The object split_all_gather returns: holds references to both
/// communicators (so it must not outlive them) and moves activations across.
template <class Algorithm, class Layout, class Inter, class Intra>
class boundary {
  static constexpr std::size_t dimension = detail::boundary_dimension<Layout>();

 public:
  /// Refers to both communicators; split_all_gather builds it.
  boundary(Inter& inter, Intra& intra, boundary_options options) : inter_(inter), intra_(intra), options_(options) {}

  /// Sends this rank's part of x to inter rank `dest`: shard intra.rank() of
  /// intra.size() along the layout dimension (the whole tensor in naive mode).
  template <class X>
  void send(int dest, X&& x) {
    auto view = detail::as_tensor(x);
    const detail::call_site at{inter_.rank(), inter_.size(), "split_all_gather.send"};
    check_peer(at, dest);
    const auto pieces = my_pieces(detail::to_box(view, at, "x"), at);
    std::vector<std::vector<std::byte>> staging(pieces.size());
    std::vector<typename Inter::request> requests;
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      const region& r = pieces[k];
      std::span<const std::byte> bytes =
          r.is_contiguous() ? std::span<const std::byte>(r.data, r.bytes()) : std::span<const std::byte>{};
      if (!r.is_contiguous()) {
        staging[k].resize(r.bytes());
        pack(r, staging[k].data());
        bytes = staging[k];
      }
      requests.push_back(inter_.isend(dest, bytes, user_tag));
    }
    wait(inter_, requests, at, dest);
  }

  /// Receives this rank's part from inter rank `src` into x, then (split mode)
  /// all-gathers the shards over intra so that every receiver holds all of x.
  template <class X>
  void recv(int src, X&& x) {
    auto view = detail::as_tensor(x);
    static_assert(!std::is_const_v<typename decltype(view)::element_type>,
                  "plait: boundary::recv needs a writable tensor");
    const detail::call_site at{inter_.rank(), inter_.size(), "split_all_gather.recv"};
    check_peer(at, src);
    const auto box = detail::to_box(view, at, "x");
    const auto pieces = my_pieces(box, at);
    std::vector<std::vector<std::byte>> staging(pieces.size());
    std::vector<typename Inter::request> requests;
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      const region& r = pieces[k];
      std::span<std::byte> bytes = r.as_span();
      if (!r.is_contiguous()) {
        staging[k].resize(r.bytes());
        bytes = staging[k];
      }
      requests.push_back(inter_.irecv(src, bytes, user_tag));
    }
    if (options_.mode == boundary_mode::naive) {
      wait(inter_, requests, at, src);
      if (!pieces.empty() && !pieces[0].is_contiguous()) unpack(staging[0].data(), pieces[0]);
      return;
    }
    // Piece k: wait for it, then all-gather it while later pieces still arrive.
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      wait(inter_, std::span(requests).subspan(k, 1), at, src);
      if (!pieces[k].is_contiguous()) unpack(staging[k].data(), pieces[k]);
      detail::gather_piece_now<Algorithm>(intra_, piece_blocks(box, k, pieces.size(), at));
    }
  }

  /// send, returning at once: the pieces are posted now (or, on an in-order
  /// transport, once the collectives started on inter before it have moved)
  /// and sent while the request, or any collective of inter, is tested or
  /// waited for. x must stay untouched until the request is complete.
  template <class X>
  [[nodiscard]] collective_request isend(int dest, X&& x) {
    static_assert(detail::can_be_in_flight<Inter>,
                  "plait: boundary::isend needs an inter transport whose transfers can be in flight (test_all)");
    auto view = detail::as_tensor(x);
    const detail::call_site at{inter_.rank(), inter_.size(), "split_all_gather.isend"};
    check_peer(at, dest);
    auto pieces = my_pieces(detail::to_box(view, at, "x"), at);
    return collective_request(
        transfer::start(std::make_unique<transfer>(inter_, dest, true, std::move(pieces), at.operation)));
  }

  /// recv, returning at once with the receives posted: a pipeline stage posts
  /// it before its microbatch is ready. In split mode each piece's all-gather
  /// over intra starts as soon as the piece has arrived (a nonblocking
  /// collective of intra); the request is complete when all of x is.
  template <class X>
  [[nodiscard]] collective_request irecv(int src, X&& x) {
    static_assert(detail::can_be_in_flight<Inter> && detail::can_be_in_flight<Intra>,
                  "plait: boundary::irecv needs inter and intra transports whose transfers can be in flight "
                  "(test_all)");
    auto view = detail::as_tensor(x);
    static_assert(!std::is_const_v<typename decltype(view)::element_type>,
                  "plait: boundary::irecv needs a writable tensor");
    const detail::call_site at{inter_.rank(), inter_.size(), "split_all_gather.irecv"};
    check_peer(at, src);
    if (static_cast<const void*>(&inter_) == static_cast<const void*>(&intra_)) {
      at.fail(errc::invalid_argument, {"inter and intra are the same communicator"});
    }
    const auto box = detail::to_box(view, at, "x");
    auto pieces = my_pieces(box, at);
    const std::size_t count = pieces.size();
    // The all-gathers' tags first, in piece order, on every receiver alike.
    std::vector<std::unique_ptr<gather_run>> gathers;
    if (options_.mode == boundary_mode::split) {
      for (std::size_t k = 0; k < count; ++k) {
        const detail::region_gather_plan plan(piece_blocks(box, k, count, at));
        const int rank = intra_.rank();
        auto planned =
            detail::plan_schedule<Algorithm, op::all_gather, Intra>(rank, intra_.size(), plan.block_bytes(rank));
        const call_stamp stamp = call_stamp::of(call_kind::split_all_gather, planned.algorithm);
        gathers.push_back(std::make_unique<gather_run>(intra_, planned.steps, plan,
                                                       detail::boundary_gather_name(planned.algorithm), stamp,
                                                       detail::take_tag(intra_, stamp)));
      }
    }
    auto moving = std::make_unique<transfer>(inter_, src, false, std::move(pieces), at.operation);
    const transfer& pieces_in = *moving;
    collective_request inter_part(transfer::start(std::move(moving)));
    if (gathers.empty()) return inter_part;
    return collective_request(
        gathering::start(intra_, std::make_unique<gathering>(std::move(inter_part), pieces_in, std::move(gathers))));
  }

  /// The options it was made with.
  [[nodiscard]] const boundary_options& options() const noexcept { return options_; }

 private:
  void check_peer(const detail::call_site& at, int peer) const {
    if (peer < 0 || peer >= inter_.size()) {
      at.fail(errc::invalid_argument, {"peer ", peer, " is outside the inter communicator [0, ", inter_.size(), ")"});
    }
  }

  /// The regions this rank sends or receives over inter: its shard cut into
  /// pieces (split mode) or the whole tensor (naive mode). Every rank of both
  /// stages computes the same cut from the extent, t and the slice size.
  template <std::size_t Rank>
  std::vector<region> my_pieces(const detail::byte_box<Rank>& box, const detail::call_site& at) const {
    static_assert(dimension < Rank, "plait: split_all_gather's layout dimension is beyond the tensor's rank");
    if (options_.mode == boundary_mode::naive) return {detail::to_region(box, at, "x")};
    const std::size_t shards = static_cast<std::size_t>(intra_.size());
    const std::size_t extent = box.extent[dimension];
    const std::size_t slice_bytes = extent == 0 ? 0 : box.elements() / extent * box.element;
    const std::size_t count = detail::piece_count(extent, shards, slice_bytes, options_.piece_bytes);
    const auto shard = detail::part(extent, shards, static_cast<std::size_t>(intra_.rank()));
    std::vector<region> pieces;
    for (std::size_t k = 0; k < count; ++k) {
      const auto piece = detail::part(shard.count, count, k);
      pieces.push_back(detail::to_region(box.slice(dimension, shard.begin + piece.begin, piece.count), at, "x"));
    }
    return pieces;
  }

  using transfer = detail::boundary_transfer<Inter>;
  using gathering = detail::boundary_gathers<Inter, Intra>;
  using gather_run = typename gathering::gather_run;

  /// Piece k of `pieces` of every receiver's shard: the blocks of that
  /// piece's all-gather over intra.
  template <std::size_t Rank>
  std::vector<region> piece_blocks(const detail::byte_box<Rank>& box, std::size_t k, std::size_t pieces,
                                   const detail::call_site& at) const {
    const std::size_t shards = static_cast<std::size_t>(intra_.size());
    const std::size_t extent = box.extent[dimension];
    std::vector<region> blocks;
    for (std::size_t j = 0; j < shards; ++j) {
      const auto shard = detail::part(extent, shards, j);
      const auto piece = detail::part(shard.count, pieces, k);
      blocks.push_back(detail::to_region(box.slice(dimension, shard.begin + piece.begin, piece.count), at, "x"));
    }
    return blocks;
  }

  template <class Comm>
  static void wait(Comm& comm, std::span<typename Comm::request> requests, const detail::call_site& at, int peer) {
    try {
      comm.wait_all(requests, plait::detail::after(comm.timeout()));
    } catch (const error& e) {
      throw e.within({at.rank, at.operation, -1, peer});
    }
  }

  Inter& inter_;
  Intra& intra_;
  boundary_options options_;
};

/// A pipeline boundary between two stages of t = intra.size() ranks:
///   auto b = plait::split_all_gather<plait::ring, plait::along<1>>(inter, intra);
///   b.send(dest, activation);   // stage A: shard intra.rank() of t over inter
///   b.recv(src, activation);    // stage B: its shard, then all-gather over intra
/// Any transports for inter and intra; they may differ (MPI across nodes, shm inside).
/// Inter and Intra are not constrained here: a type that is not a transport
/// stops the compiler with the static_assert that names what it lacks.
template <class Algorithm = automatic, class Layout = contiguous, class Inter, class Intra>
boundary<Algorithm, Layout, Inter, Intra> split_all_gather(Inter& inter, Intra& intra, boundary_options options = {}) {
  (void)detail::check_transport<Inter>();
  (void)detail::check_transport<Intra>();
  static_assert(detail::check_algorithm<Algorithm, op::all_gather>());
  (void)detail::boundary_dimension<Layout>();
  return boundary<Algorithm, Layout, Inter, Intra>(inter, intra, options);
}

/// A boundary refers to its communicators: temporaries would dangle.
template <class Algorithm = automatic, class Layout = contiguous, transport Inter, transport Intra>
void split_all_gather(Inter&&, Intra&, boundary_options = {}) = delete;
template <class Algorithm = automatic, class Layout = contiguous, transport Inter, transport Intra>
void split_all_gather(Inter&, Intra&&, boundary_options = {}) = delete;

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/op/impl/split_all_gather.ipp"
#endif

// plait::two_level: two communicators seen as one group of ranks, a fast
// intra-node level (the node's ranks) and a slow inter-node level (the ranks
// of the same local rank on every node). plait::hierarchical<Inner, Outer>
// runs a collective on it level by level (op/hierarchical.hpp). It is not a
// transport: it moves nothing itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "plait/algorithm/direct.hpp"
#include "plait/core/config.hpp"
#include "plait/core/error.hpp"
#include "plait/core/operation.hpp"
#include "plait/core/scratch.hpp"
#include "plait/core/transport.hpp"
#include "plait/layout/contiguous.hpp"
#include "plait/op/collective.hpp"

namespace plait {
inline namespace v0 {

/// Payload bytes this rank has sent through each level of a two_level
/// communicator (each level's own bytes_sent()).
struct level_bytes {
  std::uint64_t intra = 0;  ///< through the intra-node (fast) level
  std::uint64_t inter = 0;  ///< through the inter-node (slow) level

  /// Both levels together.
  [[nodiscard]] constexpr std::uint64_t total() const noexcept { return intra + inter; }
  /// Equal when both counts are.
  constexpr bool operator==(const level_bytes&) const = default;
};

/// What plait::automatic ran on a two_level communicator, and the cost
/// models' predictions it chose by (two_level::last_choice()).
struct level_choice {
  /// True: hierarchical over the two levels; false: flat over the whole communicator.
  bool hierarchical = true;
  /// Predicted seconds of hierarchical<automatic, automatic>: the inter level's choice plus the intra level's.
  double hierarchical_seconds = 0;
  /// Predicted seconds of automatic over the whole communicator; 0 when the object has none.
  double flat_seconds = 0;

  /// "hierarchical" or "flat".
  [[nodiscard]] constexpr std::string_view name() const noexcept { return hierarchical ? "hierarchical" : "flat"; }
};

namespace detail {
/// Raises invalid_argument when the node sizes `sizes` (one per node, as seen
/// by this rank) differ: two_level needs the same intra size on every node.
PLAIT_DECL void check_node_sizes(int rank, std::span<const int> sizes, std::string_view operation);
/// Raises invalid_argument unless `rank_of_position` lists each of its ranks once.
PLAIT_DECL void check_rank_table(int rank, std::span<const int> rank_of_position, std::string_view operation);
}  // namespace detail

/// Two levels of one group: `intra`, the ranks of this node, and `inter`, the
/// ranks of the same local rank on every node. Holds both by reference (they
/// must outlive it). With N = inter.size() nodes of L = intra.size() ranks,
/// size() is N x L and this rank's position is inter.rank() x L +
/// intra.rank(); rank() is that position unless a rank table says otherwise
/// (plait::mpi::node_levels keeps the launcher's ranks that way).
///   plait::two_level levels{intra, inter};
///   plait::all_gather<plait::hierarchical<plait::ring, plait::direct>>(levels, mine, all);
template <class Intra, class Inter>
class two_level {
  static_assert(detail::check_transport<Intra>());
  static_assert(detail::check_transport<Inter>());

 public:
  /// The intra-node communicator type.
  using intra_type = Intra;
  /// The inter-node communicator type.
  using inter_type = Inter;

  /// Collective over both levels: every node must have the same number of
  /// ranks, checked by an exchange of intra.size() over inter and of what
  /// each rank saw over intra (control bytes, not counted in bytes_sent()).
  /// Nodes of different sizes are invalid_argument on every rank, naming the sizes.
  two_level(Intra& intra, Inter& inter) : intra_(&intra), inter_(&inter) {
    check_levels();
    check_equal_node_sizes();
  }

  /// The levels with an explicit rank of each position (position p = node x
  /// L + local rank): rank_of_position[p] is the rank of the whole group that
  /// sits there, the same table on every rank. No exchange: the caller knows
  /// the node sizes are equal (the table has N x L entries on every rank).
  two_level(Intra& intra, Inter& inter, std::vector<int> rank_of_position)
      : intra_(&intra), inter_(&inter), rank_of_position_(std::move(rank_of_position)) {
    check_levels();
    if (rank_of_position_.size() != static_cast<std::size_t>(intra.size()) * static_cast<std::size_t>(inter.size())) {
      detail::fail(errc::invalid_argument,
                   {"the rank table has ", rank_of_position_.size(),
                    " entries, not intra.size() x inter.size() = ", intra.size(), " x ", inter.size()},
                   {position(), "two_level"});
    }
    detail::check_rank_table(position(), rank_of_position_, "two_level");
    position_of_rank_.assign(rank_of_position_.size(), 0);
    bool identity = true;
    for (std::size_t p = 0; p < rank_of_position_.size(); ++p) {
      position_of_rank_[static_cast<std::size_t>(rank_of_position_[p])] = static_cast<int>(p);
      identity = identity && rank_of_position_[p] == static_cast<int>(p);
    }
    const int nodes = inter.size();
    const int locals = intra.size();
    local_major_ = !identity;
    for (int p = 0; p < nodes * locals && local_major_; ++p) {
      local_major_ = rank_of_position_[static_cast<std::size_t>(p)] == (p % locals) * nodes + p / locals;
    }
    if (identity) {
      rank_of_position_.clear();
      position_of_rank_.clear();
    }
  }

  /// Temporaries would dangle: the levels are held by reference.
  two_level(Intra&&, Inter&) = delete;
  /// Temporaries would dangle: the levels are held by reference.
  two_level(Intra&, Inter&&) = delete;
  /// Temporaries would dangle: the levels are held by reference.
  two_level(Intra&&, Inter&&) = delete;

  /// Copying would share the levels silently; two_level is a view of them, built once.
  two_level(const two_level&) = delete;
  /// Not assignable either.
  two_level& operator=(const two_level&) = delete;

  /// This rank in the whole group.
  [[nodiscard]] int rank() const noexcept { return rank_at(position()); }
  /// Ranks in the whole group: intra().size() x inter().size().
  [[nodiscard]] int size() const noexcept { return intra_->size() * inter_->size(); }
  /// The intra-node (fast) communicator.
  [[nodiscard]] Intra& intra() const noexcept { return *intra_; }
  /// The inter-node (slow) communicator.
  [[nodiscard]] Inter& inter() const noexcept { return *inter_; }
  /// Ranks per node, L.
  [[nodiscard]] int node_size() const noexcept { return intra_->size(); }
  /// Nodes, N.
  [[nodiscard]] int node_count() const noexcept { return inter_->size(); }
  /// Each level's own bytes_sent().
  [[nodiscard]] level_bytes bytes_sent() const noexcept { return {intra_->bytes_sent(), inter_->bytes_sent()}; }

  /// The position (node x L + local rank) of rank `r` of the whole group.
  [[nodiscard]] int position_of(int r) const noexcept {
    return position_of_rank_.empty() ? r : position_of_rank_[static_cast<std::size_t>(r)];
  }
  /// The rank of the whole group at position `p`.
  [[nodiscard]] int rank_at(int p) const noexcept {
    return rank_of_position_.empty() ? p : rank_of_position_[static_cast<std::size_t>(p)];
  }
  /// Whether rank r sits at position r on every rank (blocks of L consecutive
  /// ranks per node): hierarchical collectives then write straight into the result.
  [[nodiscard]] bool node_major() const noexcept { return rank_of_position_.empty(); }
  /// Whether local rank l of node n is rank l x N + n (round-robin placement,
  /// and not node_major()): hierarchical collectives write straight into the result too.
  [[nodiscard]] bool local_major() const noexcept { return local_major_; }

  /// What the last automatic collective on this object ran and why.
  [[nodiscard]] const level_choice& last_choice() const noexcept { return last_choice_; }
  /// Called by plait::automatic on a two_level: remembers its choice for last_choice().
  void note_choice(const level_choice& choice) noexcept { last_choice_ = choice; }

  /// The hierarchical all-to-all's bundle buffer: `bytes` uninitialised
  /// bytes, valid until the next call. It is kept until this object goes and
  /// only grows (to the largest all-to-all's send size): a fresh buffer of
  /// tens of MiB costs a page fault per page at its first touch (about 90 ms
  /// per 64 MiB per rank on the two-host bench's VM), more than the node
  /// level's copy itself.
  [[nodiscard]] std::span<std::byte> bundle_staging(std::size_t bytes) const {
    if (bundle_staging_.size() < bytes) bundle_staging_ = detail::byte_buffer(bytes);
    return {bundle_staging_.data(), bytes};
  }

 private:
  [[nodiscard]] int position() const noexcept { return inter_->rank() * intra_->size() + intra_->rank(); }

  void check_levels() const {
    if (intra_->size() < 1 || inter_->size() < 1) {
      detail::fail(
          errc::invalid_argument,
          {"two_level needs two real communicators; intra has ", intra_->size(), " ranks and inter ", inter_->size()},
          {intra_->rank(), "two_level"});
    }
  }

  // Local rank 0 of every node meets every node over inter, so it sees all
  // node sizes; the other local ranks may meet only the nodes as large as
  // theirs, so each node then gathers what its ranks saw over intra.
  void check_equal_node_sizes() {
    const level_bytes before = bytes_sent();
    const int mine = intra_->size();
    std::vector<int> sizes(static_cast<std::size_t>(inter_->size()));
    collective<op::all_gather, Inter, direct, contiguous>::run(*inter_, std::span<const int>(&mine, 1), sizes);
    int smallest = mine;
    int largest = mine;
    for (int s : sizes) {
      smallest = s < smallest ? s : smallest;
      largest = s > largest ? s : largest;
    }
    const int seen[2] = {smallest, largest};
    std::vector<int> node_seen(2 * static_cast<std::size_t>(intra_->size()));
    collective<op::all_gather, Intra, direct, contiguous>::run(*intra_, std::span<const int>(seen, 2), node_seen);
    discount(before);
    for (int s : node_seen) {
      smallest = s < smallest ? s : smallest;
      largest = s > largest ? s : largest;
    }
    // Local rank 0's view lists every node; the others name what their node saw.
    detail::check_node_sizes(position(), sizes, "two_level");
    const int range[2] = {smallest, largest};
    detail::check_node_sizes(position(), range, "two_level");
  }

  void discount(const level_bytes& before) {
    const level_bytes after = bytes_sent();
    if constexpr (detail::discounts_control_bytes<Intra>) intra_->discount_control_bytes(after.intra - before.intra);
    if constexpr (detail::discounts_control_bytes<Inter>) inter_->discount_control_bytes(after.inter - before.inter);
  }

  Intra* intra_;
  Inter* inter_;
  std::vector<int> rank_of_position_;  // empty: rank r at position r
  std::vector<int> position_of_rank_;
  bool local_major_ = false;
  level_choice last_choice_{};
  mutable detail::byte_buffer bundle_staging_;  // scratch: one collective at a time, as on every communicator
};

/// `plait::two_level levels{intra, inter};` deduces both communicator types.
template <class Intra, class Inter>
two_level(Intra&, Inter&) -> two_level<Intra, Inter>;

namespace detail {
template <class Intra, class Inter>
void two_level_base(const two_level<Intra, Inter>&);

/// A plait::two_level or a type derived from one (plait::mpi::node_levels).
template <class C>
concept two_level_communicator = requires(const C& c) {
  detail::two_level_base(c);
};
}  // namespace detail

}  // namespace v0
}  // namespace plait

#if !defined(PLAIT_SEPARATE_COMPILATION)
#include "plait/transport/impl/two_level.ipp"
#endif

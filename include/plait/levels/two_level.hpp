// plait::two_level: two communicators seen as one group of ranks, a fast
// intra-node level (the node's ranks) and a slow inter-node level (the ranks
// of the same local rank on every node). plait::hierarchical<Inner, Outer>
// runs a collective on it level by level (op/hierarchical.hpp). It is not a
// transport: it moves nothing itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plait/core/config.hpp"
#include "plait/core/control_exchange.hpp"
#include "plait/core/error.hpp"
#include "plait/core/transport.hpp"

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
/// Where the nodes of a two_level sit in position order: node n holds
/// sizes[n] ranks at positions offsets[n] .. offsets[n + 1] - 1. The same on
/// every rank; nodes may differ in size.
struct node_census {
  std::vector<int> sizes;    ///< ranks of each node, in node order
  std::vector<int> offsets;  ///< first position of each node, then the total
  int smallest = 0;          ///< the smallest node's size
  int largest = 0;           ///< the largest node's size

  /// Raises invalid_argument (naming `operation`, as rank `rank`) unless
  /// every size is at least 1 and they total `total` (-1: any total).
  PLAIT_DECL static node_census of(std::vector<int> sizes, int rank, std::string_view operation, long total = -1);
  /// Whether every node has the same size.
  [[nodiscard]] bool even() const noexcept { return smallest == largest; }
  /// The nodes whose local rank `local` exists (sizes > local), in node order:
  /// the inter level of that local rank.
  PLAIT_DECL std::vector<int> nodes_with_local(int local) const;
};

/// What is wrong with `inter` of local rank `local` on node `node` (empty:
/// nothing): two_level needs the ranks of local rank `local` on every node
/// that has one, in node order, this node at inter_rank. `seen_sizes` (may
/// be empty: not exchanged) are the node sizes its members reported.
PLAIT_DECL std::string inter_level_problem(const node_census& census, int node, int intra_size, int local,
                                           int inter_rank, int inter_size, std::span<const int> seen_sizes);
/// Raises invalid_argument unless `rank_of_position` lists each of its ranks once.
PLAIT_DECL void check_rank_table(int rank, std::span<const int> rank_of_position, std::string_view operation);

/// One object of a type a layer above chooses, made on its first use and
/// destroyed with the holder: how levels/ keeps state that op/ owns without
/// knowing its type. Neither copyable nor movable (the state belongs to one
/// holder); asking for a second type is a bug, refused as invalid_argument.
class attachment {
 public:
  attachment() = default;
  attachment(const attachment&) = delete;
  attachment& operator=(const attachment&) = delete;

  /// The held T, made value-initialised at the first call (`rank`: errors name it).
  template <class T>
  T& get(int rank) {
    if (!held_) {
      held_ = owner(new T(), [](void* p) { delete static_cast<T*>(p); });
      key_ = &key_of<T>;
    } else if (key_ != &key_of<T>) {
      fail(errc::invalid_argument, {"the state attached to two_level has another type"}, {rank, "two_level"});
    }
    return *static_cast<T*>(held_.get());
  }

 private:
  using owner = std::unique_ptr<void, void (*)(void*)>;
  template <class T>
  static constexpr char key_of = 0;  // its address names T
  owner held_{nullptr, nullptr};
  const void* key_ = nullptr;
};
}  // namespace detail

/// Two levels of one group: `intra`, the ranks of this node, and `inter`, the
/// ranks of the same local rank on every node that has that local rank.
/// Holds both by reference (they must outlive it). Node n has L_n ranks at
/// positions O_n .. O_n + L_n - 1 (O_n = L_0 + ... + L_{n-1}); this rank's
/// position is O_node + intra.rank(), and rank() is that position unless a
/// rank table says otherwise (plait::mpi::node_levels keeps the launcher's
/// ranks that way). size() is the sum of the node sizes; with N nodes of
/// equal size L it is N x L, the position inter.rank() x L + intra.rank().
/// Nodes of different sizes are served: every local rank below the smallest
/// node's size meets all N nodes over inter, and the hierarchical
/// collectives route the other local ranks' bytes through those
/// (docs/hierarchical.md, "Nodes of different sizes").
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

  /// Collective over both levels: learns every node's size and this node's
  /// index by an exchange of intra.size() over inter and of local rank 0's
  /// view over intra (control bytes, not counted in bytes_sent()). Local rank
  /// 0 of every node meets every node over inter, so node order is the order
  /// of inter among local ranks 0. An inter level that is not the same-local-
  /// rank peers of every node large enough is invalid_argument.
  two_level(Intra& intra, Inter& inter) : intra_(&intra), inter_(&inter) {
    check_levels();
    take_census();
  }

  /// The levels of N = inter.size() nodes of equal size L = intra.size(),
  /// with an explicit rank of each position (position p = node x L + local
  /// rank): rank_of_position[p] is the rank of the whole group that sits
  /// there, the same table on every rank. No exchange: the caller knows the
  /// node sizes are equal (the table has N x L entries on every rank).
  two_level(Intra& intra, Inter& inter, std::vector<int> rank_of_position)
      : intra_(&intra), inter_(&inter), rank_of_position_(std::move(rank_of_position)) {
    check_levels();
    if (rank_of_position_.size() != static_cast<std::size_t>(intra.size()) * static_cast<std::size_t>(inter.size())) {
      detail::fail(errc::invalid_argument,
                   {"the rank table has ", rank_of_position_.size(),
                    " entries, not intra.size() x inter.size() = ", intra.size(), " x ", inter.size()},
                   {intra.rank(), "two_level"});
    }
    census_ = detail::node_census::of(std::vector<int>(static_cast<std::size_t>(inter.size()), intra.size()),
                                      intra.rank(), "two_level");
    node_ = inter.rank();
    index_inter_level();
    index_rank_table();
  }

  /// The levels of nodes of any sizes: node_sizes[n] ranks on node n (in
  /// node order, the order of inter among local ranks 0) and the rank of the
  /// whole group at each position (positions O_n + local rank), the same
  /// tables on every rank. No exchange; the tables are checked against this
  /// rank's levels.
  two_level(Intra& intra, Inter& inter, std::vector<int> rank_of_position, std::vector<int> node_sizes)
      : intra_(&intra), inter_(&inter), rank_of_position_(std::move(rank_of_position)) {
    check_levels();
    census_ = detail::node_census::of(std::move(node_sizes), intra.rank(), "two_level",
                                      static_cast<long>(rank_of_position_.size()));
    const std::vector<int> nodes = census_.nodes_with_local(intra.rank());
    if (inter.size() != static_cast<int>(nodes.size())) {
      detail::fail(
          errc::invalid_argument,
          {"inter has ", inter.size(), " ranks, but ", nodes.size(), " of the ", census_.sizes.size(),
           " nodes have a local rank ", intra.rank(), ": inter must be the same local rank of every node that has it"},
          {intra.rank(), "two_level"});
    }
    node_ = nodes[static_cast<std::size_t>(inter.rank())];
    index_inter_level();
    index_rank_table();
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
  /// Ranks in the whole group: the sum of the node sizes.
  [[nodiscard]] int size() const noexcept { return census_.offsets.back(); }
  /// The intra-node (fast) communicator.
  [[nodiscard]] Intra& intra() const noexcept { return *intra_; }
  /// The inter-node (slow) communicator.
  [[nodiscard]] Inter& inter() const noexcept { return *inter_; }
  /// Ranks on this rank's node (intra().size()).
  [[nodiscard]] int node_size() const noexcept { return intra_->size(); }
  /// Nodes, N.
  [[nodiscard]] int node_count() const noexcept { return static_cast<int>(census_.sizes.size()); }
  /// This rank's node, 0 .. N - 1.
  [[nodiscard]] int node_index() const noexcept { return node_; }
  /// Ranks on node `n`.
  [[nodiscard]] int node_size_of(int n) const noexcept { return census_.sizes[static_cast<std::size_t>(n)]; }
  /// Position of local rank 0 of node `n`.
  [[nodiscard]] int node_offset(int n) const noexcept { return census_.offsets[static_cast<std::size_t>(n)]; }
  /// The smallest node's size: local ranks below it meet every node over inter.
  [[nodiscard]] int smallest_node_size() const noexcept { return census_.smallest; }
  /// The largest node's size.
  [[nodiscard]] int largest_node_size() const noexcept { return census_.largest; }
  /// Whether every node has the same number of ranks.
  [[nodiscard]] bool even_nodes() const noexcept { return census_.even(); }
  /// Each level's own bytes_sent().
  [[nodiscard]] level_bytes bytes_sent() const noexcept { return {intra_->bytes_sent(), inter_->bytes_sent()}; }

  /// The position of rank `r` of the whole group.
  [[nodiscard]] int position_of(int r) const noexcept {
    return position_of_rank_.empty() ? r : position_of_rank_[static_cast<std::size_t>(r)];
  }
  /// The rank of the whole group at position `p`.
  [[nodiscard]] int rank_at(int p) const noexcept {
    return rank_of_position_.empty() ? p : rank_of_position_[static_cast<std::size_t>(p)];
  }
  /// The position of rank `peer` of this rank's inter level.
  [[nodiscard]] int position_of_inter_peer(int peer) const noexcept {
    return node_offset(inter_nodes_[static_cast<std::size_t>(peer)]) + intra_->rank();
  }
  /// The position of rank `peer` of this rank's intra level.
  [[nodiscard]] int position_of_intra_peer(int peer) const noexcept { return node_offset(node_) + peer; }
  /// The whole group's rank of rank `peer` of this rank's inter level
  /// (`inter`) or intra level.
  [[nodiscard]] int rank_of_level_peer(bool inter, int peer) const noexcept {
    return rank_at(inter ? position_of_inter_peer(peer) : position_of_intra_peer(peer));
  }
  /// Whether rank r sits at position r on every rank (blocks of consecutive
  /// ranks per node): hierarchical collectives then write straight into the result.
  [[nodiscard]] bool node_major() const noexcept { return rank_of_position_.empty(); }
  /// Whether nodes are of equal size L and local rank l of node n is rank l x
  /// N + n (round-robin placement, and not node_major()): hierarchical
  /// collectives write straight into the result too.
  [[nodiscard]] bool local_major() const noexcept { return local_major_; }

  /// What the last automatic collective on this object ran and why.
  [[nodiscard]] const level_choice& last_choice() const noexcept { return last_choice_; }
  /// Called by plait::automatic on a two_level: remembers its choice for last_choice().
  void note_choice(const level_choice& choice) noexcept { last_choice_ = choice; }

  /// The one object of type State that a layer above keeps with these levels
  /// (op/ keeps the hierarchical collectives' staging buffers and engine
  /// there: op/hierarchical_state.hpp), made at the first call and destroyed
  /// with this object. Not thread-safe: make it on the thread that uses the
  /// levels, before anything else may.
  template <class State>
  [[nodiscard]] State& attached() const {
    return attached_.template get<State>(intra_->rank());
  }

 private:
  [[nodiscard]] int position() const noexcept { return node_offset(node_) + intra_->rank(); }

  void check_levels() const {
    if (intra_->size() < 1 || inter_->size() < 1) {
      detail::fail(
          errc::invalid_argument,
          {"two_level needs two real communicators; intra has ", intra_->size(), " ranks and inter ", inter_->size()},
          {intra_->rank(), "two_level"});
    }
  }

  // Local rank 0 of every node meets every node over inter, so it sees all
  // node sizes and its node's index; the other local ranks may meet only the
  // nodes larger than their local rank, so each node copies local rank 0's
  // view over intra: first how many nodes it saw, then the view itself.
  // Control exchanges (core/control_exchange.hpp): point to point, under
  // control tags, not counted in bytes_sent().
  void take_census() {
    const int mine = intra_->size();
    std::vector<int> seen(static_cast<std::size_t>(inter_->size()));
    exchange(*inter_, std::span<const int>(&mine, 1), seen);
    const int met = inter_->size();
    std::vector<int> met_by_each(static_cast<std::size_t>(intra_->size()));
    exchange(*intra_, std::span<const int>(&met, 1), met_by_each);
    const auto nodes = static_cast<std::size_t>(met_by_each.front());
    // One record per local rank: [node index, node sizes...], padded with zeros.
    std::vector<int> record(nodes + 1, 0);
    record[0] = inter_->rank();
    for (std::size_t n = 0; n < seen.size() && n < nodes; ++n) record[n + 1] = seen[n];
    std::vector<int> records(record.size() * static_cast<std::size_t>(intra_->size()));
    exchange(*intra_, std::span<const int>(record), records);
    const auto first = records.begin() + 1;
    census_ = detail::node_census::of(std::vector<int>(first, first + static_cast<std::ptrdiff_t>(nodes)),
                                      intra_->rank(), "two_level");
    node_ = records[0];
    // A wrong inter level may look right from local rank 0 (its view is the
    // census): the node agrees on every rank's verdict, so all its ranks refuse.
    const std::string problem = detail::inter_level_problem(census_, node_, intra_->size(), intra_->rank(),
                                                            inter_->rank(), inter_->size(), seen);
    const int fine = problem.empty() ? 1 : 0;
    std::vector<int> verdicts(static_cast<std::size_t>(intra_->size()));
    exchange(*intra_, std::span<const int>(&fine, 1), verdicts);
    if (!problem.empty()) detail::fail(errc::invalid_argument, {problem}, {intra_->rank(), "two_level"});
    for (std::size_t l = 0; l < verdicts.size(); ++l) {
      if (verdicts[l] == 0) {
        detail::fail(errc::invalid_argument,
                     {"local rank ", l,
                      " of this node found its inter level wrong: inter must be the same local "
                      "rank of every node that has it, in node order"},
                     {intra_->rank(), "two_level", -1, static_cast<int>(l)});
      }
    }
    index_inter_peers();
  }

  // One step of the census over `level`: every rank's `mine` into `all`.
  template <class Level>
  static void exchange(Level& level, std::span<const int> mine, std::span<int> all) {
    static constexpr call_stamp census = call_stamp::of(call_kind::control, "two_level census");
    detail::control_all_gather(level, mine, all, census, "two_level");
  }

  // Which node each inter peer sits on, after checking inter is the level it should be.
  void index_inter_level() {
    const std::string problem =
        detail::inter_level_problem(census_, node_, intra_->size(), intra_->rank(), inter_->rank(), inter_->size(), {});
    if (!problem.empty()) detail::fail(errc::invalid_argument, {problem}, {intra_->rank(), "two_level"});
    index_inter_peers();
  }

  // The inter level holds this local rank of every node that has it, in node order.
  void index_inter_peers() { inter_nodes_ = census_.nodes_with_local(intra_->rank()); }

  void index_rank_table() {
    detail::check_rank_table(position(), rank_of_position_, "two_level");
    position_of_rank_.assign(rank_of_position_.size(), 0);
    bool identity = true;
    for (std::size_t p = 0; p < rank_of_position_.size(); ++p) {
      position_of_rank_[static_cast<std::size_t>(rank_of_position_[p])] = static_cast<int>(p);
      identity = identity && rank_of_position_[p] == static_cast<int>(p);
    }
    const int nodes = node_count();
    const int locals = census_.largest;
    local_major_ = !identity && census_.even();
    for (int p = 0; p < nodes * locals && local_major_; ++p) {
      local_major_ = rank_of_position_[static_cast<std::size_t>(p)] == (p % locals) * nodes + p / locals;
    }
    if (identity) {
      rank_of_position_.clear();
      position_of_rank_.clear();
    }
  }

  Intra* intra_;
  Inter* inter_;
  detail::node_census census_;
  int node_ = 0;                       // this rank's node index
  std::vector<int> inter_nodes_;       // the node of each inter peer
  std::vector<int> rank_of_position_;  // empty: rank r at position r
  std::vector<int> position_of_rank_;
  bool local_major_ = false;
  level_choice last_choice_{};
  mutable detail::attachment attached_;  // what op/ keeps here (attached())
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
#include "plait/levels/impl/two_level.ipp"
#endif

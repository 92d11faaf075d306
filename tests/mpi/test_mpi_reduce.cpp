// Differential tests of the reductions over plait::mpi::communicator:
// all_reduce and reduce_scatter must give exactly what MPI_Allreduce and
// MPI_Reduce_scatter_block give on the same data for integer, logical and
// bitwise reductions and for minloc/maxloc (MPI_2INT), with every algorithm
// the registry schedules them with and in every form (blocking, in place,
// nonblocking, persistent started twice), all_reduce also on counts P does
// not divide. Where this MPI is not exact itself (Open MPI 4.1's saturating
// 8-bit sum) plait is held to the serial fold instead, with a warning.
// Floating-point results, which MPI does not pin down, are held to plait's own
// promises: plait::ordered equals the serial left fold bit for bit, and every
// rank's all_reduce result is the same bits, NaNs and signed zeros included.
// A reduction that does not commute gets rank order; a temporary stateful
// reduction outlives nonblocking and persistent calls; several nonblocking
// reductions in flight keep apart; a recv of the wrong size is refused on
// every rank before any byte moves; check mode reports ranks that reduce with
// different reductions, element sizes or operations; two ranks' NaN payloads
// meeting in recursive doubling keep the same bits on both partners. About
// 3 s at np 8.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../support/algorithm_lists.hpp"
#include "../support/order_sensitive.hpp"
#include "mpi_test.hpp"
#include "plait/mpi.hpp"

namespace {

using order = plait::op::fold_order;
using any_all_reduce = plait::op::all_reduce<>;
using any_reduce_scatter = plait::op::reduce_scatter<>;

// value_index<int> travels as MPI_2INT: the same bytes as MPI's {int, int}.
struct mpi_2int {
  int value;
  int index;
};
static_assert(sizeof(plait::value_index<int>) == sizeof(mpi_2int));
static_assert(offsetof(plait::value_index<int>, value) == offsetof(mpi_2int, value));
static_assert(offsetof(plait::value_index<int>, index) == offsetof(mpi_2int, index));
static_assert(sizeof(plait::value_index<int>) == 2 * sizeof(int));

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, std::int32_t>) {
    return MPI_INT32_T;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return MPI_INT64_T;
  } else if constexpr (std::is_same_v<T, std::uint8_t>) {
    return MPI_UINT8_T;
  } else {
    static_assert(std::is_same_v<T, plait::value_index<int>>);
    return MPI_2INT;
  }
}

std::uint64_t mix(int rank, std::size_t i, int salt) {
  std::uint64_t x = (static_cast<std::uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull +
                    static_cast<std::uint64_t>(salt) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  x *= 0xD6E8FEB86659FD93ull;
  return x ^ (x >> 29);
}

/// Rank `rank`'s element i under `salt`: every rank can recompute anyone's.
/// Integers span their range (sums and products wrap) with a zero in about
/// one element in four (logical reductions see both truth values); minloc and
/// maxloc pairs take few values and indices, so ties are common.
template <class T>
T contribution(int rank, std::size_t i, int salt) {
  const std::uint64_t x = mix(rank, i, salt);
  if constexpr (std::is_same_v<T, plait::value_index<int>>) {
    return {static_cast<int>(x % 5) - 2, static_cast<int>((x >> 8) % 7)};
  } else {
    return (x >> 40) % 4 == 0 ? T(0) : static_cast<T>(x);
  }
}

template <class T>
std::vector<T> filled(int rank, std::size_t n, int salt) {
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = contribution<T>(rank, i, salt);
  return out;
}

/// Refills `v` in place (its storage stays where a persistent call bound it).
template <class T>
void refill(std::vector<T>& v, int rank, int salt) {
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = contribution<T>(rank, i, salt);
}

template <class T>
bool same_bytes(const T* a, const T* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(T)) == 0;
}

template <class T>
std::string text(const T& x) {
  if constexpr (std::is_same_v<T, plait::value_index<int>>) {
    return "{" + std::to_string(x.value) + ", " + std::to_string(x.index) + "}";
  } else {
    return std::to_string(+x);
  }
}

/// Runs `fn`; returns "" or what it threw, so that one rank's failure is
/// recorded without skipping the collectives the other ranks still make.
template <class Fn>
std::string outcome(Fn&& fn) {
  try {
    fn();
    return "";
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

/// What MPI gives for one salt: MPI_Allreduce of P blocks of `block`
/// elements, and this rank's block of MPI_Reduce_scatter_block; `defect`
/// says where MPI itself was wrong (see native()).
template <class T>
struct reference {
  std::vector<T> all;
  std::vector<T> mine;
  std::string defect;
};

/// MPI's results for `salt`, checked against the serial fold over ranks
/// (exact for these reductions: integers wrap, and min, max, the bitwise and
/// logical reductions and minloc/maxloc do not round). Where MPI differs from
/// it, MPI is wrong (Open MPI 4.1's op/avx component saturates MPI_SUM on
/// 8- and 16-bit integers instead of wrapping: open-mpi/ompi#8045): the
/// serial fold becomes the reference and `defect` says so, so that plait is
/// still held to the exact result.
template <class T, class Reduction>
reference<T> native(MPI_Comm comm, std::size_t block, int salt, const Reduction& reduction, MPI_Op op,
                    std::string_view name) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::size_t n = block * static_cast<std::size_t>(size);
  const auto send = filled<T>(rank, n, salt);
  reference<T> out{std::vector<T>(n), std::vector<T>(block), {}};
  MPI_Allreduce(send.data(), out.all.data(), static_cast<int>(n), mpi_type<T>(), op, comm);
  MPI_Reduce_scatter_block(send.data(), out.mine.data(), static_cast<int>(block), mpi_type<T>(), op, comm);
  std::vector<T> serial(n);
  for (std::size_t i = 0; i < n; ++i) {
    T acc = contribution<T>(0, i, salt);
    for (int r = 1; r < size; ++r) acc = reduction(acc, contribution<T>(r, i, salt));
    serial[i] = acc;
  }
  const T* serial_mine = serial.data() + static_cast<std::size_t>(rank) * block;
  if (!same_bytes(out.all.data(), serial.data(), n) || !same_bytes(out.mine.data(), serial_mine, block)) {
    std::size_t k = 0;
    while (k < n && same_bytes(out.all.data() + k, serial.data() + k, 1)) ++k;
    out.defect =
        "this MPI's " + std::string(name) + " on " + std::to_string(sizeof(T)) +
        "-byte elements is not the exact result" +
        (k < n ? " (element " + std::to_string(k) + ": MPI " + text(out.all[k]) + ", exact " + text(serial[k]) + ")"
               : std::string{}) +
        ": plait is compared with the serial fold there";
    out.all = serial;
    out.mine.assign(serial_mine, serial_mine + block);
  }
  return out;
}

/// One (type, reduction, size) case: the references for salts 1..10,
/// computed once, and the first difference any algorithm shows.
template <class T>
struct differential {
  plait::mpi::communicator& comm;
  std::size_t block;
  std::string_view reduction_name;
  std::vector<reference<T>> refs;  // refs[salt]
  std::string verdict;

  /// Compares `count` elements of `got` with MPI's result for `salt` (the
  /// all-reduce's, or this rank's block of the reduce-scatter's, which starts
  /// at element `first`); on a difference, the verdict names the first element
  /// and what plait, MPI and a serial left fold over ranks give there.
  template <class Reduction>
  void check(const T* got, int salt, bool all, std::size_t first, std::size_t count, const Reduction& reduction,
             std::string_view algorithm, std::string_view form) {
    const T* want =
        all ? refs[static_cast<std::size_t>(salt)].all.data() : refs[static_cast<std::size_t>(salt)].mine.data();
    if (same_bytes(got, want, count) || !verdict.empty()) return;
    std::size_t k = 0;
    while (k < count && same_bytes(got + k, want + k, 1)) ++k;
    T serial = contribution<T>(0, first + k, salt);
    for (int r = 1; r < comm.size(); ++r) serial = reduction(serial, contribution<T>(r, first + k, salt));
    verdict = std::string(form) + " with " + std::string(algorithm) + ", " + std::string(reduction_name) + " on " +
              std::to_string(sizeof(T)) + "-byte elements, " + std::to_string(block) +
              " per block: differs from MPI at element " + std::to_string(first + k) + ": plait " + text(got[k]) +
              ", MPI " + text(want[k]) + ", serial " + text(serial);
  }
  void note_error(const std::string& error, std::string_view algorithm, std::string_view form) {
    if (!error.empty() && verdict.empty()) {
      verdict =
          std::string(form) + " with " + std::string(algorithm) + ", " + std::string(reduction_name) + ": " + error;
    }
  }

  /// all_reduce and reduce_scatter with Algorithm, against refs: blocking out
  /// of place, and with `every_form` also in place, nonblocking and persistent.
  /// The forms share one engine whatever the reduction, so each type sweeps
  /// them with one reduction: every form of every reduction made this file the
  /// slowest to compile in CI for no path the sweep did not already take.
  template <class Algorithm, bool every_form, class Reduction>
  void run(const Reduction& reduction) {
    const int p = comm.size();
    const int r = comm.rank();
    const std::size_t n = block * static_cast<std::size_t>(p);
    const std::size_t mine = static_cast<std::size_t>(r) * block;
    const std::string_view name = plait::algorithm_name<Algorithm>();
    std::vector<T> send;
    std::vector<T> recv(n);
    std::vector<T> part(block);
    if constexpr (plait_test::has_schedule<Algorithm, any_all_reduce>) {
      if (plait_test::runs_on<Algorithm, any_all_reduce>(p)) {
        send = filled<T>(r, n, 1);
        note_error(outcome([&] { plait::all_reduce<Algorithm>(comm, send, recv, reduction); }), name, "all_reduce");
        check(recv.data(), 1, true, 0, n, reduction, name, "all_reduce");
      }
      if constexpr (every_form) {
        if (plait_test::runs_on<Algorithm, any_all_reduce>(p)) {
          std::vector<T> buffer = filled<T>(r, n, 2);
          note_error(outcome([&] { plait::all_reduce<Algorithm>(comm, plait::in_place, buffer, reduction); }), name,
                     "in-place all_reduce");
          check(buffer.data(), 2, true, 0, n, reduction, name, "in-place all_reduce");
          send = filled<T>(r, n, 3);
          note_error(outcome([&] { plait::iall_reduce<Algorithm>(comm, send, recv, reduction).wait(); }), name,
                     "iall_reduce");
          check(recv.data(), 3, true, 0, n, reduction, name, "iall_reduce");
          note_error(outcome([&] {
                       auto persistent = plait::all_reduce_init<Algorithm>(comm, send, recv, reduction);
                       for (int salt : {4, 5}) {  // the contents at each start are what counts
                         refill(send, r, salt);
                         persistent.start();
                         persistent.wait();
                         check(recv.data(), salt, true, 0, n, reduction, name,
                               salt == 4 ? "all_reduce_init, first start" : "all_reduce_init, second start");
                       }
                     }),
                     name, "all_reduce_init");
        }
      }
    }
    if constexpr (plait_test::has_schedule<Algorithm, any_reduce_scatter>) {
      if (plait_test::runs_on<Algorithm, any_reduce_scatter>(p)) {
        send = filled<T>(r, n, 6);
        note_error(outcome([&] { plait::reduce_scatter<Algorithm>(comm, send, part, reduction); }), name,
                   "reduce_scatter");
        check(part.data(), 6, false, mine, block, reduction, name, "reduce_scatter");
      }
      if constexpr (every_form) {
        if (plait_test::runs_on<Algorithm, any_reduce_scatter>(p)) {
          std::vector<T> buffer = filled<T>(r, n, 7);
          note_error(outcome([&] { plait::reduce_scatter<Algorithm>(comm, plait::in_place, buffer, reduction); }), name,
                     "in-place reduce_scatter");
          check(buffer.data() + mine, 7, false, mine, block, reduction, name, "in-place reduce_scatter");
          send = filled<T>(r, n, 8);
          note_error(outcome([&] { plait::ireduce_scatter<Algorithm>(comm, send, part, reduction).wait(); }), name,
                     "ireduce_scatter");
          check(part.data(), 8, false, mine, block, reduction, name, "ireduce_scatter");
          note_error(outcome([&] {
                       auto persistent = plait::reduce_scatter_init<Algorithm>(comm, send, part, reduction);
                       for (int salt : {9, 10}) {
                         refill(send, r, salt);
                         persistent.start();
                         persistent.wait();
                         check(part.data(), salt, false, mine, block, reduction, name,
                               salt == 9 ? "reduce_scatter_init, first start" : "reduce_scatter_init, second start");
                       }
                     }),
                     name, "reduce_scatter_init");
        }
      }
    }
  }
};

/// Runs `d.run<A, every_form>(reduction)` for every algorithm A of the tuple.
template <class Algorithms, bool every_form, class T, class Reduction>
void for_every_algorithm(differential<T>& d, const Reduction& reduction) {
  [&]<class... A>(std::tuple<A...>*) {
    (d.template run<A, every_form>(reduction), ...);
  }(static_cast<Algorithms*>(nullptr));
}

/// One (type, reduction, block) case against MPI, every algorithm (and with
/// `every_form` every form); returns the first difference, or "".
template <class T, bool every_form = false, class Reduction>
std::string against_mpi(plait::mpi::communicator& comm, std::size_t block, const Reduction& reduction, MPI_Op op,
                        std::string_view name) {
  differential<T> d{comm, block, name, {}, {}};
  d.refs.resize(11);
  std::string defect;
  for (int salt = 1; salt <= 10; ++salt) {
    d.refs[static_cast<std::size_t>(salt)] = native<T>(MPI_COMM_WORLD, block, salt, reduction, op, name);
    if (defect.empty()) defect = d.refs[static_cast<std::size_t>(salt)].defect;
  }
  if (!defect.empty() && plait_test::world_rank() == 0) WARN(defect);
  // Algorithms scheduling both operations appear twice in the union: run once.
  for_every_algorithm<plait_test::algorithms_for<any_all_reduce>, every_form>(d, reduction);
  [&]<class... A>(std::tuple<A...>*) {
    (([&] {
       if constexpr (!plait_test::has_schedule<A, any_all_reduce>) d.template run<A, every_form>(reduction);
     }()),
     ...);
  }(static_cast<plait_test::algorithms_for<any_reduce_scatter>*>(nullptr));
  return d.verdict;
}

/// Every integer, logical and bitwise reduction on T at `block` elements per
/// block, the sum in every form.
template <class T>
std::string integer_reductions(plait::mpi::communicator& comm, std::size_t block) {
  std::string v;
  const auto add = [&](std::string w) {
    if (v.empty()) v = std::move(w);
  };
  add(against_mpi<T, true>(comm, block, plait::sum{}, MPI_SUM, "sum"));
  add(against_mpi<T>(comm, block, plait::prod{}, MPI_PROD, "prod"));
  add(against_mpi<T>(comm, block, plait::min{}, MPI_MIN, "min"));
  add(against_mpi<T>(comm, block, plait::max{}, MPI_MAX, "max"));
  add(against_mpi<T>(comm, block, plait::bit_and{}, MPI_BAND, "bit_and"));
  add(against_mpi<T>(comm, block, plait::bit_or{}, MPI_BOR, "bit_or"));
  add(against_mpi<T>(comm, block, plait::bit_xor{}, MPI_BXOR, "bit_xor"));
  add(against_mpi<T>(comm, block, plait::logical_and{}, MPI_LAND, "logical_and"));
  add(against_mpi<T>(comm, block, plait::logical_or{}, MPI_LOR, "logical_or"));
  add(against_mpi<T>(comm, block, plait::logical_xor{}, MPI_LXOR, "logical_xor"));
  return v;
}

plait::mpi::communicator world() {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_timeout(std::chrono::seconds(30));
  return comm;
}

}  // namespace

TEST_CASE("mpi integer, logical and bitwise reductions equal MPI's for every algorithm, the sum in every form",
          "[mpi][reduce][differential]") {
  plait::mpi::communicator comm = world();
  for (std::size_t block : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    CAPTURE(block);
    std::string v = integer_reductions<std::int32_t>(comm, block);
    if (v.empty()) v = integer_reductions<std::int64_t>(comm, block);
    if (v.empty()) v = integer_reductions<std::uint8_t>(comm, block);
    CAPTURE(v);
    PLAIT_REQUIRE_ALL(v.empty());
  }
  PLAIT_REQUIRE_ALL(!comm.poisoned());
}

TEST_CASE("mpi minloc and maxloc equal MPI_MINLOC and MPI_MAXLOC on MPI_2INT for every algorithm, minloc in every form",
          "[mpi][reduce][differential]") {
  plait::mpi::communicator comm = world();
  using pair = plait::value_index<int>;
  for (std::size_t block : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    CAPTURE(block);
    std::string v = against_mpi<pair, true>(comm, block, plait::minloc{}, MPI_MINLOC, "minloc");
    if (v.empty()) v = against_mpi<pair>(comm, block, plait::maxloc{}, MPI_MAXLOC, "maxloc");
    CAPTURE(v);
    PLAIT_REQUIRE_ALL(v.empty());
  }
}

namespace {

using plait_test::float_contribution;
using plait_test::left_fold;
using plait_test::right_fold;

template <class F>
bool is_left_fold(const std::vector<F>& got, int ranks, std::size_t first, int salt) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const F want = left_fold<F>(ranks, first + i, salt);
    if (std::memcmp(&got[i], &want, sizeof(F)) != 0) return false;
  }
  return true;
}

template <class Algorithm, class F>
std::string ordered_sum(plait::mpi::communicator& comm, std::size_t block) {
  const int p = comm.size();
  const std::size_t n = block * static_cast<std::size_t>(p);
  const std::size_t mine = static_cast<std::size_t>(comm.rank()) * block;
  const plait::ordered<plait::sum> reduction{};
  const auto fill = [&](std::vector<F>& v, int salt) {
    v.resize(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = float_contribution<F>(comm.rank(), i, salt);
  };
  std::vector<F> send;
  std::vector<F> recv(n);
  std::vector<F> part(block);
  std::string v;
  const auto note = [&](bool ok, const char* what) {
    if (!ok && v.empty()) v = std::string(what) + " is not the left fold";
  };
  const auto failed = [&](const std::string& error) {
    if (!error.empty() && v.empty()) v = error;
  };
  fill(send, 1);
  failed(outcome([&] { plait::all_reduce<Algorithm>(comm, send, recv, reduction); }));
  note(is_left_fold(recv, p, 0, 1), "all_reduce");
  std::vector<F> buffer;
  fill(buffer, 2);
  failed(outcome([&] { plait::all_reduce<Algorithm>(comm, plait::in_place, buffer, reduction); }));
  note(is_left_fold(buffer, p, 0, 2), "in-place all_reduce");
  fill(send, 3);
  failed(outcome([&] { plait::ireduce_scatter<Algorithm>(comm, send, part, reduction).wait(); }));
  note(is_left_fold(part, p, mine, 3), "ireduce_scatter");
  failed(outcome([&] {
    auto persistent = plait::reduce_scatter_init<Algorithm>(comm, send, part, reduction);
    for (int salt : {4, 5}) {
      fill(send, salt);
      persistent.start();
      persistent.wait();
      note(is_left_fold(part, p, mine, salt), "reduce_scatter_init");
    }
  }));
  fill(buffer, 6);
  failed(outcome([&] { plait::reduce_scatter<Algorithm>(comm, plait::in_place, buffer, reduction); }));
  note(is_left_fold(std::vector<F>(buffer.begin() + static_cast<std::ptrdiff_t>(mine),
                                   buffer.begin() + static_cast<std::ptrdiff_t>(mine + block)),
                    p, mine, 6),
       "in-place reduce_scatter");
  return v;
}

using left_fold_algorithms = plait_test::algorithms_for<plait::op::all_reduce<order::left>>;
static_assert(std::is_same_v<left_fold_algorithms, plait_test::algorithms_for<plait::op::reduce_scatter<order::left>>>);

}  // namespace

TEMPLATE_LIST_TEST_CASE("mpi ordered float and double sums equal the serial left fold bit for bit",
                        "[mpi][reduce][ordered]", left_fold_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());
  plait::mpi::communicator comm = world();
  const int p = comm.size();
  const std::size_t block = 33;
  // From three ranks on the data has sums whose other orders give other bits.
  if (p >= 3) {
    bool floats_differ = false;
    bool doubles_differ = false;
    for (std::size_t i = 0; i < block * static_cast<std::size_t>(p); ++i) {
      floats_differ = floats_differ || std::bit_cast<std::uint32_t>(left_fold<float>(p, i, 1)) !=
                                           std::bit_cast<std::uint32_t>(right_fold<float>(p, i, 1));
      doubles_differ = doubles_differ || std::bit_cast<std::uint64_t>(left_fold<double>(p, i, 1)) !=
                                             std::bit_cast<std::uint64_t>(right_fold<double>(p, i, 1));
    }
    REQUIRE(floats_differ);  // the same on every rank
    REQUIRE(doubles_differ);
  }
  std::string v = ordered_sum<TestType, float>(comm, block);
  if (v.empty()) v = ordered_sum<TestType, double>(comm, block);
  if (v.empty()) v = ordered_sum<TestType, float>(comm, 0);
  CAPTURE(v);
  PLAIT_REQUIRE_ALL(v.empty());
}

namespace {

/// Whether every rank's `mine` holds the same bytes as rank 0's (MPI_Allgather).
bool same_on_every_rank(std::span<const std::byte> mine) {
  const int p = plait_test::world_size();
  std::vector<std::byte> all(mine.size() * static_cast<std::size_t>(p));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(), static_cast<int>(mine.size()),
                MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 1; r < p; ++r) {
    if (std::memcmp(all.data(), all.data() + static_cast<std::size_t>(r) * mine.size(), mine.size()) != 0) return false;
  }
  return true;
}

/// Floats with NaNs (from rank 1; with `two_payloads` also a NaN of another
/// payload and sign from rank 2 at the same elements), infinities of both
/// signs (whose sum is a NaN), and zeros of both signs.
template <class F>
std::vector<F> awkward(int rank, std::size_t n, bool two_payloads) {
  using bits = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;
  const F nan_a = std::numeric_limits<F>::quiet_NaN();
  const F nan_b = std::bit_cast<F>(static_cast<bits>(std::bit_cast<bits>(-std::numeric_limits<F>::quiet_NaN()) | 5u));
  std::vector<F> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    F x = float_contribution<F>(rank, i, 0);
    if (i % 7 == 3 && rank == 1) x = nan_a;
    if (i % 7 == 3 && rank == 2 && two_payloads) x = nan_b;
    if (i % 11 == 4) x = rank % 2 == 0 ? std::numeric_limits<F>::infinity() : -std::numeric_limits<F>::infinity();
    if (i % 5 == 1) x = rank % 2 == 0 ? F(0) : F(-0.0);
    if (i % 13 == 6) x = F(-0.0);
    out[i] = x;
  }
  return out;
}

template <class Algorithm, class F, class Reduction>
std::string same_bits(plait::mpi::communicator& comm, std::size_t n, const Reduction& reduction, const char* what,
                      bool two_payloads = false) {
  const auto send = awkward<F>(comm.rank(), n, two_payloads);
  std::vector<F> recv(n);
  const std::string error = outcome([&] { plait::all_reduce<Algorithm>(comm, send, recv, reduction); });
  const bool same = same_on_every_rank(std::as_bytes(std::span(recv)));
  if (!error.empty()) return std::string(what) + ": " + error;
  return same ? std::string{} : std::string(what) + ": ranks hold different bits";
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("mpi every rank's all_reduce result is the same bits, NaNs and signed zeros included",
                        "[mpi][reduce][bits]", plait_test::algorithms_for<any_all_reduce>) {
  CAPTURE(plait::algorithm_name<TestType>());
  plait::mpi::communicator comm = world();
  if (!plait_test::runs_on<TestType, any_all_reduce>(comm.size())) return;  // every rank skips alike
  for (std::size_t n : {std::size_t{1}, std::size_t{8 * 13}, std::size_t{1001}}) {
    CAPTURE(n);
    std::string v = same_bits<TestType, float>(comm, n, plait::sum{}, "float sum");
    if (v.empty()) v = same_bits<TestType, float>(comm, n, plait::max{}, "float max");
    if (v.empty()) v = same_bits<TestType, double>(comm, n, plait::sum{}, "double sum");
    if (v.empty()) v = same_bits<TestType, double>(comm, n, plait::min{}, "double min");
    CAPTURE(v);
    PLAIT_REQUIRE_ALL(v.empty());
  }
}

// Recursive doubling's partners compute the same (lower) + (higher) into
// different sides; the kernel's loops for the two sides may emit the add
// with its operands swapped, and two NaNs then keep the payload of whichever
// comes first: the reductions return a NaN operand as it is (the left one)
// instead (reductions.hpp, detail::arithmetic). This failed before that.
TEMPLATE_LIST_TEST_CASE("mpi every rank's all_reduce result is the same bits when two ranks' NaN payloads meet",
                        "[mpi][reduce][bits]", plait_test::algorithms_for<any_all_reduce>) {
  CAPTURE(plait::algorithm_name<TestType>());
  plait::mpi::communicator comm = world();
  if (!plait_test::runs_on<TestType, any_all_reduce>(comm.size())) return;  // every rank skips alike
  for (std::size_t n : {std::size_t{8 * 13}, std::size_t{1001}}) {
    CAPTURE(n);
    std::string v = same_bits<TestType, float>(comm, n, plait::sum{}, "float sum", true);
    if (v.empty()) v = same_bits<TestType, double>(comm, n, plait::sum{}, "double sum", true);
    if (v.empty()) v = same_bits<TestType, float>(comm, n, plait::max{}, "float max", true);
    CAPTURE(v);
    PLAIT_REQUIRE_ALL(v.empty());
  }
}

namespace {

using plait_test::matrix;
using plait_test::times;

/// Salted: each call multiplies its own matrices.
matrix matrix_of(int rank, std::size_t i, int salt) {
  const std::uint64_t x = mix(rank, i, salt);
  return {{static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(x >> 32), static_cast<std::uint32_t>(x >> 16) | 1u,
           static_cast<std::uint32_t>(x >> 8)}};
}

using rank_order_algorithms = plait_test::algorithms_for<plait::op::all_reduce<order::rank>>;

}  // namespace

TEMPLATE_LIST_TEST_CASE("mpi a 2x2 matrix product that does not commute gives the rank-ordered product",
                        "[mpi][reduce][order]", rank_order_algorithms) {
  using Algorithm = TestType;
  CAPTURE(plait::algorithm_name<Algorithm>());
  plait::mpi::communicator comm = world();
  const int p = comm.size();
  if (!plait_test::runs_on<Algorithm, plait::op::all_reduce<order::rank>>(p)) return;
  const auto product =
      plait::reduction([](const matrix& a, const matrix& b) { return times(a, b); }, plait::associative);
  const std::size_t block = 5;
  const std::size_t n = block * static_cast<std::size_t>(p);
  const auto want = [&](std::size_t i, int salt) {
    matrix acc = matrix_of(0, i, salt);
    for (int r = 1; r < p; ++r) acc = times(acc, matrix_of(r, i, salt));
    return acc;
  };
  std::vector<matrix> send(n);
  std::vector<matrix> recv(n);
  for (std::size_t i = 0; i < n; ++i) send[i] = matrix_of(comm.rank(), i, 1);
  std::string v = outcome([&] { plait::all_reduce<Algorithm>(comm, send, recv, product); });
  for (std::size_t i = 0; i < n && v.empty(); ++i) {
    if (!(recv[i] == want(i, 1))) v = "all_reduce element " + std::to_string(i) + " is out of rank order";
  }
  std::vector<matrix> buffer(n);
  for (std::size_t i = 0; i < n; ++i) buffer[i] = matrix_of(comm.rank(), i, 2);
  const std::string in_place =
      outcome([&] { plait::iall_reduce<Algorithm>(comm, plait::in_place, buffer, product).wait(); });
  if (v.empty()) v = in_place;
  for (std::size_t i = 0; i < n && v.empty(); ++i) {
    if (!(buffer[i] == want(i, 2))) v = "in-place iall_reduce element " + std::to_string(i) + " is out of rank order";
  }
  if constexpr (plait_test::has_schedule<Algorithm, plait::op::reduce_scatter<order::rank>>) {
    std::vector<matrix> part(block);
    const std::string error = outcome([&] { plait::reduce_scatter<Algorithm>(comm, send, part, product); });
    if (v.empty()) v = error;
    const std::size_t mine = static_cast<std::size_t>(comm.rank()) * block;
    for (std::size_t i = 0; i < block && v.empty(); ++i) {
      if (!(part[i] == want(mine + i, 1))) v = "reduce_scatter element " + std::to_string(i) + " is out of rank order";
    }
    for (std::size_t i = 0; i < n; ++i) buffer[i] = matrix_of(comm.rank(), i, 3);
    const std::string in_place_error =
        outcome([&] { plait::reduce_scatter<Algorithm>(comm, plait::in_place, buffer, product); });
    if (v.empty()) v = in_place_error;
    for (std::size_t i = 0; i < block && v.empty(); ++i) {
      if (!(buffer[mine + i] == want(mine + i, 3))) v = "in-place reduce_scatter element is out of rank order";
    }
    const std::string persistent_error = outcome([&] {
      auto persistent = plait::reduce_scatter_init<Algorithm>(comm, send, part, product);
      for (int salt : {4, 5}) {
        for (std::size_t i = 0; i < n; ++i) send[i] = matrix_of(comm.rank(), i, salt);
        persistent.start();
        persistent.wait();
        for (std::size_t i = 0; i < block && v.empty(); ++i) {
          if (!(part[i] == want(mine + i, salt))) v = "reduce_scatter_init element is out of rank order";
        }
      }
    });
    if (v.empty()) v = persistent_error;
  }
  CAPTURE(v);
  PLAIT_REQUIRE_ALL(v.empty());
}

TEST_CASE("mpi a recv of the wrong size is refused with size_mismatch on every rank, recv untouched",
          "[mpi][reduce][bad_input]") {
  plait::mpi::communicator comm = world();
  const int p = comm.size();
  const std::size_t block = 2;
  const std::size_t n = block * static_cast<std::size_t>(p);
  const std::vector<int> send(n, 1);
  std::string v;
  const auto refused = [&](const char* what, auto&& call) {
    try {
      call();
      if (v.empty()) v = std::string(what) + " accepted a recv of the wrong size";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch && v.empty()) v = std::string(what) + ": " + e.what();
    } catch (const std::exception& e) {
      if (v.empty()) v = std::string(what) + " threw something else: " + e.what();
    }
  };
  std::vector<int> short_recv(n - 1, -1);
  refused("all_reduce", [&] { plait::all_reduce<plait::automatic>(comm, send, short_recv, plait::sum{}); });
  refused("all_reduce<ring>", [&] { plait::all_reduce<plait::ring>(comm, send, short_recv, plait::sum{}); });
  refused("iall_reduce", [&] { plait::iall_reduce<plait::tree>(comm, send, short_recv, plait::max{}).wait(); });
  refused("all_reduce_init", [&] {
    auto persistent = plait::all_reduce_init<plait::chain>(comm, send, short_recv, plait::ordered<plait::sum>{});
    persistent.start();
    persistent.wait();
  });
  std::vector<int> long_recv(n + 1, -1);
  refused("all_reduce, long recv", [&] { plait::all_reduce<plait::direct>(comm, send, long_recv, plait::sum{}); });
  std::vector<int> wrong_part(block + 1, -1);
  refused("reduce_scatter", [&] { plait::reduce_scatter<plait::automatic>(comm, send, wrong_part, plait::sum{}); });
  refused("ireduce_scatter", [&] { plait::ireduce_scatter<plait::ring>(comm, send, wrong_part, plait::sum{}).wait(); });
  refused("reduce_scatter_init", [&] {
    auto persistent = plait::reduce_scatter_init<plait::direct>(comm, send, wrong_part, plait::bit_or{});
    persistent.start();
    persistent.wait();
  });
  std::vector<int> empty_part;  // send is P blocks of 2: a recv of 0 is wrong too
  refused("reduce_scatter, empty recv",
          [&] { plait::reduce_scatter<plait::tree>(comm, send, empty_part, plait::sum{}); });
  if (v.empty() && short_recv != std::vector<int>(n - 1, -1)) v = "a refused all_reduce wrote recv";
  if (v.empty() && long_recv != std::vector<int>(n + 1, -1)) v = "a refused all_reduce wrote recv";
  if (v.empty() && wrong_part != std::vector<int>(block + 1, -1)) v = "a refused reduce_scatter wrote recv";
  CAPTURE(v);
  PLAIT_REQUIRE_ALL(v.empty());
  // Nothing moved: the communicator serves the next call as before.
  std::vector<int> recv(n, -1);
  const std::string after = outcome([&] { plait::all_reduce<plait::automatic>(comm, send, recv, plait::sum{}); });
  CAPTURE(after);
  PLAIT_REQUIRE_ALL(after.empty() && recv == std::vector<int>(n, p) && !comm.poisoned());
}

namespace {

/// Overwrites a few KiB of stack, where a temporary reduction lived: a kernel
/// still pointing there would read these bytes.
[[gnu::noinline]] void scribble_stack() {
  volatile unsigned char junk[8192];
  for (std::size_t i = 0; i < sizeof junk; ++i) junk[i] = 0xA5;
}

/// A temporary stateful reduction (premul_sum's scale, a lambda's capture)
/// given to iall_reduce, all_reduce_init or reduce_scatter_init; returns "" or
/// what went wrong. Inputs are small integers, so every sum is exact.
template <class Algorithm>
std::string temporaries_kept(plait::mpi::communicator& comm) {
  const int p = comm.size();
  const std::size_t block = 9;
  const std::size_t n = block * static_cast<std::size_t>(p);
  const std::size_t mine = static_cast<std::size_t>(comm.rank()) * block;
  const auto input = [](int rank, std::size_t i, int salt) {
    return static_cast<std::uint32_t>((rank + 1) * 3 + static_cast<int>(i) + salt);
  };
  // Rank order (P - 1 combines), each adding the capture once.
  const auto want = [&](std::size_t i, int salt, std::uint32_t k) {
    std::uint32_t total = 0;
    for (int r = 0; r < p; ++r) total += input(r, i, salt);
    return total + static_cast<std::uint32_t>(p - 1) * k;
  };
  std::vector<std::uint32_t> send(n);
  std::vector<std::uint32_t> recv(n);
  std::vector<std::uint32_t> part(block);
  std::vector<double> dsend(n);
  std::vector<double> drecv(n);
  const auto fill = [&](int salt) {
    for (std::size_t i = 0; i < n; ++i) {
      send[i] = input(comm.rank(), i, salt);
      dsend[i] = static_cast<double>(send[i]);
    }
  };
  std::string v;
  const auto expect = [&](bool ok, const std::string& what) {
    if (!ok && v.empty()) v = what;
  };
  const std::uint32_t k = 7;
  fill(1);
  const std::string error = outcome([&] {
    auto request =
        plait::iall_reduce<Algorithm>(comm, send, recv,
                                      plait::reduction([k](std::uint32_t a, std::uint32_t b) { return a + b + k; },
                                                       plait::associative, plait::commutative));
    scribble_stack();
    request.wait();
    for (std::size_t i = 0; i < n; ++i) expect(recv[i] == want(i, 1, k), "iall_reduce with a capturing lambda");

    auto summed = plait::all_reduce_init<Algorithm>(comm, dsend, drecv, plait::premul_sum(0.5));
    auto counted =
        plait::all_reduce_init<Algorithm>(comm, send, recv,
                                          plait::reduction([k](std::uint32_t a, std::uint32_t b) { return a + b + k; },
                                                           plait::associative, plait::commutative));
    for (int salt : {2, 3}) {
      fill(salt);
      scribble_stack();
      summed.start();
      summed.wait();
      counted.start();
      counted.wait();
      for (std::size_t i = 0; i < n; ++i) {
        expect(drecv[i] == 0.5 * static_cast<double>(want(i, salt, 0)), "all_reduce_init with premul_sum(0.5)");
        expect(recv[i] == want(i, salt, k), "all_reduce_init with a capturing lambda");
      }
    }
    if constexpr (plait_test::has_schedule<Algorithm, any_reduce_scatter>) {
      auto scattered = plait::reduce_scatter_init<Algorithm>(
          comm, send, part,
          plait::reduction([k](std::uint32_t a, std::uint32_t b) { return a + b + k; }, plait::associative,
                           plait::commutative));
      for (int salt : {4, 5}) {
        fill(salt);
        scribble_stack();
        scattered.start();
        scattered.wait();
        for (std::size_t i = 0; i < block; ++i) {
          expect(part[i] == want(mine + i, salt, k), "reduce_scatter_init with a capturing lambda");
        }
      }
    }
  });
  return v.empty() ? error : v;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("mpi nonblocking and persistent reductions keep their own copy of a temporary reduction",
                        "[mpi][reduce][lifetime]", plait_test::algorithms_for<any_all_reduce>) {
  CAPTURE(plait::algorithm_name<TestType>());
  plait::mpi::communicator comm = world();
  if (!plait_test::runs_on<TestType, any_all_reduce>(comm.size())) return;
  const std::string v = temporaries_kept<TestType>(comm);
  CAPTURE(v);
  PLAIT_REQUIRE_ALL(v.empty());
}

namespace {

/// all_reduce of `count` int32 elements (any count, P need not divide it)
/// in every form with Algorithm, against MPI_Allreduce; "" or the first difference.
template <class Algorithm, class Reduction>
std::string uneven_all_reduce(plait::mpi::communicator& comm, std::size_t count, const Reduction& reduction,
                              MPI_Op op) {
  if (!plait_test::runs_on<Algorithm, any_all_reduce>(comm.size())) return {};
  const std::string_view name = plait::algorithm_name<Algorithm>();
  std::vector<std::int32_t> send = filled<std::int32_t>(comm.rank(), count, 21);
  std::vector<std::int32_t> want(count);
  std::vector<std::int32_t> recv(count, -1);
  MPI_Allreduce(send.data(), want.data(), static_cast<int>(count), MPI_INT32_T, op, MPI_COMM_WORLD);
  std::string v;
  const auto expect = [&](const std::vector<std::int32_t>& got, const char* form, const std::string& error) {
    if (v.empty() && !error.empty()) v = std::string(form) + " with " + std::string(name) + ": " + error;
    if (v.empty() && got != want) v = std::string(form) + " with " + std::string(name) + " differs from MPI";
  };
  expect(recv, "all_reduce", outcome([&] { plait::all_reduce<Algorithm>(comm, send, recv, reduction); }));
  std::vector<std::int32_t> buffer = send;
  expect(buffer, "in-place all_reduce",
         outcome([&] { plait::all_reduce<Algorithm>(comm, plait::in_place, buffer, reduction); }));
  std::fill(recv.begin(), recv.end(), -1);
  expect(recv, "iall_reduce", outcome([&] { plait::iall_reduce<Algorithm>(comm, send, recv, reduction).wait(); }));
  std::fill(recv.begin(), recv.end(), -1);
  expect(recv, "all_reduce_init", outcome([&] {
           auto persistent = plait::all_reduce_init<Algorithm>(comm, send, recv, reduction);
           persistent.start();
           persistent.wait();
         }));
  return v;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("mpi all_reduce of a count the ranks do not divide equals MPI_Allreduce",
                        "[mpi][reduce][differential][uneven]", plait_test::algorithms_for<any_all_reduce>) {
  CAPTURE(plait::algorithm_name<TestType>());
  plait::mpi::communicator comm = world();
  const std::size_t p = static_cast<std::size_t>(comm.size());
  for (std::size_t count : {std::size_t{1}, p + 1, 2 * p - 1, 1000 * p + 3}) {
    CAPTURE(count);
    std::string v = uneven_all_reduce<TestType>(comm, count, plait::sum{}, MPI_SUM);
    if (v.empty()) v = uneven_all_reduce<TestType>(comm, count, plait::bit_xor{}, MPI_BXOR);
    CAPTURE(v);
    PLAIT_REQUIRE_ALL(v.empty());
  }
}

TEMPLATE_LIST_TEST_CASE("mpi nonblocking reductions in flight together each complete with their own result",
                        "[mpi][reduce][nonblocking]", plait_test::algorithms_for<any_all_reduce>) {
  CAPTURE(plait::algorithm_name<TestType>());
  plait::mpi::communicator comm = world();
  if (!plait_test::runs_on<TestType, any_all_reduce>(comm.size())) return;
  const int p = comm.size();
  const std::size_t n = 257 * static_cast<std::size_t>(p);
  const auto a = filled<std::int32_t>(comm.rank(), n, 31);
  const auto b = filled<std::int64_t>(comm.rank(), n, 32);
  std::vector<std::int32_t> sum_a(n), max_a(n), want_sum(n), want_max(n);
  std::vector<std::int64_t> xor_b(n), want_xor(n);
  MPI_Allreduce(a.data(), want_sum.data(), static_cast<int>(n), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(a.data(), want_max.data(), static_cast<int>(n), MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(b.data(), want_xor.data(), static_cast<int>(n), MPI_INT64_T, MPI_BXOR, MPI_COMM_WORLD);
  std::vector<std::int32_t> gathered(n * static_cast<std::size_t>(p));
  const std::string error = outcome([&] {
    auto first = plait::iall_reduce<TestType>(comm, a, sum_a, plait::sum{});
    auto second = plait::iall_reduce<TestType>(comm, a, max_a, plait::max{});
    auto third = plait::iall_reduce<TestType>(comm, b, xor_b, plait::bit_xor{});
    auto other = plait::iall_gather(comm, a, gathered);  // another kind of collective among them
    third.wait();                                        // out of order
    other.wait();
    first.wait();
    second.wait();
  });
  std::string v = error;
  if (v.empty() && sum_a != want_sum) v = "the first (sum) differs from MPI";
  if (v.empty() && max_a != want_max) v = "the second (max) differs from MPI";
  if (v.empty() && xor_b != want_xor) v = "the third (bit_xor) differs from MPI";
  for (int r = 0; r < p && v.empty(); ++r) {
    if (!same_bytes(gathered.data() + static_cast<std::size_t>(r) * n, filled<std::int32_t>(r, n, 31).data(), n))
      v = "the all_gather among them is wrong";
  }
  CAPTURE(v);
  PLAIT_REQUIRE_ALL(v.empty());
}

namespace {
/// Every rank must throw size_mismatch naming the calls (check mode).
std::string expect_disagreement(plait::mpi::communicator& comm, const std::function<void()>& call,
                                const std::vector<std::string>& words) {
  try {
    call();
    return "the disagreeing call went through";
  } catch (const plait::error& e) {
    if (e.code() != plait::errc::size_mismatch) return std::string("wrong code: ") + e.what();
    for (const auto& w : words) {
      if (std::string(e.what()).find(w) == std::string::npos) return "message lacks '" + w + "': " + e.what();
    }
  }
  (void)comm;
  return {};
}
}  // namespace

TEST_CASE("mpi check mode reports ranks whose reductions differ in element size, element type or operation",
          "[mpi][reduce][check]") {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  if (comm.size() < 2) return;
  comm.set_timeout(std::chrono::seconds(10));
  comm.set_check_mode(true);
  const std::size_t n = 4 * static_cast<std::size_t>(comm.size());
  std::vector<std::int32_t> send(n, 1), recv(n);
  // The same bytes as half as many 8-byte elements.
  std::vector<std::int64_t> wide(n / 2, 1), wide_recv(n / 2);
  const std::string elements =
      expect_disagreement(comm,
                          [&] {
                            if (comm.rank() == 0) {
                              plait::all_reduce<plait::ring>(comm, send, recv, plait::sum{});
                            } else {
                              plait::all_reduce<plait::ring>(comm, wide, wide_recv, plait::sum{});
                            }
                          },
                          {"4", "8"});
  CAPTURE(elements);
  CHECK(::plait_test::on_all_ranks(elements.empty()));
  const std::string operations =
      expect_disagreement(comm,
                          [&] {
                            if (comm.rank() == 0) {
                              plait::all_reduce<plait::ring>(comm, send, recv, plait::sum{});
                            } else {
                              std::vector<std::int32_t> blocks(n * static_cast<std::size_t>(comm.size()), 1);
                              plait::reduce_scatter<plait::ring>(comm, blocks, recv, plait::sum{});
                            }
                          },
                          {"all_reduce", "reduce_scatter"});
  CAPTURE(operations);
  CHECK(::plait_test::on_all_ranks(operations.empty()));
  // The same size, another type: float against int32 summed bit patterns
  // into garbage without a word until the signature carried the type (the
  // soak found it: scripts/soak --np 2 --seed 20261207 --trial 7).
  std::vector<float> floats(n, 1.0f), float_recv(n);
  const std::string types =
      expect_disagreement(comm,
                          [&] {
                            if (comm.rank() == 0) {
                              plait::all_reduce<plait::ring>(comm, send, recv, plait::sum{});
                            } else {
                              plait::all_reduce<plait::ring>(comm, floats, float_recv, plait::sum{});
                            }
                          },
                          {"int32", "float"});
  CAPTURE(types);
  CHECK(::plait_test::on_all_ranks(types.empty()));
  // Agreeing calls go through afterwards.
  const std::string after = outcome([&] { plait::all_reduce<plait::ring>(comm, send, recv, plait::sum{}); });
  CAPTURE(after);
  PLAIT_REQUIRE_ALL(after.empty() && recv == std::vector<std::int32_t>(n, comm.size()));
}

// Over MPI check mode is the only guard against mismatched calls
// (docs/mpi.md): its signature must name the reduction, or ranks that
// all_reduce the same buffers with different reductions complete with a mix
// of both (as they did before check mode signed the reduction).
TEST_CASE("mpi check mode reports ranks that reduce with different reductions", "[mpi][reduce][check]") {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  if (comm.size() < 2) return;
  comm.set_timeout(std::chrono::seconds(10));
  comm.set_check_mode(true);
  const std::size_t n = 4 * static_cast<std::size_t>(comm.size());
  std::vector<std::int32_t> send(n, 1), recv(n);
  const std::string reductions = expect_disagreement(comm,
                                                     [&] {
                                                       if (comm.rank() == 0) {
                                                         plait::all_reduce<plait::ring>(comm, send, recv, plait::sum{});
                                                       } else {
                                                         plait::all_reduce<plait::ring>(comm, send, recv, plait::max{});
                                                       }
                                                     },
                                                     {"sum", "max"});
  CAPTURE(reductions);
  CHECK(::plait_test::on_all_ranks(reductions.empty()));
  const std::string orders =
      expect_disagreement(comm,
                          [&] {
                            if (comm.rank() == 0) {
                              plait::all_reduce<plait::direct>(comm, send, recv, plait::sum{});
                            } else {
                              plait::all_reduce<plait::direct>(comm, send, recv, plait::ordered<plait::sum>{});
                            }
                          },
                          {"sum", "ordered<sum>"});
  CAPTURE(orders);
  CHECK(::plait_test::on_all_ranks(orders.empty()));
}

TEMPLATE_LIST_TEST_CASE("mpi all_reduce along a dimension of strided views equals MPI_Allreduce of their elements",
                        "[mpi][reduce][differential][layout]", plait_test::algorithms_for<any_all_reduce>) {
  using Algorithm = TestType;
  CAPTURE(plait::algorithm_name<Algorithm>());
  plait::mpi::communicator comm = world();
  if (!plait_test::runs_on<Algorithm, any_all_reduce>(comm.size())) return;
  // Every other row of a [14, 5] buffer: a [7, 5] view of row stride 10. 7
  // rows and 5 columns split unevenly over most P, and leave empty slabs at
  // P = 8. MPI reduces the view's elements copied out in row-major order
  // (Open MPI's MPI_SUM refuses a vector datatype).
  constexpr std::size_t rows = 7;
  constexpr std::size_t cols = 5;
  std::vector<std::int64_t> padded(2 * rows * cols);
  for (std::size_t i = 0; i < padded.size(); ++i) {
    padded[i] = static_cast<std::int64_t>(comm.rank() * 1000) + static_cast<std::int64_t>(i);
  }
  std::vector<std::int64_t> summed(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) summed[i * cols + j] = padded[2 * i * cols + j];
  }
  MPI_Allreduce(MPI_IN_PLACE, summed.data(), static_cast<int>(summed.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  std::vector<std::int64_t> in_place_reference = padded;  // the rows between stay as they were
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) in_place_reference[2 * i * cols + j] = summed[i * cols + j];
  }

  const std::array<std::size_t, 2> shape{rows, cols};
  const std::array<std::size_t, 2> row_stride_10{2 * cols, 1};
  const std::array<std::size_t, 2> column_major{1, rows};
  std::string v;
  const auto run_along = [&]<std::size_t D>(std::integral_constant<std::size_t, D>) {
    std::vector<std::int64_t> buffer = padded;
    v += outcome([&] {
      plait::all_reduce<Algorithm, plait::along<D>>(
          comm, plait::in_place, plait::tensor_view<std::int64_t, 2>(buffer.data(), shape, row_stride_10),
          plait::sum{});
    });
    if (buffer != in_place_reference) v += "along<" + std::to_string(D) + "> in place differs from MPI_Allreduce\n";
    std::vector<std::int64_t> transposed(rows * cols, -1);
    v += outcome([&] {
      plait::all_reduce<Algorithm, plait::along<D>>(
          comm, plait::tensor_view<const std::int64_t, 2>(padded.data(), shape, row_stride_10),
          plait::tensor_view<std::int64_t, 2>(transposed.data(), shape, column_major), plait::sum{});
    });
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        if (transposed[j * rows + i] != summed[i * cols + j]) {
          v += "along<" + std::to_string(D) + "> into a column-major view differs from MPI_Allreduce\n";
          return;
        }
      }
    }
  };
  run_along(std::integral_constant<std::size_t, 0>{});
  run_along(std::integral_constant<std::size_t, 1>{});
  CAPTURE(v);
  PLAIT_REQUIRE_ALL(v.empty());
}

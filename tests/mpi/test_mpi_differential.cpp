// Differential tests: plait's all-gather and all-to-all over
// plait::mpi::communicator must produce byte for byte what the MPI library's
// own MPI_Allgather / MPI_Alltoall produce on the same data, for every
// algorithm, element sizes 1, 8 and 12, random sizes including 0, and
// in-place all-gather.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "plait/algorithm/automatic.hpp"
#include "plait/algorithm/bruck.hpp"
#include "plait/algorithm/direct.hpp"
#include "plait/algorithm/neighbor_exchange.hpp"
#include "plait/algorithm/pairwise.hpp"
#include "plait/algorithm/recursive_doubling.hpp"
#include "plait/algorithm/ring.hpp"
#include "plait/algorithm/tree.hpp"
#include "plait/mpi.hpp"

namespace {

/// A 12-byte element with no padding: sizes that are not powers of two must
/// travel as well as the others.
struct twelve {
  std::int32_t a, b, c;
};
static_assert(sizeof(twelve) == 12);

/// One seed for the whole job: rank 0 draws it (or takes PLAIT_TEST_SEED, to
/// replay a failure) and broadcasts it, so every rank draws the same sizes.
unsigned job_seed() {
  unsigned seed = 0;
  if (plait_test::world_rank() == 0) {
    const char* fixed = std::getenv("PLAIT_TEST_SEED");
    seed = fixed != nullptr ? static_cast<unsigned>(std::strtoul(fixed, nullptr, 10)) : std::random_device{}();
  }
  MPI_Bcast(&seed, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
  return seed;
}

/// Element counts per block: the edge cases, then random ones (same on every rank).
std::vector<std::size_t> block_counts(std::mt19937& random) {
  std::vector<std::size_t> counts{0, 1, 3};
  std::uniform_int_distribution<std::size_t> small(2, 600);
  std::uniform_int_distribution<std::size_t> large(1000, 40'000);
  counts.push_back(small(random));
  counts.push_back(large(random));
  return counts;
}

template <class T>
std::vector<T> filled(std::size_t count, int rank, int salt) {
  std::vector<T> out(count);
  auto* bytes = reinterpret_cast<std::byte*>(out.data());
  for (std::size_t i = 0; i < count * sizeof(T); ++i) bytes[i] = plait_test::pattern(rank, i, salt);
  return out;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// Runs `fn`; returns "" or what it threw, so one rank's failure is recorded
/// without skipping the collectives the other ranks still make.
template <class Fn>
std::string outcome(Fn&& fn) {
  try {
    fn();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

template <class Algorithm, class T>
void check_all_gather(plait::mpi::communicator& comm, std::size_t n, int salt) {
  const int p = comm.size();
  const int r = comm.rank();
  const std::size_t block = n * sizeof(T);
  const auto send = filled<T>(n, r, salt);
  CAPTURE(plait::algorithm_name<Algorithm>(), sizeof(T), n, p, r);

  std::vector<T> expected(n * static_cast<std::size_t>(p));
  MPI_Allgather(send.data(), static_cast<int>(block), MPI_BYTE, expected.data(), static_cast<int>(block), MPI_BYTE,
                comm.native_handle());

  std::vector<T> got(expected.size());
  const auto sent_before = comm.bytes_sent();
  const std::string error = outcome([&] { plait::all_gather<Algorithm>(comm, send, got); });
  CHECK(error.empty());
  CHECK(same_bytes(got, expected));
  // The data went over MPI: only this rank holds its shard, so it sends at
  // least one block, and every rank receives P-1 blocks, so the job as a
  // whole sends at least P(P-1) blocks.
  const std::uint64_t sent = comm.bytes_sent() - sent_before;
  std::uint64_t job_sent = 0;
  MPI_Allreduce(&sent, &job_sent, 1, MPI_UINT64_T, MPI_SUM, comm.native_handle());
  if (p > 1 && error.empty()) {
    CHECK(sent >= block);
    CHECK(job_sent >= static_cast<std::uint64_t>(p) * (static_cast<std::uint64_t>(p) - 1) * block);
  }

  // In place: own shard already at its slice; MPI_IN_PLACE is the reference.
  std::vector<T> in_place_expected(expected.size());
  std::vector<T> in_place(expected.size());
  for (std::size_t i = 0; i < n; ++i) {
    in_place_expected[static_cast<std::size_t>(r) * n + i] = send[i];
    in_place[static_cast<std::size_t>(r) * n + i] = send[i];
  }
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, in_place_expected.data(), static_cast<int>(block), MPI_BYTE,
                comm.native_handle());
  const std::string in_place_error = outcome([&] { plait::all_gather<Algorithm>(comm, plait::in_place, in_place); });
  CHECK(in_place_error.empty());
  CHECK(same_bytes(in_place, in_place_expected));
  CHECK(same_bytes(in_place_expected, expected));
}

template <class Algorithm, class T>
void check_all_to_all(plait::mpi::communicator& comm, std::size_t n, int salt) {
  const int p = comm.size();
  const std::size_t block = n * sizeof(T);
  const auto send = filled<T>(n * static_cast<std::size_t>(p), comm.rank(), salt);
  CAPTURE(plait::algorithm_name<Algorithm>(), sizeof(T), n, p, comm.rank());

  std::vector<T> expected(send.size());
  MPI_Alltoall(send.data(), static_cast<int>(block), MPI_BYTE, expected.data(), static_cast<int>(block), MPI_BYTE,
               comm.native_handle());
  std::vector<T> got(send.size());
  const std::string error = outcome([&] { plait::all_to_all<Algorithm>(comm, send, got); });
  CHECK(error.empty());
  CHECK(same_bytes(got, expected));
}

template <class Algorithm>
void all_gather_every_type(plait::mpi::communicator& comm, const std::vector<std::size_t>& counts) {
  int salt = 0;
  for (std::size_t n : counts) {
    check_all_gather<Algorithm, std::uint8_t>(comm, n, ++salt);
    check_all_gather<Algorithm, double>(comm, n, ++salt);
    check_all_gather<Algorithm, twelve>(comm, n, ++salt);
  }
}

template <class Algorithm>
void all_to_all_every_type(plait::mpi::communicator& comm, const std::vector<std::size_t>& counts) {
  int salt = 100;
  for (std::size_t n : counts) {
    check_all_to_all<Algorithm, std::uint8_t>(comm, n, ++salt);
    check_all_to_all<Algorithm, std::uint64_t>(comm, n, ++salt);
    check_all_to_all<Algorithm, twelve>(comm, n, ++salt);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("mpi all_gather equals MPI_Allgather for every algorithm, type and size", "[mpi][differential]",
                   plait::ring, plait::tree, plait::pairwise, plait::bruck, plait::recursive_doubling, plait::direct,
                   plait::automatic) {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_timeout(std::chrono::seconds(30));
  const unsigned seed = job_seed();
  CAPTURE(seed);
  std::mt19937 random(seed);
  all_gather_every_type<TestType>(comm, block_counts(random));
  PLAIT_REQUIRE_ALL(!comm.poisoned());
}

TEST_CASE("mpi all_gather<neighbor_exchange> equals MPI_Allgather for even P and refuses odd P",
          "[mpi][differential]") {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_timeout(std::chrono::seconds(30));
  const unsigned seed = job_seed();
  CAPTURE(seed);
  std::mt19937 random(seed);
  if (comm.size() % 2 == 0 || comm.size() == 1) {
    all_gather_every_type<plait::neighbor_exchange>(comm, block_counts(random));
  } else {
    std::vector<double> send(4);
    std::vector<double> recv(4 * static_cast<std::size_t>(comm.size()));
    const auto sent_before = comm.bytes_sent();
    CHECK_THROWS_MATCHES(
        plait::all_gather<plait::neighbor_exchange>(comm, send, recv), plait::error,
        Catch::Predicate<plait::error>([](const plait::error& e) { return e.code() == plait::errc::unsupported; }));
    CHECK(comm.bytes_sent() == sent_before);  // refused before any byte moved
  }
  PLAIT_REQUIRE_ALL(!comm.poisoned());
}

TEMPLATE_TEST_CASE("mpi all_to_all equals MPI_Alltoall for every algorithm, type and size", "[mpi][differential]",
                   plait::ring, plait::pairwise, plait::bruck, plait::direct, plait::automatic) {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_timeout(std::chrono::seconds(30));
  const unsigned seed = job_seed();
  CAPTURE(seed);
  std::mt19937 random(seed);
  all_to_all_every_type<TestType>(comm, block_counts(random));
  PLAIT_REQUIRE_ALL(!comm.poisoned());
}

TEST_CASE("mpi collectives on a split communicator equal MPI's on the same split", "[mpi][differential]") {
  plait::mpi::communicator comm{MPI_COMM_WORLD};
  comm.set_timeout(std::chrono::seconds(30));
  // Two interleaved groups of uneven size when P is odd: collectives must use
  // the child's ranks, never the parent's.
  plait::mpi::communicator half = comm.split(comm.rank() % 2, comm.rank());
  REQUIRE(static_cast<bool>(half));
  check_all_gather<plait::ring, double>(half, 257, 200);
  check_all_to_all<plait::pairwise, twelve>(half, 33, 201);
  check_all_gather<plait::automatic, std::uint8_t>(half, 1000, 202);
  PLAIT_REQUIRE_ALL(!half.poisoned());
}

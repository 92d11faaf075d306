// plait-test-labels: quick shm sanitize
// plait-test-timeout: 300
// Buffers from comm.allocate<T>(n): shared memory every rank maps, so a peer
// reads them in place (one memcpy, no kernel call). Checked here: collectives
// from and into them equal the serial reference on threads and processes for
// P = 1..8 and zero-size parts, the in-place path is the one taken (counted by
// bytes_read_in_place, and still taken where process_vm_readv is refused), a
// receiver that freed its handle falls back to the ordinary path, a failed
// allocation fails every rank naming the culprit, and nothing is left in /dev/shm.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "support/deny_vm_readv.hpp"
#include "support/harness.hpp"

using plait_test::make_value;
using plait_test::mode;

namespace {

template <class Range>
std::vector<typename Range::value_type> to_vector(const Range& r) {
  return {r.begin(), r.end()};
}

/// All-gather (ring) from and into shared buffers of n floats per rank, then
/// all-to-all (pairwise) likewise; checks the results and that every block
/// from a peer that is large enough was read in place.
std::string collectives_from_shared_buffers(plait::shm::communicator& comm, std::size_t n) {
  const int me = comm.rank();
  const auto ranks = static_cast<std::size_t>(comm.size());
  std::string verdict;

  auto mine = comm.allocate<float>(n);
  auto all = comm.allocate<float>(n * ranks);
  if (mine.size() != n || all.size() != n * ranks) return "allocate returned the wrong size";
  for (std::size_t i = 0; i < n; ++i) {
    if (mine[i] != 0.0F) return "allocate did not zero its buffer";
    mine[i] = make_value<float>(me, i);
  }
  plait::all_gather<plait::ring>(comm, mine, all);
  std::vector<float> want;
  for (std::size_t r = 0; r < ranks; ++r) {
    for (std::size_t i = 0; i < n; ++i) want.push_back(make_value<float>(static_cast<int>(r), i));
  }
  verdict += plait_test::compare(to_vector(all), want, "all_gather from shared buffers");

  // Every block from a peer comes out of a shared buffer (ring forwards from
  // `all`, which is one too), so all of them are read in place when large enough.
  const std::uint64_t block = n * sizeof(float);
  const std::uint64_t expected_in_place = block >= 4096 ? (ranks - 1) * block : 0;
  if (comm.bytes_read_in_place() != expected_in_place) {
    verdict += "; all_gather read " + std::to_string(comm.bytes_read_in_place()) + " bytes in place, expected " +
               std::to_string(expected_in_place);
  }

  auto send = comm.allocate<float>(n * ranks);
  for (std::size_t d = 0; d < ranks; ++d) {
    for (std::size_t i = 0; i < n; ++i) send[d * n + i] = make_value<float>(me, i, static_cast<int>(d) + 1);
  }
  std::vector<float> received(n * ranks);  // a plain vector on the receiving side works as well
  plait::all_to_all<plait::pairwise>(comm, send, received);
  want.clear();
  for (std::size_t s = 0; s < ranks; ++s) {
    for (std::size_t i = 0; i < n; ++i) want.push_back(make_value<float>(static_cast<int>(s), i, me + 1));
  }
  verdict += plait_test::compare(received, want, "all_to_all from a shared buffer");
  if (comm.bytes_read_in_place() != 2 * expected_in_place) {
    verdict += "; all_to_all read " + std::to_string(comm.bytes_read_in_place() - expected_in_place) +
               " bytes in place, expected " + std::to_string(expected_in_place);
  }
  return verdict;
}

}  // namespace

TEST_CASE("collectives from comm.allocate buffers match the reference and read peers in place", "[shm][allocate]") {
  const mode m = GENERATE(mode::threads, mode::processes);
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer slows every access about tenfold: it looks for races,
  // which 2-4 ranks run through the same code as 5 and 8 (those run in the
  // default and asan builds). This case took 31 s under TSan, 6 s without them.
  const int ranks = GENERATE(1, 2, 3, 4);
#else
  const int ranks = GENERATE(1, 2, 3, 4, 5, 8);
#endif
  // 0 and 1 element, just under and over the in-place threshold, and 1 MiB.
  const std::size_t n = GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{1023}, std::size_t{1024},
                                 std::size_t{3000}, std::size_t{1} << 18);
  CAPTURE(plait_test::to_string(m), ranks, n);
  const auto verdicts = plait_test::run_ranks(
      m, ranks, [n](plait::shm::communicator& comm) { return collectives_from_shared_buffers(comm, n); });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-w").empty());
}

TEST_CASE("ranks may allocate parts of different sizes, zero included", "[shm][allocate]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 3, [](plait::shm::communicator& comm) -> std::string {
    // Rank r allocates r * 5000 bytes and sends them to rank (r + 1) % 3.
    const int me = comm.rank();
    const int next = (me + 1) % 3;
    const int previous = (me + 2) % 3;
    auto out = comm.allocate<std::byte>(static_cast<std::size_t>(me) * 5000);
    const auto pattern = plait_test::pattern(out.size(), me);
    std::copy(pattern.begin(), pattern.end(), out.begin());
    std::vector<std::byte> in(static_cast<std::size_t>(previous) * 5000);
    std::vector<plait::shm::communicator::request> requests{comm.irecv(previous, in), comm.isend(next, out.span())};
    comm.wait_all(requests);
    if (in != plait_test::pattern(in.size(), previous))
      return "the message from rank " + std::to_string(previous) + " differs";
    if (comm.bytes_read_in_place() != in.size()) return "the message was not read in place";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-w").empty());
}

TEST_CASE("shared buffers are read in place where process_vm_readv is refused", "[shm][allocate]") {
  const auto verdicts = plait_test::run_ranks(mode::processes, 2, [](plait::shm::communicator& comm) -> std::string {
    if (!plait_test::deny_process_vm_readv(EPERM)) return "cannot install the seccomp filter";
    const std::size_t n = std::size_t{1} << 18;
    auto mine = comm.allocate<std::uint32_t>(n);
    for (std::size_t i = 0; i < n; ++i) mine[i] = make_value<std::uint32_t>(comm.rank(), i);
    auto all = comm.allocate<std::uint32_t>(2 * n);  // ring sends from the receive buffer
    plait::all_gather<plait::ring>(comm, mine, all);
    for (std::size_t i = 0; i < 2 * n; ++i) {
      if (all[i] != make_value<std::uint32_t>(static_cast<int>(i / n), i % n)) return "all_gather result differs";
    }
    if (comm.bytes_read_in_place() != n * sizeof(std::uint32_t)) return "the peer's block was not read in place";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a receiver that freed its handle on a shared buffer still receives from it", "[shm][allocate]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    auto buffer = comm.allocate<std::byte>(std::size_t{1} << 16);
    if (comm.rank() == 1) {
      { auto dropped = std::move(buffer); }  // rank 1 no longer maps the window
      if (!buffer.empty() || buffer.data() != nullptr) return "a moved-from buffer is not empty";
      std::vector<std::byte> in(std::size_t{1} << 16);
      comm.recv(0, in);
      if (in != plait_test::pattern(in.size(), 7)) return "the message differs";
      if (comm.bytes_read_in_place() != 0) return "read in place through a freed handle";
      return {};
    }
    const auto pattern = plait_test::pattern(buffer.size(), 7);
    std::copy(pattern.begin(), pattern.end(), buffer.begin());
    comm.send(1, buffer.span());
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-w").empty());
}

TEST_CASE("an allocation one rank cannot make fails on every rank, naming it", "[shm][allocate][errors]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 3, [](plait::shm::communicator& comm) -> std::string {
    const std::size_t n = comm.rank() == 1 ? std::numeric_limits<std::size_t>::max() / 2 : 100;
    try {
      auto buffer = comm.allocate<double>(n);
      return "allocate succeeded";
    } catch (const plait::error& e) {
      const std::string what = e.what();
      if (comm.rank() == 1) {
        if (e.code() != plait::errc::invalid_argument || what.find("overflows") == std::string::npos)
          return "rank 1 expected invalid_argument about the overflow, got: " + what;
      } else if (e.code() != plait::errc::transport || e.peer() != 1 ||
                 what.find("rank 1 could not allocate its part") == std::string::npos) {
        return "expected an error naming rank 1, got: " + what;
      }
    }
    // The group is still usable afterwards.
    auto again = comm.allocate<int>(10);
    comm.barrier();
    return again.size() == 10 ? "" : "the next allocation failed";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-w").empty());
}

TEST_CASE("a persistent all-gather of allocate buffers looks its buffers up at its first start only",
          "[shm][allocate][persistent]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3);
  // Sent by reference and read in place, with the receiver writing the own copy
  // (from detail::copy_for_sender_bytes), and in chunks.
  const std::size_t n = GENERATE(std::size_t{1} << 17, std::size_t{100});
  CAPTURE(plait_test::to_string(m), ranks, n);
  const auto verdicts = plait_test::run_ranks(m, ranks, [n](plait::shm::communicator& comm) -> std::string {
    const auto p = static_cast<std::size_t>(comm.size());
    auto send = comm.allocate<float>(n);
    auto recv = comm.allocate<float>(n * p);
    auto bound = plait::all_gather_init<plait::ring>(comm, send, recv);
    std::uint64_t after_first = 0;
    for (int round = 0; round < 5; ++round) {
      for (std::size_t i = 0; i < n; ++i) send[i] = make_value<float>(comm.rank() * 7 + round, i);
      std::fill(recv.begin(), recv.end(), -1.0F);
      bound.start();
      bound.wait();
      for (int r = 0; r < comm.size(); ++r) {
        for (std::size_t i = 0; i < n; ++i) {
          if (recv[static_cast<std::size_t>(r) * n + i] != make_value<float>(r * 7 + round, i))
            return "round " + std::to_string(round) + ": wrong result";
        }
      }
      if (round == 0) after_first = comm.send_lookups();
    }
    if (after_first == 0) return "the first start looked nothing up";
    if (comm.send_lookups() != after_first) return "later starts looked their buffers up again";
    // A one-shot call on the same buffers does look them up (the count can move).
    plait::all_gather<plait::ring>(comm, send, recv);
    if (comm.send_lookups() == after_first) return "a one-shot call was not counted";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-w").empty());
}

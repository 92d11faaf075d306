// plait-test-labels: quick shm sanitize
// plait-test-timeout: 300
// plait-test-optimization: -O1
// isend_with_copy: a send whose bytes the sender also needs in a second buffer
// of its own (an all-gather's own shard, which also belongs in its result).
// Where the receiver reads the message with a memcpy and can write that buffer
// too (ranks as threads, or buffers from comm.allocate), the receiver writes
// both, so the shard is read from memory once. Checked here: the copy holds
// the bytes once the send completes on every path (small and large, threads
// and processes, private and shared buffers), all-gathers over every built-in
// algorithm equal the reference for P = 1..8 with the copy made exactly once
// per rank (counted by bytes_copied_for_senders), the sender makes it itself
// where the receiver cannot (private buffers between processes, a result only
// the sender maps, a receiver that freed its handle), and a copy of the wrong
// length is refused before anything moves.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "support/harness.hpp"

using plait_test::make_value;
using plait_test::mode;

namespace {

enum class buffers { plain, shared };

const char* to_string(buffers b) { return b == buffers::plain ? "std::vector" : "comm.allocate"; }

/// The group's total of bytes_copied_for_senders() (the exchange of the
/// counters is too small to add to them).
std::uint64_t copied_by_group(plait::shm::communicator& comm) {
  const std::vector<std::uint64_t> mine{comm.bytes_copied_for_senders()};
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  plait::all_gather(comm, mine, all);
  std::uint64_t total = 0;
  for (const std::uint64_t c : all) total += c;
  return total;
}

template <class Algorithm, class Send, class Recv>
void gather_with(plait::shm::communicator& comm, const Send& send, Recv& recv) {
  plait::all_gather<Algorithm>(comm, send, recv);
}

/// All-gather of n floats per rank with algorithm number `algorithm` (0 ring,
/// 1 direct, 2 recursive doubling, 3 Bruck, 4 automatic) from and into
/// `kind` buffers; checks the result and how many bytes receivers copied for
/// their senders.
std::string gather_checked(plait::shm::communicator& comm, bool threads, int algorithm, buffers kind, std::size_t n) {
  const int me = comm.rank();
  const auto ranks = static_cast<std::size_t>(comm.size());
  std::vector<float> want;
  for (std::size_t r = 0; r < ranks; ++r) {
    for (std::size_t i = 0; i < n; ++i) want.push_back(make_value<float>(static_cast<int>(r), i));
  }
  auto run = [&](const auto& send, auto& recv) {
    switch (algorithm) {
      case 0: gather_with<plait::ring>(comm, send, recv); break;
      case 1: gather_with<plait::direct>(comm, send, recv); break;
      case 2: gather_with<plait::recursive_doubling>(comm, send, recv); break;
      case 3: gather_with<plait::bruck>(comm, send, recv); break;
      default: gather_with<plait::automatic>(comm, send, recv); break;
    }
  };
  std::vector<float> got;
  if (kind == buffers::shared) {
    auto send = comm.allocate<float>(n);
    auto recv = comm.allocate<float>(n * ranks);
    for (std::size_t i = 0; i < n; ++i) send[i] = make_value<float>(me, i);
    run(send, recv);
    got.assign(recv.begin(), recv.end());
  } else {
    std::vector<float> send(n);
    std::vector<float> recv(n * ranks);
    for (std::size_t i = 0; i < n; ++i) send[i] = make_value<float>(me, i);
    run(send, recv);
    got = std::move(recv);
  }
  std::string verdict = plait_test::compare(got, want, "all_gather");

  // Who can take the copy over: a thread of the same process, or a peer
  // process when both buffers are shared; and only from 256 KiB.
  const std::uint64_t shard = n * sizeof(float);
  const bool receiver_can =
      comm.size() > 1 && shard >= plait::shm::detail::copy_for_sender_bytes && (threads || kind == buffers::shared);
  const std::uint64_t copied = copied_by_group(comm);
  // Ring and direct send the own shard alone in their first step: every
  // rank's copy is taken over. The others may carry it with other blocks.
  const bool exact = algorithm <= 1;
  const std::uint64_t most = receiver_can ? ranks * shard : 0;
  if ((exact && copied != most) || copied > most) {
    verdict += "; receivers copied " + std::to_string(copied) + " bytes for their senders, expected " +
               (exact ? "" : "at most ") + std::to_string(most);
  }
  return verdict;
}

}  // namespace

TEST_CASE("all-gathers whose receivers copy the senders' own shards match the reference", "[shm][send_with_copy]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const buffers kind = GENERATE(buffers::plain, buffers::shared);
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer slows every access about tenfold: it looks for races,
  // which 2 and 3 ranks run through the same code as 5 and 8 (5 runs in the
  // default and asan builds, 8 in the default build).
  const int ranks = GENERATE(1, 2, 3);
#elif defined(__SANITIZE_ADDRESS__)
  // 8 ranks run the same copies as 5 (and run in the default build): under
  // AddressSanitizer they took half of this test's time (CI's slowest).
  const int ranks = GENERATE(1, 2, 3, 5);
#else
  const int ranks = GENERATE(1, 2, 3, 5, 8);
#endif
  const int algorithm = GENERATE(0, 1, 2, 3, 4);
  // 0 and 1 element, 4 KiB (by reference, copied by the sender), just under
  // and at the 256 KiB from which the receiver copies, and 1 MiB.
  const std::size_t n = GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{1024}, std::size_t{65535},
                                 std::size_t{65536}, std::size_t{1} << 18);
  CAPTURE(plait_test::to_string(m), to_string(kind), ranks, algorithm, n);
  const auto verdicts = plait_test::run_ranks(m, ranks, [=](plait::shm::communicator& comm) {
    return gather_checked(comm, m == mode::threads, algorithm, kind, n);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-w").empty());
}

TEST_CASE("isend_with_copy's copy holds the bytes once the send completes, on every path", "[shm][send_with_copy]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const buffers kind = GENERATE(buffers::plain, buffers::shared);
  // Chunks; by reference, copied by the sender; copied by the receiver; and
  // large enough to stream.
  const std::size_t bytes =
      GENERATE(std::size_t{100}, std::size_t{1} << 16, std::size_t{1} << 18, std::size_t{5} << 20);
  CAPTURE(plait_test::to_string(m), to_string(kind), bytes);
  const auto verdicts = plait_test::run_ranks(m, 2, [=](plait::shm::communicator& comm) -> std::string {
    const auto expected = plait_test::pattern(bytes, 3);
    // allocate is collective: both ranks make both buffers (rank 1's unused).
    auto shared_out = comm.allocate<std::byte>(kind == buffers::shared ? bytes : 0);
    auto shared_copy = comm.allocate<std::byte>(kind == buffers::shared ? bytes : 0);
    if (comm.rank() == 1) {
      std::vector<std::byte> in(bytes);
      comm.recv(0, in);
      if (in != expected) return "the message differs";
      const bool receiver_copies =
          bytes >= plait::shm::detail::copy_for_sender_bytes && (m == mode::threads || kind == buffers::shared);
      if (comm.bytes_copied_for_senders() != (receiver_copies ? bytes : 0))
        return "copied " + std::to_string(comm.bytes_copied_for_senders()) + " bytes for the sender";
      return {};
    }
    std::vector<std::byte> plain_copy(kind == buffers::plain ? bytes : 0);
    std::span<const std::byte> out = expected;
    std::span<std::byte> copy = plain_copy;
    if (kind == buffers::shared) {
      std::copy(expected.begin(), expected.end(), shared_out.begin());
      out = shared_out.span();
      copy = shared_copy.span();
    }
    auto r = comm.isend_with_copy(1, out, copy);
    comm.wait(r);
    return std::equal(copy.begin(), copy.end(), expected.begin()) ? "" : "the sender's copy differs";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a sender whose receiver cannot write its result copies its own shard", "[shm][send_with_copy]") {
  const int ranks = GENERATE(2, 3);
  CAPTURE(ranks);
  const auto verdicts = plait_test::run_ranks(mode::processes, ranks, [](plait::shm::communicator& comm) {
    // Sent from a shared buffer (read in place) into a plain vector: the
    // peers cannot write this process's result, so each rank copies its own.
    const std::size_t n = std::size_t{1} << 18;
    const int me = comm.rank();
    auto send = comm.allocate<float>(n);
    for (std::size_t i = 0; i < n; ++i) send[i] = make_value<float>(me, i);
    std::vector<float> recv(n * static_cast<std::size_t>(comm.size()));
    plait::all_gather<plait::ring>(comm, send, recv);
    std::vector<float> want;
    for (int r = 0; r < comm.size(); ++r) {
      for (std::size_t i = 0; i < n; ++i) want.push_back(make_value<float>(r, i));
    }
    std::string verdict = plait_test::compare(recv, want, "all_gather into a private result");
    if (const std::uint64_t copied = copied_by_group(comm); copied != 0) {
      verdict += "; receivers copied " + std::to_string(copied) + " bytes into private results";
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a receiver that freed its handle on the sender's result leaves the copy to the sender",
          "[shm][send_with_copy]") {
  const auto verdicts = plait_test::run_ranks(mode::processes, 2, [](plait::shm::communicator& comm) -> std::string {
    const std::size_t bytes = std::size_t{1} << 20;
    const auto expected = plait_test::pattern(bytes, 5);
    auto out = comm.allocate<std::byte>(bytes);
    auto copy = comm.allocate<std::byte>(bytes);
    if (comm.rank() == 1) {
      { auto dropped = std::move(copy); }  // rank 1 no longer maps rank 0's copy
      comm.barrier();
      std::vector<std::byte> in(bytes);
      comm.recv(0, in);
      if (in != expected) return "the message differs";
      return comm.bytes_copied_for_senders() == 0 ? "" : "wrote a copy through a freed handle";
    }
    std::copy(expected.begin(), expected.end(), out.begin());
    comm.barrier();
    auto r = comm.isend_with_copy(1, out.span(), copy.span());
    comm.wait(r);
    return std::equal(copy.begin(), copy.end(), expected.begin()) ? "" : "the sender's copy differs";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-w").empty());
}

TEST_CASE("a copy of another length is refused before anything moves", "[shm][send_with_copy][errors]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const auto verdicts = plait_test::run_ranks(m, 2, [](plait::shm::communicator& comm) -> std::string {
    std::vector<std::byte> out(100);
    std::vector<std::byte> copy(99);
    try {
      (void)comm.isend_with_copy(1 - comm.rank(), out, copy);
      return "a 99-byte copy of a 100-byte message was accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) return std::string("expected invalid_argument, got: ") + e.what();
    }
    if (comm.bytes_sent() != 0) return "bytes were counted as sent";
    comm.barrier();  // nothing was posted: the group is still usable
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("along<0> all-gathers of shared tensors hand the own copy to the receiver; along<1> copies it locally",
          "[shm][send_with_copy][layout]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3);
  const int dim = GENERATE(0, 1);
  CAPTURE(plait_test::to_string(m), ranks, dim);
  const auto verdicts = plait_test::run_ranks(m, ranks, [dim](plait::shm::communicator& comm) -> std::string {
    // Shards of 512 x 256 floats (512 KiB): along<0> each is one run in the
    // result; along<1> it is 512 strided rows, so the sender copies it.
    const std::size_t rows = 512;
    const std::size_t cols = 256;
    const auto p = static_cast<std::size_t>(comm.size());
    const int me = comm.rank();
    auto send = comm.allocate<float>(rows * cols);
    auto recv = comm.allocate<float>(rows * cols * p);
    for (std::size_t i = 0; i < rows * cols; ++i) send[i] = make_value<float>(me, i);
    const plait::tensor_view<const float, 2> mine(send.data(), {rows, cols});
    std::vector<float> want(rows * cols * p);
    if (dim == 0) {
      plait::all_gather<plait::ring, plait::along<0>>(comm, mine,
                                                      plait::tensor_view<float, 2>(recv.data(), {rows * p, cols}));
      for (std::size_t r = 0; r < p; ++r) {
        for (std::size_t i = 0; i < rows * cols; ++i)
          want[r * rows * cols + i] = make_value<float>(static_cast<int>(r), i);
      }
    } else {
      plait::all_gather<plait::ring, plait::along<1>>(comm, mine,
                                                      plait::tensor_view<float, 2>(recv.data(), {rows, cols * p}));
      for (std::size_t r = 0; r < p; ++r) {
        for (std::size_t row = 0; row < rows; ++row) {
          for (std::size_t c = 0; c < cols; ++c) {
            want[row * cols * p + r * cols + c] = make_value<float>(static_cast<int>(r), row * cols + c);
          }
        }
      }
    }
    std::string verdict = plait_test::compare(std::vector<float>(recv.begin(), recv.end()), want, "all_gather");
    const std::uint64_t copied = copied_by_group(comm);
    const std::uint64_t expected = dim == 0 ? p * rows * cols * sizeof(float) : 0;
    if (copied != expected) {
      verdict += "; receivers copied " + std::to_string(copied) + " bytes for their senders, expected " +
                 std::to_string(expected);
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-w").empty());
}

// plait-test-labels: quick shm sanitize
// plait-test-timeout: 120
// The shared-memory transport's single-copy path: messages at or above
// single_copy_bytes() are read straight from the sender's buffer (memcpy
// between threads, process_vm_readv between processes). Checked here: results
// on both sides of the threshold, several references in flight, the fallback
// to chunks when the kernel refuses cross-process reads, and that a sender
// that has failed withdraws its buffer so no receiver reads it afterwards.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "support/deny_vm_readv.hpp"
#include "support/harness.hpp"

using namespace std::chrono_literals;
using plait_test::mode;
using plait_test::pattern;

namespace {

/// Every rank sends `count` messages of each size to every other rank and
/// checks what arrives; "" when all is right.
std::string exchange(plait::shm::communicator& comm, const std::vector<std::size_t>& sizes, int count) {
  const int me = comm.rank();
  const int ranks = comm.size();
  std::vector<std::vector<std::byte>> out;
  std::vector<std::vector<std::byte>> in;
  std::vector<plait::shm::communicator::request> requests;
  std::vector<std::pair<int, std::size_t>> expected;  // (source, size) per receive
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer == me) continue;
    for (std::size_t bytes : sizes) {
      for (int k = 0; k < count; ++k) {
        in.emplace_back(bytes);
        expected.emplace_back(peer, bytes);
      }
    }
  }
  out.reserve(in.size());  // no reallocation while sends refer to the buffers
  std::size_t next = 0;
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer == me) continue;
    for (std::size_t bytes : sizes) {
      for (int k = 0; k < count; ++k) {
        requests.push_back(comm.irecv(peer, in[next++]));
        out.push_back(pattern(bytes, me * 1000 + peer * 10 + k));
        requests.push_back(comm.isend(peer, out.back()));
      }
    }
  }
  comm.wait_all(requests);
  next = 0;
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer == me) continue;
    for (std::size_t bytes : sizes) {
      for (int k = 0; k < count; ++k) {
        if (in[next] != pattern(bytes, peer * 1000 + me * 10 + k)) {
          return "message " + std::to_string(k) + " of " + std::to_string(bytes) + " bytes from rank " +
                 std::to_string(peer) + " differs";
        }
        ++next;
      }
    }
  }
  return {};
}

}  // namespace

TEST_CASE("shm single-copy messages arrive intact on both sides of the threshold", "[shm][single_copy]") {
  const auto m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) {
    comm.set_single_copy_bytes(4096);
    // Below, at and above the threshold; several references to one peer in
    // flight at once; one message of several MiB.
    return exchange(comm, {1, 4095, 4096, 4097, 100'000}, 3) + exchange(comm, {std::size_t{5} << 20}, 1);
  });
  for (const auto& v : verdicts) CHECK(v.empty());
}

TEST_CASE("shm falls back to chunks when process_vm_readv is refused", "[shm][single_copy]") {
  const int refusal = GENERATE(EPERM, ENOSYS);
  CAPTURE(refusal);
  const auto verdicts = plait_test::run_ranks(mode::processes, 2, [refusal](plait::shm::communicator& comm) {
    if (!plait_test::deny_process_vm_readv(refusal)) return std::string("cannot install the seccomp filter");
    comm.set_single_copy_bytes(4096);
    // The first large message discovers the refusal; the later ones go in chunks directly.
    return exchange(comm, {100'000, 4096, 1 << 20}, 2);
  });
  for (const auto& v : verdicts) CHECK(v.empty());
}

TEST_CASE("shm: a sender that timed out withdraws its buffer, and the receiver never copies from it",
          "[shm][single_copy]") {
  std::atomic<bool> sender_failed{false};
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [&](plait::shm::communicator& comm) -> std::string {
    comm.set_single_copy_bytes(4096);
    if (comm.rank() == 0) {
      std::vector<std::byte> buffer = pattern(1 << 16, 1);
      comm.set_timeout(100ms);
      try {
        comm.send(1, buffer);
        return "the send completed although nobody received it";
      } catch (const plait::error& e) {
        if (e.code() != plait::errc::timeout) return std::string("expected a timeout, got: ") + e.what();
      }
      // The communicator is poisoned; scribbling over the buffer now must not
      // reach the peer, which only posts its receive from here on.
      std::fill(buffer.begin(), buffer.end(), std::byte{0xEE});
      sender_failed = true;
      return {};
    }
    while (!sender_failed) std::this_thread::sleep_for(1ms);
    std::vector<std::byte> into(1 << 16, std::byte{0x11});
    comm.set_timeout(5s);
    try {
      comm.recv(0, into);
      return "received from a withdrawn buffer";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::peer_lost) return std::string("expected peer_lost, got: ") + e.what();
    }
    for (std::byte b : into) {
      if (b != std::byte{0x11}) return "the receive buffer was written after the sender withdrew";
    }
    return {};
  });
  for (const auto& v : verdicts) CHECK(v.empty());
}

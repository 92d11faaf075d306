// plait-test-labels: quick shm
// plait-test-timeout: 300
// The NVLink transport's protocol on its host emulation (the same
// basic_communicator and protocol.hpp the CUDA policy runs, over shared
// memory, memcpy and std::atomic_ref), bootstrapped over shm threads (the
// peer-access path: raw addresses) and processes (the IPC path: handles):
// point-to-point across chunk and slot boundaries, every algorithm with
// contiguous data and with along<D> / redistribute<S, C> on strided views,
// split, bytes_sent, the executor's copy engine, and the errors: mismatched
// sizes and tags, timeouts raised from the error word, poisoning, bad
// staging shapes, a dead peer process (peer_lost, not a timeout), no leftover
// shared-memory objects.
#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <plait/algorithm/automatic.hpp>
#include <plait/algorithm/bruck.hpp>
#include <plait/algorithm/direct.hpp>
#include <plait/algorithm/neighbor_exchange.hpp>
#include <plait/algorithm/pairwise.hpp>
#include <plait/algorithm/recursive_doubling.hpp>
#include <plait/algorithm/ring.hpp>
#include <plait/algorithm/tree.hpp>
#include <plait/plait.hpp>
#include <plait/transport/nvlink/host_emulation.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include "support/algorithm_lists.hpp"
#include "support/harness.hpp"
#include "support/layout_sweep.hpp"
#include "support/scoped_env.hpp"

using plait_test::mode;
using gpu_comm = plait::nvlink::emulated_communicator;

static_assert(plait::transport<gpu_comm>);
static_assert(std::is_same_v<gpu_comm::memory_space, plait::device_memory>);
// The communicator refers to its bootstrap: a temporary would dangle.
static_assert(!std::is_constructible_v<gpu_comm, plait::shm::communicator&&, int>);
static_assert(std::is_constructible_v<gpu_comm, plait::shm::communicator&, int>);
static_assert(!std::is_copy_constructible_v<gpu_comm> && std::is_move_constructible_v<gpu_comm>);

using plait_test::exchange_and_check;
using plait_test::gather_and_check;

namespace {

/// Small slots so that modest messages cross many chunks and wrap the slots.
constexpr plait::nvlink::options tiny{2, 64};

/// Runs body(gpu) on an emulated NVLink group of `ranks` over shm.
template <class Fn>
std::vector<std::string> run_nvlink(mode m, int ranks, plait::nvlink::options shape, Fn&& body) {
  return plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& boot) -> std::string {
    gpu_comm gpu(boot, 0, {}, shape);
    return body(gpu);
  });
}

}  // namespace

TEST_CASE("nvlink emulation: point-to-point across chunk, slot and channel boundaries", "[nvlink][p2p]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 4);
  const std::uint32_t channels = GENERATE(1u, 2u, 5u);
  CAPTURE(plait_test::to_string(m), ranks, channels);
  const auto verdicts = run_nvlink(m, ranks, {2, 64, channels}, [channels](gpu_comm& gpu) -> std::string {
    if (gpu.shape().channels != channels) return "channels not as asked";
    const int p = gpu.size();
    const int right = (gpu.rank() + 1) % p;
    const int left = (gpu.rank() + p - 1) % p;
    // 0, less than a chunk, exactly one, one more, and many more chunks than slots.
    for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65},
                              std::size_t{128}, std::size_t{1000}, std::size_t{4099}}) {
      std::vector<std::byte> out(bytes);
      for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<std::byte>(gpu.rank() * 31 + i * 7);
      std::vector<std::byte> in(bytes, std::byte{0xee});
      std::vector<gpu_comm::request> r{gpu.irecv(left, in, 5), gpu.isend(right, out, 5)};
      gpu.wait_all(r);
      for (std::size_t i = 0; i < bytes; ++i) {
        if (in[i] != static_cast<std::byte>(left * 31 + i * 7)) {
          return "message of " + std::to_string(bytes) + " bytes wrong at byte " + std::to_string(i);
        }
      }
    }
    // Several messages to one peer in one step keep their order (each split across the channels).
    std::vector<std::uint32_t> a(100, static_cast<std::uint32_t>(gpu.rank())), b(7, 77), c(100), d(7);
    std::vector<gpu_comm::request> r;
    r.push_back(gpu.isend(right, std::as_bytes(std::span(a)), 9));
    r.push_back(gpu.isend(right, std::as_bytes(std::span(b)), 9));
    r.push_back(gpu.irecv(left, std::as_writable_bytes(std::span(c)), 9));
    r.push_back(gpu.irecv(left, std::as_writable_bytes(std::span(d)), 9));
    gpu.wait_all(r);
    if (c != std::vector<std::uint32_t>(100, static_cast<std::uint32_t>(left)) ||
        d != std::vector<std::uint32_t>(7, 77)) {
      return "two messages to one peer arrived out of order";
    }
    if (gpu.bytes_sent() != 4099 + 1000 + 128 + 65 + 64 + 63 + 1 + 400 + 28) return "bytes_sent is wrong";
    gpu.synchronize();
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-nvl-").empty());
}

TEMPLATE_LIST_TEST_CASE("nvlink emulation: every all-gather algorithm, contiguous", "[nvlink][all_gather]",
                        plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>({{mode::threads, 1},
                                                     {mode::threads, 2},
                                                     {mode::threads, 3},
                                                     {mode::threads, 5},
                                                     {mode::threads, 8},
                                                     {mode::processes, 4},
                                                     {mode::processes, 6}}));
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = run_nvlink(m, ranks, tiny, [](gpu_comm& gpu) {
    std::string verdict;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{37}, std::size_t{1000}}) {
      verdict += gather_and_check<std::uint64_t, TestType>(gpu, n);
      verdict += gather_and_check<plait_test::triple, TestType>(gpu, n);
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("nvlink emulation: every all-to-all algorithm, contiguous", "[nvlink][all_to_all]",
                        plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>({{mode::threads, 1},
                                                     {mode::threads, 2},
                                                     {mode::threads, 3},
                                                     {mode::threads, 7},
                                                     {mode::processes, 4},
                                                     {mode::processes, 5}}));
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = run_nvlink(m, ranks, tiny, [](gpu_comm& gpu) {
    std::string verdict;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{37}, std::size_t{500}}) {
      verdict += exchange_and_check<std::uint16_t, TestType>(gpu, n);
      verdict += exchange_and_check<plait_test::triple, TestType>(gpu, n);
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("nvlink emulation: every all-gather algorithm with along<D> on strided views",
                        "[nvlink][layout][along]", plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>(
      {{mode::threads, 1}, {mode::threads, 3}, {mode::threads, 4}, {mode::processes, 2}, {mode::processes, 5}}));
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = run_nvlink(m, ranks, tiny, [](gpu_comm& gpu) {
    return layout_sweep::gather_sweep<TestType, std::int32_t>(gpu, layout_sweep::strided_views);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("nvlink emulation: every all-to-all algorithm with redistribute<S, C> on strided views",
                        "[nvlink][layout][redistribute]", plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>(
      {{mode::threads, 1}, {mode::threads, 3}, {mode::threads, 4}, {mode::processes, 2}, {mode::processes, 5}}));
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = run_nvlink(m, ranks, tiny, [](gpu_comm& gpu) {
    return layout_sweep::exchange_sweep<TestType, plait_test::triple>(gpu, layout_sweep::strided_views);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: the executor packs, copies and stages through the transport's engine",
          "[nvlink][engine]") {
  const auto verdicts = run_nvlink(mode::threads, 4, {}, [](gpu_comm& gpu) -> std::string {
    auto& engine = gpu.copy_engine();
    // Strided along<1>: the own shard is copied by the engine, blocks packed and unpacked by it.
    layout_sweep::strided_buffer<int> send({2, 3, 4}, layout_sweep::arrangement::padded, -7);
    layout_sweep::strided_buffer<int> recv({2, 12, 4}, layout_sweep::arrangement::padded, -7);
    plait::all_gather<plait::ring, plait::along<1>>(gpu, send.const_view(), recv.view());
    if (engine.copies != 1) return "own shard not copied by the engine (" + std::to_string(engine.copies) + ")";
    if (engine.packs == 0 || engine.unpacks == 0 || engine.allocations == 0)
      return "strided blocks bypassed the engine";
    // Bruck all-to-all on 4 ranks forwards blocks (offset 3 goes in two hops)
    // it neither starts nor ends with: scratch from the engine.
    const auto before = engine.allocations;
    std::vector<int> out(4 * 5, gpu.rank()), in(4 * 5);
    plait::all_to_all<plait::bruck>(gpu, out, in);
    if (engine.allocations == before) return "transit blocks not allocated by the engine";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: split gives NVLink groups of their own", "[nvlink][split]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = run_nvlink(m, 5, tiny, [](gpu_comm& gpu) -> std::string {
    const int color = gpu.rank() == 4 ? plait::no_group : gpu.rank() % 2;
    gpu_comm half = gpu.split(color, -gpu.rank());  // reversed order inside each half
    if (gpu.rank() == 4) {
      if (half) return "no_group gave a live communicator";
      return gather_and_check<std::uint32_t, plait::ring>(gpu, 50);  // the parent still works
    }
    if (!half || half.size() != 2) return "wrong half size";
    const int want_rank = gpu.rank() < 2 ? 1 : 0;
    if (half.rank() != want_rank) return "wrong rank in half: " + std::to_string(half.rank());
    if (half.shape().slot_bytes != tiny.slot_bytes) return "split lost the staging shape";
    std::string verdict = gather_and_check<std::uint32_t, plait::ring>(half, 333);
    verdict += gather_and_check<std::uint32_t, plait::ring>(gpu, 50);  // the parent still works
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-nvl-").empty());
}

TEST_CASE("nvlink emulation: bytes_sent counts exactly the ring's payload", "[nvlink][bytes_sent]") {
  const auto verdicts = run_nvlink(mode::threads, 4, tiny, [](gpu_comm& gpu) -> std::string {
    std::vector<std::uint64_t> mine(100), all(400);
    plait::all_gather<plait::ring>(gpu, mine, all);
    // A ring sends P-1 blocks; handle exchange and barriers are not payload.
    return gpu.bytes_sent() == 3 * 100 * 8 ? "" : "bytes_sent " + std::to_string(gpu.bytes_sent());
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: a per-call stream applies inside its guard only", "[nvlink][stream]") {
  const auto verdicts = run_nvlink(mode::threads, 2, tiny, [](gpu_comm& gpu) -> std::string {
    if (gpu.stream().id != 0) return "default stream is not the one passed";
    std::string verdict;
    {
      auto on = gpu.use_stream({7});
      if (gpu.stream().id != 7) return "use_stream did not switch";
      verdict += gather_and_check<std::uint32_t, plait::ring>(gpu, 10);
    }
    if (gpu.stream().id != 0) return "stream not restored";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: a size mismatch is size_mismatch and poisons", "[nvlink][errors]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = run_nvlink(m, 2, tiny, [](gpu_comm& gpu) -> std::string {
    gpu.set_timeout(std::chrono::seconds(1));
    // Both send 100 bytes; rank 0 expects only 50.
    std::vector<std::byte> out(100), in(gpu.rank() == 0 ? 50 : 100);
    const int peer = 1 - gpu.rank();
    std::vector<gpu_comm::request> r{gpu.irecv(peer, in, 3), gpu.isend(peer, out, 3)};
    if (gpu.rank() == 1) {
      // Rank 0 stops at the mismatch, perhaps before its send is complete.
      try {
        gpu.wait_all(r);
      } catch (const plait::error& e) {
        if (e.code() != plait::errc::timeout) return e.what();
      }
      return {};
    }
    try {
      gpu.wait_all(r);
      return "no error";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch || e.peer() != 1) return e.what();
      if (std::string(e.what()).find("peer sent 100 bytes where this rank expects 50") == std::string::npos) {
        return e.what();
      }
    }
    try {
      gpu.synchronize();
      return "not poisoned";
    } catch (const plait::error& e) {
      if (std::string(e.what()).find("unusable since an earlier failure") == std::string::npos) return e.what();
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: a receive nobody sends times out from the error word", "[nvlink][errors][timeout]") {
  const auto verdicts = run_nvlink(mode::threads, 2, tiny, [](gpu_comm& gpu) -> std::string {
    gpu.set_timeout(std::chrono::milliseconds(200));
    std::string verdict;
    if (gpu.rank() == 0) {
      std::vector<std::byte> in(10);
      const auto start = std::chrono::steady_clock::now();
      try {
        gpu.recv(1, in, 4);
        verdict = "no timeout";
      } catch (const plait::error& e) {
        if (e.code() != plait::errc::timeout) verdict = e.what();
        if (std::string(e.what()).find("waiting to receive 10 bytes") == std::string::npos) verdict = e.what();
        if (e.peer() != 1) verdict = "wrong peer: " + std::string(e.what());
      }
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) verdict = "timeout took too long";
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: messages of different calls do not match", "[nvlink][errors][tags]") {
  const auto verdicts = run_nvlink(mode::threads, 2, tiny, [](gpu_comm& gpu) -> std::string {
    gpu.set_timeout(std::chrono::seconds(2));
    std::vector<std::byte> buffer(16);
    try {
      if (gpu.rank() == 0) {
        gpu.send(1, buffer, 1);
      } else {
        gpu.recv(0, buffer, 2);
        return "tag 1 matched a receive for tag 2";
      }
    } catch (const plait::error& e) {
      if (gpu.rank() == 1 && std::string(e.what()).find("tag 1 arrived where tag 2") == std::string::npos)
        return e.what();
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: bad arguments and shapes are rejected", "[nvlink][errors]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& boot) -> std::string {
    try {
      gpu_comm bad(boot, 0, {}, {4, 100});  // not a multiple of 16
      return "odd slot size accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) return e.what();
    }
    // Ranks disagreeing on the shape are told so by the handle exchange.
    try {
      gpu_comm mixed(boot, 0, {}, {boot.rank() == 0 ? 2u : 3u, 64});
      return "mixed shapes accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::size_mismatch) return e.what();
    }
    try {
      gpu_comm many(boot, 0, {}, {2, 64, 17});
      return "17 channels accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) return e.what();
    }
    gpu_comm gpu(boot, 0, {}, tiny);
    std::vector<std::byte> b(4);
    try {
      (void)gpu.isend(2, b, 0);
      return "peer 2 of 2 accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) return e.what();
    }
    try {
      (void)gpu.isend(0, std::span<const std::byte>(static_cast<const std::byte*>(nullptr), 4), 0);
      return "null buffer accepted";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) return e.what();
    }
    gpu_comm null;
    if (null) return "default communicator is not null";
    try {
      null.barrier();
      return "null communicator usable";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::invalid_argument) return e.what();
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-nvl-").empty());
}

TEST_CASE("nvlink emulation: a peer process that dies is peer_lost for the survivors, well before the timeout",
          "[nvlink][errors][peer_lost]") {
  // Survivors report through memory shared with this process (mapped before the fork).
  void* shared = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(shared != MAP_FAILED);
  auto* report = static_cast<char*>(shared);  // 1024 bytes per rank: "" until it reports
  try {
    plait::shm::run_processes(3, [report](plait::shm::communicator& boot) {
      plait_test::note_rank_process();            // its names count for the leak check below
      boot.set_timeout(std::chrono::seconds(5));  // the collective teardown meets a dead rank
      gpu_comm gpu(boot, 0, {}, tiny);
      gpu.set_timeout(std::chrono::seconds(60));
      if (gpu.rank() == 0) raise(SIGKILL);  // after construction: the group exists, then rank 0 is gone
      std::vector<std::uint32_t> mine(1000, 7), all(3000);
      std::string verdict = "no error";
      const auto start = std::chrono::steady_clock::now();
      try {
        plait::all_gather<plait::direct>(gpu, mine, all);  // every rank waits on rank 0 directly
      } catch (const plait::error& e) {
        verdict = e.code() == plait::errc::peer_lost && e.peer() == 0 ? "" : e.what();
      }
      if (verdict.empty() && std::chrono::steady_clock::now() - start > std::chrono::seconds(10))
        verdict = "found only after 10 s";
      std::snprintf(report + 1024 * gpu.rank(), 1024, "%s", verdict.empty() ? "ok" : verdict.c_str());
    });
    FAIL("run_processes returned");
  } catch (const plait::error& e) {
    CHECK(e.code() == plait::errc::peer_lost);  // rank 0's signal
  }
  CHECK(std::string(report + 1024) == "ok");
  CHECK(std::string(report + 2048) == "ok");
  munmap(shared, 4096);
  REQUIRE(plait_test::leaked_objects("plait-nvl-").empty());
}

// The deadline reaches the emulated device as the nanoseconds left (protocol
// step_args::timeout_ns), which the step turned back into now + left: for an
// unbounded deadline that wrapped to the past and timed out at once.
TEST_CASE("nvlink emulation: with a timeout of hours::max() a collective waits for a peer that comes 2 s late",
          "[nvlink][timeout]") {
  const auto verdicts = run_nvlink(mode::threads, 2, tiny, [](gpu_comm& gpu) -> std::string {
    gpu.set_timeout(std::chrono::hours::max());
    if (gpu.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
    std::vector<int> mine{gpu.rank() + 10}, all(2);
    try {
      plait::all_gather<plait::ring>(gpu, mine, all);
      gpu.synchronize();
    } catch (const plait::error& e) {
      return e.what();
    }
    return all == std::vector<int>{10, 11} ? "" : "wrong result";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// The NVLink communicator checks the PLAIT_* variables when it is created,
// like every transport. One rank: setenv must not race another rank's getenv.
TEST_CASE("nvlink emulation: a bad PLAIT_* value fails the communicator's creation naming it", "[nvlink][env]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 1, [](plait::shm::communicator& boot) -> std::string {
    std::string verdict = "created";
    const plait_test::scoped_env bad("PLAIT_TIMEOUT", "10abc");
    try {
      gpu_comm gpu(boot, 0, {}, tiny);
    } catch (const plait::error& e) {
      verdict = e.value() == plait::errc::invalid_argument &&
                        std::string(e.what()).find("PLAIT_TIMEOUT=\"10abc\" is not a timeout") != std::string::npos
                    ? ""
                    : e.what();
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  REQUIRE(plait_test::leaked_objects("plait-nvl-").empty());
}

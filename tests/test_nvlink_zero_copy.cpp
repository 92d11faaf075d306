// plait-test-labels: quick shm
// plait-test-timeout: 300
// register_buffer on the NVLink transport's host emulation (the same protocol
// and communicator the CUDA policy runs): while a registration handle lives,
// sends from inside it are read by peers straight from the buffer (threads:
// by address; processes: process_vm_readv, standing in for CUDA IPC) and no
// byte goes through the staging areas (the emulation counts both); results
// equal the staged path for every algorithm x layout; a destroyed handle
// falls back to staging; bad registrations fail on every rank before
// anything is mapped; a rank whose kernel forbids cross-memory attach gets
// its peers' bytes through staging; handles are move-only and outlive nothing.
#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
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

#include "support/algorithm_lists.hpp"
#include "support/deny_vm_readv.hpp"
#include "support/harness.hpp"
#include "support/layout_sweep.hpp"

using plait_test::mode;
using gpu_comm = plait::nvlink::emulated_communicator;
using registration = gpu_comm::registration;

static_assert(!std::is_copy_constructible_v<registration> && !std::is_copy_assignable_v<registration>);
static_assert(std::is_nothrow_move_constructible_v<registration> && std::is_nothrow_move_assignable_v<registration>);

namespace {

constexpr plait::nvlink::options tiny{2, 64};

/// An emulated communicator whose layout sweeps register both buffers of
/// every call (layout_sweep::hold_buffers, found by argument-dependent lookup).
struct zero_copy_comm : gpu_comm {
  using gpu_comm::gpu_comm;
  std::uint64_t sweeps_registered = 0;  ///< registrations that some peer read directly
};

struct held_pair {
  registration send, recv;
};

template <class Send, class Recv>
held_pair hold_buffers(zero_copy_comm& comm, Send& send, Recv& recv) {
  held_pair held{comm.register_buffer(send), comm.register_buffer(recv)};
  if (held.send.zero_copy_peers() + held.recv.zero_copy_peers() > 0) ++comm.sweeps_registered;
  return held;
}

template <class Comm, class Fn>
std::vector<std::string> run_nvlink(mode m, int ranks, Fn&& body) {
  return plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& boot) -> std::string {
    Comm gpu(boot, 0, {}, tiny);
    return body(gpu);
  });
}

/// All-gather of n values per rank with both buffers registered; "" if right.
template <class Algorithm, class T>
std::string gather_registered(gpu_comm& gpu, std::size_t n, bool in_place = false) {
  const auto p = static_cast<std::size_t>(gpu.size());
  std::vector<T> mine(n), all(n * p);
  for (std::size_t i = 0; i < n; ++i) mine[i] = plait_test::make_value<T>(gpu.rank(), i);
  registration a = gpu.register_buffer(mine);
  registration b = gpu.register_buffer(all);
  if (in_place) {
    std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(n * gpu.rank()));
    plait::all_gather<Algorithm>(gpu, plait::in_place, all);
  } else {
    plait::all_gather<Algorithm>(gpu, mine, all);
  }
  std::vector<T> want;
  for (int r = 0; r < gpu.size(); ++r) {
    for (std::size_t i = 0; i < n; ++i) want.push_back(plait_test::make_value<T>(r, i));
  }
  return plait_test::compare(all, want, "registered all_gather n=" + std::to_string(n));
}

template <class Algorithm, class T>
std::string exchange_registered(gpu_comm& gpu, std::size_t n) {
  const auto p = static_cast<std::size_t>(gpu.size());
  std::vector<T> out(n * p), in(n * p);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = plait_test::make_value<T>(gpu.rank(), i);
  registration a = gpu.register_buffer(out);
  registration b = gpu.register_buffer(in);
  plait::all_to_all<Algorithm>(gpu, out, in);
  std::vector<T> want;
  for (std::size_t src = 0; src < p; ++src) {
    for (std::size_t i = 0; i < n; ++i) {
      want.push_back(plait_test::make_value<T>(static_cast<int>(src), static_cast<std::size_t>(gpu.rank()) * n + i));
    }
  }
  return plait_test::compare(in, want, "registered all_to_all n=" + std::to_string(n));
}

struct traffic {
  std::uint64_t staged, direct, zero_copy, sent;
};
traffic traffic_of(gpu_comm& gpu) {
  return {gpu.policy().staging_bytes(), gpu.policy().direct_bytes(), gpu.bytes_zero_copy(), gpu.bytes_sent()};
}

}  // namespace

TEST_CASE("register_buffer: peers read registered send data directly, no staging byte", "[nvlink][register]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3, 4);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = run_nvlink<gpu_comm>(m, ranks, [](gpu_comm& gpu) -> std::string {
    const auto p = static_cast<std::uint64_t>(gpu.size());
    constexpr std::size_t n = 1000;  // 8000 bytes per block: 63 slots of 64 bytes if staged
    std::vector<std::uint64_t> mine(n), all(n * p);
    for (std::size_t i = 0; i < n; ++i) mine[i] = plait_test::make_value<std::uint64_t>(gpu.rank(), i);

    // Unregistered first: the counters see the staged path.
    const traffic t0 = traffic_of(gpu);
    plait::all_gather<plait::ring>(gpu, mine, all);
    const traffic t1 = traffic_of(gpu);
    // A ring moves P-1 blocks in and P-1 out, each copied into and out of a staging slot.
    if (t1.staged - t0.staged != 2 * (p - 1) * n * 8) return "staged bytes " + std::to_string(t1.staged - t0.staged);
    if (t1.direct != t0.direct || t1.zero_copy != t0.zero_copy) return "zero-copy without registration";

    registration in = gpu.register_buffer(mine);
    registration out = gpu.register_buffer(all);
    if (!in || !out) return "registration not live";
    if (in.bytes().data() != reinterpret_cast<const std::byte*>(mine.data()) || in.bytes().size() != n * 8)
      return "registration does not hold the buffer";
    if (in.zero_copy_peers() != gpu.size() - 1 || out.zero_copy_peers() != gpu.size() - 1)
      return "peers that read directly: " + std::to_string(in.zero_copy_peers());
    std::fill(all.begin(), all.end(), 0);
    plait::all_gather<plait::ring>(gpu, mine, all);
    const traffic t2 = traffic_of(gpu);
    std::vector<std::uint64_t> want;
    for (int r = 0; r < gpu.size(); ++r) {
      for (std::size_t i = 0; i < n; ++i) want.push_back(plait_test::make_value<std::uint64_t>(r, i));
    }
    std::string verdict = plait_test::compare(all, want, "registered ring");
    if (t2.staged != t1.staged) verdict += "staging used: " + std::to_string(t2.staged - t1.staged) + " bytes; ";
    if (t2.direct - t1.direct != (p - 1) * n * 8)
      verdict += "read directly: " + std::to_string(t2.direct - t1.direct) + " bytes; ";
    if (t2.zero_copy - t1.zero_copy != t2.sent - t1.sent) verdict += "not every byte sent was zero-copy; ";

    // All-to-all from a registered send buffer into a registered receive buffer.
    std::vector<std::uint32_t> send(4 * p * 50), recv(4 * p * 50);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = static_cast<std::uint32_t>(gpu.rank() * 100000 + i);
    registration s = gpu.register_buffer(send);
    registration r = gpu.register_buffer(recv);
    plait::all_to_all<plait::pairwise>(gpu, send, recv);
    const traffic t3 = traffic_of(gpu);
    const std::size_t block = send.size() / p;
    for (std::size_t src = 0; src < p; ++src) {
      for (std::size_t i = 0; i < block; ++i) {
        if (recv[src * block + i] != src * 100000 + gpu.rank() * block + i) return verdict + "all_to_all wrong";
      }
    }
    if (t3.staged != t2.staged) verdict += "all_to_all used staging; ";
    if (t3.direct - t2.direct != (p - 1) * block * 4) verdict += "all_to_all read directly the wrong amount; ";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("register_buffer: every all-gather algorithm gives the staged result", "[nvlink][register]",
                        plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>(
      {{mode::threads, 1}, {mode::threads, 3}, {mode::threads, 4}, {mode::processes, 2}, {mode::processes, 5}}));
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = run_nvlink<gpu_comm>(m, ranks, [](gpu_comm& gpu) {
    std::string verdict;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{37}, std::size_t{1000}}) {
      verdict += gather_registered<TestType, std::uint64_t>(gpu, n);
      verdict += gather_registered<TestType, plait_test::triple>(gpu, n);
      verdict += gather_registered<TestType, std::uint64_t>(gpu, n, true);
    }
    // Messages of adjacent blocks leave from user memory (those of scattered
    // blocks are packed into the executor's scratch first, which is not registered).
    if (gpu.size() > 1 && gpu.policy().direct_bytes() == 0 && gpu.bytes_zero_copy() == 0)
      verdict += "nothing was read or sent in place";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("register_buffer: every all-to-all algorithm gives the staged result", "[nvlink][register]",
                        plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>(
      {{mode::threads, 1}, {mode::threads, 3}, {mode::threads, 4}, {mode::processes, 2}, {mode::processes, 5}}));
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = run_nvlink<gpu_comm>(m, ranks, [](gpu_comm& gpu) {
    std::string verdict;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{37}, std::size_t{500}}) {
      verdict += exchange_registered<TestType, std::uint16_t>(gpu, n);
      verdict += exchange_registered<TestType, plait_test::triple>(gpu, n);
    }
    // Bruck's messages gather scattered blocks (packed into unregistered scratch).
    if (!std::is_same_v<TestType, plait::bruck> && gpu.size() > 1 && gpu.policy().direct_bytes() == 0 &&
        gpu.bytes_zero_copy() == 0)
      verdict += "nothing was read or sent in place";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("register_buffer: every all-gather algorithm with along<D> on registered strided views",
                        "[nvlink][register][layout]", plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>({{mode::threads, 3}, {mode::threads, 4}, {mode::processes, 2}}));
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = run_nvlink<zero_copy_comm>(m, ranks, [](zero_copy_comm& gpu) {
    std::string verdict = layout_sweep::gather_sweep<TestType, std::int32_t>(gpu, layout_sweep::strided_views);
    if (gpu.sweeps_registered == 0) verdict += "the sweep registered nothing";
    if (gpu.policy().direct_bytes() == 0 && gpu.bytes_zero_copy() == 0)
      verdict += "no byte of the sweep was read or sent in place";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE(
    "register_buffer: every all-to-all algorithm with redistribute<S, C> on registered strided views",
    "[nvlink][register][layout]", plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto [m, ranks] = GENERATE(table<mode, int>({{mode::threads, 3}, {mode::threads, 4}, {mode::processes, 2}}));
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = run_nvlink<zero_copy_comm>(m, ranks, [](zero_copy_comm& gpu) {
    std::string verdict = layout_sweep::exchange_sweep<TestType, plait_test::triple>(gpu, layout_sweep::strided_views);
    if (gpu.sweeps_registered == 0) verdict += "the sweep registered nothing";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("register_buffer: a destroyed registration falls back to staging", "[nvlink][register]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = run_nvlink<gpu_comm>(m, 3, [](gpu_comm& gpu) -> std::string {
    std::string verdict;
    std::vector<std::uint32_t> mine(300, static_cast<std::uint32_t>(gpu.rank()));
    std::vector<std::uint32_t> all(900);
    const std::vector<std::uint32_t> want = [] {
      std::vector<std::uint32_t> w;
      for (std::uint32_t r = 0; r < 3; ++r) w.insert(w.end(), 300, r);
      return w;
    }();
    {
      // An all-gather sends its own block from the receive buffer (where it was copied first).
      registration reg = gpu.register_buffer(all);
      const traffic before = traffic_of(gpu);
      plait::all_gather<plait::direct>(gpu, mine, all);
      if (all != want) verdict += "registered result wrong; ";
      // The direct all-gather sends only the own block: all of it read in place.
      if (traffic_of(gpu).staged != before.staged) verdict += "staging used while registered; ";
      // Moving keeps the registration; the moved-from handle is empty.
      registration moved = std::move(reg);
      if (reg || !moved) verdict += "move did not transfer the registration; ";
      std::fill(all.begin(), all.end(), 0);
      plait::all_gather<plait::direct>(gpu, mine, all);
      if (all != want || traffic_of(gpu).staged != before.staged) verdict += "moved registration not used; ";
    }  // unregistered here, collectively
    // With no live handle, nothing may be read in place, not even from the
    // same address (there is no address-keyed cache to go stale).
    const traffic before = traffic_of(gpu);
    std::fill(all.begin(), all.end(), 0);
    plait::all_gather<plait::direct>(gpu, mine, all);
    const traffic after = traffic_of(gpu);
    if (all != want) verdict += "result wrong after unregistering; ";
    if (after.staged - before.staged != 2 * 2 * 300 * 4) verdict += "did not fall back to staging; ";
    if (after.direct != before.direct || after.zero_copy != before.zero_copy)
      verdict += "read in place after unregistering; ";
    // reset() unregisters at once; reset twice is harmless.
    registration r = gpu.register_buffer(all);
    r.reset();
    r.reset();
    if (r) verdict += "reset left the handle live; ";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("register_buffer: a handle outliving its communicator is empty and harmless", "[nvlink][register]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& boot) -> std::string {
    std::vector<std::byte> buffer(256);
    registration reg;
    {
      gpu_comm gpu(boot, 0, {}, tiny);
      reg = gpu.register_buffer(buffer);
      if (!reg) return "not live";
    }
    if (reg) return "live after its communicator was destroyed";
    if (!reg.bytes().empty() || reg.zero_copy_peers() != 0) return "reports a dead registration";
    return {};
  });  // reg's destructor runs after the communicator's: must not touch it
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {
/// Every rank must throw invalid_argument naming `rank_named`, and the
/// communicator must stay usable with nothing registered.
std::string expect_refused(gpu_comm& gpu, std::span<const std::byte> mine, int rank_named, const std::string& why) {
  try {
    registration r = gpu.register_buffer(mine);
    return "registration accepted";
  } catch (const plait::error& e) {
    if (e.code() != plait::errc::invalid_argument) return std::string("wrong code: ") + e.what();
    const std::string text = e.what();
    if (text.find("rank " + std::to_string(rank_named) + " cannot register") == std::string::npos ||
        text.find(why) == std::string::npos) {
      return "message does not name rank " + std::to_string(rank_named) + " and '" + why + "': " + text;
    }
  }
  // Nothing was mapped: a collective still works, through staging.
  std::vector<std::uint32_t> out(64, static_cast<std::uint32_t>(gpu.rank())), all(64 * gpu.size());
  const traffic before = traffic_of(gpu);
  plait::all_gather<plait::ring>(gpu, out, all);
  for (int r = 0; r < gpu.size(); ++r) {
    if (all[static_cast<std::size_t>(r) * 64] != static_cast<std::uint32_t>(r)) return "collective wrong afterwards";
  }
  if (traffic_of(gpu).zero_copy != before.zero_copy) return "something was registered after all";
  return {};
}
}  // namespace

TEST_CASE("register_buffer: bad registrations fail on every rank before anything is mapped", "[nvlink][register]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = run_nvlink<gpu_comm>(m, 3, [](gpu_comm& gpu) -> std::string {
    gpu.set_timeout(std::chrono::seconds(20));
    std::vector<std::byte> buffer(512);
    std::string verdict;
    // A null buffer of nonzero size, on rank 1 only.
    const std::span<const std::byte> null_span(static_cast<const std::byte*>(nullptr), 16);
    verdict += expect_refused(gpu, gpu.rank() == 1 ? null_span : std::span<const std::byte>(buffer), 1, "null buffer");
    // Overlapping a live registration, on rank 2 only.
    {
      registration whole = gpu.register_buffer(buffer);
      const auto part = std::span<const std::byte>(buffer).subspan(gpu.rank() == 2 ? 100 : 0, 50);
      std::vector<std::byte> other(50);
      verdict += expect_refused(gpu, gpu.rank() == 2 ? part : std::span<const std::byte>(other), 2, "overlaps");
      if (!whole) verdict += "the live registration was lost; ";
    }
    // Size 0 is allowed on any rank: it registers nothing there, the others still go zero-copy.
    {
      std::vector<std::uint64_t> mine(gpu.rank() == 0 ? 0 : 20, 7), all(40);
      std::vector<std::uint64_t> none;
      registration r = gpu.register_buffer(gpu.rank() == 0 ? none : mine);
      if (gpu.rank() == 0 && (!r || !r.bytes().empty() || r.zero_copy_peers() != 0))
        verdict += "empty registration misreported; ";
      if (gpu.rank() != 0 && r.zero_copy_peers() != 2) verdict += "peers of an empty registration lost; ";
    }
    // At most 16 live registrations per communicator.
    {
      std::vector<std::vector<std::byte>> buffers(17, std::vector<std::byte>(8));
      std::vector<registration> held;
      for (int i = 0; i < 16; ++i) held.push_back(gpu.register_buffer(buffers[static_cast<std::size_t>(i)]));
      verdict += expect_refused(gpu, buffers[16], 0, "too many");
      held.pop_back();  // a slot is free again
      registration one_more = gpu.register_buffer(buffers[16]);
      if (one_more.zero_copy_peers() != 2) verdict += "a freed registry slot was not reused; ";
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("register_buffer: a rank that cannot read other processes gets their bytes through staging",
          "[nvlink][register][fallback]") {
  const int refusal = GENERATE(EPERM, ENOSYS);
  CAPTURE(refusal);
  const auto verdicts = run_nvlink<gpu_comm>(mode::processes, 3, [refusal](gpu_comm& gpu) -> std::string {
    // Rank 1's kernel forbids cross-memory attach: it cannot map the others'
    // buffers, while they still read rank 1's.
    if (gpu.rank() == 1 && !plait_test::deny_process_vm_readv(refusal)) return "cannot install the seccomp filter";
    std::vector<std::uint32_t> mine(300, static_cast<std::uint32_t>(gpu.rank())), all(900);
    registration out = gpu.register_buffer(all);
    const int readers = gpu.rank() == 1 ? 2 : 1;  // rank 1 reads nobody's; everyone reads rank 1's
    if (out.zero_copy_peers() != readers) return "peers reading in place: " + std::to_string(out.zero_copy_peers());
    const traffic before = traffic_of(gpu);
    plait::all_gather<plait::direct>(gpu, mine, all);
    const traffic after = traffic_of(gpu);
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i] != i / 300) return "wrong result at " + std::to_string(i);
    }
    // Rank 1 receives both blocks through staging; ranks 0 and 2 read theirs in place.
    const std::uint64_t direct = after.direct - before.direct;
    if (direct != (gpu.rank() == 1 ? 0U : 2U * 300 * 4)) return "read in place: " + std::to_string(direct);
    if (gpu.rank() == 1 && after.staged == before.staged) return "rank 1 did not use staging";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

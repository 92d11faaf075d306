// plait-test-labels: quick shm
// plait-test-timeout: 120
// Check mode on the NVLink transport's host emulation: call signatures go
// over the bootstrap communicator in host memory (never through the device
// staging areas, which on a GPU hold device memory only), so ranks that
// disagree on a call fail on every rank with size_mismatch naming both
// ranks' calls, and agreeing calls run unchanged.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <plait/algorithm/pairwise.hpp>
#include <plait/algorithm/ring.hpp>
#include <plait/plait.hpp>
#include <plait/transport/nvlink/host_emulation.hpp>

#include "support/harness.hpp"

using plait_test::mode;
using gpu_comm = plait::nvlink::emulated_communicator;

namespace {

template <class Fn>
std::vector<std::string> run_nvlink(mode m, int ranks, Fn&& body) {
  return plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& boot) -> std::string {
    boot.set_timeout(std::chrono::seconds(10));
    gpu_comm gpu(boot, 0, {}, {2, 64});
    gpu.set_timeout(std::chrono::seconds(10));
    return body(gpu);
  });
}

/// Every rank must throw size_mismatch naming each of `words`, with nothing
/// moved through the staging areas, and the communicator must stay usable.
std::string expect_disagreement(gpu_comm& gpu, const std::function<void()>& call,
                                const std::vector<std::string>& words) {
  const auto staged = gpu.policy().staging_bytes();
  const auto sent = gpu.bytes_sent();
  try {
    call();
    return "the disagreeing call went through";
  } catch (const plait::error& e) {
    if (e.code() != plait::errc::size_mismatch) return std::string("wrong code: ") + e.what();
    for (const auto& w : words) {
      if (std::string(e.what()).find(w) == std::string::npos) return "message lacks '" + w + "': " + e.what();
    }
  }
  if (gpu.policy().staging_bytes() != staged || gpu.bytes_sent() != sent) return "bytes moved before the check";
  return {};
}

}  // namespace

TEST_CASE("nvlink check mode: disagreeing shard sizes fail on every rank, naming both calls", "[nvlink][check]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = run_nvlink(m, 3, [](gpu_comm& gpu) -> std::string {
    if (gpu.check_mode()) return "check mode on by default";
    gpu.set_check_mode(true);
    if (!gpu.check_mode()) return "set_check_mode(true) did not stick";
    const std::size_t n = gpu.rank() == 2 ? 3 : 2;  // rank 2 believes in bigger shards
    std::vector<int> mine(n), all(3 * n);
    std::string verdict = expect_disagreement(gpu, [&] { plait::all_gather<plait::ring>(gpu, mine, all); },
                                              {"rank 0 calls all_gather<ring>", "blocks of 8 8 8 bytes",
                                               "rank 2 calls all_gather<ring>", "blocks of 12 12 12 bytes"});
    // Still usable: an agreeing call goes through, and the check is not payload.
    std::vector<int> one{gpu.rank()}, three(3);
    const auto sent = gpu.bytes_sent();
    plait::all_gather<plait::ring>(gpu, one, three);
    if (three != std::vector<int>{0, 1, 2}) verdict += "agreeing call wrong; ";
    if (gpu.bytes_sent() - sent != 2 * sizeof(int)) verdict += "check counted as payload; ";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink check mode: different operations or algorithms fail on every rank", "[nvlink][check]") {
  const auto verdicts = run_nvlink(mode::threads, 2, [](gpu_comm& gpu) {
    gpu.set_check_mode(true);
    std::vector<int> mine(2), all(4);
    return expect_disagreement(gpu,
                               [&] {
                                 if (gpu.rank() == 0) {
                                   plait::all_gather<plait::ring>(gpu, mine, all);
                                 } else {
                                   plait::all_to_all<plait::pairwise>(gpu, std::span(all).first(2),
                                                                      std::span(all).last(2));
                                 }
                               },
                               {"all_gather<ring>", "all_to_all<pairwise>"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink check mode: PLAIT_CHECK=1 turns it on", "[nvlink][check][env]") {
  setenv("PLAIT_CHECK", "1", 1);
  const auto verdicts = run_nvlink(mode::processes, 2, [](gpu_comm& gpu) {
    std::vector<int> mine(static_cast<std::size_t>(gpu.rank()) + 1), all(2 * mine.size());
    return expect_disagreement(gpu, [&] { plait::all_gather<plait::ring>(gpu, mine, all); },
                               {"rank 0 calls", "rank 1 calls"});
  });
  unsetenv("PLAIT_CHECK");
  REQUIRE(plait_test::failures(verdicts) == "");
}

// PLAIT_CHECK counts when the communicator is created: each rank is its own
// process here, so it may change its environment after creating it.
TEST_CASE("nvlink check mode: PLAIT_CHECK is read when the communicator is created, not at every call",
          "[nvlink][check][env]") {
  unsetenv("PLAIT_CHECK");
  const auto set_later = run_nvlink(mode::processes, 2, [](gpu_comm& gpu) -> std::string {
    setenv("PLAIT_CHECK", "1", 1);
    if (gpu.check_mode()) return "check mode on although PLAIT_CHECK was unset at creation";
    // A rank whose step stops at its own size mismatch leaves its peer waiting: keep that wait short.
    gpu.set_timeout(std::chrono::milliseconds(300));
    std::vector<int> mine(static_cast<std::size_t>(gpu.rank()) + 1), all(2 * mine.size());
    try {
      plait::all_gather<plait::ring>(gpu, mine, all);
      return "the disagreeing call went through";
    } catch (const plait::error& e) {
      // The transport finds the wrong size (or its peer stopped early); check mode would have named the calls.
      if (std::string(e.what()).find("calls all_gather") != std::string::npos) {
        return std::string("check mode ran, PLAIT_CHECK read at the call: ") + e.what();
      }
      if (e.code() != plait::errc::size_mismatch && e.code() != plait::errc::timeout) {
        return std::string("wrong code: ") + e.what();
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(set_later) == "");

  setenv("PLAIT_CHECK", "1", 1);
  const auto unset_later = run_nvlink(mode::processes, 2, [](gpu_comm& gpu) -> std::string {
    unsetenv("PLAIT_CHECK");
    if (!gpu.check_mode()) return "check mode off although PLAIT_CHECK=1 at creation";
    std::vector<int> mine(static_cast<std::size_t>(gpu.rank()) + 1), all(2 * mine.size());
    return expect_disagreement(gpu, [&] { plait::all_gather<plait::ring>(gpu, mine, all); },
                               {"rank 0 calls", "rank 1 calls"});
  });
  unsetenv("PLAIT_CHECK");
  REQUIRE(plait_test::failures(unset_later) == "");
}

// plait-test-labels: quick shm
// plait-test-timeout: 120
// Call stamps on the NVLink transport's host emulation: every chunk header
// carries the stamp of the sender's call under the message's tag, and a
// receiver whose own call under that tag has another stamp fails with
// size_mismatch naming both calls and the peer, without check mode. Equal
// stamps, and stamps nobody recorded (plain next_tag(), user_tag), pass.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <plait/algorithm/ring.hpp>
#include <plait/core/call_stamp.hpp>
#include <plait/plait.hpp>
#include <plait/transport/nvlink/host_emulation.hpp>

#include "support/harness.hpp"

using plait_test::mode;
using gpu_comm = plait::nvlink::emulated_communicator;

namespace {

constexpr plait::call_stamp gather_x = plait::call_stamp::of(plait::call_kind::all_gather, "x");
constexpr plait::call_stamp to_all_x = plait::call_stamp::of(plait::call_kind::all_to_all, "x");

template <class Fn>
std::vector<std::string> run_pair(mode m, Fn&& body) {
  return plait_test::run_ranks(m, 2, [&](plait::shm::communicator& boot) -> std::string {
    boot.set_timeout(std::chrono::seconds(10));
    gpu_comm gpu(boot, 0);
    gpu.set_timeout(std::chrono::seconds(10));
    return body(gpu);
  });
}

/// Sends this rank's 40 bytes to the other rank and receives its 40 under
/// `tag`; empty if the bytes arrived, else why not. The send is posted first
/// so that it has left before this rank's receive can fail.
std::string swap(gpu_comm& gpu, int tag) {
  const int peer = 1 - gpu.rank();
  std::vector<std::byte> mine(40, std::byte(gpu.rank() + 1)), theirs(40);
  std::vector<gpu_comm::request> requests{gpu.isend(peer, mine, tag), gpu.irecv(peer, theirs, tag)};
  gpu.wait_all(requests);
  return theirs == std::vector<std::byte>(40, std::byte(peer + 1)) ? "" : "wrong bytes arrived";
}

}  // namespace

TEST_CASE("nvlink emulation: a message of another collective under the same tag is size_mismatch naming both calls",
          "[nvlink][stamps]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = run_pair(m, [](gpu_comm& gpu) -> std::string {
    const int tag = gpu.next_tag(gpu.rank() == 0 ? gather_x : to_all_x);
    try {
      swap(gpu, tag);
      return "the message of another collective was accepted";
    } catch (const plait::error& e) {
      const std::string text = e.what();
      if (e.code() != plait::errc::size_mismatch) return "wrong code: " + text;
      const std::string peer = std::to_string(1 - gpu.rank());
      for (const std::string& word :
           {plait::describe(gather_x), plait::describe(to_all_x), "rank " + peer + " sent", "peer " + peer}) {
        if (text.find(word) == std::string::npos) return "message lacks '" + word + "': " + text;
      }
      if (!gpu.poisoned()) return "not poisoned after the mismatch";
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: equal call stamps and unrecorded ones pass", "[nvlink][stamps]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = run_pair(m, [](gpu_comm& gpu) -> std::string {
    std::string verdict;
    if (const std::string why = swap(gpu, gpu.next_tag(gather_x)); !why.empty())
      verdict += "equal stamps: " + why + "; ";
    // One rank records a stamp, the other takes a plain tag: nothing to compare.
    const int tag = gpu.rank() == 0 ? gpu.next_tag(to_all_x) : gpu.next_tag();
    if (const std::string why = swap(gpu, tag); !why.empty()) verdict += "one stamp unknown: " + why + "; ";
    if (const std::string why = swap(gpu, plait::user_tag); !why.empty()) verdict += "user_tag: " + why + "; ";
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: ranks that all-gather the same bytes as int8 and as float fail naming both types",
          "[nvlink][stamps][element]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = run_pair(m, [](gpu_comm& gpu) -> std::string {
    gpu.set_timeout(std::chrono::milliseconds(500));
    std::vector<std::int8_t> small(8, 1), small_all(16, -1);
    std::vector<float> wide(2, 7.0F), wide_all(4, -1.0F);
    try {
      if (gpu.rank() == 0) {
        plait::all_gather<plait::ring>(gpu, small, small_all);
      } else {
        plait::all_gather<plait::ring>(gpu, wide, wide_all);
      }
      return "the mismatched call went through";
    } catch (const plait::error& e) {
      const std::string text = e.what();
      // The rank that sees the other's header says size_mismatch.
      if (e.code() == plait::errc::size_mismatch) {
        for (const std::string word : {"of int8", "of float", "element types"}) {
          if (text.find(word) == std::string::npos) return "message lacks '" + word + "': " + text;
        }
        return "detected";
      }
      if (gpu.rank() == 0 ? small_all[8] != -1 : wide_all[0] != -1.0F) return "peer bytes landed";
      // The other rank stops at its fault before its own message leaves: this
      // one's wait ends at its timeout (shortened here), blaming that peer.
      if (e.code() != plait::errc::timeout && e.code() != plait::errc::peer_lost) return "wrong code: " + text;
      return {};
    }
  });
  // At least one rank saw the conflict itself; the other failed too.
  bool any = false;
  std::vector<std::string> rest;
  for (const std::string& v : verdicts) {
    any = any || v == "detected";
    rest.push_back(v == "detected" ? std::string() : v);
  }
  REQUIRE(plait_test::failures(rest) == "");
  REQUIRE(any);
}

// plait-test-labels: quick shm
// plait-test-timeout: 300
// The uneven collectives and bundles on the NVLink transport's host
// emulation: all_gather_v and all_to_all_v (the count exchange goes through
// exchange_control, as the device transport's buffers cannot hold host
// records) and a bundle, checked against a serial reference.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <plait/plait.hpp>
#include <plait/transport/nvlink/host_emulation.hpp>

#include "support/harness.hpp"

using plait_test::make_value;
using plait_test::mode;
using gpu_comm = plait::nvlink::emulated_communicator;

namespace {

std::vector<int> counts_for(int ranks, unsigned seed) {
  std::vector<int> c(static_cast<std::size_t>(ranks));
  std::mt19937 gen(seed);
  for (int& x : c) x = static_cast<int>(gen() % 6u);
  return c;
}

template <class Algorithm>
std::string uneven_on(gpu_comm& gpu) {
  const int p = gpu.size();
  std::string verdict;
  // all_gather_v
  const auto counts = counts_for(p, 3u);
  std::vector<double> want;
  std::vector<double> mine;
  for (int r = 0; r < p; ++r) {
    for (int i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) {
      want.push_back(make_value<double>(r, static_cast<std::size_t>(i)));
      if (r == gpu.rank()) mine.push_back(want.back());
    }
  }
  std::vector<double> all(want.size());
  plait::all_gather_v<Algorithm>(gpu, mine, all, counts);
  verdict += plait_test::compare(all, want, "all_gather_v");
  // all_to_all_v, and the same as a bundle with a second member
  const auto row = [&](int s) { return counts_for(p, 10u + static_cast<unsigned>(s)); };
  const auto send_counts = row(gpu.rank());
  std::vector<int> recv_counts;
  std::vector<std::uint32_t> send, expect;
  for (int d = 0; d < p; ++d) {
    for (int i = 0; i < send_counts[static_cast<std::size_t>(d)]; ++i) {
      send.push_back(make_value<std::uint32_t>(gpu.rank(), static_cast<std::size_t>(i), d));
    }
  }
  for (int s = 0; s < p; ++s) {
    recv_counts.push_back(row(s)[static_cast<std::size_t>(gpu.rank())]);
    for (int i = 0; i < recv_counts.back(); ++i)
      expect.push_back(make_value<std::uint32_t>(s, static_cast<std::size_t>(i), gpu.rank()));
  }
  std::vector<std::uint32_t> recv(expect.size());
  plait::all_to_all_v<Algorithm>(gpu, send, send_counts, recv, recv_counts);
  verdict += plait_test::compare(recv, expect, "all_to_all_v");
  std::vector<std::uint16_t> tags(send.size(), static_cast<std::uint16_t>(gpu.rank())), tags_in(expect.size());
  std::vector<std::uint32_t> recv_b(expect.size());
  {
    plait::all_to_all_v<Algorithm>(gpu, plait::bundle(send, tags), send_counts, plait::bundle(recv_b, tags_in),
                                   recv_counts);
    verdict += plait_test::compare(recv_b, expect, "bundled all_to_all_v");
    std::size_t at = 0;
    for (int s = 0; s < p; ++s) {
      for (int i = 0; i < recv_counts[static_cast<std::size_t>(s)]; ++i, ++at) {
        if (tags_in[at] != s) verdict += "bundled tags wrong;";
      }
    }
  }
  return verdict;
}

}  // namespace

TEMPLATE_TEST_CASE("nvlink emulation: the v forms and bundles match the serial reference", "[nvlink][uneven]",
                   plait::ring, plait::pairwise, plait::bruck, plait::direct, plait::automatic) {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& boot) -> std::string {
    gpu_comm gpu(boot, 0, {}, {2, 64});
    return uneven_on<TestType>(gpu);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// plait-test-labels: quick shm sanitize
// plait-test-also: header-only
// plait-test-timeout: 300
// split/all-gather across a pipeline boundary, both stages on shm threads:
// receivers rebuild the exact tensor, and the inter-stage traffic is exactly
// one tensor in split mode (each sender its own shard) and t tensors in naive
// mode. (tests/mpi runs the same over MPI + shm and MPI + MPI.)
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <vector>

#include <plait/op/nonblocking.hpp>
#include <plait/op/split_all_gather.hpp>

#include "support/harness.hpp"

namespace {

using extents3 = std::array<std::size_t, 3>;

std::uint64_t activation(std::size_t i0, std::size_t i1, std::size_t i2) { return i0 * 1000003u + i1 * 1009u + i2 + 7; }

/// One boundary crossing with t ranks per stage; returns the verdicts and each
/// sender's inter bytes.
template <class Layout>
std::string cross(int t, extents3 shape, plait::boundary_options options, bool padded,
                  std::vector<std::uint64_t>& bytes_by_sender, bool nonblocking = false) {
  std::vector<std::uint64_t> sent(static_cast<std::size_t>(t), 0);
  std::mutex lock;
  const auto verdicts = plait_test::run_ranks(plait_test::mode::threads, 2 * t, [&](plait::shm::communicator& world) {
    const int stage = world.rank() / t;
    const int position = world.rank() % t;
    auto intra = world.split(stage, position);
    auto inter = world.split(position, stage);  // inter rank 0: sender, 1: receiver
    // x, optionally with padding after each innermost row (a strided view).
    const std::size_t pad = padded ? 3 : 0;
    const std::size_t row = shape[2] + pad;
    std::vector<std::uint64_t> storage(shape[0] * shape[1] * row, 0xabababab);
    plait::tensor_view<std::uint64_t, 3> x(storage.data(), shape, {shape[1] * row, row, 1});
    if (stage == 0) {
      for (std::size_t a = 0; a < shape[0]; ++a)
        for (std::size_t b = 0; b < shape[1]; ++b)
          for (std::size_t c = 0; c < shape[2]; ++c) x(a, b, c) = activation(a, b, c);
    }
    auto boundary = plait::split_all_gather<plait::ring, Layout>(inter, intra, options);
    if (stage == 0) {
      if (nonblocking) {
        auto r = boundary.isend(1, x);
        while (!r.test()) {
        }
      } else {
        boundary.send(1, x);
      }
      std::lock_guard guard(lock);
      sent[static_cast<std::size_t>(position)] = inter.bytes_sent();
      return std::string{};
    }
    if (nonblocking) {
      // The receive is posted first; an all-gather over intra moves beside it.
      auto r = boundary.irecv(0, x);
      std::vector<int> mine{position}, all(static_cast<std::size_t>(t));
      auto other = plait::iall_gather(intra, mine, all);
      r.wait();
      other.wait();
      for (int j = 0; j < t; ++j) {
        if (all[static_cast<std::size_t>(j)] != j) return std::string("the all-gather beside the receive is wrong");
      }
    } else {
      boundary.recv(0, x);
    }
    for (std::size_t a = 0; a < shape[0]; ++a)
      for (std::size_t b = 0; b < shape[1]; ++b) {
        for (std::size_t c = 0; c < shape[2]; ++c) {
          if (x(a, b, c) != activation(a, b, c)) {
            return "element (" + std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c) + ") wrong";
          }
        }
        for (std::size_t c = shape[2]; c < row; ++c) {
          if (storage[(a * shape[1] + b) * row + c] != 0xabababab) return std::string("padding was written");
        }
      }
    return std::string{};
  });
  bytes_by_sender = sent;
  return plait_test::failures(verdicts);
}

}  // namespace

TEMPLATE_TEST_CASE("split/all-gather rebuilds the exact tensor and sends exactly one tensor across",
                   "[split_all_gather][shm]", plait::along<0>, plait::along<1>) {
  constexpr std::size_t dim = TestType::dimension;
  const int t = GENERATE(1, 2, 3, 4);
  const std::size_t extent = GENERATE(12, 13, 2);  // divisible by some t, uneven, fewer slices than ranks
  const bool padded = GENERATE(false, true);
  const std::size_t piece_bytes = GENERATE(std::size_t{0}, std::size_t{64});  // whole shards, or many pieces
  extents3 shape{5, 4, 3};
  shape[dim] = extent;
  CAPTURE(t, extent, padded, piece_bytes);
  std::vector<std::uint64_t> sent;
  REQUIRE(cross<TestType>(t, shape, {plait::boundary_mode::split, piece_bytes}, padded, sent) == "");
  const std::size_t slice = shape[0] * shape[1] * shape[2] / extent * sizeof(std::uint64_t);
  std::uint64_t total = 0;
  for (int j = 0; j < t; ++j) {
    const auto shard = plait::detail::part(extent, static_cast<std::size_t>(t), static_cast<std::size_t>(j));
    CHECK(sent[static_cast<std::size_t>(j)] == shard.count * slice);  // exactly its own shard
    total += sent[static_cast<std::size_t>(j)];
  }
  CHECK(total == extent * slice);  // the shards add up to one tensor
}

TEMPLATE_TEST_CASE("a boundary's isend and irecv rebuild the exact tensor and send one tensor across",
                   "[split_all_gather][shm][nonblocking]", plait::along<0>, plait::along<1>) {
  constexpr std::size_t dim = TestType::dimension;
  const int t = GENERATE(1, 2, 3);
  const std::size_t extent = GENERATE(12, 13, 2);
  const bool padded = GENERATE(false, true);
  const std::size_t piece_bytes = GENERATE(std::size_t{0}, std::size_t{64});
  const auto mode = GENERATE(plait::boundary_mode::split, plait::boundary_mode::naive);
  extents3 shape{5, 4, 3};
  shape[dim] = extent;
  CAPTURE(t, extent, padded, piece_bytes, mode == plait::boundary_mode::split);
  std::vector<std::uint64_t> sent;
  REQUIRE(cross<TestType>(t, shape, {mode, piece_bytes}, padded, sent, true) == "");
  const std::size_t tensor = shape[0] * shape[1] * shape[2] * sizeof(std::uint64_t);
  std::uint64_t total = 0;
  for (auto bytes : sent) total += bytes;
  CHECK(total == (mode == plait::boundary_mode::split ? tensor : tensor * static_cast<std::size_t>(t)));
}

TEST_CASE("naive mode sends the whole tensor from every sender", "[split_all_gather][shm][naive]") {
  const int t = GENERATE(1, 3);
  const extents3 shape{7, 2, 5};
  std::vector<std::uint64_t> sent;
  REQUIRE(cross<plait::along<0>>(t, shape, {plait::boundary_mode::naive, 0}, true, sent) == "");
  for (auto bytes : sent) CHECK(bytes == 7 * 2 * 5 * sizeof(std::uint64_t));
}

TEST_CASE("a boundary rejects peers outside the inter communicator before sending", "[split_all_gather][bad_input]") {
  const auto verdicts =
      plait_test::run_ranks(plait_test::mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
        auto boundary = plait::split_all_gather<plait::ring>(comm, comm);
        std::vector<int> x(4);
        try {
          boundary.send(2, x);
          return "peer 2 accepted";
        } catch (const plait::error& e) {
          if (e.code() != plait::errc::invalid_argument) return "wrong code";
        }
        return {};
      });
  REQUIRE(plait_test::failures(verdicts) == "");
}

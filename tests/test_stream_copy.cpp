// plait-test-labels: quick shm sanitize
// plait-test-timeout: 180
// plait-test-optimization: -O1
// Streaming copies (core/stream_copy.hpp): large copies into a collective's
// result use non-temporal stores (the own shard or block in prepare(), the
// shm transport's reads from a thread peer's buffer or from a shared buffer,
// and its copy-out of large chunked messages).
// Checked here: the copy loop at every alignment and length class, with the
// bytes around the destination untouched; the threshold; and every algorithm
// on threads and processes with the threshold lowered so that blocks just
// below, at and above it (not multiples of 64 bytes, and empty) take either
// path.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "plait/core/stream_copy.hpp"
#include "plait/plait.hpp"
#include "support/algorithm_lists.hpp"
#include "support/harness.hpp"

using plait_test::mode;

namespace {

/// Sets the streaming threshold for the scope (run_processes' children
/// inherit it: they fork after it is set).
class stream_threshold {
 public:
  explicit stream_threshold(std::size_t bytes) : saved_(plait::detail::stream_copy_bytes().load()) {
    plait::detail::stream_copy_bytes().store(bytes);
  }
  ~stream_threshold() { plait::detail::stream_copy_bytes().store(saved_); }
  stream_threshold(const stream_threshold&) = delete;
  stream_threshold& operator=(const stream_threshold&) = delete;

 private:
  std::size_t saved_;
};

/// Copies n bytes from src+src_offset to dst+dst_offset with `copy` into a
/// guarded buffer; "" when the copy is exact and no byte around it changed.
template <class Copy>
std::string check_copy(Copy&& copy, std::size_t n, std::size_t src_offset, std::size_t dst_offset) {
  constexpr std::size_t guard = 128;
  constexpr auto fill = std::byte{0xA5};
  std::vector<std::byte> src(n + src_offset + 64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>((i * 37 + 11) & 0xff);
  std::vector<std::byte> dst(guard + dst_offset + n + guard, fill);
  // Align the base so dst_offset is the offset from a 64-byte boundary.
  std::byte* base = dst.data() + guard;
  base += (64 - reinterpret_cast<std::uintptr_t>(base) % 64) % 64;
  if (base + dst_offset + n + 64 > dst.data() + dst.size()) return "test buffer too small";
  copy(base + dst_offset, src.data() + src_offset, n);
  for (std::size_t i = 0; i < n; ++i) {
    if (base[dst_offset + i] != src[src_offset + i]) return "byte " + std::to_string(i) + " differs";
  }
  for (std::byte* p = dst.data(); p < base + dst_offset; ++p) {
    if (*p != fill) return "a byte before the destination was written";
  }
  for (std::byte* p = base + dst_offset + n; p < dst.data() + dst.size(); ++p) {
    if (*p != fill) return "a byte after the destination was written";
  }
  return {};
}

/// check_copy for every length in `lengths`, every destination offset from a
/// 64-byte boundary and a few source offsets; "" when all are exact, else the
/// first failure.
template <class Copy>
std::string check_every_alignment(Copy&& copy, std::initializer_list<std::size_t> lengths) {
  for (std::size_t n : lengths) {
    for (std::size_t dst_offset = 0; dst_offset < 64; ++dst_offset) {
      for (std::size_t src_offset : {0, 1, 13, 32, 63}) {
        const std::string verdict = check_copy(copy, n, src_offset, dst_offset);
        if (!verdict.empty()) {
          return "n=" + std::to_string(n) + " dst+" + std::to_string(dst_offset) + " src+" +
                 std::to_string(src_offset) + ": " + verdict;
        }
      }
    }
  }
  return {};
}

}  // namespace

TEST_CASE("stream_copy equals memcpy at every destination alignment and leaves neighbours alone",
          "[stream_copy][one-thread]") {
  auto stream = [](std::byte* d, const std::byte* s, std::size_t n) {
    plait::detail::stream_copy(d, s, n);
    plait::detail::stream_fence();
  };
  const std::string verdict = check_every_alignment(
      stream, {0, 1, 7, 63, 64, 65, 127, 128, 255, 256, 257, 511, 1000, 4096 + 17, (1 << 20) + 3});
  if (!verdict.empty()) FAIL(verdict);
  SUCCEED();
}

#if PLAIT_SHM_STREAM_COPY_X86
// stream_copy() picks the AVX-512 loop where the CPU has it; the SSE2 loop
// (every other x86-64) is checked here directly so it runs on such CPUs too.
TEST_CASE("the SSE2 streaming loop equals memcpy at every destination alignment", "[stream_copy][one-thread]") {
  auto stream = [](std::byte* d, const std::byte* s, std::size_t n) {
    plait::detail::stream_copy_sse2(reinterpret_cast<unsigned char*>(d), reinterpret_cast<const unsigned char*>(s), n);
    plait::detail::stream_fence();
  };
  const std::string verdict = check_every_alignment(stream, {0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 4096 + 17});
  if (!verdict.empty()) FAIL(verdict);
  SUCCEED();
}
#endif

TEST_CASE("copy_bytes is exact below, at and above the streaming threshold", "[stream_copy][one-thread]") {
  const stream_threshold lowered(1000);
  auto copy = [](std::byte* d, const std::byte* s, std::size_t n) { plait::detail::copy_bytes(d, s, n); };
  for (std::size_t n : {0, 999, 1000, 1001, 4099}) {
    for (std::size_t dst_offset : {0, 5, 60}) {
      CAPTURE(n, dst_offset);
      REQUIRE(check_copy(copy, n, 3, dst_offset) == "");
    }
  }
  REQUIRE(plait::detail::stream_copy_bytes().load() == 1000);
}

TEST_CASE("the streaming threshold defaults to 4 MiB", "[stream_copy]") {
  if (std::getenv("PLAIT_STREAM_COPY_BYTES") == nullptr) {
    REQUIRE(plait::detail::stream_copy_bytes().load() == plait::detail::default_stream_copy_bytes);
  }
  REQUIRE(plait::detail::default_stream_copy_bytes == std::size_t{4} << 20);
}

TEMPLATE_LIST_TEST_CASE("collectives whose blocks cross the streaming threshold match the reference",
                        "[stream_copy][shm]", plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3, 4);
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(plait_test::to_string(m), ranks);
  // Blocks of threshold - 1, threshold and threshold + 1 bytes (3 x 1365 =
  // 4095 etc.: not multiples of 64), through 12-byte elements as well, and empty ones.
  const stream_threshold lowered(4096);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) {
    std::string out;
    for (std::size_t n : {std::size_t{0}, std::size_t{4095}, std::size_t{4096}, std::size_t{4097}}) {
      out += plait_test::gather_and_check<std::uint8_t, TestType>(comm, n);
      if constexpr (plait_test::has_schedule<TestType, plait::op::all_to_all>) {
        out += plait_test::exchange_and_check<std::uint8_t, TestType>(comm, n);
      }
    }
    for (std::size_t n : {std::size_t{341}, std::size_t{342}, std::size_t{2000}}) {  // 4092, 4104, 24000 bytes
      out += plait_test::gather_and_check<plait_test::triple, TestType>(comm, n);
    }
    return out;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_LIST_TEST_CASE("chunked messages that cross the streaming threshold match the reference",
                        "[stream_copy][shm][chunks]", plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  const auto m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3);
  if (!plait_test::runs_on<TestType>(ranks)) return;
  CAPTURE(plait_test::to_string(m), ranks);
  // Single copy off: every message goes through the slots. Chunked messages
  // stream their copy-out from 4x the local threshold: 4096 bytes here.
  const stream_threshold lowered(1024);
  REQUIRE(plait::shm::detail::chunk_stream_bytes() == 4096);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) {
    comm.set_single_copy_bytes(0);
    std::string out;
    // Below, at and above the threshold; 200003 bytes: four 64 KiB slots' worth, the last one partial.
    for (std::size_t n :
         {std::size_t{0}, std::size_t{4095}, std::size_t{4096}, std::size_t{4097}, std::size_t{200003}}) {
      out += plait_test::gather_and_check<std::uint8_t, TestType>(comm, n);
      if constexpr (plait_test::has_schedule<TestType, plait::op::all_to_all>) {
        out += plait_test::exchange_and_check<std::uint8_t, TestType>(comm, n);
      }
    }
    return out;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("reads from shared buffers stream above the threshold and stay exact", "[stream_copy][shm][allocate]") {
  const auto m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3);
  CAPTURE(plait_test::to_string(m), ranks);
  // Shared buffers are read in place from 4 KiB (window_single_copy_bytes):
  // one shard below the streaming threshold, one at it, one above.
  const stream_threshold lowered(4097);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) {
    std::string out;
    const auto p = static_cast<std::size_t>(comm.size());
    for (std::size_t n : {std::size_t{4096}, std::size_t{4097}, std::size_t{9001}}) {
      auto mine = comm.allocate<std::uint8_t>(n);
      auto all = comm.allocate<std::uint8_t>(n * p);
      for (std::size_t i = 0; i < n; ++i) mine[i] = plait_test::make_value<std::uint8_t>(comm.rank(), i);
      const std::uint64_t before = comm.bytes_read_in_place();
      // Ring: every step reads a shard of an allocate buffer by reference
      // (direct's blocks this small run through the shared slots instead).
      plait::all_gather<plait::ring>(comm, mine, all);
      if (comm.bytes_read_in_place() - before != (p - 1) * n) {
        out += "n=" + std::to_string(n) + ": not every peer's shard was read in place; ";
      }
      for (std::size_t r = 0; r < p; ++r) {
        for (std::size_t i = 0; i < n; ++i) {
          if (all[r * n + i] != plait_test::make_value<std::uint8_t>(static_cast<int>(r), i)) {
            out += "n=" + std::to_string(n) + ": rank " + std::to_string(r) + "'s shard differs; ";
            break;
          }
        }
      }
    }
    return out;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

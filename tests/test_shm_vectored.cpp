// plait-test-labels: quick shm sanitize
// plait-test-timeout: 300
// Vectored messages on the shared-memory transport (isendv / irecvv): a
// message made of several pieces, gathered on send and scattered on receive,
// matching plain messages and vectored ones cut at other boundaries. Checked
// here: threads and processes, P = 1..8, zero-size pieces, many pieces (more
// than one process_vm_readv batch, more than a slot can list), the chunk path
// and the single-copy path, the fallback to chunks when the kernel refuses
// process_vm_readv; and that the executor sends a bundle's messages this way
// (bytes_sent_vectored) with the same results as one call per member.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "support/deny_vm_readv.hpp"
#include "support/harness.hpp"

using plait_test::make_value;
using plait_test::mode;
using plait_test::pattern;

namespace {

constexpr std::byte gap_byte{0x5A};

/// A message of `bytes` bytes cut into pieces of the sizes in `shape`
/// (cycled; the last piece takes what is left), each in its own place of one
/// buffer with 8 bytes of gap_byte between pieces, so pieces are never
/// adjacent and a write beyond a piece shows in a gap.
struct pieced {
  std::vector<std::byte> buffer;
  std::vector<std::span<std::byte>> pieces;

  pieced(std::size_t bytes, const std::vector<std::size_t>& shape) {
    std::vector<std::size_t> sizes;  // the whole shape at least once, so its empty pieces are there too
    for (std::size_t left = bytes, i = 0; left != 0 || i < shape.size(); ++i) {
      const std::size_t n = std::min(left, shape[i % shape.size()]);
      sizes.push_back(n);
      left -= n;
    }
    buffer.assign(bytes + 8 * (sizes.size() + 1), gap_byte);
    std::size_t at = 8;
    for (std::size_t n : sizes) {
      pieces.emplace_back(buffer.data() + at, n);
      at += n + 8;
    }
  }
  [[nodiscard]] std::vector<std::span<const std::byte>> read_only() const { return {pieces.begin(), pieces.end()}; }
  void fill(const std::vector<std::byte>& from) {
    std::size_t at = 0;
    for (auto piece : pieces) {
      std::copy_n(from.begin() + static_cast<std::ptrdiff_t>(at), piece.size(), piece.begin());
      at += piece.size();
    }
  }
  [[nodiscard]] std::vector<std::byte> joined() const {
    std::vector<std::byte> all;
    for (auto piece : pieces) all.insert(all.end(), piece.begin(), piece.end());
    return all;
  }
  [[nodiscard]] bool gaps_intact() const {
    std::size_t at = 0;
    for (auto piece : pieces) {
      const auto offset = static_cast<std::size_t>(piece.data() - buffer.data());
      for (; at < offset; ++at) {
        if (buffer[at] != gap_byte) return false;
      }
      at = offset + piece.size();
    }
    for (; at < buffer.size(); ++at) {
      if (buffer[at] != gap_byte) return false;
    }
    return true;
  }
};

enum class side { plain, vectored };

/// Every rank sends one message of `bytes` to every other rank, cut as
/// `send_shape` (or plain), and receives each cut as `recv_shape` (or plain);
/// "" when every message arrived intact and nothing outside the pieces was written.
std::string exchange(plait::shm::communicator& comm, std::size_t bytes, side sending,
                     const std::vector<std::size_t>& send_shape, side receiving,
                     const std::vector<std::size_t>& recv_shape) {
  const int me = comm.rank();
  const int ranks = comm.size();
  std::vector<pieced> out, in;
  std::vector<std::vector<std::byte>> plain_out, plain_in;
  std::vector<std::vector<std::span<const std::byte>>> out_lists;
  out.reserve(static_cast<std::size_t>(ranks));
  in.reserve(static_cast<std::size_t>(ranks));
  plain_out.reserve(static_cast<std::size_t>(ranks));
  plain_in.reserve(static_cast<std::size_t>(ranks));
  out_lists.reserve(static_cast<std::size_t>(ranks));
  std::vector<plait::shm::communicator::request> requests;
  const std::uint64_t vectored_before = comm.bytes_sent_vectored();
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer == me) continue;
    if (receiving == side::vectored) {
      in.emplace_back(bytes, recv_shape);
      requests.push_back(comm.irecvv(peer, in.back().pieces));
    } else {
      plain_in.emplace_back(bytes);
      requests.push_back(comm.irecv(peer, plain_in.back()));
    }
    const std::vector<std::byte> message = pattern(bytes, me * 100 + peer);
    if (sending == side::vectored) {
      out.emplace_back(bytes, send_shape);
      out.back().fill(message);
      out_lists.push_back(out.back().read_only());
      requests.push_back(comm.isendv(peer, out_lists.back()));
    } else {
      plain_out.push_back(message);
      requests.push_back(comm.isend(peer, plain_out.back()));
    }
  }
  comm.wait_all(requests);
  const std::uint64_t vectored = comm.bytes_sent_vectored() - vectored_before;
  const std::uint64_t want = sending == side::vectored ? bytes * static_cast<std::uint64_t>(ranks - 1) : 0;
  if (vectored != want) return "bytes_sent_vectored " + std::to_string(vectored) + ", expected " + std::to_string(want);
  std::size_t next = 0;
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer == me) continue;
    const std::vector<std::byte> want_bytes = pattern(bytes, peer * 100 + me);
    if (receiving == side::vectored) {
      if (!in[next].gaps_intact()) return "a receive wrote outside its pieces (from rank " + std::to_string(peer) + ")";
      if (in[next].joined() != want_bytes) return "the message from rank " + std::to_string(peer) + " differs";
    } else if (plain_in[next] != want_bytes) {
      return "the message from rank " + std::to_string(peer) + " differs";
    }
    ++next;
  }
  return {};
}

const std::vector<std::size_t> uneven_cut{5, 0, 1000, 3, 0, 20000};
const std::vector<std::size_t> other_cut{777, 1, 0, 12345};

}  // namespace

TEST_CASE("shm vectored messages match plain and vectored ones cut elsewhere, in chunks and by single copy",
          "[shm][vectored]") {
  const auto m = GENERATE(mode::threads, mode::processes);
  const bool chunks_only = GENERATE(false, true);
  const std::size_t bytes =
      GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{3000}, std::size_t{100'000}, std::size_t{1} << 20);
  CAPTURE(plait_test::to_string(m), chunks_only, bytes);
  const auto verdicts = plait_test::run_ranks(m, 3, [&](plait::shm::communicator& comm) {
    if (chunks_only) comm.set_single_copy_bytes(0);
    std::string v;
    v += exchange(comm, bytes, side::vectored, uneven_cut, side::plain, {});
    v += exchange(comm, bytes, side::plain, {}, side::vectored, other_cut);
    v += exchange(comm, bytes, side::vectored, uneven_cut, side::vectored, other_cut);
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("shm vectored messages work for P = 1 to 8", "[shm][vectored]") {
  const auto m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 4, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) {
    return exchange(comm, 50'000, side::vectored, uneven_cut, side::vectored, other_cut) +
           exchange(comm, 2'000, side::vectored, other_cut, side::vectored, uneven_cut);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("shm vectored messages of many pieces: more than one kernel batch and more than a slot lists",
          "[shm][vectored]") {
  const auto m = GENERATE(mode::threads, mode::processes);
  // 100 pieces of 4 KiB: one reference, two process_vm_readv batches; 300 of
  // 400 bytes: a reference between threads, chunks between processes (pieces
  // too small for the kernel's per-piece cost); 6000 of 3 bytes: more than a
  // reference slot lists, so chunks. Into a receive of pieces cut elsewhere,
  // then from a plain send into pieces of that size (a reference whatever
  // the count, its many local iovecs in several batches).
  const auto [piece, count] =
      GENERATE(std::pair<std::size_t, std::size_t>{4096, 100}, std::pair<std::size_t, std::size_t>{400, 300},
               std::pair<std::size_t, std::size_t>{3, 6000});
  CAPTURE(plait_test::to_string(m), piece, count);
  const auto verdicts = plait_test::run_ranks(m, 2, [&](plait::shm::communicator& comm) {
    const std::uint64_t copied_before = comm.bytes_copied_vectored();
    std::string v = exchange(comm, piece * count, side::vectored, {piece}, side::vectored, {piece + 1, 0});
    const std::uint64_t copied_vectored = comm.bytes_copied_vectored() - copied_before;
    const bool listed = piece == 4096 || (piece == 400 && m == mode::threads);
    if (copied_vectored != (listed ? piece * count : 0)) {
      v += "vectored send copied by reference: " + std::to_string(copied_vectored) + " bytes, expected " +
           std::to_string(listed ? piece * count : 0);
    }
    const std::uint64_t copied_plain = comm.bytes_copied_vectored();
    v += exchange(comm, piece * count, side::plain, {}, side::vectored, {piece});
    if (comm.bytes_copied_vectored() - copied_plain != piece * count)
      v += "a plain reference into pieces was not copied";
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("shm vectored single copies fall back to chunks when process_vm_readv is refused", "[shm][vectored]") {
  const int refusal = GENERATE(EPERM, ENOSYS);
  CAPTURE(refusal);
  const auto verdicts = plait_test::run_ranks(mode::processes, 2, [refusal](plait::shm::communicator& comm) {
    if (!plait_test::deny_process_vm_readv(refusal)) return std::string("cannot install the seccomp filter");
    std::string v = exchange(comm, 100'000, side::vectored, uneven_cut, side::vectored, other_cut) +
                    exchange(comm, 1 << 20, side::vectored, other_cut, side::plain, {}) +
                    exchange(comm, 100'000, side::plain, {}, side::vectored, uneven_cut);
    if (comm.bytes_copied_vectored() != 0) v += "a refused process_vm_readv counted as a single copy";
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a bundle's messages go vectored, not through staging, and equal one call per member",
          "[shm][vectored][bundle]") {
  const auto m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  // Chunked and single-copy sizes (per member block: 256 B and 64 KiB).
  const std::size_t n = GENERATE(std::size_t{64}, std::size_t{16384});
  CAPTURE(plait_test::to_string(m), ranks, n);
  const auto verdicts = plait_test::run_ranks(m, ranks, [n](plait::shm::communicator& comm) -> std::string {
    const auto p = static_cast<std::size_t>(comm.size());
    std::vector<float> a(p * n), b(p * n / 4);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = make_value<float>(comm.rank(), i, 1);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = make_value<float>(comm.rank(), i, 2);
    std::vector<float> a_bundled(a.size()), b_bundled(b.size()), a_alone(a.size()), b_alone(b.size());
    std::string v;
    const std::uint64_t sent = comm.bytes_sent();
    const std::uint64_t vectored = comm.bytes_sent_vectored();
    plait::all_to_all<plait::pairwise>(comm, plait::bundle(a, b), plait::bundle(a_bundled, b_bundled));
    // Every message carries a block of each member: all of it vectored.
    if (comm.bytes_sent_vectored() - vectored != comm.bytes_sent() - sent) {
      v += "all_to_all: " + std::to_string(comm.bytes_sent_vectored() - vectored) + " of " +
           std::to_string(comm.bytes_sent() - sent) + " bytes sent vectored";
    }
    plait::all_to_all<plait::pairwise>(comm, a, a_alone);
    plait::all_to_all<plait::pairwise>(comm, b, b_alone);
    v += plait_test::compare(a_bundled, a_alone, "all_to_all a") +
         plait_test::compare(b_bundled, b_alone, "all_to_all b");

    std::vector<float> ga(p * n), gb(p * n / 4), ga_alone(ga.size()), gb_alone(gb.size());
    const std::span<const float> a_shard(a.data(), n), b_shard(b.data(), n / 4);
    const std::uint64_t sent_gather = comm.bytes_sent();
    const std::uint64_t vectored_gather = comm.bytes_sent_vectored();
    plait::all_gather<plait::ring>(comm, plait::bundle(a_shard, b_shard), plait::bundle(ga, gb));
    if (comm.bytes_sent_vectored() - vectored_gather != comm.bytes_sent() - sent_gather) {
      v += "all_gather: " + std::to_string(comm.bytes_sent_vectored() - vectored_gather) + " of " +
           std::to_string(comm.bytes_sent() - sent_gather) + " bytes sent vectored";
    }
    plait::all_gather<plait::ring>(comm, a_shard, ga_alone);
    plait::all_gather<plait::ring>(comm, b_shard, gb_alone);
    v += plait_test::compare(ga, ga_alone, "all_gather a") + plait_test::compare(gb, gb_alone, "all_gather b");
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a bundle with an empty member sends its other member's blocks straight, not vectored",
          "[shm][vectored][bundle]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) -> std::string {
    const auto p = static_cast<std::size_t>(comm.size());
    std::vector<float> a(p * 100), empty, a_bundled(a.size()), none;
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = make_value<float>(comm.rank(), i, 1);
    const std::uint64_t vectored = comm.bytes_sent_vectored();
    plait::all_to_all<plait::pairwise>(comm, plait::bundle(a, empty), plait::bundle(a_bundled, none));
    std::vector<float> a_alone(a.size());
    plait::all_to_all<plait::pairwise>(comm, a, a_alone);
    std::string v = plait_test::compare(a_bundled, a_alone, "a");
    if (comm.bytes_sent_vectored() != vectored) v += "a message of one non-empty block went vectored";
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

// Vectored messages over MPI (isendv / irecvv, hindexed types on
// MPI_BOTTOM): a message gathered from several pieces arrives whole in a
// plain receive or in pieces cut elsewhere, also when a message spans several
// MPI chunks; and the executor sends a bundle's messages this way with the
// same results as one call per member.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mpi_test.hpp"
#include "plait/mpi.hpp"

namespace {

/// Cuts `buffer` into pieces of the sizes in `shape` (cycled, the whole shape
/// at least once so its empty pieces are there too; the last piece takes
/// what is left).
template <class Byte>
std::vector<std::span<Byte>> cut(std::span<Byte> buffer, const std::vector<std::size_t>& shape) {
  std::vector<std::span<Byte>> pieces;
  std::size_t at = 0;
  for (std::size_t i = 0; at < buffer.size() || i < shape.size(); ++i) {
    const std::size_t n = std::min(buffer.size() - at, shape[i % shape.size()]);
    pieces.push_back(buffer.subspan(at, n));
    at += n;
  }
  return pieces;
}

/// Every rank sends one message of `bytes` to every other rank; pieces are
/// cut from one buffer in reversed order so they are never adjacent in
/// message order. True when every message arrived intact.
bool exchange(plait::mpi::communicator& comm, std::size_t bytes, bool send_vectored, bool recv_vectored) {
  const int me = comm.rank();
  const int p = comm.size();
  std::vector<std::vector<std::byte>> out, in;
  std::vector<std::vector<std::span<const std::byte>>> out_pieces;
  std::vector<std::vector<std::span<std::byte>>> in_pieces;
  std::vector<plait::mpi::communicator::request> requests;
  out.reserve(static_cast<std::size_t>(p));
  in.reserve(static_cast<std::size_t>(p));
  for (int peer = 0; peer < p; ++peer) {
    if (peer == me) continue;
    in.emplace_back(bytes);
    if (recv_vectored) {
      // The pieces in reverse: the message's first piece lies last in the buffer.
      auto pieces = cut(std::span<std::byte>(in.back()), {777, 0, 1, 4000});
      std::vector<std::span<std::byte>> reversed(pieces.rbegin(), pieces.rend());
      in_pieces.push_back(reversed);
      requests.push_back(comm.irecvv(peer, in_pieces.back()));
    } else {
      requests.push_back(comm.irecv(peer, in.back()));
    }
    const auto message = plait_test::pattern_bytes(me, bytes, peer);
    if (send_vectored) {
      // Lay the message out in the buffer piece by piece, reversed.
      out.emplace_back(bytes);
      auto pieces = cut(std::span<const std::byte>(out.back()), {5, 1000, 0, 333});
      std::vector<std::span<const std::byte>> reversed(pieces.rbegin(), pieces.rend());
      std::size_t from = 0;
      for (auto piece : reversed) {
        std::copy_n(message.begin() + static_cast<std::ptrdiff_t>(from), piece.size(),
                    out.back().begin() + (piece.data() - out.back().data()));
        from += piece.size();
      }
      out_pieces.push_back(reversed);
      requests.push_back(comm.isendv(peer, out_pieces.back()));
    } else {
      out.push_back(message);
      requests.push_back(comm.isend(peer, out.back()));
    }
  }
  comm.wait_all(requests);
  bool ok = true;
  std::size_t next = 0;
  for (int peer = 0; peer < p; ++peer) {
    if (peer == me) continue;
    std::vector<std::byte> got;
    if (recv_vectored) {
      for (auto piece : in_pieces[next]) got.insert(got.end(), piece.begin(), piece.end());
    } else {
      got = in[next];
    }
    ok = ok && plait_test::first_mismatch(got, peer, me) < 0;
    ++next;
  }
  return ok;
}

}  // namespace

TEST_CASE("mpi vectored messages match plain ones and vectored ones cut elsewhere", "[mpi][vectored]") {
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{3000}, std::size_t{200'000}}) {
    CAPTURE(bytes);
    const std::uint64_t before = comm.bytes_sent_vectored();
    PLAIT_REQUIRE_ALL(exchange(comm, bytes, true, false));
    PLAIT_REQUIRE_ALL(exchange(comm, bytes, false, true));
    PLAIT_REQUIRE_ALL(exchange(comm, bytes, true, true));
    PLAIT_REQUIRE_ALL(comm.bytes_sent_vectored() - before == 2 * bytes * static_cast<std::size_t>(comm.size() - 1));
  }
}

TEST_CASE("mpi vectored messages split into MPI chunks like plain ones", "[mpi][vectored]") {
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  comm.set_chunk_bytes(1000);  // chunk boundaries inside pieces and between them
  for (std::size_t bytes : {std::size_t{999}, std::size_t{1000}, std::size_t{12345}}) {
    CAPTURE(bytes);
    PLAIT_REQUIRE_ALL(exchange(comm, bytes, true, false));
    PLAIT_REQUIRE_ALL(exchange(comm, bytes, false, true));
    PLAIT_REQUIRE_ALL(exchange(comm, bytes, true, true));
  }
}

TEST_CASE("mpi bundles go vectored from vectored_min_bytes and equal their members moved one call each",
          "[mpi][vectored][bundle]") {
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  const auto p = static_cast<std::size_t>(comm.size());
  for (std::size_t n : {std::size_t{16}, std::size_t{20000}}) {
    CAPTURE(n);
    std::vector<float> a(p * n), b(p * (n / 4 + 1));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(comm.rank() * 1000003 + static_cast<int>(i));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(-comm.rank() * 1000 - static_cast<int>(i));
    std::vector<float> a_bundled(a.size()), b_bundled(b.size()), a_alone(a.size()), b_alone(b.size());
    const std::uint64_t sent = comm.bytes_sent();
    const std::uint64_t vectored = comm.bytes_sent_vectored();
    plait::all_to_all<plait::pairwise>(comm, plait::bundle(a, b), plait::bundle(a_bundled, b_bundled));
    // Below vectored_min_bytes a message is staged; above it, all of it goes vectored.
    const std::uint64_t want =
        n * sizeof(float) >= plait::mpi::communicator::vectored_min_bytes ? comm.bytes_sent() - sent : 0;
    const bool all_vectored = comm.bytes_sent_vectored() - vectored == want;
    plait::all_to_all<plait::pairwise>(comm, a, a_alone);
    plait::all_to_all<plait::pairwise>(comm, b, b_alone);
    PLAIT_REQUIRE_ALL(all_vectored && a_bundled == a_alone && b_bundled == b_alone);

    std::vector<float> ga(a.size()), gb(b.size()), ga_alone(a.size()), gb_alone(b.size());
    const std::span<const float> a_shard(a.data(), n), b_shard(b.data(), n / 4 + 1);
    plait::all_gather<plait::ring>(comm, plait::bundle(a_shard, b_shard), plait::bundle(ga, gb));
    plait::all_gather<plait::ring>(comm, a_shard, ga_alone);
    plait::all_gather<plait::ring>(comm, b_shard, gb_alone);
    PLAIT_REQUIRE_ALL(ga == ga_alone && gb == gb_alone);
  }
}

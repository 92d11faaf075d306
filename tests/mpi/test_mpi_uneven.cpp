// Differential tests of the uneven collectives: plait's all_gather_v and
// all_to_all_v over plait::mpi::communicator must produce byte for byte what
// MPI_Allgatherv / MPI_Alltoallv (with packed displacements) produce on the
// same data and counts, for every algorithm, random counts including zeros,
// all-zero and one rank holding everything; bundles equal their members moved
// one call each.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../support/algorithm_lists.hpp"
#include "../support/expect_error.hpp"
#include "mpi_test.hpp"
#include "plait/mpi.hpp"

namespace {

/// counts[r] for every rank, the same on every rank: random in [0, most] by
/// `seed`, all zero (pattern 1) or everything on the last rank (pattern 2).
std::vector<int> shared_counts(int ranks, unsigned seed, int pattern, int most) {
  std::vector<int> c(static_cast<std::size_t>(ranks));
  std::mt19937 gen(seed);
  for (int& x : c) x = static_cast<int>(gen() % static_cast<unsigned>(most + 1));
  if (pattern == 1) std::fill(c.begin(), c.end(), 0);
  if (pattern == 2) {
    std::fill(c.begin(), c.end(), 0);
    c.back() = most * 2;
  }
  return c;
}

using plait_test::packed_displacements;
using plait_test::total;

/// Whether a message from `source` under `tag` arrives on `comm` within ten
/// seconds (its envelope in `status`): a test that plays a rank by hand must
/// fail, not hang, when plait's rank never sends what it expects.
bool message_arrives(MPI_Comm comm, int source, int tag, MPI_Status& status) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int found = 0; std::chrono::steady_clock::now() < give_up;) {
    MPI_Iprobe(source, tag, comm, &found, &status);
    if (found != 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

/// Sends `to` a verdict as plait's failing rank announces it: blaming
/// `blamed`, saying `why`, under `verdict_tag`.
void send_failure_verdict(MPI_Comm comm, int to, int verdict_tag, int blamed, const std::string& why) {
  plait::mpi::detail::blame_message failure;
  failure.kind = plait::mpi::detail::blame_message::verdict;
  failure.peer = blamed;
  failure.set_text(why);
  MPI_Send(&failure, static_cast<int>(sizeof failure), MPI_BYTE, to, verdict_tag, comm);
}

/// Takes the failure `from` announces under `verdict_tag`, as plait's rank
/// failing inside a collective does: empty if it came, else what went wrong.
std::string take_announced_failure(MPI_Comm comm, int from, int verdict_tag) {
  MPI_Status status;
  if (!message_arrives(comm, from, verdict_tag, status)) {
    return "rank " + std::to_string(from) + " announced no failure";
  }
  plait::mpi::detail::blame_message announced;
  MPI_Recv(&announced, static_cast<int>(sizeof announced), MPI_BYTE, from, verdict_tag, comm, MPI_STATUS_IGNORE);
  if (announced.kind != plait::mpi::detail::blame_message::verdict) {
    return "rank " + std::to_string(from) + " sent something other than a verdict";
  }
  return {};
}

/// Runs `body` on a plait communicator of the first `ranks` world ranks
/// (10 s timeout) where the world has that many, and returns what it
/// returns: on every other rank, and on a smaller world, the empty string.
template <class Body>
std::string on_first_ranks(int ranks, Body&& body) {
  const int world_rank = plait_test::world_rank();
  MPI_Comm group = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank < ranks ? 0 : MPI_UNDEFINED, world_rank, &group);
  if (group == MPI_COMM_NULL) return {};
  std::string verdict;
  int size = 0;
  MPI_Comm_size(group, &size);
  if (size == ranks) {
    plait::mpi::communicator comm(group);
    comm.set_timeout(std::chrono::seconds(10));
    verdict = body(comm);
  }
  MPI_Comm_free(&group);
  return verdict;
}

template <class Algorithm>
bool gather_v_matches(plait::mpi::communicator& comm, unsigned seed, int pattern) {
  const int p = comm.size();
  const auto counts = shared_counts(p, seed, pattern, 700);
  const auto mine = plait_test::pattern_bytes(
      comm.rank(), static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]), 11);
  std::vector<std::byte> got(static_cast<std::size_t>(total(counts)));
  std::vector<std::byte> want(got.size());
  plait::all_gather_v<Algorithm>(comm, mine, got, counts);
  const auto displs = packed_displacements(counts);
  MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, want.data(), counts.data(), displs.data(),
                 MPI_BYTE, MPI_COMM_WORLD);
  return got == want;
}

template <class Algorithm>
bool exchange_v_matches(plait::mpi::communicator& comm, unsigned seed, int pattern) {
  const int p = comm.size();
  const auto row = [&](int s) { return shared_counts(p, seed + 31u * static_cast<unsigned>(s), pattern, 500); };
  const auto send_counts = row(comm.rank());
  std::vector<int> recv_counts;
  for (int s = 0; s < p; ++s) recv_counts.push_back(row(s)[static_cast<std::size_t>(comm.rank())]);
  const auto send = plait_test::pattern_bytes(comm.rank(), static_cast<std::size_t>(total(send_counts)), 12);
  std::vector<std::byte> got(static_cast<std::size_t>(total(recv_counts)));
  std::vector<std::byte> want(got.size());
  plait::all_to_all_v<Algorithm>(comm, send, send_counts, got, recv_counts);
  const auto sd = packed_displacements(send_counts);
  const auto rd = packed_displacements(recv_counts);
  MPI_Alltoallv(send.data(), send_counts.data(), sd.data(), MPI_BYTE, want.data(), recv_counts.data(), rd.data(),
                MPI_BYTE, MPI_COMM_WORLD);
  return got == want;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("mpi all_gather_v equals MPI_Allgatherv for every algorithm", "[mpi][all_gather_v]",
                        plait_test::all_gather_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  if (!plait_test::runs_on<TestType>(comm.size())) return;  // every rank skips alike
  for (int pattern = 0; pattern < 3; ++pattern) {
    for (unsigned seed = 1; seed <= 2; ++seed) {
      CAPTURE(pattern, seed);
      PLAIT_REQUIRE_ALL(gather_v_matches<TestType>(comm, seed, pattern));
    }
  }
}

TEMPLATE_LIST_TEST_CASE("mpi all_to_all_v equals MPI_Alltoallv for every algorithm", "[mpi][all_to_all_v]",
                        plait_test::all_to_all_algorithms) {
  CAPTURE(plait::algorithm_name<TestType>());  // the case is named by index
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  for (int pattern = 0; pattern < 3; ++pattern) {
    for (unsigned seed = 1; seed <= 2; ++seed) {
      CAPTURE(pattern, seed);
      PLAIT_REQUIRE_ALL(exchange_v_matches<TestType>(comm, seed, pattern));
    }
  }
}

TEST_CASE("mpi exchange_counts and a bundle all_to_all_v equal the members moved one call each",
          "[mpi][all_to_all_v][bundle]") {
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  const int p = comm.size();
  std::vector<std::int64_t> send_counts(static_cast<std::size_t>(p));
  for (int d = 0; d < p; ++d) send_counts[static_cast<std::size_t>(d)] = (comm.rank() * 3 + d) % 4;
  const std::vector<std::size_t> recv_counts = plait::exchange_counts(comm, send_counts);
  bool ok = true;
  for (int s = 0; s < p; ++s)
    ok = ok && recv_counts[static_cast<std::size_t>(s)] == static_cast<std::size_t>((s * 3 + comm.rank()) % 4);
  std::size_t sent = 0, received = 0;
  for (auto c : send_counts) sent += static_cast<std::size_t>(c);
  for (auto c : recv_counts) received += c;
  std::vector<float> out(sent * 8), lse(sent);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(comm.rank() * 100000 + static_cast<int>(i));
  for (std::size_t i = 0; i < lse.size(); ++i) lse[i] = static_cast<float>(-comm.rank() * 1000 - static_cast<int>(i));
  std::vector<float> out_a(received * 8), lse_a(received), out_b(received * 8), lse_b(received);
  using V2 = plait::tensor_view<float, 2>;
  using C2 = plait::tensor_view<const float, 2>;
  plait::all_to_all_v<plait::pairwise>(
      comm, plait::bundle(C2(out.data(), {sent, 8}), C2(lse.data(), {sent, 1})), send_counts,
      plait::bundle(V2(out_a.data(), {received, 8}), V2(lse_a.data(), {received, 1})), recv_counts);
  plait::all_to_all_v<plait::pairwise>(comm, C2(out.data(), {sent, 8}), send_counts, V2(out_b.data(), {received, 8}),
                                       recv_counts);
  plait::all_to_all_v<plait::pairwise>(comm, lse, send_counts, lse_b, recv_counts);
  PLAIT_REQUIRE_ALL(ok && out_a == out_b && lse_a == lse_b);
}

TEST_CASE("mpi all_to_all_v under direct whose counts disagree: the receiver names the sender, whose next call throws",
          "[mpi][all_to_all_v][size_probe]") {
  plait::mpi::communicator comm(MPI_COMM_WORLD);
  const int p = comm.size();
  if (p < 2) return;
  // Rank 0 sends rank 1 `k + extra` ints where rank 1 expects k; every other
  // count agrees, so rank 0 receives exactly what it expects. Large messages
  // go by rendezvous: the receiver must take them whole, or the sender hangs.
  const int extra = GENERATE(1, -1);
  const std::size_t k = GENERATE(std::size_t{4}, std::size_t{100000});
  CAPTURE(extra, k);
  comm.set_timeout(std::chrono::seconds(10));
  std::vector<std::size_t> send_counts(static_cast<std::size_t>(p), k), recv_counts(static_cast<std::size_t>(p), k);
  if (comm.rank() == 0) send_counts[1] = static_cast<std::size_t>(static_cast<long long>(k) + extra);
  std::size_t sent = 0;
  for (std::size_t c : send_counts) sent += c;
  std::vector<int> send(sent, comm.rank() + 1), recv(k * static_cast<std::size_t>(p), -1);
  // What the sender's error must say: rank 1 saw the wrong size.
  const std::string told = "rank 1 received a message of";
  std::string verdict;
  bool sender_told = false;
  try {
    plait::all_to_all_v<plait::direct>(comm, send, send_counts, recv, recv_counts);
    if (comm.rank() == 1) verdict = "the receiver of the wrong size returned normally";
  } catch (const plait::error& e) {
    const std::string what = e.what();
    if (comm.rank() == 0 && e.code() == plait::errc::size_mismatch && what.find(told) != std::string::npos) {
      sender_told = true;  // the notice came while its own wait still ran (a large message)
    } else if (comm.rank() != 1) {
      // A bystander finishes the call, unless it still waited for the sender
      // or the receiver when either failed (a rendezvous message may then be
      // abandoned): it may fail with the group instead, naming the mismatch.
      const bool names_the_cause = what.find("sent a message of") != std::string::npos ||
                                   what.find("received a message of") != std::string::npos;
      if (e.code() != plait::errc::peer_lost || !names_the_cause) {
        verdict = "rank " + std::to_string(comm.rank()) + " threw: " + what;
      }
    } else if (e.code() != plait::errc::size_mismatch) {
      verdict = "wrong code: " + what;
    } else if (what.find("rank 0 sent a message of") == std::string::npos ||
               what.find("all_to_all_v") == std::string::npos) {
      verdict = "the error does not name the sender and the call: " + what;
    } else {
      // Nothing of the mismatched message landed: block 0 is untouched.
      for (std::size_t i = 0; i < k; ++i) {
        if (recv[i] != -1) verdict = "the mismatched message was written into recv";
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // The sender's next call on the communicator throws, naming the receiver
  // (as the reason it is poisoned, if its first call threw already).
  if (comm.rank() == 0) {
    try {
      std::vector<int> mine(1, 0), all(static_cast<std::size_t>(p));
      comm.set_timeout(std::chrono::seconds(5));
      plait::all_gather<plait::ring>(comm, mine, all);
      verdict = "the sender's next call returned normally";
    } catch (const plait::error& e) {
      const std::string what = e.what();
      if (e.code() != plait::errc::size_mismatch || what.find(told) == std::string::npos) {
        verdict = std::string(sender_told ? "" : "(first call returned) ") +
                  "the sender's next call did not say rank 1 saw the wrong size: " + what;
      }
    }
  }
  if (comm.rank() == 1 && !comm.poisoned()) verdict = "the receiver is not poisoned";
  INFO("rank " << comm.rank() << ": " << verdict);
  PLAIT_REQUIRE_ALL(verdict.empty());
}

TEST_CASE(
    "mpi a sender told that its message had the wrong size and then that the group failed throws the size mismatch",
    "[mpi][all_to_all_v][size_probe]") {
  // A receiver that finds a message of the wrong size sends the sender a
  // notice, then the group its verdict. A sender's wait that reads the
  // verdict with the notice already kept or just landed must throw the
  // notice, its own error (on a loaded machine it once threw the group's
  // peer_lost instead). Here rank 1 of a two-rank communicator plays that
  // receiver by hand, on the tags plait reserves (tag_upper_bound() + 1 and
  // + 2), and never sends its own block, so rank 0's wait can end only by
  // reading the verdict.
  const std::string verdict = on_first_ranks(2, [](plait::mpi::communicator& comm) -> std::string {
    const int notice_tag = comm.tag_upper_bound() + 1;
    const int verdict_tag = comm.tag_upper_bound() + 2;
    const std::size_t k = 4;
    const MPI_Comm native = comm.native_handle();
    if (comm.rank() == 0) {
      std::vector<int> send(2 * k, 1), recv(2 * k, -1);
      const std::vector<std::size_t> counts{k, k};
      const std::string thrown =
          plait_test::expect_error([&] { plait::all_to_all_v<plait::direct>(comm, send, counts, recv, counts); },
                                   {plait::errc::size_mismatch}, -1, {"rank 1 received a message of 20 bytes"});
      return thrown.empty() ? thrown : "the sender did not throw the receiver's notice: " + thrown;
    }
    // Take rank 0's block of the call, claim it held one int too many, then
    // announce the group's failure, as plait's receiver does. Each look for
    // rank 0's messages has a deadline: a sender that fails otherwise may
    // never send them, and the test must fail, not hang.
    MPI_Status status;
    if (!message_arrives(native, 0, MPI_ANY_TAG, status)) return "rank 0 sent no block";
    std::vector<int> block(k);
    MPI_Recv(block.data(), static_cast<int>(k * sizeof(int)), MPI_BYTE, 0, status.MPI_TAG, native, MPI_STATUS_IGNORE);
    const std::array<std::int64_t, 4> notice{0, static_cast<std::int64_t>(k * sizeof(int)),
                                             static_cast<std::int64_t>((k + 1) * sizeof(int)), status.MPI_TAG};
    MPI_Send(notice.data(), static_cast<int>(sizeof notice), MPI_BYTE, 0, notice_tag, native);
    send_failure_verdict(native, 0, verdict_tag, 0, "rank 1 failed in all_to_all_v: rank 0 sent a message of 20 bytes");
    // The sender, failing inside its collective, announces it in turn.
    return take_announced_failure(native, 0, verdict_tag);
  });
  INFO("rank " << plait_test::world_rank() << ": " << verdict);
  PLAIT_REQUIRE_ALL(verdict.empty());
}

TEST_CASE(
    "mpi a receiver that saw a message of the wrong size and then that the group failed throws its own size mismatch",
    "[mpi][all_to_all_v][size_probe]") {
  // A receiver that finds a message of the wrong size tells its sender and
  // waits on for its other transfers. The sender, told, fails and announces
  // it: a receiver's wait that reads that verdict must throw the mismatch it
  // saw, its own error (in CI, at np 4, it once threw the group's peer_lost
  // instead). Ranks 0 and 2 of a three-rank communicator are played by
  // hand: rank 0 sends rank 1 one int too many and announces its failure
  // once told; rank 2 never sends its block, so rank 1's wait can end only
  // by reading the verdict.
  const std::string verdict = on_first_ranks(3, [](plait::mpi::communicator& comm) -> std::string {
    const int notice_tag = comm.tag_upper_bound() + 1;
    const int verdict_tag = comm.tag_upper_bound() + 2;
    const std::size_t k = 4;
    const MPI_Comm native = comm.native_handle();
    if (comm.rank() == 1) {
      std::vector<int> send(3 * k, 2), recv(3 * k, -1);
      const std::vector<std::size_t> counts{k, k, k};
      const std::string thrown = plait_test::expect_error(
          [&] { plait::all_to_all_v<plait::direct>(comm, send, counts, recv, counts); }, {plait::errc::size_mismatch},
          -1, {"rank 0 sent a message of 20 bytes where this rank expects 16"});
      return thrown.empty() ? thrown : "the receiver did not throw the mismatch it saw: " + thrown;
    }
    // Both take rank 1's block of the call (its tag is the call's).
    MPI_Status status;
    if (!message_arrives(native, 1, MPI_ANY_TAG, status)) return "rank 1 sent no block";
    const int call_tag = status.MPI_TAG;
    std::vector<int> block(k);
    MPI_Recv(block.data(), static_cast<int>(k * sizeof(int)), MPI_BYTE, 1, call_tag, native, MPI_STATUS_IGNORE);
    if (comm.rank() == 0) {
      const std::vector<int> longer(k + 1, 1);
      MPI_Send(longer.data(), static_cast<int>((k + 1) * sizeof(int)), MPI_BYTE, 1, call_tag, native);
      if (!message_arrives(native, 1, notice_tag, status)) return "rank 1 sent no notice of the wrong size";
      std::array<std::int64_t, 4> notice{};
      MPI_Recv(notice.data(), static_cast<int>(sizeof notice), MPI_BYTE, 1, notice_tag, native, MPI_STATUS_IGNORE);
      send_failure_verdict(native, 1, verdict_tag, 1,
                           "rank 0 failed in all_to_all_v: rank 1 received a message of 20 bytes from this rank");
    }
    // The receiver, failing inside its collective, announces it to both.
    return take_announced_failure(native, 1, verdict_tag);
  });
  INFO("rank " << plait_test::world_rank() << ": " << verdict);
  PLAIT_REQUIRE_ALL(verdict.empty());
}

// plait-test-labels: quick shm sanitize
// plait-test-timeout: 300
// The uneven collectives on the shared-memory transport: all_gather_v and
// all_to_all_v with random counts (zeros, all-zero, one rank holding
// everything), every algorithm, threads and processes, P = 1, 2, 3, 5, 8,
// 1-D ranges and tensors, checked against a serial reference; bad counts
// rejected before any byte moves.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.hpp"

using plait_test::make_value;
using plait_test::mode;

namespace {

/// Counts every rank can compute alike: `ranks` values in [0, most], from
/// `seed`; pattern 1 is all zero, pattern 2 puts everything on the last rank.
std::vector<int> counts_for(int ranks, unsigned seed, int pattern, int most = 6) {
  std::vector<int> c(static_cast<std::size_t>(ranks));
  std::mt19937 gen(seed);
  for (int& x : c) x = static_cast<int>(gen() % static_cast<unsigned>(most + 1));
  if (pattern == 1) std::fill(c.begin(), c.end(), 0);
  if (pattern == 2) {
    std::fill(c.begin(), c.end(), 0);
    c.back() = most * 3;
  }
  return c;
}

template <class T, class Algorithm>
std::string gather_v_and_check(plait::shm::communicator& comm, unsigned seed, int pattern, bool in_place) {
  const auto counts = counts_for(comm.size(), seed, pattern);
  std::vector<T> want;
  std::size_t offset = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (r == comm.rank()) offset = want.size();
    for (int i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) want.push_back(make_value<T>(r, i));
  }
  std::vector<T> mine(
      want.begin() + static_cast<std::ptrdiff_t>(offset),
      want.begin() + static_cast<std::ptrdiff_t>(offset) + counts[static_cast<std::size_t>(comm.rank())]);
  std::vector<T> all(want.size());
  if (in_place) {
    std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(offset));
    plait::all_gather_v<Algorithm>(comm, plait::in_place, all, counts);
  } else {
    plait::all_gather_v<Algorithm>(comm, mine, all, counts);
  }
  return plait_test::compare(all, want, "all_gather_v");
}

/// Block s -> d holds counts(s)[d] elements; element i is make_value(s, i, d).
template <class T, class Algorithm>
std::string exchange_v_and_check(plait::shm::communicator& comm, unsigned seed, int pattern) {
  const int p = comm.size();
  const auto row = [&](int s) { return counts_for(p, seed + 97u * static_cast<unsigned>(s), pattern); };
  const auto send_counts = row(comm.rank());
  std::vector<std::int64_t> recv_counts;
  for (int s = 0; s < p; ++s) recv_counts.push_back(row(s)[static_cast<std::size_t>(comm.rank())]);
  std::vector<T> send;
  for (int d = 0; d < p; ++d) {
    for (int i = 0; i < send_counts[static_cast<std::size_t>(d)]; ++i) send.push_back(make_value<T>(comm.rank(), i, d));
  }
  std::vector<T> want;
  for (int s = 0; s < p; ++s) {
    for (std::int64_t i = 0; i < recv_counts[static_cast<std::size_t>(s)]; ++i) {
      want.push_back(make_value<T>(s, static_cast<std::size_t>(i), comm.rank()));
    }
  }
  std::vector<T> recv(want.size());
  plait::all_to_all_v<Algorithm>(comm, send, send_counts, recv, recv_counts);
  return plait_test::compare(recv, want, "all_to_all_v");
}

template <class Algorithm>
void gather_v_case(const char* name, bool even_only = false) {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  const int pattern = GENERATE(0, 1, 2);
  const unsigned seed = GENERATE(1u, 2u);
  const bool in_place = GENERATE(false, true);
  if (even_only && ranks % 2 != 0 && ranks != 1) return;
  CAPTURE(name, plait_test::to_string(m), ranks, pattern, seed, in_place);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) {
    return gather_v_and_check<plait_test::triple, Algorithm>(comm, seed, pattern, in_place);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

template <class Algorithm>
void exchange_v_case(const char* name) {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  const int pattern = GENERATE(0, 1, 2);
  const unsigned seed = GENERATE(1u, 2u);
  CAPTURE(name, plait_test::to_string(m), ranks, pattern, seed);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& comm) {
    return exchange_v_and_check<std::uint16_t, Algorithm>(comm, seed, pattern);
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

}  // namespace

TEST_CASE("all_gather_v with ring matches the serial reference", "[all_gather_v][ring]") {
  gather_v_case<plait::ring>("ring");
}
TEST_CASE("all_gather_v with tree matches the serial reference", "[all_gather_v][tree]") {
  gather_v_case<plait::tree>("tree");
}
TEST_CASE("all_gather_v with pairwise matches the serial reference", "[all_gather_v][pairwise]") {
  gather_v_case<plait::pairwise>("pairwise");
}
TEST_CASE("all_gather_v with bruck matches the serial reference", "[all_gather_v][bruck]") {
  gather_v_case<plait::bruck>("bruck");
}
TEST_CASE("all_gather_v with recursive doubling matches the serial reference", "[all_gather_v][recursive_doubling]") {
  gather_v_case<plait::recursive_doubling>("recursive_doubling");
}
TEST_CASE("all_gather_v with direct matches the serial reference", "[all_gather_v][direct]") {
  gather_v_case<plait::direct>("direct");
}
TEST_CASE("all_gather_v with neighbor exchange matches the serial reference on even P",
          "[all_gather_v][neighbor_exchange]") {
  gather_v_case<plait::neighbor_exchange>("neighbor_exchange", true);
}
TEST_CASE("all_gather_v with automatic matches the serial reference", "[all_gather_v][automatic]") {
  gather_v_case<plait::automatic>("automatic");
}

TEST_CASE("all_to_all_v with ring matches the serial reference", "[all_to_all_v][ring]") {
  exchange_v_case<plait::ring>("ring");
}
TEST_CASE("all_to_all_v with pairwise matches the serial reference", "[all_to_all_v][pairwise]") {
  exchange_v_case<plait::pairwise>("pairwise");
}
TEST_CASE("all_to_all_v with bruck matches the serial reference", "[all_to_all_v][bruck]") {
  exchange_v_case<plait::bruck>("bruck");
}
TEST_CASE("all_to_all_v with direct matches the serial reference", "[all_to_all_v][direct]") {
  exchange_v_case<plait::direct>("direct");
}
TEST_CASE("all_to_all_v with automatic matches the serial reference", "[all_to_all_v][automatic]") {
  exchange_v_case<plait::automatic>("automatic");
}

TEST_CASE("v forms on more ranks than a call's counts hold in place match the serial reference",
          "[all_gather_v][all_to_all_v]") {
  // A call reads its counts into storage for 16 ranks, and onto the heap
  // beyond (layout/counts.hpp): 17 and 20 ranks take the heap, threads only
  // (20 processes on 2 cores add time, not code).
  const int ranks = GENERATE(17, 20);
  const int pattern = GENERATE(0, 2);
  const bool in_place = GENERATE(false, true);
  CAPTURE(ranks, pattern, in_place);
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& comm) {
    std::string verdict = gather_v_and_check<plait_test::triple, plait::automatic>(comm, 3u, pattern, in_place);
    if (!in_place) {  // all_to_all_v has no in-place form: once per pattern
      verdict += exchange_v_and_check<std::uint16_t, plait::automatic>(comm, 3u, pattern) +
                 exchange_v_and_check<std::uint16_t, plait::pairwise>(comm, 4u, pattern);
    }
    return verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("all_gather_v along dimension 1 of a tensor gathers columns of different widths", "[all_gather_v][along]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 3, 4);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    const auto counts = counts_for(comm.size(), 5u, 0, 4);
    const std::size_t rows = 3;
    std::size_t total = 0;
    std::size_t offset = 0;
    for (int r = 0; r < comm.size(); ++r) {
      if (r == comm.rank()) offset = total;
      total += static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
    }
    const auto width = static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]);
    std::vector<double> mine(rows * width);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < width; ++j) mine[i * width + j] = make_value<double>(comm.rank(), i * 100 + j);
    }
    std::vector<double> all(rows * total);
    plait::all_gather_v<plait::ring, plait::along<1>>(comm,
                                                      plait::tensor_view<const double, 2>(mine.data(), {rows, width}),
                                                      plait::tensor_view<double, 2>(all.data(), {rows, total}), counts);
    std::size_t column = 0;
    for (int r = 0; r < comm.size(); ++r) {
      for (int j = 0; j < counts[static_cast<std::size_t>(r)]; ++j, ++column) {
        for (std::size_t i = 0; i < rows; ++i) {
          if (all[i * total + column] != make_value<double>(r, i * 100 + static_cast<std::size_t>(j))) {
            return "element (" + std::to_string(i) + ", " + std::to_string(column) + ") is wrong";
          }
        }
      }
    }
    (void)offset;
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("all_to_all_v with redistribute<1, 0> moves uneven sequence shards to uneven head groups",
          "[all_to_all_v][redistribute]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    // Rank i holds rows[i] sequence positions of every head; rank j gets
    // heads[j] heads of every position. Send [rows[i], H] -> recv [S, heads[j]].
    const int p = comm.size();
    auto rows = counts_for(p, 11u, 0, 3);
    auto heads = counts_for(p, 12u, 0, 3);
    const auto me = static_cast<std::size_t>(comm.rank());
    std::size_t h_total = 0, s_total = 0, h_offset = 0;
    for (int r = 0; r < p; ++r) {
      if (static_cast<std::size_t>(r) == me) h_offset = h_total;
      h_total += static_cast<std::size_t>(heads[static_cast<std::size_t>(r)]);
      s_total += static_cast<std::size_t>(rows[static_cast<std::size_t>(r)]);
    }
    const auto my_rows = static_cast<std::size_t>(rows[me]);
    const auto my_heads = static_cast<std::size_t>(heads[me]);
    std::vector<std::int32_t> send(my_rows * h_total);
    for (std::size_t s = 0; s < my_rows; ++s) {
      for (std::size_t h = 0; h < h_total; ++h)
        send[s * h_total + h] = make_value<std::int32_t>(comm.rank(), s * 1000 + h);
    }
    std::vector<std::int32_t> recv(s_total * my_heads);
    plait::all_to_all_v<plait::pairwise, plait::redistribute<1, 0>>(
        comm, plait::tensor_view<const std::int32_t, 2>(send.data(), {my_rows, h_total}), heads,
        plait::tensor_view<std::int32_t, 2>(recv.data(), {s_total, my_heads}), rows);
    std::size_t row = 0;
    for (int r = 0; r < p; ++r) {
      for (int s = 0; s < rows[static_cast<std::size_t>(r)]; ++s, ++row) {
        for (std::size_t h = 0; h < my_heads; ++h) {
          if (recv[row * my_heads + h] !=
              make_value<std::int32_t>(r, static_cast<std::size_t>(s) * 1000 + h_offset + h)) {
            return "recv (" + std::to_string(row) + ", " + std::to_string(h) + ") is wrong";
          }
        }
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("exchange_counts returns what every rank sends this one", "[exchange_counts]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    std::vector<short> send(static_cast<std::size_t>(comm.size()));
    for (int d = 0; d < comm.size(); ++d) send[static_cast<std::size_t>(d)] = static_cast<short>(comm.rank() * 10 + d);
    const std::vector<std::size_t> got = plait::exchange_counts(comm, send);
    for (int s = 0; s < comm.size(); ++s) {
      if (got[static_cast<std::size_t>(s)] != static_cast<std::size_t>(s * 10 + comm.rank())) {
        return "count from rank " + std::to_string(s) + " is " + std::to_string(got[static_cast<std::size_t>(s)]);
      }
    }
    if (comm.bytes_sent() != 8u * static_cast<std::size_t>(comm.size() - 1)) return "bytes_sent is not the payload";
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("an exchange_counts that times out names exchange_counts, the call the user made", "[exchange_counts]") {
  // Rank 1 never calls (alive, so it is absent rather than lost); rank 0's
  // timeout is raised inside the all-to-all that exchange_counts runs.
  using namespace std::chrono_literals;
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [](plait::shm::communicator& comm) -> std::string {
    if (comm.rank() == 1) {
      std::this_thread::sleep_for(600ms);
      return {};
    }
    comm.set_timeout(150ms);
    const std::vector<int> send{1, 2};
    try {
      (void)plait::exchange_counts(comm, send);
      return "returned";
    } catch (const plait::error& e) {
      if (e.code() != plait::errc::timeout) return std::string("wrong code: ") + e.what();
      if (e.operation().rfind("exchange_counts", 0) != 0)
        return std::string("does not name exchange_counts: ") + e.what();
      if (e.rank() != 0) return std::string("wrong rank: ") + e.what();
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {
/// Runs `call` on every rank and expects `code` with `text` in the message,
/// and recv (filled with 7s) untouched.
template <class Call>
std::string expect_refused(plait::shm::communicator& comm, plait::errc code, const std::string& text, Call&& call) {
  std::vector<int> recv(64, 7);
  try {
    call(recv);
  } catch (const plait::error& e) {
    if (e.value() != code) return std::string("wrong code: ") + e.what();
    if (std::string(e.what()).find(text) == std::string::npos)
      return std::string("message lacks '") + text + "': " + e.what();
    for (int x : recv) {
      if (x != 7) return "recv was written before the error";
    }
    (void)comm;
    return {};
  }
  return "no error";
}
}  // namespace

TEST_CASE("bad counts are refused before any byte moves", "[all_gather_v][all_to_all_v][bad_input]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) -> std::string {
    std::vector<int> send(2, 1);
    std::string out;
    out += expect_refused(comm, plait::errc::invalid_argument, "holds 2 counts", [&](std::vector<int>& recv) {
      plait::all_gather_v<plait::ring>(comm, send, std::span(recv.data(), 6), std::vector<int>{2, 4});
    });
    out += expect_refused(comm, plait::errc::invalid_argument, "must not be negative", [&](std::vector<int>& recv) {
      plait::all_gather_v<plait::ring>(comm, send, std::span(recv.data(), 6), std::vector<int>{2, -2, 6});
    });
    out += expect_refused(comm, plait::errc::size_mismatch, "add up to", [&](std::vector<int>& recv) {
      plait::all_gather_v<plait::ring>(comm, send, std::span(recv.data(), 7), std::vector<int>{2, 2, 2});
    });
    out += expect_refused(comm, plait::errc::size_mismatch, "recv_counts[", [&](std::vector<int>& recv) {
      plait::all_gather_v<plait::ring>(comm, std::span(send.data(), 1), std::span(recv.data(), 6),
                                       std::vector<int>{2, 2, 2});
    });
    // Contiguous ranges take their own plan (byte spans, no tensor boxes): the same checks.
    out += expect_refused(comm, plait::errc::size_mismatch, "add up to", [&](std::vector<int>& recv) {
      plait::all_gather_v<plait::ring>(comm, plait::in_place, std::span(recv.data(), 7), std::vector<int>{2, 2, 2});
    });
    out +=
        expect_refused(comm, plait::errc::invalid_argument, "send and recv views overlap", [&](std::vector<int>& recv) {
          plait::all_gather_v<plait::ring>(comm, std::span(recv.data() + 2, 2), std::span(recv.data(), 6),
                                           std::vector<int>{2, 2, 2});
        });
    out += expect_refused(comm, plait::errc::invalid_argument, "overflow", [&](std::vector<int>& recv) {
      const std::uint64_t huge = ~std::uint64_t{0} / 2;
      plait::all_gather_v<plait::ring>(comm, send, std::span(recv.data(), 6),
                                       std::vector<std::uint64_t>{huge, huge, huge});
    });
    out += expect_refused(comm, plait::errc::size_mismatch, "send_counts add up to", [&](std::vector<int>& recv) {
      plait::all_to_all_v<plait::pairwise>(comm, send, std::vector<int>{1, 1, 1}, std::span(recv.data(), 3),
                                           std::vector<int>{1, 1, 1});
    });
    out += expect_refused(comm, plait::errc::invalid_argument, "must not be negative", [&](std::vector<int>& recv) {
      plait::all_to_all_v<plait::pairwise>(comm, send, std::vector<long>{1, 1, 0}, std::span(recv.data(), 2),
                                           std::vector<long>{1, -1, 2});
    });
    // all_to_all_v of ranges plans on byte spans too: its other checks.
    out += expect_refused(comm, plait::errc::size_mismatch, "recv_counts add up to", [&](std::vector<int>& recv) {
      plait::all_to_all_v<plait::pairwise>(comm, send, std::vector<int>{1, 1, 0}, std::span(recv.data(), 3),
                                           std::vector<int>{1, 1, 0});
    });
    out += expect_refused(comm, plait::errc::size_mismatch, "sends itself 2 elements", [&](std::vector<int>& recv) {
      std::vector<int> to_self(3, 0), from_self(3, 0);
      to_self[static_cast<std::size_t>(comm.rank())] = 2;
      from_self[static_cast<std::size_t>(comm.rank())] = 1;
      plait::all_to_all_v<plait::pairwise>(comm, send, to_self, std::span(recv.data(), 1), from_self);
    });
    out +=
        expect_refused(comm, plait::errc::invalid_argument, "send and recv views overlap", [&](std::vector<int>& recv) {
          plait::all_to_all_v<plait::pairwise>(comm, std::span<const int>(recv.data() + 1, 2),
                                               std::vector<int>{1, 1, 0}, std::span(recv.data(), 2),
                                               std::vector<int>{1, 1, 0});
        });
    return out;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("counts that disagree between ranks fail on every rank before any payload moves",
          "[all_to_all_v][bad_input]") {
  // Rank 0 says it sends 2 elements to rank 1; rank 1 expects 3 from rank 0.
  // ring needs every block's size, so the count exchange runs and catches it
  // everywhere; pairwise in check mode does the same.
  const bool check = GENERATE(false, true);
  CAPTURE(check);
  const auto verdicts = plait_test::run_ranks(mode::threads, 2, [&](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(check);
    comm.set_timeout(std::chrono::seconds(20));  // a hang fails fast
    const std::vector<int> send_counts = comm.rank() == 0 ? std::vector<int>{1, 2} : std::vector<int>{3, 1};
    const std::vector<int> recv_counts = comm.rank() == 0 ? std::vector<int>{1, 3} : std::vector<int>{3, 1};
    std::vector<int> send(comm.rank() == 0 ? 3 : 4, 5);
    return expect_refused(comm, plait::errc::size_mismatch, "disagree", [&](std::vector<int>& recv) {
      const auto in = std::span(recv.data(), 4);
      if (check) {
        plait::all_to_all_v<plait::pairwise>(comm, send, send_counts, in, recv_counts);
      } else {
        plait::all_to_all_v<plait::ring>(comm, send, send_counts, in, recv_counts);
      }
    });
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("automatic all_to_all_v on two ranks runs no count exchange", "[all_to_all_v][automatic]") {
  // On two ranks every block goes straight from its source to its
  // destination and automatic's choice does not depend on the block sizes,
  // so the exchange (a collective of its own: one more tag, one more
  // message's latency) would buy nothing. Check mode still runs it.
  const mode m = GENERATE(mode::threads, mode::processes);
  const bool check = GENERATE(false, true);
  CAPTURE(plait_test::to_string(m), check);
  const auto verdicts = plait_test::run_ranks(m, 2, [&](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(check);
    const std::vector<int> send_counts = comm.rank() == 0 ? std::vector<int>{1, 2} : std::vector<int>{3, 4};
    const std::vector<int> recv_counts = comm.rank() == 0 ? std::vector<int>{1, 3} : std::vector<int>{2, 4};
    std::vector<int> send(comm.rank() == 0 ? 3 : 7), recv(comm.rank() == 0 ? 4 : 6);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = comm.rank() * 100 + static_cast<int>(i);
    const int before = comm.next_tag();
    plait::all_to_all_v(comm, send, send_counts, recv, recv_counts);
    const int tags = comm.next_tag() - before - 1;  // the call's own tags
    const std::vector<int> want =
        comm.rank() == 0 ? std::vector<int>{0, 100, 101, 102} : std::vector<int>{1, 2, 103, 104, 105, 106};
    std::string v = plait_test::compare(recv, want, "recv");
    // One tag for the collective; check mode adds the signature's and the counts'.
    const int expected = check ? 3 : 1;
    if (tags != expected) v += "the call took " + std::to_string(tags) + " tags, expected " + std::to_string(expected);
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("bytes_sent of all_to_all_v counts the payload, not the count exchange", "[all_to_all_v][bytes_sent]") {
  // ring needs the count exchange, check mode adds the signature exchange:
  // neither is payload.
  const bool check = GENERATE(false, true);
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [&](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(check);
    const std::vector<int> counts{1, 2, 3};  // every rank sends d + 1 elements to rank d
    std::vector<int> recv_counts(3, comm.rank() + 1);
    std::vector<int> send(6), recv(static_cast<std::size_t>(3 * (comm.rank() + 1)));
    plait::all_to_all_v<plait::pairwise>(comm, send, counts, recv, recv_counts);
    const std::uint64_t want = 4u * (6u - static_cast<unsigned>(comm.rank() + 1));  // every block but its own
    if (comm.bytes_sent() != want) {
      return "bytes_sent " + std::to_string(comm.bytes_sent()) + " != payload " + std::to_string(want);
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a bundle of a float output and a float LSE all-to-all equals the two moved one call each",
          "[bundle][all_to_all]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    const auto p = static_cast<std::size_t>(comm.size());
    const std::size_t tokens = 3, heads = 2, dim = 4;  // per destination: out [tokens, heads, dim], lse [tokens, heads]
    std::vector<float> out(p * tokens * heads * dim), lse(p * tokens * heads);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = make_value<float>(comm.rank(), i, 1);
    for (std::size_t i = 0; i < lse.size(); ++i) lse[i] = make_value<float>(comm.rank(), i, 2);
    std::vector<float> out_a(out.size()), lse_a(lse.size()), out_b(out.size()), lse_b(lse.size());
    const std::uint64_t before = comm.bytes_sent();
    plait::all_to_all<plait::pairwise>(comm, plait::bundle(out, lse), plait::bundle(out_a, lse_a));
    const std::uint64_t bundled = comm.bytes_sent() - before;
    plait::all_to_all<plait::pairwise>(comm, out, out_b);
    plait::all_to_all<plait::pairwise>(comm, lse, lse_b);
    const std::uint64_t separate = comm.bytes_sent() - before - bundled;
    std::string v = plait_test::compare(out_a, out_b, "out") + plait_test::compare(lse_a, lse_b, "lse");
    if (bundled != separate)
      v += "a bundle sent " + std::to_string(bundled) + " bytes, two calls " + std::to_string(separate);
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_TEST_CASE("a bundle of uint8 data and uint8 scales all-gathers like two calls", "[bundle][all_gather]",
                   plait::ring, plait::bruck, plait::recursive_doubling, plait::direct, plait::automatic) {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    const auto p = static_cast<std::size_t>(comm.size());
    std::vector<std::uint8_t> q(64), scales(4);  // 16 values per scale
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = make_value<std::uint8_t>(comm.rank(), i, 3);
    for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = make_value<std::uint8_t>(comm.rank(), i, 4);
    std::vector<std::uint8_t> q_a(64 * p), s_a(4 * p), q_b(64 * p), s_b(4 * p);
    plait::all_gather<TestType>(comm, plait::bundle(q, scales), plait::bundle(q_a, s_a));
    plait::all_gather<TestType>(comm, q, q_b);
    plait::all_gather<TestType>(comm, scales, s_b);
    return plait_test::compare(q_a, q_b, "data") + plait_test::compare(s_a, s_b, "scales");
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEMPLATE_TEST_CASE("bundles of the v forms equal their members moved one call each",
                   "[bundle][all_gather_v][all_to_all_v]", plait::ring, plait::pairwise, plait::bruck, plait::direct,
                   plait::automatic) {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5, 8);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [](plait::shm::communicator& comm) -> std::string {
    const int p = comm.size();
    const auto row = [&](int s) { return counts_for(p, 31u + 7u * static_cast<unsigned>(s), 0, 4); };
    const auto send_counts = row(comm.rank());
    std::vector<int> recv_counts;
    for (int s = 0; s < p; ++s) recv_counts.push_back(row(s)[static_cast<std::size_t>(comm.rank())]);
    int sent = 0, received = 0;
    for (int c : send_counts) sent += c;
    for (int c : recv_counts) received += c;
    // Tokens [n, 3] of doubles and their [n] int16 weights.
    std::vector<double> tok(static_cast<std::size_t>(sent) * 3);
    std::vector<std::int16_t> w(static_cast<std::size_t>(sent));
    for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = make_value<double>(comm.rank(), i, 5);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = make_value<std::int16_t>(comm.rank(), i, 6);
    const auto r = static_cast<std::size_t>(received);
    std::vector<double> tok_a(r * 3), tok_b(r * 3);
    std::vector<std::int16_t> w_a(r), w_b(r);
    using T2 = plait::tensor_view<double, 2>;
    using C2 = plait::tensor_view<const double, 2>;
    using T1 = plait::tensor_view<std::int16_t, 1>;
    using C1 = plait::tensor_view<const std::int16_t, 1>;
    const auto s_n = static_cast<std::size_t>(sent);
    plait::all_to_all_v<TestType>(comm, plait::bundle(C2(tok.data(), {s_n, 3}), C1(w.data(), {s_n})), send_counts,
                                  plait::bundle(T2(tok_a.data(), {r, 3}), T1(w_a.data(), {r})), recv_counts);
    plait::all_to_all_v<TestType>(comm, C2(tok.data(), {s_n, 3}), send_counts, T2(tok_b.data(), {r, 3}), recv_counts);
    plait::all_to_all_v<TestType>(comm, w, send_counts, w_b, recv_counts);
    std::string v = plait_test::compare(tok_a, tok_b, "tokens") + plait_test::compare(w_a, w_b, "weights");
    // all_gather_v of the same shapes, counts = every rank's total sent.
    std::vector<int> totals;
    for (int s = 0; s < p; ++s) {
      int t = 0;
      for (int c : row(s)) t += c;
      totals.push_back(t);
    }
    std::size_t all = 0;
    for (int t : totals) all += static_cast<std::size_t>(t);
    std::vector<double> g_a(all * 3), g_b(all * 3);
    std::vector<std::int16_t> gw_a(all), gw_b(all);
    plait::all_gather_v<TestType>(comm, plait::bundle(C2(tok.data(), {s_n, 3}), C1(w.data(), {s_n})),
                                  plait::bundle(T2(g_a.data(), {all, 3}), T1(gw_a.data(), {all})), totals);
    plait::all_gather_v<TestType>(comm, C2(tok.data(), {s_n, 3}), T2(g_b.data(), {all, 3}), totals);
    plait::all_gather_v<TestType>(comm, w, gw_b, totals);
    return v + plait_test::compare(g_a, g_b, "gathered tokens") + plait_test::compare(gw_a, gw_b, "gathered weights");
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("check mode catches ranks that pass all_gather_v different counts", "[all_gather_v][check]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    comm.set_timeout(std::chrono::seconds(20));
    // Every rank's own count agrees with its send, but rank 2 believes rank 0
    // sends 2 elements and rank 1 none: the same total, other offsets.
    const std::vector<int> counts = comm.rank() == 2 ? std::vector<int>{2, 0, 2} : std::vector<int>{1, 1, 2};
    std::vector<int> send(static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]), comm.rank());
    return expect_refused(comm, plait::errc::size_mismatch, "disagree", [&](std::vector<int>& recv) {
      plait::all_gather_v<plait::ring>(comm, send, std::span(recv.data(), 4), counts);
    });
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

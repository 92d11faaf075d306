// A user-defined algorithm, written outside the library: a radix-k Bruck
// all-gather. It is only a schedule — which blocks go to and come from which
// peer in each step — so plait::verify proves it correct at compile time, and
// the library's executor runs it on any transport with no other code.
//
// Radix k: before round j a rank r holds the blocks r, r+1, ..., r+h-1 (mod P)
// with h = min(k^j, P). In round j it sends them to r - m·k^j and receives as
// many from r + m·k^j, for m = 1 .. k-1, all in one step: ceil(log_k P) steps
// of 2(k-1) messages each, versus ceil(lg P) steps of 2 for radix 2.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <plait/algorithm/verify.hpp>
#include <plait/plait.hpp>

/// Radix-k Bruck all-gather (k >= 2).
template <int K>
struct radix_bruck {
  static_assert(K >= 2, "radix_bruck needs a radix of at least 2");
  using algorithm_concept = plait::algorithm_tag;  // opts in as an algorithm
  static constexpr std::string_view name = "radix_bruck";

  static constexpr plait::schedule plan(plait::op::all_gather, int rank, int size) {
    plait::schedule s;
    for (int dist = 1; dist < size; dist *= K) {
      plait::step& round = s.next_step();
      for (int m = 1; m < K && m * dist < size; ++m) {
        // A peer at distance m·dist fills the gap [m·dist, m·dist + dist) ahead of us.
        const int count = dist < size - m * dist ? dist : size - m * dist;
        const int to = ((rank - m * dist) % size + size) % size;
        const int from = (rank + m * dist) % size;
        std::vector<int> out;
        std::vector<int> in;
        for (int i = 0; i < count; ++i) {
          out.push_back((rank + i) % size);
          in.push_back((from + i) % size);
        }
        round.send(to, std::move(out)).recv(from, std::move(in));
      }
    }
    return s;
  }
};

using my_algorithm = radix_bruck<3>;

// Proven at compile time for a few group sizes, powers of the radix or not.
static_assert(plait::verify<my_algorithm, plait::op::all_gather>(1));
static_assert(plait::verify<my_algorithm, plait::op::all_gather>(2));
static_assert(plait::verify<my_algorithm, plait::op::all_gather>(7));
static_assert(plait::verify<my_algorithm, plait::op::all_gather>(9));
static_assert(plait::verify<radix_bruck<4>, plait::op::all_gather>(10));
// The same proof, but a broken schedule would stop the compiler with the rule,
// rank, step, peer and block it broke instead of "static assertion failed".
static_assert(plait::verify_or_explain<my_algorithm, plait::op::all_gather, 8>());
static_assert(my_algorithm::plan(plait::op::all_gather{}, 0, 9).steps.size() == 2);  // log_3 9

int main() {
  int failures = 0;
  try {
    // Larger groups are checked at run time; verify_report says what is wrong, if anything.
    for (int p = 1; p <= 40; ++p) {
      const std::string report = plait::verify_report<my_algorithm, plait::op::all_gather>(p);
      if (!report.empty()) {
        std::printf("radix_bruck<3> is wrong on %d ranks: %s\n", p, report.c_str());
        ++failures;
      }
    }
    for (int p : {1, 4, 7}) {
      const std::size_t n = 1000;  // elements per shard
      plait::shm::run_threads(p, [&](plait::shm::communicator& comm) {
        std::vector<std::uint32_t> shard(n);
        for (std::size_t i = 0; i < n; ++i) shard[i] = static_cast<std::uint32_t>(comm.rank() * 100000 + i);
        std::vector<std::uint32_t> all(n * static_cast<std::size_t>(comm.size()));
        plait::all_gather<my_algorithm>(comm, shard, all);
        for (std::size_t j = 0; j < all.size(); ++j) {
          if (all[j] != static_cast<std::uint32_t>((j / n) * 100000 + j % n)) {
            throw std::runtime_error("rank " + std::to_string(comm.rank()) + ": wrong element " + std::to_string(j));
          }
        }
      });
      std::printf("radix_bruck<3> all-gather on %d shm ranks: correct\n", p);
    }
  } catch (const std::exception& e) {
    std::printf("failed: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}

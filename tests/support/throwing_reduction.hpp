// A rank's part in a reduction whose user reduction throws on one rank, on
// any transport (op/abandon.hpp) and on two levels of any transports
// (op/abandon_levels.hpp): that rank gets its own exception and finds its
// communicator unusable; the others fail naming it, in that call or (where
// nothing they needed came after its throw: a reduce_scatter, the one-round
// all-reduce) in their next. Ranks return verdicts ("" when all holds).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <plait/plait.hpp>

#include "expect_error.hpp"

namespace plait_test {

/// The rank whose reduction throws.
inline constexpr int throwing_rank = 1;

/// "" when `call` ends in the thrower's own exception, as thrown.
template <class Call>
std::string refused_by_own_reduction(Call&& call) {
  try {
    call();
    return "the call went through";
  } catch (const plait::error& e) {
    return std::string("a plait::error instead of the reduction's own exception: ") + e.what();
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()) != "the reduction refuses") return std::string("another exception: ") + e.what();
  }
  return {};
}

/// One rank's call (`form`: 0 all_reduce, 1 reduce_scatter, 2 iall_reduce;
/// `block` elements a rank) and its next, judged as above.
template <class Comm>
std::string abandoned_by_a_throwing_reduction(Comm& comm, std::size_t block, int form) {
  const auto refusing_sum = plait::reduction(
      [me = comm.rank()](std::int32_t a, std::int32_t b) {
        if (me == throwing_rank) throw std::runtime_error("the reduction refuses");
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
      },
      plait::associative, plait::commutative);
  const std::size_t n = block * static_cast<std::size_t>(comm.size());
  std::vector<std::int32_t> send(n, comm.rank() + 1);
  std::vector<std::int32_t> recv(n, 0);
  std::vector<std::int32_t> part(block, 0);
  const auto call = [&] {
    if (form == 0) {
      plait::all_reduce(comm, send, recv, refusing_sum);
    } else if (form == 1) {
      plait::reduce_scatter(comm, send, part, refusing_sum);
    } else {
      auto request = plait::iall_reduce(comm, send, recv, refusing_sum);
      request.wait();
    }
  };
  const auto next_call = [&] { plait::all_reduce(comm, send, recv, plait::sum{}); };
  if (comm.rank() == throwing_rank) {
    std::string verdict = refused_by_own_reduction(call);
    if (!verdict.empty()) return verdict;
    return expect_error(next_call, {plait::errc::invalid_argument}, -1,
                        {"unusable", "own code threw mid-call", "the reduction refuses"});
  }
  const std::string named = "rank " + std::to_string(throwing_rank);
  std::string verdict = expect_error(call, {plait::errc::peer_lost}, throwing_rank,
                                     {named, "own code threw mid-call", "the reduction refuses"});
  if (verdict == "the call went through") {
    verdict = expect_error(next_call, {plait::errc::peer_lost}, throwing_rank, {named, "the reduction refuses"});
  }
  return verdict;
}

/// One rank's part in a reduction on two levels whose user reduction throws
/// on rank `thrower` (`form`: 0 all_reduce, 1 reduce_scatter, 2 iall_reduce):
/// that rank gets its own exception and finds a level unusable; every other
/// rank, on either node, fails blaming it (peer()) and quoting the cause, in
/// that call or, where nothing it needed came after the throw, in its next;
/// none waits for its timeout (op/abandon_levels.hpp).
template <class Levels>
std::string left_by_a_throwing_reduction(Levels& levels, int thrower, bool commutative, int form) {
  levels.intra().set_timeout(std::chrono::seconds(60));  // the peers must not need it
  levels.inter().set_timeout(std::chrono::seconds(60));
  const int me = levels.rank();
  const auto refusing_sum = [me, thrower](std::int32_t a, std::int32_t b) {
    if (me == thrower) throw std::runtime_error("the reduction refuses");
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
  };
  const std::size_t block = 300;  // past the one-round all-reduce: every rank needs every other's bytes
  const std::size_t n = block * static_cast<std::size_t>(levels.size());
  std::vector<std::int32_t> send(n, me + 1);
  std::vector<std::int32_t> recv(n, 0);
  std::vector<std::int32_t> part(block, 0);
  const auto call_with = [&]<class Algorithm>(Algorithm, const auto& reduction) {
    if (form == 0) {
      plait::all_reduce<Algorithm>(levels, send, recv, reduction);
    } else if (form == 1) {
      plait::reduce_scatter<Algorithm>(levels, send, part, reduction);
    } else {
      auto request = plait::iall_reduce<Algorithm>(levels, send, recv, reduction);
      request.wait();
    }
  };
  const auto call = [&] {
    if (commutative) {
      call_with(plait::hierarchical<plait::ring, plait::ring>{},
                plait::reduction(refusing_sum, plait::associative, plait::commutative));
    } else {
      call_with(plait::hierarchical<plait::tree, plait::recursive_doubling>{},
                plait::reduction(refusing_sum, plait::associative));
    }
  };
  const auto next_call = [&] {
    plait::all_reduce<plait::hierarchical<plait::ring, plait::ring>>(levels, send, recv, plait::sum{});
  };
  const auto start = std::chrono::steady_clock::now();
  std::string verdict;
  if (me == thrower) {
    verdict = refused_by_own_reduction(call);
    if (verdict.empty()) {
      verdict = expect_error(next_call, {plait::errc::invalid_argument}, -1,
                             {"unusable", "own code threw mid-call", "the reduction refuses"});
    }
  } else {
    verdict = expect_error(call, {plait::errc::peer_lost}, thrower, {"the reduction refuses"});
    if (verdict == "the call went through") {
      verdict = expect_error(next_call, {plait::errc::peer_lost}, thrower, {"the reduction refuses"});
    }
  }
  const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (verdict.empty() && waited > 20) verdict = "learned of it after " + std::to_string(waited) + " s";
  return verdict;
}

}  // namespace plait_test

// A rank's part in a reduction whose user reduction throws on rank 1, on any
// transport (op/abandon.hpp): that rank gets its own exception and finds its
// communicator unusable; the others fail naming it, in that call or (where
// nothing they needed came after its throw: a reduce_scatter, the one-round
// all-reduce) in their next. Ranks return verdicts ("" when all holds).
#pragma once

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
    try {
      call();
      return "the call went through";
    } catch (const plait::error& e) {
      return std::string("a plait::error instead of the reduction's own exception: ") + e.what();
    } catch (const std::runtime_error& e) {
      if (std::string(e.what()) != "the reduction refuses") return std::string("another exception: ") + e.what();
    }
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

}  // namespace plait_test

// plait-test-labels: quick shm sanitize
// Send buffers in flight: a send buffer may change only once its collective
// has completed (wait() returned, or test() returned true). In check mode a
// change between the post (a persistent collective's start()) and the
// completion is an invalid_argument naming the buffer (the member of a
// bundle), the rank and the call; unchanged buffers never fail, and without
// check mode nothing is compared. The ranks are processes: a changed buffer
// is a data race with the peers that read it (what the check reports), which
// ThreadSanitizer would rightly flag between threads.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "support/harness.hpp"

using namespace std::chrono_literals;
using plait_test::mode;

namespace {
/// The call must throw invalid_argument with every one of `words` in its message.
std::string expect_changed(const std::function<void()>& call, const std::vector<std::string>& words) {
  try {
    call();
    return "the change went unnoticed";
  } catch (const plait::error& e) {
    if (e.code() != plait::errc::invalid_argument) return std::string("wrong code: ") + e.what();
    for (const auto& w : words) {
      if (std::string(e.what()).find(w) == std::string::npos) return "message lacks '" + w + "': " + e.what();
    }
  }
  return {};
}

std::string rank_words(const plait::shm::communicator& comm) { return "rank " + std::to_string(comm.rank()); }
}  // namespace

TEST_CASE("a send buffer changed while an iall_gather is in flight fails its wait in check mode, naming it",
          "[send_buffers][nonblocking]") {
  const int n = GENERATE(16, 1 << 16);
  CAPTURE(n);
  const auto verdicts = plait_test::run_ranks(mode::processes, 3, [n](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    comm.set_timeout(10s);
    std::vector<int> mine(static_cast<std::size_t>(n), comm.rank());
    std::vector<int> all(mine.size() * 3);
    auto request = plait::iall_gather<plait::ring>(comm, mine, all);
    mine[static_cast<std::size_t>(n) / 2] = -1;
    const std::string verdict = expect_changed(
        [&] { request.wait(); }, {rank_words(comm), "all_gather<ring>", "send (", "changed while the collective"});
    if (!verdict.empty()) return verdict;
    request.wait();  // reported once: the request is complete
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a bundle member changed during an iall_to_all is named by its index when test() completes",
          "[send_buffers][nonblocking]") {
  const auto verdicts = plait_test::run_ranks(mode::processes, 2, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    comm.set_timeout(10s);
    std::vector<int> a(4, comm.rank());
    std::vector<double> b(6, comm.rank());
    std::vector<int> ra(4);
    std::vector<double> rb(6);
    auto request = plait::iall_to_all<plait::pairwise>(comm, plait::bundle(a, b), plait::bundle(ra, rb));
    b[0] = 42.0;
    return expect_changed(
        [&] {
          while (!request.test()) {
          }
        },
        {rank_words(comm), "all_to_all<pairwise>", "send member 1 of the bundle"});
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a send buffer changed during an iall_to_all_v or an iall_reduce fails in check mode",
          "[send_buffers][nonblocking]") {
  const auto verdicts = plait_test::run_ranks(mode::processes, 2, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    comm.set_timeout(10s);
    const std::vector<int> counts{2, 3};
    std::vector<int> out(5, comm.rank());
    std::vector<int> in(static_cast<std::size_t>(2 * counts[static_cast<std::size_t>(comm.rank())]));
    const std::vector<int> recv_counts(2, counts[static_cast<std::size_t>(comm.rank())]);
    auto exchange = plait::iall_to_all_v<plait::pairwise>(comm, out, counts, in, recv_counts);
    out[4] = 9;
    std::string verdict = expect_changed([&] { exchange.wait(); }, {rank_words(comm), "all_to_all_v<pairwise>"});
    if (!verdict.empty()) return "all_to_all_v: " + verdict;
    std::vector<float> grads(8, 1.0f);
    std::vector<float> total(8);
    auto reduce = plait::iall_reduce(comm, grads, total, plait::sum{});
    grads[3] = 2.0f;
    verdict = expect_changed([&] { reduce.wait(); }, {rank_words(comm), "all_reduce", "send ("});
    return verdict.empty() ? verdict : "all_reduce: " + verdict;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("a persistent collective's send may change between starts, not between a start and its completion",
          "[send_buffers][persistent]") {
  const auto verdicts = plait_test::run_ranks(mode::processes, 3, [](plait::shm::communicator& comm) -> std::string {
    comm.set_check_mode(true);
    comm.set_timeout(10s);
    std::vector<int> mine(8);
    std::vector<int> all(mine.size() * 3);
    auto gather = plait::all_gather_init<plait::ring>(comm, mine, all);
    for (int step = 0; step < 3; ++step) {
      std::fill(mine.begin(), mine.end(), step * 10 + comm.rank());  // between completion and start: allowed
      gather.start();
      gather.wait();
      for (std::size_t j = 0; j < all.size(); ++j) {
        if (all[j] != step * 10 + static_cast<int>(j / mine.size()))
          return "wrong element at step " + std::to_string(step);
      }
    }
    gather.start();
    mine[0] = -5;
    const std::string verdict = expect_changed(
        [&] { gather.wait(); }, {rank_words(comm), "all_gather<ring>", "send (", "between that and the next start()"});
    if (!verdict.empty()) return verdict;
    gather.start();  // still usable, and the next start watches afresh
    gather.wait();
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("unchanged send buffers never fail in check mode, and changed ones are not compared outside it",
          "[send_buffers][nonblocking][persistent]") {
  const bool check = GENERATE(true, false);
  CAPTURE(check);
  const auto verdicts =
      plait_test::run_ranks(mode::processes, 4, [check](plait::shm::communicator& comm) -> std::string {
        comm.set_check_mode(check);
        comm.set_timeout(10s);
        std::vector<int> mine(5, comm.rank());
        std::vector<int> all(mine.size() * 4);
        std::vector<int> blocks(8, comm.rank());
        std::vector<int> routed(8);
        try {
          for (int i = 0; i < 5; ++i) {
            auto a = plait::iall_gather<plait::ring>(comm, mine, all);
            auto b = plait::iall_to_all<plait::pairwise>(comm, blocks, routed);
            auto c = plait::iall_gather(comm, plait::in_place, all);  // in place: recv is written, nothing watched
            b.wait();
            a.wait();
            c.wait();
          }
          auto p = plait::all_to_all_init<plait::pairwise>(comm, blocks, routed);
          for (int i = 0; i < 3; ++i) {
            p.start();
            p.wait();
          }
          if (!check) {  // outside check mode a change is the caller's bug, and costs nothing to look for
            auto r = plait::iall_gather<plait::ring>(comm, mine, all);
            mine[0] = 7;
            r.wait();
          }
        } catch (const plait::error& e) {
          return e.what();
        }
        return {};
      });
  REQUIRE(plait_test::failures(verdicts) == "");
}

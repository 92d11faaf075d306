// A custom schedule that breaks a rule of plait::verify must stop the compiler
// with the rule's name and where it broke (rank, step, peer, block), not a bare
// "static assertion failed". Each case checks one broken schedule through
// plait::verify_or_explain; the regex accepts g++'s ("int Rank = 0", before
// the message) and clang's ("<...send_unheld, 0, 0, 1, 1>", after it) way of
// printing the instantiation.
// The expect-error lines are regexes matched one line each, so clang-format
// must not reflow them.
// clang-format off
#include <plait/algorithm/verify.hpp>
#include <plait/plait.hpp>

namespace {

/// A ring all-gather (the reference: it passes).
struct good_ring {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_gather, int rank, int size) {
    plait::schedule s;
    const int right = (rank + 1) % size;
    const int left = (rank + size - 1) % size;
    for (int k = 0; k + 1 < size; ++k) {
      s.next_step().send(right, {(rank + size - k) % size}).recv(left, {(rank + size - k - 1) % size});
    }
    return s;
  }
};

/// Sends in step 0 the block its right neighbour owns, which it does not hold yet.
struct sends_unheld {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_gather, int rank, int size) {
    plait::schedule s = good_ring::plan(plait::op::all_gather{}, rank, size);
    s.steps[0].sends[0].blocks = {(rank + 1) % size};
    return s;
  }
};

/// Stops one step short: every rank misses one block.
struct stops_early {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_gather, int rank, int size) {
    plait::schedule s = good_ring::plan(plait::op::all_gather{}, rank, size);
    s.steps.pop_back();
    return s;
  }
};

/// Two ranks that both receive before they send, in separate steps.
struct receives_first {
  using algorithm_concept = plait::algorithm_tag;
  static constexpr plait::schedule plan(plait::op::all_gather, int rank, int size) {
    plait::schedule s;
    const int peer = 1 - rank;
    (void)size;
    s.next_step().recv(peer, {peer});
    s.next_step().send(peer, {rank});
    return s;
  }
};

}  // namespace

static_assert(plait::verify_or_explain<good_ring, plait::op::all_gather, 4>());
static_assert(plait::verify<good_ring, plait::op::all_gather>(4));
static_assert(!plait::verify<sends_unheld, plait::op::all_gather>(3));
static_assert(!plait::verify<stops_early, plait::op::all_gather>(3));
static_assert(!plait::verify<receives_first, plait::op::all_gather>(2));

// expect-error(send_unheld): (Rule = plait::v0::verify_fault::send_unheld. int Rank = 0. int Step = 0. int Peer = 1. int Block = 1[^0-9].*plait: verify: rule send_unheld:|plait: verify: rule send_unheld:.*verify_fault::send_unheld, 0, 0, 1, 1>)
// max-lines(send_unheld): 20
#if defined(PLAIT_CASE_send_unheld)
static_assert(plait::verify_or_explain<sends_unheld, plait::op::all_gather, 3>());
#endif

// expect-error(missing_block): (Rule = plait::v0::verify_fault::missing_block. int Rank = 0. int Step = -1. int Peer = -1. int Block = 1[^0-9].*plait: verify: rule missing_block:|plait: verify: rule missing_block:.*verify_fault::missing_block, 0, -1, -1, 1>)
// max-lines(missing_block): 20
#if defined(PLAIT_CASE_missing_block)
static_assert(plait::verify_or_explain<stops_early, plait::op::all_gather, 3>());
#endif

// expect-error(deadlock): (Rule = plait::v0::verify_fault::deadlock. int Rank = 0. int Step = 0. int Peer = 1. int Block = -1[^0-9].*plait: verify: rule deadlock:|plait: verify: rule deadlock:.*verify_fault::deadlock, 0, 0, 1, -1>)
// max-lines(deadlock): 20
#if defined(PLAIT_CASE_deadlock)
static_assert(plait::verify_or_explain<receives_first, plait::op::all_gather, 2>());
#endif

int main() { return 0; }

// plait-test-labels: quick
// The wait-for chain's rule (core/blame.hpp), on records made by hand: which
// rank a timeout blames, and the sentence that says what it does instead.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "plait/core/blame.hpp"

using plait::detail::find_guilty;
using plait::detail::wait_record;

namespace {
/// A rank waiting in all_gather<ring> #12 for `peer`.
wait_record waiting_for(int peer) { return {true, 12, true, 12, 0x51, 1, peer, "all_gather<ring>"}; }
/// A rank in no wait, whose last call was `entered`.
wait_record idle(std::uint32_t entered) { return {true, entered, false, 0, 0, -1, -1, ""}; }
}  // namespace

TEST_CASE("the chain of waits leads past present ranks to the one that never entered", "[blame]") {
  // Rank 3 waits for 2, 2 for 1, 1 for 0; rank 0 last entered #11.
  const std::vector<wait_record> records{idle(11), waiting_for(0), waiting_for(1), waiting_for(2)};
  const auto found = find_guilty(records, 3);
  CHECK(found.rank == 0);
  CHECK(found.first_peer == 2);
  CHECK(found.chain == ", which waits for rank 1, which waits for rank 0");
  CHECK(found.sentence == "rank 0 never entered all_gather<ring> #12 (its last call was #11)");
  CHECK(plait::detail::group_reason(found, 3) ==
        "rank 0 never entered all_gather<ring> #12 (its last call was #11); rank 3 timed out waiting for rank 2, "
        "which waits for rank 1, which waits for rank 0");
}

TEST_CASE("a rank in another call or transfer is blamed with what it does", "[blame]") {
  std::vector<wait_record> records{waiting_for(3), waiting_for(0)};
  records[0].stamp = 0x72;  // the same call number, another operation
  records[0].operation = "all_to_all<pairwise>";
  auto found = find_guilty(records, 1);
  CHECK(found.rank == 0);
  CHECK(found.sentence == "rank 0 is in all_to_all<pairwise> #12, waiting for rank 3, not in all_gather<ring> #12");

  records[0] = {true, 11, true, 0, 0, -1, 2, ""};  // a user's receive from rank 2, after call #11
  found = find_guilty(records, 1);
  CHECK(found.sentence ==
        "rank 0 never entered all_gather<ring> #12 (its last call was #11); it waits for rank 2 in a point-to-point "
        "transfer");

  records[0] = idle(13);  // went on past #12 and waits in nothing
  CHECK(find_guilty(records, 1).sentence ==
        "rank 0 has left all_gather<ring> #12 behind: its last call was #13, and it waits in none");
  records[0] = idle(0);
  CHECK(find_guilty(records, 1).sentence == "rank 0 never entered all_gather<ring> #12 (it has entered no call yet)");
}

TEST_CASE("a rank that did not answer is the suspect; a closed chain and a user's wait blame no one", "[blame]") {
  std::vector<wait_record> records{wait_record{}, waiting_for(0), waiting_for(1)};
  records[0].known = false;
  const auto found = find_guilty(records, 2);
  CHECK(found.rank == 0);
  CHECK(found.sentence == "rank 0 did not answer: it is not in all_gather<ring> #12 nor in any wait");

  const std::vector<wait_record> cycle{waiting_for(2), waiting_for(0), waiting_for(1)};
  CHECK(find_guilty(cycle, 0).rank == -1);

  std::vector<wait_record> user{idle(3), {true, 3, true, 0, 0, -1, 0, ""}};
  CHECK(find_guilty(user, 1).rank == -1);
}

TEST_CASE("a closed chain blames the rank that still waits for one that gave up: it came late", "[blame]") {
  // Rank 1 was stopped inside the call; ranks 0 and 2 timed out, and rank 0
  // cancelled its receive from 1. Rank 1 then sent, took rank 0's message
  // and now waits for rank 0 in the next step: the chain 2 -> 0 -> 1 -> 0
  // closes, and rank 1, waiting for a rank that gave up, is the late one.
  std::vector<wait_record> records{waiting_for(1), waiting_for(0), waiting_for(0)};
  records[0].gave_up = true;
  records[2].gave_up = true;
  records[1].step = 1;
  const auto found = find_guilty(records, 2);
  CHECK(found.rank == 1);
  CHECK(found.chain == ", which waits for rank 1, which waits for rank 0");
  CHECK(found.sentence ==
        "rank 1 is late in all_gather<ring> #12: it waits there (step 1) for rank 0, which had already timed out "
        "waiting");
  // Every rank of the cycle gave up, or none did: no one to single out.
  records[1].gave_up = true;
  CHECK(find_guilty(records, 2).rank == -1);
}

TEST_CASE("a chain that closes on itself or ends at a finished rank blames the rank that stopped polling", "[blame]") {
  // Rank 1 stopped inside its wait for rank 3 (its record is stale): rank 3
  // has moved on to wait for rank 2, rank 2 waits for rank 1.
  std::vector<wait_record> records{waiting_for(3), waiting_for(3), waiting_for(1), waiting_for(2)};
  records[1].stalled = true;
  records[1].step = 3;
  const auto found = find_guilty(records, 2);
  CHECK(found.rank == 1);
  CHECK(found.sentence ==
        "rank 1 is stuck in all_gather<ring> #12: it waits there (step 3) for rank 3 but has not polled for over "
        "100 ms (stopped, or without a core)");
  // Rank 3 has finished the call: the chain 2 -> 1 -> 3 ends there, and the
  // stalled rank 1 is still the one to blame.
  records[3] = idle(13);
  CHECK(find_guilty(records, 2).rank == 1);
  // Nothing stalled: a finished rank is named as before.
  records[1].stalled = false;
  CHECK(find_guilty(records, 2).rank == 3);
}

TEST_CASE("a rank held up in an earlier call by a rank stuck there passes the blame to that rank", "[blame]") {
  // Rank 1 stopped inside call #12; rank 2 still waits there for it, and
  // rank 0, already in call #13, waits for rank 2.
  std::vector<wait_record> records{waiting_for(2), waiting_for(0), waiting_for(1)};
  records[0].call = 13;
  records[0].entered = 13;
  records[1].stalled = true;
  const auto found = find_guilty(records, 0);
  CHECK(found.rank == 1);
  CHECK(found.chain == ", which waits in all_gather<ring> #12 for rank 1, which waits for rank 0");
  CHECK(found.sentence.rfind("rank 1 is stuck in all_gather<ring> #12", 0) == 0);
  // Without a stuck rank there, the rank in the earlier call is named, as before.
  records[1].stalled = false;
  records[1] = idle(13);
  CHECK(find_guilty(records, 0).rank == 2);
}

TEST_CASE("a rank held up in an earlier call by a rank busy there in no wait passes the blame to that rank",
          "[blame]") {
  // Found by the soak: rank 1 is delayed inside call #12 (in it, in no
  // wait); rank 2 waits there for it, and rank 0, already in call #13, waits
  // for rank 2. Rank 0 blamed rank 2, "never entered #13".
  std::vector<wait_record> records{waiting_for(2), idle(12), waiting_for(1)};
  records[0].call = 13;
  records[0].entered = 13;
  const auto found = find_guilty(records, 0);
  CHECK(found.rank == 1);
  CHECK(found.busy);  // looked at again before it is blamed, as in one call
  CHECK_FALSE(found.stuck);
  CHECK(found.chain == ", which waits in all_gather<ring> #12 for rank 1");
  CHECK(found.sentence == "rank 1 entered all_gather<ring> #12 but has not waited in it since (busy, or stopped)");
}

TEST_CASE("a rank at the other level of a two-level call is blamed as away, for its level to name the cause",
          "[blame]") {
  // Rank 1 waits for rank 0, which never entered #12 here: it waits at the
  // other level of a two-level call.
  std::vector<wait_record> records{idle(11), waiting_for(0)};
  records[0].away = true;
  const auto found = find_guilty(records, 1);
  CHECK(found.rank == 0);
  CHECK(found.away);
  CHECK(found.sentence ==
        "rank 0 never entered all_gather<ring> #12 (its last call was #11); it is at the other level of a two-level "
        "call");
  // Not away: the same record blames rank 0 outright.
  records[0].away = false;
  CHECK_FALSE(find_guilty(records, 1).away);
}

TEST_CASE("a rank whose call conflicts with a peer's is the odd one only where more ranks run the peer's", "[blame]") {
  using plait::detail::outvoted;
  constexpr std::uint32_t ints = 0x51;
  constexpr std::uint32_t floats = 0x52;
  const std::vector<std::uint32_t> four{ints, ints, floats, ints};
  CHECK(outvoted(four, 2, 1) == "rank 0 and rank 3 run rank 1's call too: this rank's is the odd one");
  CHECK(outvoted(four, 2, 0) == "rank 1 and rank 3 run rank 0's call too: this rank's is the odd one");
  CHECK(outvoted(four, 3, 2).empty());  // the receiver of the odd rank's message blames it
  const std::vector<std::uint32_t> five{ints, ints, floats, ints, ints};
  CHECK(outvoted(five, 2, 0) == "rank 1, rank 3 and rank 4 run rank 0's call too: this rank's is the odd one");
  // Unknown stamps (0: not waiting in the call) count for neither side.
  CHECK(outvoted(std::vector<std::uint32_t>{ints, 0, floats, 0}, 2, 0).empty());
  CHECK(outvoted(std::vector<std::uint32_t>{ints, ints, floats, 0}, 2, 1) ==
        "rank 0 runs rank 1's call too: this rank's is the odd one");
  // A pair alone, or a tie: the peer is blamed, as before.
  CHECK(outvoted(std::vector<std::uint32_t>{ints, floats}, 1, 0).empty());
  CHECK(outvoted(std::vector<std::uint32_t>{ints, ints, floats, floats}, 2, 0).empty());
  // Nonsense in, nothing out.
  CHECK(outvoted(four, 2, 2).empty());
  CHECK(outvoted(four, 7, 1).empty());
  CHECK(outvoted(std::vector<std::uint32_t>{ints, ints, ints}, 2, 1).empty());
}

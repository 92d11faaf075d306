// plait-test-labels: quick
// plait-test-also: header-only
// plait::error and plait::errc: codes, categories and messages.
#include <catch2/catch.hpp>

#include <system_error>

#include <plait/core/error.hpp>

TEST_CASE("errc values are error codes in the plait category", "[error]") {
  const std::error_code code = plait::errc::timeout;
  CHECK(code.category().name() == std::string("plait"));
  CHECK(code.message() == "timeout");
  CHECK(code == plait::errc::timeout);
  CHECK(code != plait::errc::peer_lost);
}

TEST_CASE("error messages name rank, operation, step and peer when known", "[error]") {
  const plait::error e(plait::errc::timeout, "waited too long", {3, "all_gather<ring>", 2, 1});
  CHECK(std::string(e.what()) == "plait, rank 3, all_gather<ring>, step 2, peer 1: waited too long");
  CHECK(e.rank() == 3);
  CHECK(e.step() == 2);
  CHECK(e.peer() == 1);
  CHECK(e.code() == plait::errc::timeout);
  CHECK(e.value() == plait::errc::timeout);
  const plait::error bare(plait::errc::invalid_argument, "bad");
  CHECK(std::string(bare.what()) == "plait: bad");
}

TEST_CASE("an outer layer adds what it knows to an error without losing the inner fields", "[error]") {
  const plait::error inner(plait::errc::peer_lost, "gone", {1, {}, -1, 4});
  const plait::error outer = inner.within({1, "all_to_all<bruck>", 3});
  CHECK(outer.peer() == 4);
  CHECK(outer.step() == 3);
  CHECK(outer.operation() == "all_to_all<bruck>");
  CHECK(std::string(outer.what()) == "plait, rank 1, all_to_all<bruck>, step 3, peer 4: gone");
  CHECK(outer.code() == plait::errc::peer_lost);
}

TEST_CASE("plait::error is a std::system_error", "[error]") {
  try {
    throw plait::error(plait::errc::size_mismatch, "x");
  } catch (const std::system_error& e) {
    CHECK(e.code() == plait::errc::size_mismatch);
  }
}

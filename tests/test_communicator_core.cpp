// plait-test-labels: quick sanitize
// plait-test-also: header-only
// The shared communicator core: each behaviour every transport gets from it,
// checked once here (the transports' own tests check that they use it).
#include <plait/core/wait_loop.hpp>
#include <plait/plait.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "support/scoped_env.hpp"

namespace {

/// The smallest transport-side user of the core: exposes the protected
/// members a transport calls.
class core_user : public plait::communicator_core {
 public:
  core_user() = default;
  core_user(int rank, int size) : plait::communicator_core(rank, size) {}
  using plait::communicator_core::check_peer;
  using plait::communicator_core::check_split_color;
  using plait::communicator_core::check_tag;
  using plait::communicator_core::count_sent;
  using plait::communicator_core::poison;
  using plait::communicator_core::require_usable;
  using plait::communicator_core::set_tag_limit;
  using plait::communicator_core::where;
  [[nodiscard]] core_user split_child(int rank, int size) const {
    core_user c;
    static_cast<plait::communicator_core&>(c) = child(rank, size);
    return c;
  }
};

template <class F>
plait::error caught(F&& f) {
  try {
    f();
  } catch (const plait::error& e) {
    return e;
  }
  FAIL("no plait::error thrown");
  return plait::error(plait::errc::transport, "unreachable");
}

/// The message of the error that creating a communicator (its core) raises
/// under name=value; "" when it raises none.
std::string creation_error(const char* name, const char* value) {
  const plait_test::scoped_env env(name, value);
  try {
    const core_user c(0, 2);
  } catch (const plait::error& e) {
    if (e.value() != plait::errc::invalid_argument) return std::string("not invalid_argument: ") + e.what();
    return e.what();
  }
  return {};
}

/// Every bad value fails the creation with a message naming the variable, the
/// value and `forms`.
void check_refused(const char* name, std::initializer_list<const char*> bad, const std::string& forms) {
  for (const char* value : bad) {
    CAPTURE(name, value);
    const std::string what = creation_error(name, value);
    CHECK_THAT(what, Catch::Contains(std::string(name) + "=\"" + value + "\"") && Catch::Contains(forms));
  }
}

}  // namespace

TEST_CASE("a zero or negative timeout is an invalid argument and leaves the timeout unchanged", "[core]") {
  core_user c(0, 2);
  c.set_timeout(std::chrono::seconds(7));
  CHECK(caught([&] { c.set_timeout(std::chrono::seconds(0)); }).value() == plait::errc::invalid_argument);
  CHECK(caught([&] { c.set_timeout(std::chrono::milliseconds(-1)); }).value() == plait::errc::invalid_argument);
  CHECK(c.timeout() == std::chrono::seconds(7));
  c.set_timeout(std::chrono::hours(24 * 365 * 1000));  // saturates instead of overflowing
  CHECK(c.timeout() == std::chrono::nanoseconds::max());
  c.set_timeout(std::chrono::duration<double>(0.25));
  CHECK(c.timeout() == std::chrono::milliseconds(250));
}

TEST_CASE("a negative busy-poll time is an invalid argument; zero is allowed", "[core]") {
  core_user c(0, 2);
  CHECK(caught([&] { c.set_busy_poll(std::chrono::microseconds(-5)); }).value() == plait::errc::invalid_argument);
  c.set_busy_poll(std::chrono::seconds(0));
  CHECK(c.busy_poll() == std::chrono::nanoseconds(0));
  c.set_busy_poll(std::chrono::hours(5));
  CHECK(c.busy_poll() == std::chrono::hours(1));
}

TEST_CASE("tags run 1 .. tag_limit and wrap, never giving the user tag", "[core]") {
  core_user c(1, 3);
  c.set_tag_limit(3);
  CHECK(c.next_tag() == 1);
  CHECK(c.next_tag() == 2);
  CHECK(c.next_tag() == 3);
  CHECK(c.next_tag() == 1);
  CHECK(caught([&] { c.check_tag(4, 0, "isend"); }).value() == plait::errc::invalid_argument);
  c.check_tag(plait::user_tag, 0, "isend");
}

TEST_CASE("a tag remembers the stamp of its call for the last sixteen calls", "[core]") {
  core_user c(0, 2);
  const auto gather = plait::call_stamp::of(plait::call_kind::all_gather, "ring contiguous");
  const auto transpose = plait::call_stamp::of(plait::call_kind::all_to_all, "ring contiguous");
  const int first = c.next_tag(gather);
  const int second = c.next_tag(transpose);
  CHECK(c.stamp_of(first) == gather);
  CHECK(c.stamp_of(second) == transpose);
  CHECK(plait::stamps_conflict(c.stamp_of(first), c.stamp_of(second)));
  CHECK_FALSE(plait::stamps_conflict(gather, plait::call_stamp{}));  // unknown is never compared
  for (int i = 0; i < 16; ++i) c.next_tag();
  CHECK_FALSE(c.stamp_of(first).known());
  CHECK(plait::call_stamp::from_bits(gather.bits()) == gather);
  CHECK(plait::describe(transpose).find("all_to_all") != std::string::npos);
}

TEST_CASE("a poisoned core names its first failure in every later call", "[core]") {
  core_user c(2, 4);
  CHECK(c.usable());
  c.poison(plait::error(plait::errc::timeout, "rank 2 timed out waiting for rank 3", c.where("all_gather<ring>", 3)));
  c.poison(plait::error(plait::errc::transport, "a later failure", c.where("barrier")));
  CHECK_FALSE(c.usable());
  const plait::error e = caught([&] { c.next_tag(); });
  CHECK(e.value() == plait::errc::timeout);
  CHECK(std::string(e.what()).find("unusable since an earlier failure") != std::string::npos);
  CHECK(std::string(e.what()).find("rank 2 timed out waiting for rank 3") != std::string::npos);
  CHECK(std::string(e.what()).find("a later failure") == std::string::npos);
}

TEST_CASE("a null core refuses every call with invalid_argument", "[core]") {
  core_user c;
  CHECK_FALSE(c.usable());
  CHECK(c.size() == 0);
  CHECK(c.rank() == -1);
  CHECK(caught([&] { c.require_usable("barrier"); }).value() == plait::errc::invalid_argument);
}

TEST_CASE("peers outside the group and negative split colours are invalid arguments", "[core]") {
  core_user c(0, 3);
  CHECK(caught([&] { c.check_peer(3, "isend"); }).peer() == 3);
  CHECK(caught([&] { c.check_peer(-1, "irecv"); }).value() == plait::errc::invalid_argument);
  c.check_peer(2, "isend");
  CHECK(caught([&] { c.check_split_color(-2); }).value() == plait::errc::invalid_argument);
  c.check_split_color(plait::no_group);
  c.check_split_color(0);
}

TEST_CASE("control bytes are taken out of the payload count, never below zero", "[core]") {
  core_user c(0, 2);
  c.count_sent(100);
  c.discount_control_bytes(30);
  CHECK(c.bytes_sent() == 70);
  c.discount_control_bytes(1000);
  CHECK(c.bytes_sent() == 0);
}

TEST_CASE("a split child inherits the settings and names its parent rank in errors", "[core]") {
  core_user parent(5, 8);
  parent.set_timeout(std::chrono::seconds(3));
  parent.set_busy_poll(std::chrono::milliseconds(2));
  parent.set_check_mode(true);
  parent.count_sent(10);
  const core_user child = parent.split_child(1, 4);
  CHECK(child.rank() == 1);
  CHECK(child.size() == 4);
  CHECK(child.parent_rank() == 5);
  CHECK(child.timeout() == std::chrono::seconds(3));
  CHECK(child.busy_poll() == std::chrono::milliseconds(2));
  CHECK(child.check_mode());
  CHECK(child.bytes_sent() == 0);
  const plait::error e = caught([&] { child.check_peer(9, "isend"); });
  CHECK(e.parent_rank() == 5);
  CHECK(std::string(e.what()).find("rank 1 (parent rank 5)") != std::string::npos);
}

TEST_CASE("a timeout of hours::max() saturates: its deadlines lie at the clock's end instead of wrapping to the past",
          "[core][timeout]") {
  using namespace std::chrono;
  core_user c(0, 2);
  c.set_timeout(hours::max());
  CHECK(c.timeout() == nanoseconds::max());
  CHECK(c.deadline_from_now() == plait::deadline::max());
  CHECK(plait::detail::after(hours::max()) == plait::deadline::max());
  // What is left of an unbounded deadline, as the NVLink protocol hands it on (unsigned nanoseconds).
  CHECK(plait::detail::after(duration<std::uint64_t, std::nano>(UINT64_MAX)) == plait::deadline::max());
  CHECK(plait::detail::after(plait::deadline::max() - plait::clock::now()) == plait::deadline::max());
  const auto before = plait::clock::now();
  const plait::deadline past = plait::detail::after(-hours::max());
  CHECK(past >= before);
  CHECK(past <= plait::clock::now());
  CHECK(plait::detail::after(seconds(5)) - before >= seconds(5));
  CHECK(plait::detail::after(seconds(5)) - before < seconds(6));

  CHECK(plait::detail::saturated(hours::max()) == nanoseconds::max());
  CHECK(plait::detail::saturated(-hours::max()) == nanoseconds::min());
  CHECK(plait::detail::saturated(duration<double>(1e300)) == nanoseconds::max());
  CHECK(plait::detail::saturated(duration<double>(std::nan(""))) == nanoseconds::zero());
  CHECK(plait::detail::saturated(minutes(2)) == seconds(120));
  CHECK(plait::detail::saturated(duration<double>(0.25)) == milliseconds(250));

  // Messages say so instead of "9.22e+09 s", and a huge negative one does not overflow on its way into the text.
  CHECK(plait::detail::seconds_text(c.timeout()) == "forever");
  const plait::error e = caught([&] { c.set_timeout(-hours::max()); });
  CHECK(e.value() == plait::errc::invalid_argument);
  CHECK_THAT(e.what(), Catch::Contains("timeout must be positive, got -3.32e+22 s"));
  CHECK(c.timeout() == nanoseconds::max());
}

TEST_CASE("PLAIT_TIMEOUT takes positive seconds below 1e9, and any other value fails the communicator's creation",
          "[core][env]") {
  using namespace std::chrono;
  check_refused("PLAIT_TIMEOUT", {"0", "-1", "abc", "nan", "1e9", "10abc", "inf", "0x10", " 5", "5s", "1e-12", "0.5."},
                "give seconds as a positive number below 1e9, e.g. 30 or 0.5");
  CHECK(creation_error("PLAIT_TIMEOUT", "10abc") ==
        "plait, rank 0: PLAIT_TIMEOUT=\"10abc\" is not a timeout: give seconds as a positive number below 1e9, e.g. 30 "
        "or 0.5");
  for (const auto& [text, expected] : {std::pair<const char*, nanoseconds>{"0.5", milliseconds(500)},
                                       {"30", seconds(30)},
                                       {"2e3", seconds(2000)},
                                       {".25", milliseconds(250)},
                                       {"", seconds(300)},
                                       {nullptr, seconds(300)}}) {
    CAPTURE(text != nullptr ? text : "unset");
    const plait_test::scoped_env env("PLAIT_TIMEOUT", text);
    CHECK(core_user(0, 2).timeout() == expected);
  }  // A null communicator reads nothing: declaring one never throws.
  const plait_test::scoped_env env("PLAIT_TIMEOUT", "abc");
  CHECK_NOTHROW(core_user{});
  CHECK_NOTHROW(plait::shm::communicator{});
}

TEST_CASE("PLAIT_CHECK takes 0 or 1, and any other value fails the communicator's creation", "[core][env]") {
  check_refused("PLAIT_CHECK", {"2", "-1", "abc", "nan", "1e9", "10abc", "yes", "true", " 1"},
                "give 1 (on) or 0 (off)");
  for (const auto& [text, on] :
       {std::pair<const char*, bool>{"1", true}, {"0", false}, {"", false}, {nullptr, false}}) {
    const plait_test::scoped_env env("PLAIT_CHECK", text);
    CHECK(core_user(0, 2).check_mode() == on);
  }
}

TEST_CASE("PLAIT_DEBUG takes 0 or 1, and any other value fails the communicator's creation", "[core][env]") {
  check_refused("PLAIT_DEBUG", {"2", "-1", "abc", "nan", "1e9", "10abc", "on"}, "give 1 (on) or 0 (off)");
  for (const auto& [text, on] : {std::pair<const char*, bool>{"1", true}, {"0", false}, {nullptr, false}}) {
    const plait_test::scoped_env env("PLAIT_DEBUG", text);
    CHECK(creation_error("PLAIT_DEBUG", text).empty());
    CHECK(plait::detail::debug_logging() == on);
  }
}

TEST_CASE("PLAIT_SHM_SINGLE_COPY_BYTES takes a byte count, and any other value fails the communicator's creation",
          "[core][env]") {
  check_refused("PLAIT_SHM_SINGLE_COPY_BYTES",
                {"-1", "abc", "nan", "1e9", "10abc", "4K", "+5", " 5", "99999999999999999999999"},
                "give a whole number of bytes in decimal digits, e.g. 0 or 65536");
  for (const auto& [text, bytes] : {std::pair<const char*, std::optional<std::size_t>>{"65536", 65536},
                                    {"0", SIZE_MAX},  // 0: never
                                    {nullptr, std::nullopt}}) {
    const plait_test::scoped_env env("PLAIT_SHM_SINGLE_COPY_BYTES", text);
    CHECK(creation_error("PLAIT_SHM_SINGLE_COPY_BYTES", text).empty());
    CHECK(plait::shm::detail::single_copy_bytes_from_environment() == bytes);
  }
}

TEST_CASE("PLAIT_STREAM_COPY_BYTES takes a byte count, and any other value fails the communicator's creation",
          "[core][env]") {
  check_refused("PLAIT_STREAM_COPY_BYTES", {"-1", "abc", "nan", "1e9", "10abc", "4M", "0.5"},
                "give a whole number of bytes in decimal digits, e.g. 0 or 65536");
  for (const auto& [text, bytes] : {std::pair<const char*, std::size_t>{"65536", 65536},
                                    {"0", SIZE_MAX},  // 0: never
                                    {nullptr, plait::detail::default_stream_copy_bytes}}) {
    const plait_test::scoped_env env("PLAIT_STREAM_COPY_BYTES", text);
    CHECK(creation_error("PLAIT_STREAM_COPY_BYTES", text).empty());
    CHECK(plait::detail::stream_copy_bytes_from_environment() == bytes);
  }
}

// Values read lazily later (PLAIT_STREAM_COPY_BYTES on the copy path) must be
// reported here too, and before anything is started: no rank runs, no
// process is forked, no segment is left.
TEST_CASE("run_threads, run_processes and join report a bad PLAIT_* value before they start anything",
          "[core][env][shm]") {
  for (const auto& [name, value] :
       {std::pair<const char*, const char*>{"PLAIT_TIMEOUT", "10abc"}, {"PLAIT_STREAM_COPY_BYTES", "4M"}}) {
    CAPTURE(name, value);
    const plait_test::scoped_env env(name, value);
    bool ran = false;
    const auto refused = [&](const char* operation, auto&& create) {
      CAPTURE(operation);
      const plait::error e = caught(create);
      CHECK(e.value() == plait::errc::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains(std::string(name) + "=\"" + value + "\""));
    };
    refused("run_threads", [&] { plait::shm::run_threads(2, [&](plait::shm::communicator&) { ran = true; }); });
    refused("run_processes", [&] { plait::shm::run_processes(2, [&](plait::shm::communicator&) { ran = true; }); });
    const std::string group = "plait-env-test-" + std::to_string(getpid());
    refused("join", [&] { (void)plait::shm::communicator::join(group, 0, 1); });
    CHECK_FALSE(ran);
    CHECK_FALSE(std::filesystem::exists("/dev/shm/plait-" + group));
  }
}

TEST_CASE("wait_loop reads the clock at its first idle poll and reports how long it waited", "[core][wait_loop]") {
  using namespace std::chrono_literals;
  // A deadline already past is seen at the first idle poll, not the 16th.
  plait::detail::wait_loop late(plait::clock::now() - 1s);
  CHECK(late.expired());
  CHECK(late.waited() == plait::clock::duration::zero());
  // A wait runs to its deadline, and waited() spans the clock reads from the first to the last.
  plait::detail::wait_loop loop(plait::detail::after(30ms));
  while (!loop.expired()) loop.pause();
  CHECK(loop.waited() >= 25ms);
  CHECK(loop.waited() < 10s);
  // The busy phase that never yields (MPI's) ends at its deadline too.
  plait::detail::wait_loop busy(plait::detail::after(20ms), 1s, 200000, 64, std::chrono::nanoseconds::max());
  while (!busy.expired()) busy.pause();
  CHECK(busy.waited() >= 15ms);
}

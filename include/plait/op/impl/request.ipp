// Defines what plait/op/request.hpp declares out of line: releasing a run in
// flight and a persistent collective's start.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "plait/core/error.hpp"
#include "plait/core/region.hpp"
#include "plait/op/in_flight.hpp"
#include "plait/op/request.hpp"

namespace plait {
inline namespace v0 {
namespace detail {

/// A digest of the bytes of `r`, run by run, 8 bytes at a time: not a
/// cryptographic hash, only one that any change of a few bytes changes.
PLAIT_DECL std::uint64_t digest_of(const region& r) noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ r.bytes();
  auto mix = [&h](std::uint64_t word) noexcept {
    h ^= word + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
  };
  auto run = [&](const std::byte* p) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= r.run_bytes; i += 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, p + i, 8);
      mix(word);
    }
    if (i < r.run_bytes) {
      std::uint64_t word = 0;
      std::memcpy(&word, p + i, r.run_bytes - i);
      mix(word);
    }
  };
  const std::size_t runs = r.runs();
  if (r.run_bytes == 0 || runs == 0) return h;
  // An odometer over the outer dimensions (outermost first).
  std::array<std::size_t, region::max_dims> index{};
  for (std::size_t k = 0; k < runs; ++k) {
    std::ptrdiff_t offset = 0;
    for (int d = 0; d < r.dims; ++d) {
      offset += static_cast<std::ptrdiff_t>(index[static_cast<std::size_t>(d)]) * r.stride[static_cast<std::size_t>(d)];
    }
    run(r.data + offset);
    for (int d = r.dims - 1; d >= 0; --d) {
      const auto i = static_cast<std::size_t>(d);
      if (++index[i] < r.extent[i]) break;
      index[i] = 0;
    }
  }
  return h;
}

PLAIT_DECL void send_watch::take() {
  digests_.resize(members_.size());
  for (std::size_t m = 0; m < members_.size(); ++m) digests_[m] = digest_of(members_[m]);
  armed_ = true;
}

PLAIT_DECL void send_watch::compare(int rank, std::string_view operation) {
  if (!armed_) return;
  armed_ = false;  // one report per post or start; test() and wait() after it return as before
  for (std::size_t m = 0; m < members_.size(); ++m) {
    if (digest_of(members_[m]) == digests_[m]) continue;
    const std::string which = bundled_ ? concat({"send member ", m, " of the bundle"}) : std::string("send");
    fail(errc::invalid_argument,
         {which, " (", members_[m].bytes(),
          " bytes) changed while the collective was in flight: a send buffer may be changed only once wait() has "
          "returned or test() has returned true (a persistent collective's: between that and the next start()); "
          "peers received old bytes, new ones or a mix (check mode compares a digest taken at the post or start "
          "with one taken at completion)"},
         {rank, operation});
  }
}

PLAIT_DECL void compare_sends(in_flight_handle& h) { h.sends->compare(h.rank, h.operation); }

PLAIT_DECL void release(in_flight_handle& h) noexcept {
  delete h.sends;
  h.sends = nullptr;
  if (h.run == nullptr) return;
  if (h.engine != nullptr) {
    try {
      wait_in_engine(*h.engine, *h.run, h.busy_poll);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the owner is going away; wait() is where errors are reported
    }
    auto held = h.engine->lock();
    h.engine->withdraw(*h.run);  // finished by now; a no-op unless the wait itself failed
  }
  h.destroy(h.run);
  h = {};
}

}  // namespace detail

PLAIT_DECL void persistent_collective::start() {
  if (handle_.run == nullptr) {
    detail::fail(errc::invalid_argument,
                 {"start() on an empty persistent collective (default-constructed or moved from)"},
                 {handle_.rank, "persistent start", -1, -1});
  }
  if (start_check_) start_check_();  // check mode: the bound counts, before any byte moves
  if (handle_.engine == nullptr) {   // stream-ordered: runs (is enqueued on the stream) now
    started_ = true;
    if (handle_.sends != nullptr) handle_.sends->take();
    handle_.restart(*handle_.run);
    return;
  }
  auto held = handle_.engine->lock();
  if (handle_.run->queued()) {
    detail::fail(errc::invalid_argument,
                 {"start() while the previous start is still active: complete it with wait() or test() first"},
                 {handle_.rank, "persistent start", -1, -1});
  }
  handle_.restart(*handle_.run);                        // the call's tag; throws once the communicator is unusable
  if (handle_.sends != nullptr) handle_.sends->take();  // check mode: what this start sends
  handle_.engine->enqueue(*handle_.run);
  started_ = true;
}

PLAIT_DECL bool collective_request::complete() const {
  if (handle_.run == nullptr || handle_.engine == nullptr) return true;
  auto held = handle_.engine->lock();
  return !handle_.run->queued();
}

PLAIT_DECL bool persistent_collective::active() const {
  if (handle_.run == nullptr || handle_.engine == nullptr) return false;
  auto held = handle_.engine->lock();
  return handle_.run->queued();
}

}  // namespace v0
}  // namespace plait

// Defines the group management of plait/transport/shm/communicator.hpp:
// joining a named group, splitting one, allocate's shared-buffer windows
// (created, announced and mapped by every rank), the table exchange they
// share, this rank's pool (memory_resource), finding which of them a send's
// bytes lie in, and waiting until every rank has attached.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/mman.h>

#include "plait/core/backoff.hpp"
#include "plait/core/call_stamp.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"
#include "plait/core/timeout.hpp"
#include "plait/core/wait_loop.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/segment.hpp"
#include "plait/transport/shm/shared_buffer.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

PLAIT_DECL communicator communicator::join(std::string_view name, int rank, int size,
                                           std::chrono::nanoseconds timeout) {
  const error_context at{rank, "join", -1, -1};
  if (size < 1 || size > detail::max_ranks) {
    throw error(errc::invalid_argument,
                "group size " + std::to_string(size) + " is outside [1, " + std::to_string(detail::max_ranks) + "]",
                at);
  }
  if (rank < 0 || rank >= size) {
    throw error(errc::invalid_argument,
                "rank " + std::to_string(rank) + " is outside [0, " + std::to_string(size) + ")", at);
  }
  if (name.empty() || name.size() > 200 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "0123456789._-") != std::string_view::npos) {
    throw error(errc::invalid_argument,
                "group name \"" + std::string(name) + "\" must be 1-200 characters of letters, digits, '.', '_', '-'",
                at);
  }
  plait::detail::read_environment(at);  // a bad PLAIT_* value fails before the segment exists
  const std::string path = "/plait-" + std::string(name);
  const detail::geometry shape{static_cast<std::uint32_t>(size)};
  const deadline until = plait::detail::after(timeout);
  auto seg = rank == 0 ? detail::segment::create(path, shape, at) : detail::segment::open(path, shape, until, at);
  seg->claim(rank, name, at);  // before attaching: a rank taken twice is refused, the segment untouched
  communicator comm(std::move(seg), rank, timeout);
  comm.await_attached(until, "join");
  return comm;
}

PLAIT_DECL communicator communicator::split(int color, int key) {
  check_usable("split");
  check_split_color(color);
  const int tag = next_tag(call_stamp::of(call_kind::control, "split"));
  // Everyone learns everyone's (color, key).
  std::vector<std::int64_t> table(2 * static_cast<std::size_t>(size()));
  table[2 * static_cast<std::size_t>(rank())] = color;
  table[2 * static_cast<std::size_t>(rank()) + 1] = key;
  exchange_table(std::as_writable_bytes(std::span(table)), tag);
  if (color == no_group) return communicator{};
  std::vector<int> members;
  for (int r = 0; r < size(); ++r) {
    if (table[2 * static_cast<std::size_t>(r)] == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return table[2 * static_cast<std::size_t>(a) + 1] < table[2 * static_cast<std::size_t>(b) + 1];
  });
  const int new_rank = static_cast<int>(std::find(members.begin(), members.end(), rank()) - members.begin());
  const detail::geometry shape{static_cast<std::uint32_t>(members.size())};
  const error_context at = where("split");
  const deadline until = deadline_from_now();
  std::array<char, 64> name{};
  std::shared_ptr<detail::segment> seg;
  if (new_rank == 0) {
    seg = detail::segment::create(detail::random_name(), shape, at);
    std::memcpy(name.data(), seg->name().data(), std::min(seg->name().size(), name.size() - 1));
    std::vector<request> requests;
    for (std::size_t i = 1; i < members.size(); ++i)
      requests.push_back(isend(members[i], std::as_bytes(std::span(name)), tag));
    wait_all(requests);
    discount_control_bytes(name.size() * (members.size() - 1));
  } else {
    recv(members[0], std::as_writable_bytes(std::span(name)), tag);
    name.back() = '\0';  // never trust a peer's string to be terminated
    seg = detail::segment::open(name.data(), shape, until, at);
  }
  communicator child(std::move(seg), communicator_core::child(new_rank, static_cast<int>(members.size())));
  child.await_attached(until, "split");
  return child;
}

PLAIT_DECL std::shared_ptr<detail::window> communicator::allocate_window(std::size_t bytes, bool fits) {
  constexpr std::string_view operation = "allocate";
  check_usable(operation);
  const error_context at = where(operation);
  const int tag = next_tag(call_stamp::of(call_kind::control, operation));
  auto w = std::make_shared<detail::window>(++window_count_, size());
  std::vector<detail::window_announcement> table(static_cast<std::size_t>(size()));
  detail::window_announcement& mine = table[static_cast<std::size_t>(rank())];
  mine = {w->id(), bytes, 1, {}};
  std::string own_name;
  std::optional<error> own_failure;  // why this rank fails, if it does
  try {
    if (!fits) throw error(errc::invalid_argument, "the element count times sizeof(T) overflows", at);
    if (bytes != 0) own_name = w->create_part(rank(), bytes, at);
    std::memcpy(mine.name, own_name.data(), std::min(own_name.size(), sizeof(mine.name) - 1));
  } catch (const error& e) {
    mine.ok = 0;
    own_failure = e;
  }
  // The name goes once every rank has mapped the part, or on any failure.
  struct unlink_at_exit {
    const std::string& name;
    ~unlink_at_exit() {
      if (!name.empty()) shm_unlink(name.c_str());
    }
  } remove_name{own_name};

  exchange_table(std::as_writable_bytes(std::span(table)), tag);
  auto fail_if_any = [&](std::string_view what) {
    if (own_failure) throw *own_failure;
    for (int r = 0; r < size(); ++r) {
      if (table[static_cast<std::size_t>(r)].ok == 0) {
        throw error(errc::transport, "rank " + std::to_string(r) + " could not " + std::string(what),
                    where(operation, r));
      }
    }
  };
  fail_if_any("allocate its part");
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    const detail::window_announcement& theirs = table[static_cast<std::size_t>(r)];
    try {
      if (theirs.id != w->id()) {
        throw error(errc::invalid_argument,
                    "rank " + std::to_string(r) + " is at its allocation " + std::to_string(theirs.id) +
                        " where this rank is at " + std::to_string(w->id()) +
                        " (allocate is collective: every rank calls it, in the same order)",
                    where(operation, r));
      }
      if (theirs.bytes == 0) continue;
      if (!detail::is_window_name(theirs.name, sizeof(theirs.name))) {
        throw error(errc::transport, "rank " + std::to_string(r) + " announced a malformed shared-buffer name",
                    where(operation, r));
      }
      w->open_part(r, std::string(theirs.name), static_cast<std::size_t>(theirs.bytes), where(operation, r));
    } catch (const error& e) {
      if (!own_failure) own_failure = e;
    }
  }
  // Second round: everyone has mapped everything (or says why not).
  for (auto& entry : table) entry.ok = 1;
  mine.ok = own_failure ? 0 : 1;
  exchange_table(std::as_writable_bytes(std::span(table)), tag);
  fail_if_any("map every rank's part");
  std::erase_if(windows_, [](const auto& weak) { return weak.expired(); });
  windows_.push_back(w);
  return w;
}

PLAIT_DECL void communicator::exchange_table(std::span<std::byte> table, int tag) {
  const std::size_t entry = table.size() / static_cast<std::size_t>(size());
  const auto mine = table.subspan(static_cast<std::size_t>(rank()) * entry, entry);
  std::vector<request> requests;
  for (int peer = 0; peer < size(); ++peer) {
    if (peer == rank()) continue;
    requests.push_back(irecv(peer, table.subspan(static_cast<std::size_t>(peer) * entry, entry), tag));
    requests.push_back(isend(peer, mine, tag));
  }
  wait_all(requests);
  discount_control_bytes(entry * static_cast<std::size_t>(size() - 1));
}

PLAIT_DECL std::pair<std::uint64_t, std::uint64_t> communicator::find_window(std::span<const std::byte> bytes) const {
  if (bytes.empty()) return {0, 0};
  const auto* first = bytes.data();
  for (const auto& weak : windows_) {
    const auto w = weak.lock();
    if (!w) continue;
    const detail::window::part& part = w->of(rank());
    // Compared as integers: the pointers may belong to different objects.
    const auto begin = reinterpret_cast<std::uintptr_t>(part.base);
    const auto at = reinterpret_cast<std::uintptr_t>(first);
    if (part.base != nullptr && at >= begin && at - begin <= part.bytes && bytes.size() <= part.bytes - (at - begin))
      return {w->id(), at - begin};
  }
  return {0, 0};
}

PLAIT_DECL std::shared_ptr<detail::window> communicator::find_window(std::uint64_t id) const {
  for (const auto& weak : windows_) {
    if (auto w = weak.lock(); w && w->id() == id) return w;
  }
  return nullptr;
}

PLAIT_DECL std::shared_ptr<shm::memory_resource> communicator::shared_memory_resource() {
  // Only a null communicator has no pool: a poisoned one still owns its memory.
  if (!segment_) [[unlikely]]
    null_communicator("memory_resource");
  if (!pool_) {
    bool every_peer_local = true;
    for (int peer = 0; peer < size(); ++peer) every_peer_local = every_peer_local && segment_->is_local(peer);
    // Only a peer in another process opens a segment by name.
    pool_.reset(new shm::memory_resource(rank(), !every_peer_local));
  }
  return pool_;
}

PLAIT_DECL void communicator::await_attached(deadline until, std::string_view operation) {
  auto& h = segment_->header();
  plait::detail::wait_loop loop(until);
  for (;;) {
    const std::uint32_t attached = detail::atomic(h.attached).load(std::memory_order_acquire);
    if (attached >= static_cast<std::uint32_t>(size())) break;
    if (loop.sleeping()) {
      if (const std::string ended = segment_->ended_member(); !ended.empty()) {
        segment_->unlink();
        throw error(errc::peer_lost, ended, where(operation));
      }
    }
    if (loop.expired()) {
      segment_->unlink();
      throw error(errc::timeout,
                  "only " + std::to_string(attached) + " of " + std::to_string(size()) + " ranks attached within " +
                      detail::seconds_text(timeout()),
                  {rank(), operation});
    }
    loop.pause();
  }
  segment_->remove_name();  // everyone is in: the name is no longer needed (any rank may remove it)
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

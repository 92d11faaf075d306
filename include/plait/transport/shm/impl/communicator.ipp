// Defines the out-of-line parts of plait/transport/shm/communicator.hpp:
// attaching and joining, posting and progressing transfers (chunks and single
// copy), waiting, barrier, split, allocate's collective part, and the
// failure paths.
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <signal.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "plait/core/backoff.hpp"
#include "plait/core/environment.hpp"
#include "plait/core/error.hpp"
#include "plait/core/stream_copy.hpp"
#include "plait/transport/shm/communicator.hpp"
#include "plait/transport/shm/segment.hpp"
#include "plait/transport/shm/shared_buffer.hpp"

namespace plait {
inline namespace v0 {
namespace shm {

namespace detail {
PLAIT_DECL std::optional<std::size_t> single_copy_bytes_from_environment() {
  if (const char* text = std::getenv("PLAIT_SHM_SINGLE_COPY_BYTES")) {
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0') return bytes == 0 ? SIZE_MAX : static_cast<std::size_t>(bytes);
  }
  return std::nullopt;
}
}  // namespace detail

PLAIT_DECL communicator::~communicator() {
  if (segment_) withdraw_references();
}

PLAIT_DECL communicator::communicator(std::shared_ptr<detail::segment> seg, int rank, std::chrono::nanoseconds timeout)

    : segment_(std::move(seg)),
      rank_(rank),
      size_(static_cast<int>(segment_->shape().ranks)),
      timeout_(timeout),
      busy_poll_(size_ <= plait::detail::usable_cpus() ? detail::default_busy_poll : std::chrono::nanoseconds{}),
      peers_(static_cast<std::size_t>(size_)),
      check_mode_(plait::detail::check_mode_from_environment()) {
  segment_->mark_local(rank_);
  auto& record = segment_->record(rank_);
  detail::atomic(record.pid).store(static_cast<std::int32_t>(getpid()), std::memory_order_relaxed);
  detail::atomic(segment_->header().attached).fetch_add(1, std::memory_order_acq_rel);
}

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
  const std::string path = "/plait-" + std::string(name);
  const detail::geometry shape{static_cast<std::uint32_t>(size)};
  const deadline until = clock::now() + timeout;
  auto seg = rank == 0 ? detail::segment::create(path, shape, at) : detail::segment::open(path, shape, until, at);
  seg->claim(rank, name, at);  // before attaching: a rank taken twice is refused, the segment untouched
  communicator comm(std::move(seg), rank, timeout);
  comm.await_attached(until, "join");
  return comm;
}

PLAIT_DECL void communicator::set_busy_poll(std::chrono::nanoseconds busy) {
  if (busy < std::chrono::nanoseconds::zero())
    throw error(errc::invalid_argument, "negative busy-poll time", {rank_, "set_busy_poll"});
  busy_poll_ = busy;
}

PLAIT_DECL communicator::request communicator::isend(int peer, std::span<const std::byte> bytes, int tag) {
  return isend_with_copy(peer, bytes, {}, tag);
}

PLAIT_DECL communicator::request communicator::isend_with_copy(int peer, std::span<const std::byte> bytes,
                                                               std::span<std::byte> copy, int tag) {
  check_usable("isend");
  check_peer(peer, "isend");
  auto& state = peers_[static_cast<std::size_t>(peer)];
  const auto [window, offset] = find_window(bytes);
  pending m{bytes.data(), nullptr, bytes.size(), 0, tag, false, false, 0, window, offset};
  if (copy.data() != nullptr) {
    if (copy.size() != bytes.size()) [[unlikely]] {
      plait::detail::fail(errc::invalid_argument,
                          {"isend_with_copy: the copy is ", copy.size(), " bytes, the message ", bytes.size()},
                          {rank_, "isend", -1, peer});
    }
    // The receiver can take the copy over only where it reads the message
    // and writes the copy with plain stores: not through process_vm_readv.
    const bool local = segment_->is_local(peer);
    if ((local || window != 0) && bytes.size() >= detail::copy_for_sender_bytes && goes_by_reference(m, state, peer)) {
      const auto [copy_window, copy_offset] = find_window(copy);
      if (local || copy_window != 0) {
        m.copy = copy.data();
        m.copy_window = copy_window;
        m.copy_offset = copy_offset;
      }
    }
    if (m.copy == nullptr) plait::detail::copy_bytes(copy.data(), bytes.data(), bytes.size());
  }
  state.sends.push_back(m);
  bytes_sent_ += bytes.size();
  request r{peer, true, state.sends_posted++};
  progress_sends(peer);  // small messages leave at once
  return r;
}

PLAIT_DECL communicator::request communicator::irecv(int peer, std::span<std::byte> bytes, int tag) {
  check_usable("irecv");
  check_peer(peer, "irecv");
  auto& state = peers_[static_cast<std::size_t>(peer)];
  state.recvs.push_back({nullptr, bytes.data(), bytes.size(), 0, tag, false, false, 0, 0, 0});
  return {peer, false, state.recvs_posted++};
}

PLAIT_DECL void communicator::wait_all(std::span<request> requests, deadline until) {
  check_usable("wait_all");
  try {
    plait::detail::backoff wait(plait::detail::backoff::default_yield_polls, busy_poll_);
    unsigned slow_checks = 0;
    for (;;) {
      const bool moved = progress();
      if (std::all_of(requests.begin(), requests.end(), [this](const request& r) { return complete(r); })) return;
      if (moved) {
        wait.reset();
        continue;
      }
      check_group(first_waiting(requests));
      if (clock::now() > until) throw timed_out(requests);
      if (wait.sleeping() && ++slow_checks % 64 == 0 && !peers_alive(requests)) {
        // A process that ended cannot write any more: whatever it sent is in
        // the channel now, so one more pass decides whether we can finish.
        progress();
        if (!std::all_of(requests.begin(), requests.end(), [this](const request& r) { return complete(r); })) {
          throw lost_process(requests);
        }
      }
      wait.pause();
    }
  } catch (const error& e) {
    if (e.value() == errc::timeout || e.value() == errc::peer_lost || e.value() == errc::transport ||
        e.value() == errc::size_mismatch) {
      poison(e);
    }
    throw;
  }
}

PLAIT_DECL void communicator::barrier() {
  check_usable("barrier");
  auto& h = segment_->header();
  const std::uint32_t generation = detail::atomic(h.barrier_generation).load(std::memory_order_acquire);
  if (detail::atomic(h.barrier_count).fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<std::uint32_t>(size_)) {
    detail::atomic(h.barrier_count).store(0, std::memory_order_relaxed);
    detail::atomic(h.barrier_generation).fetch_add(1, std::memory_order_release);
    return;
  }
  const deadline until = clock::now() + timeout_;
  plait::detail::backoff wait(plait::detail::backoff::default_yield_polls, busy_poll_);
  while (detail::atomic(h.barrier_generation).load(std::memory_order_acquire) == generation) {
    try {
      check_group(-1);
      if (clock::now() > until) {
        throw error(errc::timeout, "barrier timed out after " + detail::seconds_text(timeout_), {rank_, "barrier"});
      }
    } catch (const error& e) {
      poison(e);
      throw;
    }
    wait.pause();
  }
}

PLAIT_DECL communicator communicator::split(int color, int key) {
  check_usable("split");
  if (color < 0 && color != no_group) {
    throw error(errc::invalid_argument, "split color " + std::to_string(color) + " is negative (use plait::no_group)",
                {rank_, "split"});
  }
  const int tag = next_tag();
  // Everyone learns everyone's (color, key).
  std::vector<std::int64_t> table(2 * static_cast<std::size_t>(size_));
  table[2 * static_cast<std::size_t>(rank_)] = color;
  table[2 * static_cast<std::size_t>(rank_) + 1] = key;
  exchange_table(std::as_writable_bytes(std::span(table)), tag);
  if (color == no_group) return communicator{};
  std::vector<int> members;
  for (int r = 0; r < size_; ++r) {
    if (table[2 * static_cast<std::size_t>(r)] == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return table[2 * static_cast<std::size_t>(a) + 1] < table[2 * static_cast<std::size_t>(b) + 1];
  });
  const int new_rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  const detail::geometry shape{static_cast<std::uint32_t>(members.size())};
  const error_context at{rank_, "split", -1, -1};
  const deadline until = clock::now() + timeout_;
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
  communicator child(std::move(seg), new_rank, timeout_);
  child.busy_poll_ = busy_poll_;
  child.await_attached(until, "split");
  return child;
}

PLAIT_DECL std::shared_ptr<detail::window> communicator::allocate_window(std::size_t bytes, bool fits) {
  constexpr std::string_view operation = "allocate";
  check_usable(operation);
  const error_context at{rank_, operation};
  const int tag = next_tag();
  auto w = std::make_shared<detail::window>(++window_count_, size_);
  std::vector<detail::window_announcement> table(static_cast<std::size_t>(size_));
  detail::window_announcement& mine = table[static_cast<std::size_t>(rank_)];
  mine = {w->id(), bytes, 1, {}};
  std::string own_name;
  std::optional<error> own_failure;  // why this rank fails, if it does
  try {
    if (!fits) throw error(errc::invalid_argument, "the element count times sizeof(T) overflows", at);
    if (bytes != 0) own_name = w->create_part(rank_, bytes, at);
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
    for (int r = 0; r < size_; ++r) {
      if (table[static_cast<std::size_t>(r)].ok == 0) {
        throw error(errc::transport, "rank " + std::to_string(r) + " could not " + std::string(what),
                    {rank_, operation, -1, r});
      }
    }
  };
  fail_if_any("allocate its part");
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const detail::window_announcement& theirs = table[static_cast<std::size_t>(r)];
    try {
      if (theirs.id != w->id()) {
        throw error(errc::invalid_argument,
                    "rank " + std::to_string(r) + " is at its allocation " + std::to_string(theirs.id) +
                        " where this rank is at " + std::to_string(w->id()) +
                        " (allocate is collective: every rank calls it, in the same order)",
                    {rank_, operation, -1, r});
      }
      if (theirs.bytes == 0) continue;
      if (!detail::is_window_name(theirs.name, sizeof(theirs.name))) {
        throw error(errc::transport, "rank " + std::to_string(r) + " announced a malformed shared-buffer name",
                    {rank_, operation, -1, r});
      }
      w->open_part(r, std::string(theirs.name), static_cast<std::size_t>(theirs.bytes), {rank_, operation, -1, r});
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
  const std::size_t entry = table.size() / static_cast<std::size_t>(size_);
  const auto mine = table.subspan(static_cast<std::size_t>(rank_) * entry, entry);
  std::vector<request> requests;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    requests.push_back(irecv(peer, table.subspan(static_cast<std::size_t>(peer) * entry, entry), tag));
    requests.push_back(isend(peer, mine, tag));
  }
  wait_all(requests);
  discount_control_bytes(entry * static_cast<std::size_t>(size_ - 1));
}

PLAIT_DECL std::pair<std::uint64_t, std::uint64_t> communicator::find_window(std::span<const std::byte> bytes) const {
  if (bytes.empty()) return {0, 0};
  const auto* first = bytes.data();
  for (const auto& weak : windows_) {
    const auto w = weak.lock();
    if (!w) continue;
    const detail::window::part& part = w->of(rank_);
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

[[gnu::noinline]] PLAIT_DECL void communicator::unusable(std::string_view operation) const {
  if (!segment_)
    throw error(errc::invalid_argument, "null communicator (from split with plait::no_group)", {-1, operation});
  plait::detail::fail(poisoned_code_, {"communicator is unusable after an earlier failure: ", poison_reason_},
                      {rank_, operation});
}

[[gnu::noinline]] PLAIT_DECL void communicator::bad_peer(int peer, std::string_view operation) const {
  plait::detail::fail(errc::invalid_argument, {"peer ", peer, " is outside [0, ", size_, ")"},
                      {rank_, operation, -1, peer});
}

PLAIT_DECL void communicator::poison(const error& e) {
  poisoned_ = true;
  poisoned_code_ = e.value();
  poison_reason_ = e.what();
  withdraw_references();
  for (auto& p : peers_) {  // nothing may touch user memory after the throw
    p.sends.clear();
    p.recvs.clear();
  }
}

PLAIT_DECL bool communicator::progress() {
  bool moved = false;
  for (int peer = 0; peer < size_; ++peer) {
    moved |= progress_sends(peer);
    moved |= progress_recvs(peer);
  }
  return moved;
}

PLAIT_DECL bool communicator::progress_sends(int peer) {
  auto& p = peers_[static_cast<std::size_t>(peer)];
  auto& channel = segment_->channel(rank_, peer);
  const std::uint32_t slots = segment_->shape().slots;
  const std::size_t slot_bytes = segment_->shape().slot_bytes;
  bool moved = false;
  while (!p.sends.empty()) {
    const std::uint64_t tail = detail::atomic(channel.tail).load(std::memory_order_acquire);
    if (detail::pending_slots(p.head, tail, slots) < 0) {
      plait::detail::fail(errc::transport,
                          {"corrupt channel: peer reports ", tail, " slots consumed of ", p.head, " written"},
                          {rank_, "isend", -1, peer});
    }
    pending& m = p.sends.front();
    if (m.by_reference) {
      // The receiver releases the slot only after it has finished with our
      // buffer, so a tail past the slot means the copy is over.
      if (tail <= m.reference_slot) break;
      const auto state = static_cast<detail::reference_state>(
          detail::atomic(segment_->reference(rank_, peer, m.reference_slot).state).load(std::memory_order_acquire));
      m.by_reference = false;
      moved = true;
      if (state == detail::reference_state::done) {
        // The receiver wrote copy_written before `done` (release; our load was acquire).
        if (m.copy != nullptr && detail::atomic(segment_->reference(rank_, peer, m.reference_slot).copy_written)
                                         .load(std::memory_order_relaxed) != 1) {
          plait::detail::copy_bytes(m.copy, m.out, m.bytes);  // it could not: copy it here
        }
        p.sends.pop_front();
        ++p.sends_done;
        continue;
      }
      if (state != detail::reference_state::refused) {
        plait::detail::fail(
            errc::transport,
            {"corrupt channel: peer released a single-copy slot in state ", static_cast<std::uint32_t>(state)},
            {rank_, "isend", -1, peer});
      }
      p.single_copy_refused = true;  // send this message (and later ones) in chunks
      if (m.copy != nullptr) {
        plait::detail::copy_bytes(m.copy, m.out, m.bytes);
        m.copy = nullptr;
      }
      continue;
    }
    if (p.head - tail == slots) break;  // channel full: the peer has to drain it first
    if (!m.started && goes_by_reference(m, p, peer)) {
      post_reference(peer, m);
      moved = true;
      break;  // later messages to this peer wait until the receiver has copied this one
    }
    const std::size_t chunk = std::min(slot_bytes, m.bytes - m.done);
    detail::slot_header& header = segment_->slot(rank_, peer, p.head);
    header = detail::slot_header{static_cast<std::uint32_t>(m.tag),
                                 static_cast<std::uint32_t>(detail::slot_kind::chunk), m.bytes, m.done, chunk};
    if (chunk != 0) std::memcpy(segment_->payload(rank_, peer, p.head), m.out + m.done, chunk);
    m.done += chunk;
    m.started = true;
    ++p.head;
    detail::atomic(channel.head).store(p.head, std::memory_order_release);
    moved = true;
    if (m.done == m.bytes) {
      p.sends.pop_front();
      ++p.sends_done;
    }
  }
  return moved;
}

PLAIT_DECL bool communicator::progress_recvs(int peer) {
  auto& p = peers_[static_cast<std::size_t>(peer)];
  auto& channel = segment_->channel(peer, rank_);
  const std::uint32_t slots = segment_->shape().slots;
  const std::size_t slot_bytes = segment_->shape().slot_bytes;
  bool moved = false;
  while (!p.recvs.empty()) {
    const std::uint64_t head = detail::atomic(channel.head).load(std::memory_order_acquire);
    if (detail::pending_slots(head, p.tail, slots) < 0) {
      plait::detail::fail(errc::transport,
                          {"corrupt channel: peer reports ", head, " slots written, ", p.tail, " consumed"},
                          {rank_, "irecv", -1, peer});
    }
    if (head == p.tail) break;  // nothing new yet
    pending& m = p.recvs.front();
    // Copy the header out first: the peer could change it while we check it.
    const detail::slot_header header = segment_->slot(peer, rank_, p.tail);
    if (header.kind == static_cast<std::uint32_t>(detail::slot_kind::reference)) {
      check_header(peer, m, header,
                   detail::check_reference(header, static_cast<std::uint32_t>(m.tag), m.bytes, m.done));
      if (copy_reference(peer, m)) {
        m.done = m.bytes;
        p.recvs.pop_front();
        ++p.recvs_done;
      }
      ++p.tail;  // releases the slot, and tells the sender we are done with its buffer
      detail::atomic(channel.tail).store(p.tail, std::memory_order_release);
      moved = true;
      continue;
    }
    if (header.kind != static_cast<std::uint32_t>(detail::slot_kind::chunk)) {
      plait::detail::fail(errc::transport, {"corrupt message slot (kind ", header.kind, ")"},
                          {rank_, "irecv", -1, peer});
    }
    check_header(peer, m, header,
                 detail::check_slot(header, static_cast<std::uint32_t>(m.tag), m.bytes, m.done, slot_bytes));
    const bool stream = m.bytes >= detail::chunk_stream_bytes();
    if (header.chunk_bytes != 0) {
      if (stream) {
        plait::detail::stream_copy(m.in + m.done, segment_->payload(peer, rank_, p.tail), header.chunk_bytes);
      } else {
        std::memcpy(m.in + m.done, segment_->payload(peer, rank_, p.tail), header.chunk_bytes);
      }
    }
    m.done += header.chunk_bytes;
    m.started = true;
    ++p.tail;
    detail::atomic(channel.tail).store(p.tail, std::memory_order_release);
    moved = true;
    if (m.done == m.bytes) {
      if (stream) plait::detail::stream_fence();  // the result is complete before the request is
      p.recvs.pop_front();
      ++p.recvs_done;
    }
  }
  return moved;
}

[[gnu::noinline]] PLAIT_DECL void communicator::header_failure(int peer, const pending& m,
                                                               const detail::slot_header& header,
                                                               detail::slot_problem problem) const {
  const error_context at{rank_, "irecv", -1, peer};
  switch (problem) {
    case detail::slot_problem::tag_mismatch:
      plait::detail::fail(errc::transport,
                          {"message with tag ", header.tag, " arrived where tag ", m.tag,
                           " was expected: the ranks called different operations or in a different order"},
                          at);
    case detail::slot_problem::size_mismatch:
      plait::detail::fail(errc::size_mismatch,
                          {"peer sent ", header.message_bytes, " bytes where this rank expects ", m.bytes,
                           " (do the ranks agree on the sizes?)"},
                          at);
    case detail::slot_problem::none:
    case detail::slot_problem::corrupt: break;
  }
  plait::detail::fail(errc::transport,
                      {"corrupt message slot (offset ", header.offset, ", ", header.chunk_bytes, " bytes)"}, at);
}

PLAIT_DECL void communicator::post_reference(int peer, pending& m) {
  auto& p = peers_[static_cast<std::size_t>(peer)];
  detail::reference_descriptor& ref = segment_->reference(rank_, peer, p.head);
  ref.address = reinterpret_cast<std::uintptr_t>(m.out);
  ref.pid = static_cast<std::int32_t>(getpid());
  ref.window = m.window;
  ref.offset = m.window_offset;
  ref.copy_address = reinterpret_cast<std::uintptr_t>(m.copy);
  ref.copy_window = m.copy_window;
  ref.copy_offset = m.copy_offset;
  detail::atomic(ref.copy_written).store(0, std::memory_order_relaxed);
  detail::atomic(ref.state).store(static_cast<std::uint32_t>(detail::reference_state::posted),
                                  std::memory_order_relaxed);
  segment_->slot(rank_, peer, p.head) = detail::slot_header{
      static_cast<std::uint32_t>(m.tag), static_cast<std::uint32_t>(detail::slot_kind::reference), m.bytes, 0, 0};
  m.started = true;
  m.by_reference = true;
  m.reference_slot = p.head;
  ++p.head;
  detail::atomic(segment_->channel(rank_, peer).head).store(p.head, std::memory_order_release);  // publishes all of it
}

PLAIT_DECL bool communicator::copy_reference(int peer, pending& m) {
  auto& p = peers_[static_cast<std::size_t>(peer)];
  detail::reference_descriptor& shared = segment_->reference(peer, rank_, p.tail);
  const std::uint64_t address = shared.address;  // read once: the value used is the value checked
  const std::int32_t pid = shared.pid;
  const std::uint64_t window_id = shared.window;
  const std::uint64_t offset = shared.offset;
  const std::uint64_t copy_address = shared.copy_address;
  const std::uint64_t copy_window_id = shared.copy_window;
  const std::uint64_t copy_offset = shared.copy_offset;
  auto state = detail::atomic(shared.state);
  auto finish = [&](detail::reference_state s) {
    state.store(static_cast<std::uint32_t>(s), std::memory_order_release);
  };
  auto expected = static_cast<std::uint32_t>(detail::reference_state::posted);
  if (!state.compare_exchange_strong(expected, static_cast<std::uint32_t>(detail::reference_state::copying),
                                     std::memory_order_acq_rel)) {
    if (expected == static_cast<std::uint32_t>(detail::reference_state::withdrawn)) {
      plait::detail::fail(errc::peer_lost,
                          {"the sender withdrew its message (it failed before this rank could copy it)"},
                          {rank_, "irecv", -1, peer});
    }
    plait::detail::fail(errc::transport, {"corrupt single-copy slot (state ", expected, ")"},
                        {rank_, "irecv", -1, peer});
  }
  if (window_id != 0) {
    if (const auto w = find_window(window_id)) {
      const detail::window::part& part = w->of(peer);
      if (!detail::window_read_fits(offset, m.bytes, part.bytes)) {
        finish(detail::reference_state::refused);
        plait::detail::fail(errc::transport,
                            {"corrupt single-copy slot (", m.bytes, " bytes at offset ", offset, " of a ", part.bytes,
                             "-byte shared buffer)"},
                            {rank_, "irecv", -1, peer});
      }
      std::byte* also = sender_copy(peer, m.bytes, copy_address, copy_window_id, copy_offset);
      copy_for_both(m.in, also, part.base + offset, m.bytes);
      bytes_read_in_place_ += m.bytes;
      if (also != nullptr) {
        bytes_copied_for_senders_ += m.bytes;
        detail::atomic(shared.copy_written).store(1, std::memory_order_relaxed);  // published by `done`
      }
      finish(detail::reference_state::done);
      return true;
    }
    // This rank has freed its handle on that buffer: read by address below.
  }
  if (segment_->is_local(peer)) {
    // A thread of this process (known here, not read from the segment): its
    // buffer is in our address space, and stays valid until we say done.
    std::byte* also = sender_copy(peer, m.bytes, copy_address, copy_window_id, copy_offset);
    copy_for_both(m.in, also, reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(address)), m.bytes);
    if (also != nullptr) {
      bytes_copied_for_senders_ += m.bytes;
      detail::atomic(shared.copy_written).store(1, std::memory_order_relaxed);
    }
    finish(detail::reference_state::done);
    return true;
  }
  // Another process: the kernel checks the pid and every address it names,
  // so a corrupt descriptor fails here instead of reading our own memory.
  if (pid <= 0) {
    finish(detail::reference_state::refused);
    plait::detail::fail(errc::transport, {"corrupt single-copy slot (pid ", pid, ")"}, {rank_, "irecv", -1, peer});
  }
  std::size_t copied = 0;
  while (copied < m.bytes) {
    iovec local{m.in + copied, m.bytes - copied};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address + copied)), m.bytes - copied};
    const ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n > 0) {
      copied += static_cast<std::size_t>(n);
      continue;
    }
    const int reason = n == 0 ? EFAULT : errno;
    if (reason == EINTR) continue;
    if (copied == 0 && (reason == EPERM || reason == ENOSYS || reason == EACCES)) {
      finish(detail::reference_state::refused);  // no cross-memory attach here: the sender falls back to chunks
      return false;
    }
    finish(detail::reference_state::refused);
    plait::detail::fail(reason == ESRCH ? errc::peer_lost : errc::transport,
                        {"cannot read the sender's buffer (process_vm_readv: ", std::strerror(reason), ")"},
                        {rank_, "irecv", -1, peer});
  }
  finish(detail::reference_state::done);
  return true;
}

[[gnu::noinline]] PLAIT_DECL std::byte* communicator::sender_copy(int peer, std::size_t bytes, std::uint64_t address,
                                                                  std::uint64_t window_id,
                                                                  std::uint64_t offset) const noexcept {
  if (window_id != 0) {
    const auto w = find_window(window_id);
    if (!w) return nullptr;  // freed here: the sender copies
    const detail::window::part& part = w->of(peer);
    // Out of bounds only if the descriptor is corrupt: then not written here
    // (the sender copies for itself) rather than anywhere else.
    return detail::window_read_fits(offset, bytes, part.bytes) ? part.base + offset : nullptr;
  }
  if (address != 0 && segment_->is_local(peer))
    return reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(address));
  return nullptr;
}

[[gnu::noinline]] PLAIT_DECL void communicator::copy_for_both(std::byte* dst, std::byte* also, const std::byte* src,
                                                              std::size_t bytes) noexcept {
  if (also == nullptr) return plait::detail::copy_bytes(dst, src, bytes);  // streams when large
  // A piece at a time, so the second copy reads what the first has just
  // brought into the cache: 64 KiB pieces measured best (bench/cma-vs-copy,
  // shtee:16K-64K against 256K).
  constexpr std::size_t piece = std::size_t{64} << 10;
  const bool stream = bytes >= plait::detail::stream_copy_bytes().load(std::memory_order_relaxed);
  for (std::size_t done = 0; done < bytes; done += piece) {
    const std::size_t n = std::min(piece, bytes - done);
    if (stream) {
      plait::detail::stream_copy(dst + done, src + done, n);
      plait::detail::stream_copy(also + done, src + done, n);
    } else {
      std::memcpy(dst + done, src + done, n);
      std::memcpy(also + done, src + done, n);
    }
  }
  if (stream) plait::detail::stream_fence();
}

PLAIT_DECL void communicator::withdraw_references() noexcept {
  for (int peer = 0; peer < static_cast<int>(peers_.size()); ++peer) {
    auto& p = peers_[static_cast<std::size_t>(peer)];
    if (p.sends.empty() || !p.sends.front().by_reference) continue;
    auto state = detail::atomic(segment_->reference(rank_, peer, p.sends.front().reference_slot).state);
    auto expected = static_cast<std::uint32_t>(detail::reference_state::posted);
    if (state.compare_exchange_strong(expected, static_cast<std::uint32_t>(detail::reference_state::withdrawn),
                                      std::memory_order_acq_rel)) {
      continue;
    }
    // A copy is under way: it ends by itself (a bounded memcpy or syscall)
    // unless the reader dies, which the pid check notices.
    const deadline until = clock::now() + std::min<std::chrono::nanoseconds>(timeout_, std::chrono::seconds(10));
    plait::detail::backoff wait;
    while (state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(detail::reference_state::copying) &&
           clock::now() < until &&
           !process_gone(detail::atomic(segment_->record(peer).pid).load(std::memory_order_relaxed))) {
      wait.pause();
    }
  }
}

[[gnu::noinline]] PLAIT_DECL void communicator::group_failed(int peer, int failed) const {
  plait::detail::fail(errc::peer_lost, {"rank ", failed, " of the group failed"},
                      {rank_, {}, -1, peer >= 0 ? peer : failed});
}

PLAIT_DECL bool communicator::process_gone(std::int32_t pid) noexcept {
  return pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
}

PLAIT_DECL bool communicator::peers_alive(std::span<request> requests) const {
  for (const request& r : requests) {
    if (!complete(r) && process_gone(detail::atomic(segment_->record(r.peer).pid).load(std::memory_order_relaxed))) {
      return false;
    }
  }
  return true;
}

[[gnu::noinline]] PLAIT_DECL error communicator::lost_process(std::span<request> requests) const {
  for (const request& r : requests) {
    const std::int32_t pid = detail::atomic(segment_->record(r.peer).pid).load(std::memory_order_relaxed);
    if (!complete(r) && process_gone(pid)) {
      return error(errc::peer_lost, plait::detail::concat({"process of rank ", r.peer, " (pid ", pid, ") ended first"}),
                   {rank_, {}, -1, r.peer});
    }
  }
  return error(errc::peer_lost, "a peer process ended first", {rank_});
}

[[gnu::noinline]] PLAIT_DECL error communicator::timed_out(std::span<request> requests) const {
  for (const request& r : requests) {
    if (complete(r)) continue;
    const auto& p = peers_[static_cast<std::size_t>(r.peer)];
    const pending& m = r.is_send ? p.sends.front() : p.recvs.front();
    return error(errc::timeout,
                 plait::detail::concat({"timed out after ", detail::seconds_text(timeout_), " waiting to ",
                                        r.is_send ? "send " : "receive ", m.bytes, " bytes (", m.done, " done)"}),
                 {rank_, {}, -1, r.peer});
  }
  return error(errc::timeout, "timed out", {rank_});
}

PLAIT_DECL void communicator::await_attached(deadline until, std::string_view operation) {
  auto& h = segment_->header();
  plait::detail::backoff wait;
  for (;;) {
    const std::uint32_t attached = detail::atomic(h.attached).load(std::memory_order_acquire);
    if (attached >= static_cast<std::uint32_t>(size_)) break;
    if (wait.sleeping()) {
      if (const std::string ended = segment_->ended_member(); !ended.empty()) {
        segment_->unlink();
        throw error(errc::peer_lost, ended, {rank_, operation});
      }
    }
    if (clock::now() > until) {
      segment_->unlink();
      throw error(errc::timeout,
                  "only " + std::to_string(attached) + " of " + std::to_string(size_) + " ranks attached within " +
                      detail::seconds_text(timeout_),
                  {rank_, operation});
    }
    wait.pause();
  }
  segment_->remove_name();  // everyone is in: the name is no longer needed (any rank may remove it)
}

}  // namespace shm
}  // namespace v0
}  // namespace plait

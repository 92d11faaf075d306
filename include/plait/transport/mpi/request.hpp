// plait::mpi::request: one posted MPI send or receive, possibly of several
// MPI messages (chunks), completed by plait::mpi::communicator::wait_all;
// and what a wait reads from its requests when one fails (which one, why).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "plait/transport/mpi/error.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {

class communicator;

namespace detail {

/// The largest single MPI message plait posts by default: MPI counts are int,
/// so longer messages go as several chunks with the same tag (MPI's
/// non-overtaking rule keeps them in order). 1 GiB keeps each far from INT_MAX.
inline constexpr std::size_t default_chunk_bytes = std::size_t{1} << 30;

}  // namespace detail

/// One posted send or receive, completed by communicator::wait_all. A request
/// destroyed while still pending (an exception unwound past it) cancels its
/// receive and waits for the cancel, so no message lands in a buffer the
/// caller may already have freed; a pending send is cancelled and released.
/// A message of one MPI chunk (up to chunk_bytes(), 1 GiB by default) keeps
/// its handle inline: posting allocates nothing.
class request {
 public:
  request() = default;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  /// Movable: the handles move, the source is left empty.
  request(request&& other) noexcept { take(other); }
  /// Movable: a pending request here is abandoned first.
  request& operator=(request&& other) noexcept {
    if (this != &other) {
      abandon();
      take(other);
    }
    return *this;
  }
  ~request() { abandon(); }

  /// True until wait_all has completed it (or it was abandoned).
  [[nodiscard]] bool pending() const noexcept {
    if (unmatched()) return true;
    const auto all = handles();
    return std::any_of(all.begin(), all.end(), [](MPI_Request h) { return h != MPI_REQUEST_NULL; });
  }
  /// The peer rank.
  [[nodiscard]] int peer() const noexcept { return peer_; }
  /// True for a receive, false for a send.
  [[nodiscard]] bool is_receive() const noexcept { return receive_; }
  /// The message's payload bytes.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// How many MPI messages it was posted as (chunks of at most chunk_bytes()).
  [[nodiscard]] std::size_t chunks() const noexcept { return chunks_; }

 private:
  friend class communicator;

  /// The MPI handles, one per chunk in posting order: inline for one chunk,
  /// in `more_` for several.
  [[nodiscard]] std::span<MPI_Request> handles() noexcept {
    return chunks_ <= 1 ? std::span<MPI_Request>(&first_, chunks_) : std::span<MPI_Request>(more_);
  }
  [[nodiscard]] std::span<const MPI_Request> handles() const noexcept {
    return chunks_ <= 1 ? std::span<const MPI_Request>(&first_, chunks_) : std::span<const MPI_Request>(more_);
  }
  /// A probed receive (a collective's) with chunks not yet matched: its
  /// chunks are taken one by one once MPI_Improbe has seen each arrive with
  /// the size expected (communicator::match_probed), never truncated.
  [[nodiscard]] bool unmatched() const noexcept { return probed_ && matched_ < chunks_; }

  /// Room for `chunks` handles, all MPI_REQUEST_NULL.
  void reserve_handles(std::size_t chunks) {
    chunks_ = chunks;
    if (chunks > 1) more_.assign(chunks, MPI_REQUEST_NULL);
  }

  void take(request& other) noexcept {
    first_ = std::exchange(other.first_, MPI_REQUEST_NULL);
    more_ = std::move(other.more_);
    other.more_.clear();
    chunks_ = std::exchange(other.chunks_, 0);
    peer_ = other.peer_;
    bytes_ = other.bytes_;
    receive_ = other.receive_;
    probed_ = std::exchange(other.probed_, false);
    matched_ = other.matched_;
    tag_ = other.tag_;
    data_ = other.data_;
    pieces_ = other.pieces_;
  }

  /// Ends a pending transfer without completing it. Receives: MPI_Cancel,
  /// then MPI_Wait, which the MPI standard makes local for a cancelled
  /// request. Sends: cancel and free, because some MPI libraries cannot cancel
  /// a send and waiting for it could block on a peer that never receives.
  void abandon() noexcept {
    if (chunks_ == 0) return;
    // A completed request (the usual case) has nothing to cancel: no MPI call.
    if (pending() && !mpi::detail::finalized()) {
      for (MPI_Request& handle : handles()) {
        if (handle == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&handle);
        if (receive_) {
          MPI_Wait(&handle, MPI_STATUS_IGNORE);
        } else {
          MPI_Request_free(&handle);
        }
      }
    }
    first_ = MPI_REQUEST_NULL;
    more_.clear();
    chunks_ = 0;
    probed_ = false;  // a chunk not matched yet stays in MPI, as a cancelled receive's message does
  }

  MPI_Request first_ = MPI_REQUEST_NULL;  // the handle when there is one chunk
  std::vector<MPI_Request> more_;         // every handle when there are several
  std::size_t chunks_ = 0;
  int peer_ = -1;
  std::size_t bytes_ = 0;
  bool receive_ = false;
  int tag_ = 0;
  // A probed receive: its buffer (data_, or the pieces of an irecvv), and
  // how many of its chunks have been matched and posted.
  bool probed_ = false;
  std::size_t matched_ = 0;
  std::byte* data_ = nullptr;
  std::span<const std::span<std::byte>> pieces_;
};

namespace detail {

/// What a wait found wrong with one of its requests: its peer (-1: none
/// wrong), the MPI error code, the bytes received and expected.
struct request_status {
  int peer = -1;
  int code = MPI_SUCCESS;
  std::size_t received = 0;
  std::size_t expected = 0;
};

/// After MPI_Testall returned `code`: the request whose status (in
/// `statuses`, one per chunk in request order) holds the real error, with
/// that error; MPI_ERR_IN_STATUS names none itself.
[[gnu::cold]] inline request_status failed_request(std::span<const request> requests, const MPI_Status* statuses,
                                                   int code) noexcept {
  if (code != MPI_ERR_IN_STATUS) return {-1, code};
  const MPI_Status* status = statuses;
  for (const request& r : requests) {
    for (std::size_t i = 0; i < r.chunks(); ++i, ++status) {
      if (status->MPI_ERROR != MPI_SUCCESS && status->MPI_ERROR != MPI_ERR_PENDING)
        return {r.peer(), status->MPI_ERROR};
    }
  }
  return {-1, code};
}

/// The first completed receive whose chunks brought another number of bytes
/// than it asked for (peer -1: none).
inline request_status wrong_length(std::span<const request> requests, const MPI_Status* statuses) noexcept {
  const MPI_Status* status = statuses;
  for (const request& r : requests) {
    std::size_t received = 0;
    for (std::size_t i = 0; i < r.chunks(); ++i, ++status) {
      int count = 0;
      if (r.is_receive()) MPI_Get_count(status, MPI_BYTE, &count);
      received += count < 0 ? 0 : static_cast<std::size_t>(count);
    }
    if (r.is_receive() && received != r.bytes()) [[unlikely]]
      return {r.peer(), MPI_SUCCESS, received, r.bytes()};
  }
  return {};
}

/// The peer of the first request still pending, or -1: the rank a timed-out
/// wait was waiting for.
inline int first_pending_peer(std::span<const request> requests) noexcept {
  for (const request& r : requests) {
    if (r.pending()) return r.peer();
  }
  return -1;
}

/// "2 transfer(s) still pending: receive from 3 (16 bytes), send to 1 (8
/// bytes)", the first 8 of them, for a timeout's message.
[[gnu::cold]] inline std::string describe_pending(std::span<const request> requests) {
  std::string list;
  int count = 0;
  for (const request& r : requests) {
    if (!r.pending()) continue;
    if (count < 8) {
      list += count == 0 ? "" : ", ";
      list += (r.is_receive() ? "receive from " : "send to ") + std::to_string(r.peer()) + " (" +
              std::to_string(r.bytes()) + " bytes)";
    }
    ++count;
  }
  if (count > 8) list += ", ...";
  return std::to_string(count) + " transfer(s) still pending: " + list;
}

}  // namespace detail
}  // namespace mpi
}  // namespace v0
}  // namespace plait

// The small messages plait sends on its own tags (the blame exchange, size
// notices) without waiting for the receiver. A rank outside MPI (busy in its
// own code, stopped, asleep) may not take even a small message until it next
// calls MPI, so a blocking send there could wait as long as that rank does:
// a timed-out rank's query to a rank that never calls again would never
// return. Each message is posted and kept, with its bytes, until MPI has
// sent it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace plait {
inline namespace v0 {
namespace mpi::detail {

class control_sends {
 public:
  control_sends() = default;
  control_sends(const control_sends&) = delete;
  control_sends& operator=(const control_sends&) = delete;
  control_sends(control_sends&&) noexcept = default;
  control_sends& operator=(control_sends&&) noexcept = default;
  /// Messages MPI has not sent yet stay with it: their bytes are left
  /// allocated (a few hundred bytes, after a failure only), as MPI may still
  /// read them.
  ~control_sends() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    for (auto& m : pending_) {
      if (finalized != 0) {  // no MPI call is allowed: its handles are moot
        (void)m.release();
        continue;
      }
      if (m->handle != MPI_REQUEST_NULL) {
        MPI_Request_free(&m->handle);
        (void)m.release();
      }
    }
  }

  /// Posts `bytes` (copied) to `peer` under `tag`; false if MPI refused it.
  bool post(const void* bytes, std::size_t size, int peer, int tag, MPI_Comm comm) {
    reap();
    auto m = std::make_unique<message>();
    m->bytes.resize(size);
    std::memcpy(m->bytes.data(), bytes, size);
    if (MPI_Isend(m->bytes.data(), static_cast<int>(size), MPI_BYTE, peer, tag, comm, &m->handle) != MPI_SUCCESS) {
      return false;
    }
    pending_.push_back(std::move(m));
    return true;
  }

  /// Drops the messages MPI has sent (a test each: it also lets MPI progress them).
  void reap() noexcept {
    std::erase_if(pending_, [](std::unique_ptr<message>& m) {
      int done = 0;
      return MPI_Test(&m->handle, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done != 0;
    });
  }

  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }

 private:
  struct message {
    std::vector<std::byte> bytes;
    MPI_Request handle = MPI_REQUEST_NULL;
  };
  std::vector<std::unique_ptr<message>> pending_;
};

}  // namespace mpi::detail
}  // namespace v0
}  // namespace plait

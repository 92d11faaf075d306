// Which ranks of an MPI communicator share this machine's CPUs, and whether
// they outnumber them: the fact the MPI transport sets its busy-poll default
// from (a rank that spins holds the core a peer on the same machine needs),
// and that default.
#pragma once

#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>

#include "plait/core/backoff.hpp"

namespace plait {
inline namespace v0 {
namespace mpi {
namespace detail {

/// How long a wait polls MPI without giving up the core when the node has a
/// core for every rank: what MPI's own blocking calls do (they spin in the
/// progress engine). A yield hands the core to any other runnable process and
/// may not get it back for a scheduler slice, while MPI moves a rendezvous
/// message only while someone calls into it: on a busy node one yield turned
/// a 1 MiB all-gather from 60 us into 300-500 us.
inline constexpr std::chrono::milliseconds default_busy_poll{100};

/// A number that every process under one running kernel shares: FNV-1a of
/// the kernel's boot id (else of MPI's processor name), non-negative. Ranks
/// with the same number share the machine's CPUs, also
/// across network and UTS namespaces (emulated hosts), where
/// MPI_COMM_TYPE_SHARED sees separate nodes.
inline int machine_color() noexcept {
  char text[MPI_MAX_PROCESSOR_NAME + 64] = {};
  int length = 0;
  const int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const ssize_t got = ::read(fd, text, 64);
    ::close(fd);
    length = got > 0 ? static_cast<int>(got) : 0;
  }
  if (length == 0 && MPI_Get_processor_name(text, &length) != MPI_SUCCESS) length = 0;
  std::uint32_t hash = 2166136261u;
  for (int i = 0; i < length; ++i) {
    hash ^= static_cast<unsigned char>(text[i]);
    hash *= 16777619u;
  }
  return static_cast<int>(hash & 0x7fffffffu);
}

/// Ranks the launcher says run on this node (Open MPI, MPICH/Hydra), 0 when
/// it does not say: a hint that covers ranks outside the communicator.
inline int launcher_local_ranks() noexcept {
  int most = 0;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* value = std::getenv(name); value != nullptr) {
      char* end = nullptr;
      const long n = std::strtol(value, &end, 10);
      if (end != value && *end == '\0' && n > most && n <= INT_MAX) most = static_cast<int>(n);
    }
  }
  return most;
}

/// Whether this machine runs more ranks than it has online CPUs:
/// `machine_ranks` (the communicator's ranks under this kernel, those with
/// this machine_color()) or the launcher's count of the job's ranks on this
/// node, whichever is larger.
inline bool oversubscribed(int machine_ranks) noexcept {
  return std::max(machine_ranks, launcher_local_ranks()) > plait::detail::online_cpus();
}

}  // namespace detail
}  // namespace mpi
}  // namespace v0
}  // namespace plait

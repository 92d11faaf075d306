// A would-be transport that misses one member must be told which member, by
// name, instead of a concept-satisfaction dump. Each case removes one member
// from an otherwise complete transport.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include <plait/core/transport.hpp>

namespace {

struct complete_transport {
  using transport_concept = plait::transport_tag;
  using memory_space = plait::host_memory;
  struct request {};
  [[nodiscard]] int rank() const { return 0; }
  [[nodiscard]] int size() const { return 1; }
#if !defined(PLAIT_CASE_no_isend)
  request isend(int /*peer*/, std::span<const std::byte> /*bytes*/, int /*tag*/) { return {}; }
#endif
#if !defined(PLAIT_CASE_no_irecv)
  request irecv(int /*peer*/, std::span<std::byte> /*bytes*/, int /*tag*/) { return {}; }
#endif
  void wait_all(std::span<request> /*requests*/, plait::deadline /*until*/) {}
  int next_tag() { return 1; }
  [[nodiscard]] plait::clock::duration timeout() const { return std::chrono::seconds(1); }
  [[nodiscard]] std::uint64_t bytes_sent() const { return 0; }
  void barrier() {}
};

}  // namespace

// The baseline (no case defined) proves the complete type is accepted, so the
// cases below fail only for the member they remove.
static_assert(plait::detail::check_transport<complete_transport>());
static_assert(plait::transport<complete_transport>);

// expect-error(no_isend): plait: transport lacks `request isend\(int peer
#if defined(PLAIT_CASE_no_isend)
static_assert(!plait::transport<complete_transport>);
#endif

// expect-error(no_irecv): plait: transport lacks `request irecv\(int peer
#if defined(PLAIT_CASE_no_irecv)
static_assert(!plait::transport<complete_transport>);
#endif

int main() { return 0; }

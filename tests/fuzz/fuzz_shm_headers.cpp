// libFuzzer target for everything plait reads from shared memory that a peer
// could have written: the segment header, slot headers with channel counters,
// a failed child's record, and a shared buffer's announcement and the read a
// reference into it asks for. A corrupt or hostile peer must never make plait
// read or write out of bounds: whenever a check accepts a slot, the copy it
// allows is performed here into buffers of exactly the expected size, so
// AddressSanitizer catches any bound the checks get wrong.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <plait/transport/shm/run.hpp>
#include <plait/transport/shm/segment.hpp>
#include <plait/transport/shm/shared_buffer.hpp>

namespace shm = plait::shm::detail;

namespace {
/// Takes sizeof(T) bytes from the input (zero-padded when it runs out).
template <class T>
T take(const std::uint8_t*& data, std::size_t& size) {
  T value{};
  const std::size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(&value, data, n);
  data += n;
  size -= n;
  return value;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto ranks = static_cast<std::uint32_t>(take<std::uint8_t>(data, size) % 16 + 1);
  const shm::geometry shape{ranks, 4, 256};

  // The segment header a joining rank reads.
  const auto header = take<shm::segment_header>(data, size);
  (void)shm::check_segment_header(header, shape);

  // A receive in progress and the slots a peer claims to have written.
  const auto expected_bytes = static_cast<std::uint64_t>(take<std::uint16_t>(data, size) % 2048);
  const auto tag = take<std::uint32_t>(data, size) % 4;
  std::vector<std::byte> receive(expected_bytes);
  std::vector<std::byte> slot_payload(shape.slot_bytes, std::byte{0x5a});
  std::uint64_t done = 0;
  std::uint64_t tail = 0;
  const auto head = take<std::uint64_t>(data, size);
  const std::int64_t pending = shm::pending_slots(head % 16, tail, shape.slots);
  for (std::int64_t i = 0; i < pending && done <= expected_bytes; ++i) {
    const auto slot = take<shm::slot_header>(data, size);
    if (slot.kind == static_cast<std::uint32_t>(shm::slot_kind::reference)) {
      // A single-copy reference: accepted only as a whole message not yet begun.
      if (shm::check_reference(slot, tag, expected_bytes, done) != shm::slot_problem::none) break;
      std::memset(receive.data(), 0x33, expected_bytes);  // the copy it allows: exactly the receive
      done = expected_bytes;
      break;
    }
    if (slot.kind == static_cast<std::uint32_t>(shm::slot_kind::vector_reference)) {
      // A vectored reference: its piece count must fit the slot, and the
      // pieces (copied out first) must add up to exactly the receive.
      if (shm::check_vector_reference(slot, tag, expected_bytes, done, shape.slot_bytes) != shm::slot_problem::none)
        break;
      std::vector<shm::vector_piece> pieces(static_cast<std::size_t>(slot.chunk_bytes));
      for (auto& piece : pieces) piece = take<shm::vector_piece>(data, size);
      if (!shm::pieces_add_up(pieces, expected_bytes)) break;
      std::uint64_t total = 0;
      for (const auto& piece : pieces) total += piece.bytes;
      if (total != expected_bytes) __builtin_trap();  // what the check promised
      std::memset(receive.data(), 0x44, expected_bytes);
      done = expected_bytes;
      break;
    }
    if (slot.kind != static_cast<std::uint32_t>(shm::slot_kind::chunk)) break;
    if (shm::check_slot(slot, tag, expected_bytes, done, shape.slot_bytes) != shm::slot_problem::none) break;
    if (slot.chunk_bytes != 0) std::memcpy(receive.data() + done, slot_payload.data(), slot.chunk_bytes);
    done += slot.chunk_bytes;
    ++tail;
    if (done == expected_bytes) break;
  }

  // A peer's announcement of its part of a shared buffer: the name is opened
  // only when it passes, and a reference into the part is read only within it.
  const auto announcement = take<shm::window_announcement>(data, size);
  if (shm::is_window_name(announcement.name, sizeof(announcement.name))) {
    volatile std::size_t length = std::strlen(announcement.name);  // terminated, as the check promised
    (void)length;
  }
  const auto part_bytes = static_cast<std::size_t>(take<std::uint16_t>(data, size) % 4096);
  std::vector<std::byte> part(part_bytes, std::byte{0x77});
  const auto read_offset = take<std::uint64_t>(data, size);
  const auto read_bytes = take<std::uint64_t>(data, size);
  if (shm::window_read_fits(read_offset, read_bytes, part.size()) && read_bytes != 0) {
    std::vector<std::byte> into(static_cast<std::size_t>(read_bytes));
    std::memcpy(into.data(), part.data() + read_offset, into.size());  // the copy it allows
  }

  // A failed child's record, rebuilt into an error by the parent.
  const auto record = take<shm::rank_record>(data, size);
  const plait::error failure = plait::shm::detail::recorded_failure(record, 0);
  volatile std::size_t sink = std::strlen(failure.what());
  (void)sink;
  return 0;
}

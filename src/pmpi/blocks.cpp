#include "blocks.hpp"

#include <cstring>

#include "datatype.hpp"

namespace plait_pmpi {

void blocks_of(const int* counts, const int* displs, MPI_Datatype type, int P, block_layout& into) {
  const type_layout t = layout_of(type);
  into.bytes.resize(static_cast<std::size_t>(P));
  into.offsets.resize(static_cast<std::size_t>(P));
  into.total = 0;
  bool prefix = true;
  long long elements = 0;
  for (int i = 0; i < P; ++i) {
    const auto k = static_cast<std::size_t>(i);
    into.bytes[k] = t.size * static_cast<std::size_t>(counts[i]);
    into.offsets[k] = into.total;
    into.total += into.bytes[k];
    // A zero-count block may sit anywhere: it moves nothing.
    prefix = prefix && (counts[i] == 0 || displs[i] == elements);
    elements += counts[i];
  }
  into.in_order = prefix;
  into.direct = t.contiguous && prefix;
}

v_call_blocks& blocks_of_this_thread() noexcept {
  thread_local v_call_blocks blocks;
  return blocks;
}

std::span<const std::byte> gather_blocks(const void* buffer, const int* counts, const int* displs, MPI_Datatype type,
                                         const block_layout& layout, std::vector<std::byte>& scratch, bool copy) {
  const type_layout t = layout_of(type);
  const auto* base = static_cast<const std::byte*>(buffer);
  if (layout.direct && !copy) return {base + t.true_lb, layout.total};
  scratch.resize(layout.total);
  std::vector<std::byte> packed;
  for (std::size_t i = 0; i < layout.bytes.size(); ++i) {
    if (layout.bytes[i] == 0) continue;
    const std::byte* block = base + static_cast<MPI_Aint>(displs[i]) * t.extent;
    if (t.contiguous) {
      std::memcpy(scratch.data() + layout.offsets[i], block + t.true_lb, layout.bytes[i]);
    } else {
      const std::span<const std::byte> bytes = gather_bytes(block, counts[i], type, packed);
      std::memcpy(scratch.data() + layout.offsets[i], bytes.data(), bytes.size());
    }
  }
  return {scratch.data(), layout.total};
}

std::span<std::byte> receive_blocks(void* buffer, MPI_Datatype type, const block_layout& layout,
                                    std::vector<std::byte>& scratch) {
  if (layout.direct) return {static_cast<std::byte*>(buffer) + layout_of(type).true_lb, layout.total};
  scratch.resize(layout.total);
  return {scratch.data(), layout.total};
}

void scatter_blocks(std::span<const std::byte> packed, void* buffer, const int* counts, const int* displs,
                    MPI_Datatype type, const block_layout& layout) {
  if (layout.direct) return;
  const type_layout t = layout_of(type);
  auto* base = static_cast<std::byte*>(buffer);
  for (std::size_t i = 0; i < layout.bytes.size(); ++i) {
    if (layout.bytes[i] == 0) continue;
    std::byte* block = base + static_cast<MPI_Aint>(displs[i]) * t.extent;
    const std::span<const std::byte> bytes = packed.subspan(layout.offsets[i], layout.bytes[i]);
    if (t.contiguous) {
      std::memcpy(block + t.true_lb, bytes.data(), bytes.size());
    } else {
      scatter_bytes(bytes, block, counts[i], type);
    }
  }
}

}  // namespace plait_pmpi

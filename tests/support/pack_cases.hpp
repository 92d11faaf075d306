// Shared body of the packing tests: random regions (0 to 6 outer dimensions,
// odd and 16-byte runs, unaligned starts, gaps between runs) packed and
// unpacked by plait::pack_with / unpack_with through a caller's runner (a
// Thrust back end, a CUDA launch), compared byte for byte with the host
// plait::pack / plait::unpack, guard bytes included. Plain C++ so that g++
// Thrust tests and nvcc programs both use it; it returns a description of
// the first difference, or "".
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include <plait/core/region.hpp>
#include <plait/layout/pack_functors.hpp>

namespace pack_cases {

/// A region inside `buffer`, with the buffer sized to hold it plus guards.
struct layout_case {
  std::size_t offset = 0;  ///< bytes from the buffer start to the region start
  std::size_t span = 0;    ///< buffer bytes needed
  plait::region shape;     ///< data relative to nullptr; rebased onto a buffer
  std::string text;
};

inline layout_case random_case(std::mt19937& rng) {
  const std::size_t runs[] = {1, 2, 3, 4, 8, 12, 16, 24, 32, 48, 100, 256};
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  layout_case c;
  c.shape.run_bytes = runs[pick(sizeof(runs) / sizeof(runs[0]))];
  c.shape.dims = static_cast<int>(pick(7));
  c.offset = pick(4) == 0 ? pick(16) : 16 * pick(4);
  std::size_t reach = c.shape.run_bytes;
  for (int d = c.shape.dims - 1; d >= 0; --d) {
    const auto i = static_cast<std::size_t>(d);
    c.shape.extent[i] = 1 + pick(4);
    const std::size_t gap = pick(3) == 0 ? 0 : (pick(2) == 0 ? pick(9) : 16 * pick(3));
    c.shape.stride[i] = static_cast<std::ptrdiff_t>(reach + gap);
    reach = static_cast<std::size_t>(c.shape.stride[i]) * c.shape.extent[i];
  }
  if (pick(10) == 0 && c.shape.dims > 0) c.shape.extent[0] = 0;  // empty
  c.span = c.offset + reach + 16;
  c.text = "run " + std::to_string(c.shape.run_bytes) + " dims " + std::to_string(c.shape.dims) + " offset " +
           std::to_string(c.offset);
  return c;
}

inline plait::region rebase(const plait::region& shape, std::byte* base) {
  plait::region r = shape;
  r.data = base;
  return r;
}

/// Runs `cases` random regions through `run`; "" when every byte matches the host packer.
/// `alloc(bytes)` gives memory the runner can touch, `to_host` / `to_device`
/// copy between it and host vectors (identity copies for the CPP/OMP back ends).
template <class Runner, class Buffer>
std::string check_random(Runner&& run, Buffer&& buffer, int cases, unsigned seed, int* vector_cases = nullptr) {
  std::mt19937 rng(seed);
  for (int k = 0; k < cases; ++k) {
    const layout_case c = random_case(rng);
    std::vector<std::byte> user(c.span);
    for (auto& b : user) b = static_cast<std::byte>(rng());
    const plait::region host_region = rebase(c.shape, user.data() + c.offset);
    const std::size_t bytes = host_region.bytes();

    // pack
    std::vector<std::byte> want(bytes + 16, std::byte{0xAB});
    plait::pack(host_region, want.data());
    auto device_user = buffer.upload(user);
    auto device_packed = buffer.upload(std::vector<std::byte>(bytes + 16, std::byte{0xAB}));
    const plait::region device_region = rebase(c.shape, buffer.data(device_user) + c.offset);
    if (vector_cases != nullptr && bytes != 0 &&
        plait::detail::chunk_bytes(device_region, buffer.data(device_packed)) == 16) {
      ++*vector_cases;
    }
    plait::pack_with(run, device_region, buffer.data(device_packed));
    if (buffer.download(device_packed) != want)
      return "pack differs for case " + std::to_string(k) + " (" + c.text + ")";

    // unpack: fresh random source bytes into the original user bytes
    std::vector<std::byte> packed(bytes + 16);
    for (auto& b : packed) b = static_cast<std::byte>(rng());
    std::vector<std::byte> expect = user;
    plait::unpack(packed.data(), rebase(c.shape, expect.data() + c.offset));
    auto device_source = buffer.upload(packed);
    plait::unpack_with(run, buffer.data(device_source), device_region);
    if (buffer.download(device_user) != expect) {
      return "unpack differs (or wrote between runs) for case " + std::to_string(k) + " (" + c.text + ")";
    }
  }
  return {};
}

/// Memory for the CPP/OMP back ends: host vectors.
struct host_buffers {
  using handle = std::vector<std::byte>*;
  std::deque<std::vector<std::byte>> store;  // a deque: handles stay valid as it grows
  handle upload(const std::vector<std::byte>& bytes) {
    store.push_back(bytes);
    return &store.back();
  }
  std::byte* data(handle h) { return h->data(); }
  std::vector<std::byte> download(handle h) { return *h; }
};

}  // namespace pack_cases

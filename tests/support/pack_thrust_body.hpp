// The Thrust packing test, compiled once per back end: the including file
// defines THRUST_DEVICE_SYSTEM (CPP or OMP) and PACK_BACKEND_NAME first. The
// same __host__ __device__ functors that the CUDA kernels run are run here by
// thrust::for_each on the CPU and compared with the host packer.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>

#include <plait/layout/pack_functors.hpp>

#include "support/pack_cases.hpp"
#include "support/thrust_runner.hpp"

using plait_test::thrust_runner;

TEST_CASE("pack functors on the Thrust " PACK_BACKEND_NAME " back end match the host packer", "[pack][thrust]") {
  pack_cases::host_buffers memory;
  int vector_cases = 0;
  CHECK(pack_cases::check_random(thrust_runner{}, memory, 400, 7u, &vector_cases) == "");
  // The 16-byte vector path must have been exercised, not only bytes.
  CHECK(vector_cases > 20);
}

TEST_CASE("pack functors on the Thrust " PACK_BACKEND_NAME " back end handle large strided regions", "[pack][thrust]") {
  // 1 MiB in 4-byte runs 8 bytes apart: many items, so the OMP back end splits it.
  std::vector<std::byte> user(2u << 20);
  for (std::size_t i = 0; i < user.size(); ++i) user[i] = static_cast<std::byte>(i * 131 + 7);
  plait::region r = plait::region::contiguous(user.data(), 4);
  r.dims = 2;
  r.extent = {512, 512};
  r.stride = {8 * 512, 8};
  std::vector<std::byte> want(r.bytes());
  std::vector<std::byte> got(r.bytes());
  plait::pack(r, want.data());
  plait::pack_with(thrust_runner{}, r, got.data());
  CHECK(got == want);
  std::vector<std::byte> back(user.size(), std::byte{0});
  plait::region into = r;
  into.data = back.data();
  plait::unpack_with(thrust_runner{}, got.data(), into);
  for (std::size_t i = 0; i < back.size(); ++i) {
    const bool in_run = (i % 8) < 4;
    if (back[i] != (in_run ? user[i] : std::byte{0})) FAIL("byte " << i << " wrong after unpack");
  }
}

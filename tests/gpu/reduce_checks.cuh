// GPU checks of reductions on device buffers over the NVLink transport
// (reduce_scatter and all_reduce combining on the device: plait/cuda/combine.cuh),
// as plain code: run by the Catch2 test tests/test_nvlink_reduce_cuda.cu and
// by the standalone program tests/gpu/reduce_check.cu that scripts/gpu-check
// builds. Each check returns "" or what went wrong. Results are compared with
// a serial reference computed on the host with the same reductions: exactly
// (bit for bit) where the values make every order give the same bits
// (integer-valued floats, integers, min and max) and for ordered<sum>, whose
// left fold the device must reproduce.
//
// Ranks are as in nvlink_checks.cuh: processes (CUDA IPC) or threads of one
// process, on device `rank % device_count`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../support/algorithm_lists.hpp"
#include "nvlink_checks.cuh"

namespace reduce_checks {

using nvlink_checks::device_vector;

/// Bitwise equality (NaN payloads and the sign of zero count), first difference described.
template <class T>
std::string same_bits(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  if (got.size() != want.size()) return what + ": size differs";
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0)
      return what + ": first difference at element " + std::to_string(i);
  }
  return {};
}

/// Element i of rank r's contribution: small integers (exact in every type
/// and every order of sums), a quarter of them negative.
template <class T>
T exact_value(int rank, std::size_t i) {
  const int v = static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 13) % 29) - 7;
  if constexpr (plait::detail::is_float16_v<T>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

/// Element i of rank r's contribution for ordered<sum>: values whose sum
/// depends on the order it is taken in.
inline float inexact_value(int rank, std::size_t i) {
  return 1.0f / static_cast<float>(3 + (i % 11)) + static_cast<float>(rank) * 1e-3f * static_cast<float>(i % 7 + 1) +
         (rank % 2 == 0 ? 1e6f : -1e6f) * static_cast<float>(i % 3);
}

/// The left fold over ranks of `value(r, i)` with `r` (host, serial), finished.
template <class T, class R, class Value>
std::vector<T> serial_reference(int ranks, std::size_t n, const R& r, Value value) {
  if constexpr (plait::is_ordered_v<R>) {
    return serial_reference<T>(ranks, n, r.reduction, value);
  } else if constexpr (plait::is_accumulated_v<R>) {
    using wide = typename R::accumulator;  // widened once, rounded back once
    const std::vector<wide> sums = serial_reference<wide>(ranks, n, r.reduction, [&](int rank, std::size_t i) {
      return static_cast<wide>(static_cast<float>(value(rank, i)));
    });
    std::vector<T> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = T(static_cast<float>(sums[i]));
    return out;
  } else {
    std::vector<T> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto prepared = [&](int rank) {
        if constexpr (requires { r.prepare(value(rank, i)); }) {
          return r.prepare(value(rank, i));
        } else {
          return value(rank, i);
        }
      };
      T acc = prepared(0);
      for (int q = 1; q < ranks; ++q) acc = r(acc, prepared(q));
      if constexpr (requires { r.finish(acc, ranks); }) acc = r.finish(acc, ranks);
      out[i] = acc;
    }
    return out;
  }
}

/// all_reduce and reduce_scatter of T with `r` by Algorithm, blocking, on
/// device buffers, against the serial reference; n elements per block.
template <class Algorithm, class T, class R, class Value>
std::string reduce_both(plait::nvlink::communicator& gpu, std::size_t n, const R& r, Value value,
                        const std::string& what) {
  const int p = gpu.size();
  const std::size_t total = n * static_cast<std::size_t>(p);
  std::vector<T> mine(total);
  for (std::size_t i = 0; i < total; ++i) mine[i] = value(gpu.rank(), i);
  const std::vector<T> want = serial_reference<T>(p, total, r, value);
  device_vector<T> send(mine, gpu.stream());
  device_vector<T> all(std::vector<T>(total), gpu.stream());
  plait::all_reduce<Algorithm>(gpu, std::span<const T>(send.span()), all.span(), r);
  gpu.synchronize();
  std::string v = same_bits(all.host(), want, "all_reduce " + what + " n=" + std::to_string(n));
  if constexpr (plait_test::has_schedule<Algorithm, plait::detail::reduce_scatter_for<R>>) {
    device_vector<T> part(std::vector<T>(n), gpu.stream());
    plait::reduce_scatter<Algorithm>(gpu, std::span<const T>(send.span()), part.span(), r);
    gpu.synchronize();
    const auto from = want.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(gpu.rank()));
    v += same_bits(part.host(), std::vector<T>(from, from + static_cast<std::ptrdiff_t>(n)),
                   "reduce_scatter " + what + " n=" + std::to_string(n));
  }
  return v;
}

/// Every algorithm that schedules an all-reduce, float sum, several sizes.
template <class Algorithm>
std::string every_algorithm_one(plait::nvlink::communicator& gpu) {
  if (!plait_test::runs_on<Algorithm, plait::op::all_reduce<>>(gpu.size())) return {};
  std::string v;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{37}, std::size_t{70001}}) {
    v += reduce_both<Algorithm, float>(gpu, n, plait::sum{}, exact_value<float>, "float sum");
  }
  return v;
}

template <class... Algorithms>
std::string every_algorithm(plait::nvlink::communicator& gpu, std::tuple<Algorithms...>*) {
  return (every_algorithm_one<Algorithms>(gpu) + ...);
}

/// Element types and reductions (automatic's choice of algorithm).
inline std::string types_and_reductions(plait::nvlink::communicator& gpu) {
  using plait::automatic;
  const std::size_t n = 1001;
  std::string v;
  v += reduce_both<automatic, std::int32_t>(gpu, n, plait::max{}, exact_value<std::int32_t>, "int32 max");
  v += reduce_both<automatic, std::uint8_t>(gpu, n, plait::prod{}, exact_value<std::uint8_t>, "uint8 prod");
  v += reduce_both<automatic, double>(gpu, n, plait::premul_sum(0.5), exact_value<double>, "double premul_sum");
  v += reduce_both<automatic, plait::half>(gpu, n, plait::avg{}, exact_value<plait::half>, "half avg");
  v += reduce_both<automatic, plait::bfloat16>(gpu, n, plait::sum{}, exact_value<plait::bfloat16>, "bfloat16 sum");
  v += reduce_both<automatic, plait::bfloat16>(gpu, n, plait::accumulate<float, plait::sum>{},
                                               exact_value<plait::bfloat16>, "bfloat16 sum in float");
  v += reduce_both<automatic, float>(gpu, n, plait::min{}, inexact_value, "float min");
  v += reduce_both<automatic, plait::value_index<float>>(
      gpu, n, plait::minloc{},
      [](int rank, std::size_t i) {
        return plait::value_index<float>{exact_value<float>(rank, i), rank};
      },
      "minloc float");
  // The exact left fold: the device's combines give the serial fold's bits.
  v += reduce_both<automatic, float>(gpu, n, plait::ordered<plait::sum>{}, inexact_value, "ordered<sum> float");
  return v;
}

/// In place, nonblocking and persistent: the forms share the run, and each
/// start of a persistent reduction reads the buffers again.
inline std::string forms(plait::nvlink::communicator& gpu) {
  const int p = gpu.size();
  const std::size_t n = 513;
  const std::size_t total = n * static_cast<std::size_t>(p);
  std::vector<float> mine(total);
  for (std::size_t i = 0; i < total; ++i) mine[i] = exact_value<float>(gpu.rank(), i);
  const std::vector<float> want = serial_reference<float>(p, total, plait::sum{}, exact_value<float>);
  std::string v;
  {
    device_vector<float> buffer(mine, gpu.stream());
    plait::all_reduce(gpu, plait::in_place, buffer.span(), plait::sum{});
    gpu.synchronize();
    v += same_bits(buffer.host(), want, "all_reduce in place");
  }
  {
    device_vector<float> send(mine, gpu.stream());
    device_vector<float> all(std::vector<float>(total), gpu.stream());
    auto request = plait::iall_reduce(gpu, std::span<const float>(send.span()), all.span(), plait::sum{});
    request.wait();
    gpu.synchronize();
    v += same_bits(all.host(), want, "iall_reduce");
  }
  {
    device_vector<float> send(mine, gpu.stream());
    device_vector<float> part(std::vector<float>(n), gpu.stream());
    auto persistent = plait::reduce_scatter_init(gpu, std::span<const float>(send.span()), part.span(), plait::sum{});
    for (int start = 0; start < 2; ++start) {
      persistent.start();
      persistent.wait();
      gpu.synchronize();
      const auto from = want.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(gpu.rank()));
      v += same_bits(part.host(), std::vector<float>(from, from + static_cast<std::ptrdiff_t>(n)),
                     "reduce_scatter_init start " + std::to_string(start));
    }
  }
  return v;
}

/// Every check, named, for 2 to 4 ranks as processes and as threads.
inline std::vector<std::pair<std::string, std::function<std::string()>>> all() {
  using plait_test::mode;
  std::vector<std::pair<std::string, std::function<std::string()>>> checks;
  for (mode m : {mode::processes, mode::threads}) {
    const std::string where = m == mode::processes ? "processes" : "threads";
    for (int p : {2, 3, 4}) {
      const std::string group = std::to_string(p) + " " + where;
      checks.emplace_back("device reductions, every algorithm (" + group + ")", [m, p] {
        return nvlink_checks::run_group(m, p, [](plait::nvlink::communicator& gpu) {
          return every_algorithm(gpu, static_cast<plait_test::algorithms_for<plait::op::all_reduce<>>*>(nullptr));
        });
      });
    }
    checks.emplace_back("device reductions, types and reductions (3 " + where + ")",
                        [m] { return nvlink_checks::run_group(m, 3, types_and_reductions); });
    checks.emplace_back("device reductions, in place, nonblocking, persistent (2 " + where + ")",
                        [m] { return nvlink_checks::run_group(m, 2, forms); });
  }
  return checks;
}

}  // namespace reduce_checks

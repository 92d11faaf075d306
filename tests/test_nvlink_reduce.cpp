// plait-test-labels: quick shm
// plait-test-timeout: 300
// Reductions on the NVLink transport's host emulation: every algorithm that
// schedules them, blocking, nonblocking and persistent, P = 1..5, against a
// serial reference, with the copy engine allocating the run's memory. Then
// the same transport with a copy engine that folds "on its device" as the
// CUDA one does (the launchers reduce_scatter and all_reduce attach to the
// plan, run by a serial runner instead of kernels), so that the device path's
// wiring runs on every commit; tests/test_nvlink_reduce_cuda.cu runs it on GPUs.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <plait/plait.hpp>
#include <plait/reduction/combine_functors.hpp>
#include <plait/transport/nvlink/host_emulation.hpp>

#include "support/algorithm_lists.hpp"
#include "support/harness.hpp"

using plait_test::mode;
using gpu_comm = plait::nvlink::emulated_communicator;

TEMPLATE_LIST_TEST_CASE("nvlink emulation: reductions equal a serial reference in every form", "[nvlink][reduce]",
                        plait_test::algorithms_for<plait::op::all_reduce<>>) {
  using Algorithm = TestType;
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(1, 2, 3, 5);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& boot) -> std::string {
    gpu_comm gpu(boot, 0, {}, {2, 64});  // small slots: messages cross chunks
    const auto p = static_cast<std::size_t>(ranks);
    const std::size_t block = 37;
    std::vector<std::int64_t> send(block * p);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = static_cast<std::int64_t>(i * 31 + gpu.rank() * 7);
    const auto want = [&](std::size_t i) {
      std::int64_t total = 0;
      for (int r = 0; r < ranks; ++r) total += static_cast<std::int64_t>(i * 31 + r * 7);
      return total;
    };
    std::vector<std::int64_t> recv(send.size());
    const std::uint64_t allocations = gpu.copy_engine().allocations;
    plait::all_reduce<Algorithm>(gpu, send, recv, plait::sum{});
    for (std::size_t i = 0; i < recv.size(); ++i) {
      if (recv[i] != want(i)) return "all_reduce element " + std::to_string(i);
    }
    if (ranks > 1 && gpu.copy_engine().allocations == allocations) return "the run did not allocate through the engine";
    auto request = plait::iall_reduce<Algorithm>(gpu, send, recv, plait::max{});
    request.wait();
    if constexpr (plait_test::has_schedule<Algorithm, plait::op::reduce_scatter<>>) {
      std::vector<std::int64_t> part(block);
      auto persistent = plait::reduce_scatter_init<Algorithm>(gpu, send, part, plait::sum{});
      persistent.start();
      persistent.wait();
      for (std::size_t i = 0; i < block; ++i) {
        if (part[i] != want(static_cast<std::size_t>(gpu.rank()) * block + i)) return "reduce_scatter_init";
      }
    }
    return {};
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {

/// Runs each functor on the calling thread, where a GPU's runner launches a kernel.
struct serial_runner {
  explicit serial_runner(void* /*stream*/) {}
  template <class Functor>
  void operator()(std::size_t n, Functor f) {
    for (std::size_t i = 0; i < n; ++i) f(i);
  }
  [[nodiscard]] int status() const noexcept { return 0; }
};

/// The host emulation whose copy engine folds on its "device" as
/// cuda_device_ops::engine does, counting what it runs.
class device_folding : public plait::nvlink::host_emulation {
 public:
  using host_emulation::host_emulation;

  class engine : public host_emulation::engine {
   public:
    static constexpr bool folds_on_device = true;
    engine(device_folding& ops, const stream_type* stream) : host_emulation::engine(ops, stream) {}

    template <class T, class Reduction>
    const plait::detail::device_reduction* device_kernel(const Reduction& /*reduction*/) {
      ++attached;
      return &plait::detail::work_table<serial_runner, T, Reduction>;
    }
    void copy_bytes(std::byte* to, const std::byte* from, std::size_t bytes) {
      if (bytes != 0 && to != from) unpack(from, plait::region::contiguous(to, bytes));
    }
    void combine(const plait::detail::reduction_kernel& k, const std::byte* left, const std::byte* right,
                 std::byte* out, std::size_t elements) {
      ++combines;
      ok(of(k).combine(nullptr, k.state, left, right, out, elements));
    }
    void prepare(const plait::detail::reduction_kernel& k, const std::byte* in, std::byte* out, std::size_t elements) {
      ++prepares;
      ok(of(k).prepare(nullptr, k.state, in, out, elements));
    }
    void finish(const plait::detail::reduction_kernel& k, std::byte* data, std::size_t elements, int ranks) {
      ++finishes;
      ok(of(k).finish(nullptr, k.state, data, elements, ranks));
    }
    void to_wire(const plait::detail::reduction_kernel& k, const std::byte* in, std::byte* out, std::size_t elements) {
      ++conversions;
      ok(of(k).to_wire(nullptr, in, out, elements));
    }
    void from_wire(const plait::detail::reduction_kernel& k, const std::byte* in, std::byte* out,
                   std::size_t elements) {
      ++conversions;
      ok(of(k).from_wire(nullptr, in, out, elements));
    }
    std::uint64_t attached = 0, combines = 0, prepares = 0, finishes = 0, conversions = 0;

   private:
    static const plait::detail::device_reduction& of(const plait::detail::reduction_kernel& k) {
      if (k.device == nullptr) throw std::logic_error("a plan reached the engine without its device launchers");
      return *k.device;
    }
    static void ok(int status) {
      if (status != 0) throw std::logic_error("a launch failed");
    }
  };
};

using folding_comm = plait::nvlink::basic_communicator<device_folding>;
static_assert(plait::detail::folds_on_device_engine<folding_comm::engine_type>);

/// Small integers: every order of sums gives the same bits.
float exact(int rank, std::size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 13) % 29) - 7);
}

/// The largest of exact(r, i) over the ranks.
float max_exact(int ranks, std::size_t i) {
  float best = exact(0, i);
  for (int r = 1; r < ranks; ++r) best = exact(r, i) > best ? exact(r, i) : best;
  return best;
}

/// Rank r's element i of a sum whose bits depend on the order it is taken in.
float inexact(int rank, std::size_t i) {
  return 1.0f / static_cast<float>(3 + i % 11) + 1e6f * static_cast<float>(rank % 2) -
         static_cast<float>(i % 5) * 1e-3f * static_cast<float>(rank);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("nvlink emulation: reductions fold through a copy engine that folds on its device",
                        "[nvlink][reduce]", plait_test::algorithms_for<plait::op::all_reduce<>>) {
  using Algorithm = TestType;
  const int ranks = GENERATE(2, 3, 5);
  if (!plait_test::runs_on<Algorithm, plait::op::all_reduce<>>(ranks)) return;
  CAPTURE(ranks);
  std::atomic<std::uint64_t> combined{0};  // ranks are threads
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& boot) -> std::string {
    folding_comm gpu(boot, 0, {}, {2, 64});
    gpu.set_timeout(std::chrono::seconds(20));  // a hang fails as a timeout naming rank and peer
    const auto p = static_cast<std::size_t>(ranks);
    const std::size_t block = 37;
    std::vector<float> send(block * p);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = exact(gpu.rank(), i);
    const auto want = [&](std::size_t i) {
      float total = 0;
      for (int r = 0; r < ranks; ++r) total += exact(r, i);
      return total;
    };
    std::vector<float> recv(send.size());
    auto& engine = gpu.copy_engine();
    plait::all_reduce<Algorithm>(gpu, send, recv, plait::sum{});
    for (std::size_t i = 0; i < recv.size(); ++i) {
      if (recv[i] != want(i)) return "all_reduce element " + std::to_string(i);
    }
    combined += engine.combines;  // some schedules leave a rank nothing to combine
    const std::string through_engine = engine.attached == 1 ? "" : "all_reduce attached its launchers once per call";
    if constexpr (plait_test::has_schedule<Algorithm, plait::op::reduce_scatter<>>) {
      std::vector<float> part(block);
      plait::reduce_scatter<Algorithm>(gpu, send, part, plait::sum{});
      for (std::size_t i = 0; i < block; ++i) {
        if (part[i] != want(static_cast<std::size_t>(gpu.rank()) * block + i)) return "reduce_scatter";
      }
    }
    return through_engine;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
  CHECK(combined.load() != 0);
}

TEST_CASE("nvlink emulation: a copy engine that folds on its device runs prepare, finish, conversions and every form",
          "[nvlink][reduce]") {
  const int ranks = 3;
  const auto verdicts = plait_test::run_ranks(mode::threads, ranks, [&](plait::shm::communicator& boot) -> std::string {
    folding_comm gpu(boot, 0, {}, {2, 64});
    gpu.set_timeout(std::chrono::seconds(20));  // a hang fails as a timeout naming rank and peer
    auto& engine = gpu.copy_engine();
    const std::size_t block = 41;
    const std::size_t n = block * ranks;
    std::string v;
    // premul_sum prepares each input on the engine; avg finishes there; accumulate converts there.
    std::vector<double> doubles(n);
    for (std::size_t i = 0; i < n; ++i) doubles[i] = exact(gpu.rank(), i);
    std::vector<double> scaled(n);
    plait::all_reduce(gpu, doubles, scaled, plait::premul_sum(0.5));
    std::vector<plait::half> halves(n);
    for (std::size_t i = 0; i < n; ++i) halves[i] = plait::half(exact(gpu.rank(), i));
    std::vector<plait::half> mean(block);
    plait::reduce_scatter(gpu, halves, mean, plait::avg{});
    std::vector<plait::bfloat16> brains(n);
    for (std::size_t i = 0; i < n; ++i) brains[i] = plait::bfloat16(exact(gpu.rank(), i));
    std::vector<plait::bfloat16> widened(n);
    plait::all_reduce(gpu, brains, widened, plait::accumulate<float, plait::sum>{});
    for (std::size_t i = 0; i < n; ++i) {
      float total = 0;
      for (int r = 0; r < ranks; ++r) total += exact(r, i);
      if (scaled[i] != 0.5 * total) v += "premul_sum element " + std::to_string(i) + "\n";
      if (widened[i].bits() != plait::bfloat16(total).bits()) v += "accumulate element " + std::to_string(i) + "\n";
      const std::size_t mine = static_cast<std::size_t>(gpu.rank()) * block;
      if (i >= mine && i < mine + block &&
          mean[i - mine].bits() != plait::avg{}.finish(plait::half(total), ranks).bits()) {
        v += "avg element " + std::to_string(i) + "\n";
      }
    }
    if (engine.prepares == 0 || engine.finishes == 0 || engine.conversions == 0) {
      v += "prepare, finish or the conversions did not run on the engine\n";
    }
    // The exact left fold: the same bits as the serial fold.
    std::vector<float> mixed(n);
    for (std::size_t i = 0; i < n; ++i) mixed[i] = inexact(gpu.rank(), i);
    std::vector<float> folded(n);
    plait::all_reduce(gpu, mixed, folded, plait::ordered<plait::sum>{});
    for (std::size_t i = 0; i < n; ++i) {
      float acc = 0;
      for (int r = 0; r < ranks; ++r) {
        const float x = inexact(r, i);
        acc = r == 0 ? x : plait::sum{}(acc, x);
      }
      if (std::memcmp(&acc, &folded[i], sizeof acc) != 0) {
        v += "ordered<sum> element " + std::to_string(i) + "\n";
        break;
      }
    }
    // In place, nonblocking, persistent (started twice), and a bundle of two types.
    std::vector<float> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = exact(gpu.rank(), i);
    plait::all_reduce(gpu, plait::in_place, all, plait::max{});
    std::vector<float> most(n);
    auto request = plait::iall_reduce(gpu, mixed, most, plait::max{});
    request.wait();
    std::vector<std::int32_t> ints(n);
    for (std::size_t i = 0; i < n; ++i) ints[i] = static_cast<std::int32_t>(i) * (gpu.rank() + 1);
    std::vector<std::int32_t> part(block);
    auto persistent = plait::reduce_scatter_init(gpu, ints, part, plait::sum{});
    for (int start = 0; start < 2; ++start) {
      persistent.start();
      persistent.wait();
      for (std::size_t i = 0; i < block; ++i) {
        const std::size_t at = static_cast<std::size_t>(gpu.rank()) * block + i;
        if (part[i] != static_cast<std::int32_t>(at) * (ranks * (ranks + 1) / 2)) {
          v += "reduce_scatter_init start " + std::to_string(start) + "\n";
          break;
        }
      }
    }
    std::vector<float> floats_max(n);
    std::vector<std::int32_t> ints_max(n);
    plait::all_reduce(gpu, plait::bundle(mixed, ints), plait::bundle(floats_max, ints_max), plait::max{});
    for (std::size_t i = 0; i < n; ++i) {
      float best = 0;
      for (int r = 0; r < ranks; ++r) {
        const float x = inexact(r, i);
        best = r == 0 ? x : plait::max{}(best, x);
      }
      if (all[i] != static_cast<float>(max_exact(ranks, i))) {
        v += "in-place max element " + std::to_string(i) + "\n";
        break;
      }
      if (most[i] != best || floats_max[i] != best) {
        v += "iall_reduce or bundled max element " + std::to_string(i) + "\n";
        break;
      }
      if (ints_max[i] != static_cast<std::int32_t>(i) * ranks) {
        v += "bundled int max element " + std::to_string(i) + "\n";
        break;
      }
    }
    // Strided blocks (along<1>: packed on the engine before they combine) and parts of different sizes.
    const std::array<std::size_t, 3> whole{2, 3 * ranks, 4};
    const std::array<std::size_t, 3> mine{2, 3, 4};
    std::vector<float> tensor(2 * 3 * ranks * 4);
    for (std::size_t i = 0; i < tensor.size(); ++i) tensor[i] = exact(gpu.rank(), i);
    std::vector<float> slab(2 * 3 * 4);
    plait::reduce_scatter<plait::automatic, plait::along<1>>(
        gpu, plait::tensor_view<const float, 3>(tensor.data(), whole), plait::tensor_view<float, 3>(slab.data(), mine),
        plait::sum{});
    for (std::size_t i = 0; i < 2; ++i) {
      for (std::size_t j = 0; j < 3; ++j) {
        for (std::size_t k = 0; k < 4; ++k) {
          const std::size_t at = (i * whole[1] + static_cast<std::size_t>(gpu.rank()) * 3 + j) * 4 + k;
          float total = 0;
          for (int r = 0; r < ranks; ++r) total += exact(r, at);
          if (slab[(i * 3 + j) * 4 + k] != total) v += "along<1> element " + std::to_string(at) + "\n";
        }
      }
    }
    // all_reduce of strided views (along<1>: slabs packed and unpacked on the engine).
    std::vector<float> spread(tensor.size() * 2, -1.0f);  // every other float of it is the result
    const std::array<std::size_t, 3> spread_strides{whole[1] * 4 * 2, 4 * 2, 2};
    plait::all_reduce<plait::automatic, plait::along<1>>(
        gpu, plait::tensor_view<const float, 3>(tensor.data(), whole),
        plait::tensor_view<float, 3>(spread.data(), whole, spread_strides), plait::sum{});
    for (std::size_t at = 0; at < tensor.size(); ++at) {
      float total = 0;
      for (int r = 0; r < ranks; ++r) total += exact(r, at);
      if (spread[2 * at] != total || spread[2 * at + 1] != -1.0f) {
        v += "all_reduce along<1> element " + std::to_string(at) + "\n";
        break;
      }
    }
    const std::vector<std::size_t> counts{5, 0, 9};
    std::vector<float> parts(14);
    for (std::size_t i = 0; i < parts.size(); ++i) parts[i] = exact(gpu.rank(), i);
    std::vector<float> my_part(counts[static_cast<std::size_t>(gpu.rank())]);
    plait::reduce_scatter_v(gpu, parts, my_part, counts, plait::sum{});
    const std::size_t first = gpu.rank() == 0 ? 0 : 5;  // counts 5, 0, 9
    for (std::size_t i = 0; i < my_part.size(); ++i) {
      float total = 0;
      for (int r = 0; r < ranks; ++r) total += exact(r, first + i);
      if (my_part[i] != total) v += "reduce_scatter_v element " + std::to_string(first + i) + "\n";
    }
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

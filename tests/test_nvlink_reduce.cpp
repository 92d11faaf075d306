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
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <plait/plait.hpp>
#include <plait/reduction/combine_functors.hpp>
#include <plait/transport/nvlink/host_emulation.hpp>

#include "support/algorithm_lists.hpp"
#include "support/harness.hpp"
#include "support/throwing_reduction.hpp"

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

/// Rank r's element i: every order of sums gives the same bits.
std::int64_t contribution(int rank, std::size_t i) {
  return static_cast<std::int64_t>(i * 31) + std::int64_t{7} * rank;
}

/// Rank r's element i of a sum whose bits depend on the order it is taken in.
float inexact(int rank, std::size_t i) {
  return 1.0f / static_cast<float>(3 + i % 11) + 1e6f * static_cast<float>(rank % 2) -
         static_cast<float>(i % 5) * 1e-3f * static_cast<float>(rank);
}

/// out = left op right over int32 elements: a combining receive's combine.
template <std::int32_t (*Op)(std::int32_t, std::int32_t)>
void fold_ints(const void* /*context*/, const std::byte* left, const std::byte* right, std::byte* out,
               std::size_t bytes) {
  for (std::size_t at = 0; at < bytes; at += sizeof(std::int32_t)) {
    std::int32_t a = 0;
    std::int32_t b = 0;
    std::memcpy(&a, left + at, sizeof a);
    std::memcpy(&b, right + at, sizeof b);
    const std::int32_t folded = Op(a, b);
    std::memcpy(out + at, &folded, sizeof folded);
  }
}

constexpr std::int32_t add(std::int32_t a, std::int32_t b) { return a + b; }
/// Which side the arriving partial is on shows.
constexpr std::int32_t left_times_ten_plus_right(std::int32_t a, std::int32_t b) { return a * 10 + b; }

}  // namespace

TEST_CASE("nvlink emulation: a reduction combines partials as they arrive out of slots and registered buffers",
          "[nvlink][reduce][combine_on_receive]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  const int ranks = GENERATE(2, 3, 5);
  CAPTURE(plait_test::to_string(m), ranks);
  const auto verdicts = plait_test::run_ranks(m, ranks, [&](plait::shm::communicator& boot) -> std::string {
    gpu_comm gpu(boot, 0, {}, {2, 4096});       // 4 KiB slots: every block crosses chunks
    gpu.set_timeout(std::chrono::seconds(20));  // a hang fails as a timeout naming rank and peer
    const auto p = static_cast<std::size_t>(ranks);
    const std::size_t block = 20000;  // 160 KB: a registered block is read from a process in several pieces
    std::vector<std::int64_t> send(block * p);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = contribution(gpu.rank(), i);
    const auto wrong = [&](const std::vector<std::int64_t>& got) {
      for (std::size_t i = 0; i < got.size(); ++i) {
        std::int64_t total = 0;
        for (int r = 0; r < ranks; ++r) total += contribution(r, i);
        if (got[i] != total) return true;
      }
      return false;
    };
    std::string v;
    // Ring: each step's partial meets the rank's own block, or its accumulator, as it arrives.
    std::vector<std::int64_t> recv(send.size());
    plait::all_reduce<plait::ring>(gpu, send, recv, plait::sum{});
    if (wrong(recv)) v += "ring all_reduce from staging slots\n";
    const std::uint64_t combined = gpu.bytes_combined_on_receive();
    if (combined < (p - 1) * block * sizeof(std::int64_t)) {
      v += "combined " + std::to_string(combined) + " bytes on receive, not every step's partial\n";
    }
    {
      // The first step's partials are the send buffers themselves: read straight from them.
      const auto registered = gpu.register_buffer(send);
      const std::uint64_t direct = gpu.policy().direct_bytes();
      const std::uint64_t zero_copy = gpu.bytes_zero_copy();
      std::vector<std::int64_t> again(send.size());
      plait::all_reduce<plait::ring>(gpu, send, again, plait::sum{});
      if (wrong(again)) v += "ring all_reduce from registered buffers\n";
      // Processes read each other's buffers by cross-memory attach, where the kernel allows it (else staging).
      const bool attached = m == mode::threads || gpu.bytes_zero_copy() != zero_copy;
      if (attached && gpu.policy().direct_bytes() == direct)
        v += "no partial was combined out of a registered buffer\n";
      if (gpu.bytes_combined_on_receive() == combined) v += "the registered run combined nothing on receive\n";
    }
    // Chain: the arriving partial is the left operand; the exact left fold's bits.
    std::vector<float> mixed(64 * p);
    for (std::size_t i = 0; i < mixed.size(); ++i) mixed[i] = inexact(gpu.rank(), i);
    std::vector<float> folded(mixed.size());
    const std::uint64_t before_chain = gpu.bytes_combined_on_receive();
    plait::all_reduce<plait::chain>(gpu, mixed, folded, plait::ordered<plait::sum>{});
    for (std::size_t i = 0; i < folded.size(); ++i) {
      float acc = inexact(0, i);
      for (int r = 1; r < ranks; ++r) acc = plait::sum{}(acc, inexact(r, i));
      if (std::memcmp(&acc, &folded[i], sizeof acc) != 0) {
        v += "chain ordered<sum> element " + std::to_string(i) + "\n";
        break;
      }
    }
    if (gpu.rank() != 0 && gpu.bytes_combined_on_receive() == before_chain)
      v += "the chain combined nothing on receive\n";
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: irecv_combine folds each chunk on its side and refuses what a step cannot combine",
          "[nvlink][reduce][combine_on_receive]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 1, [&](plait::shm::communicator& boot) -> std::string {
    gpu_comm gpu(boot, 0, {}, {2, 16});  // 16-byte slots: 4 ints a chunk, so 9 ints take 3 chunks
    const std::vector<std::int32_t> arriving{1, 2, 3, 4, 5, 6, 7, 8, 9};
    const std::vector<std::int32_t> held{10, 20, 30, 40, 50, 60, 70, 80, 90};
    std::vector<std::int32_t> left_into(arriving.size());
    std::vector<std::int32_t> right_into = held;  // in place: the operand is the destination
    const auto bytes_of = [](std::vector<std::int32_t>& v) { return std::as_writable_bytes(std::span(v)); };
    const auto how = [](const std::vector<std::int32_t>& operand, bool arriving_left, std::size_t granule,
                        auto* combine) {
      return plait::receive_combine{.held = reinterpret_cast<const std::byte*>(operand.data()),
                                    .arriving_left = arriving_left,
                                    .granule = granule,
                                    .combine = combine,
                                    .context = nullptr};
    };
    const auto on_left = how(held, true, sizeof(std::int32_t), &fold_ints<left_times_ten_plus_right>);
    const auto on_right = how(right_into, false, sizeof(std::int32_t), &fold_ints<left_times_ten_plus_right>);
    const auto adding = how(held, true, sizeof(std::int32_t), &fold_ints<add>);
    const auto out = std::as_bytes(std::span(arriving));
    const int tag = 3;
    std::string v;
    std::vector<gpu_comm::request> r{gpu.isend(0, out, tag), gpu.isend(0, out, tag),
                                     gpu.irecv_combine(0, bytes_of(left_into), on_left, tag),
                                     gpu.irecv_combine(0, bytes_of(right_into), on_right, tag)};
    gpu.wait_all(r);
    for (std::size_t i = 0; i < arriving.size(); ++i) {
      if (left_into[i] != arriving[i] * 10 + held[i]) v += "arriving on the left, element " + std::to_string(i) + "\n";
      if (right_into[i] != held[i] * 10 + arriving[i])
        v += "arriving on the right, element " + std::to_string(i) + "\n";
    }
    if (gpu.bytes_combined_on_receive() != 2 * out.size()) v += "bytes_combined_on_receive\n";

    const auto refused = [&](plait::errc code, const auto& post) -> std::string {
      try {
        post();
      } catch (const plait::error& e) {
        return e.code() == code ? "" : std::string("the wrong error: ") + e.what() + "\n";
      }
      return "accepted\n";
    };
    std::vector<std::int32_t> into(arriving.size());
    v += refused(plait::errc::invalid_argument, [&] {
      (void)gpu.irecv_combine(0, bytes_of(into), how(held, true, 3, &fold_ints<add>),
                              tag);  // 16-byte parts split elements
    });
    v += refused(plait::errc::invalid_argument, [&] {
      (void)gpu.irecv_combine(0, bytes_of(into).first(6), adding, tag);  // not whole elements
    });
    v += refused(plait::errc::invalid_argument, [&] {
      auto without = adding;
      without.combine = nullptr;
      (void)gpu.irecv_combine(0, bytes_of(into), without, tag);
    });
    // Two reductions in one step: the second is refused, and the first still completes.
    r = {gpu.isend(0, out, tag), gpu.irecv_combine(0, bytes_of(into), adding, tag)};
    v += refused(plait::errc::unsupported, [&] { (void)gpu.irecv_combine(0, bytes_of(into), on_left, tag); });
    gpu.wait_all(r);
    if (into[8] != 9 + 90) v += "the step after a refused reduction\n";
    // One combining receive more than a step holds.
    std::vector<std::int32_t> many(plait::nvlink::emulated_communicator::max_combining_receives());
    r.clear();
    for (std::size_t k = 0; k < many.size(); ++k) {
      r.push_back(gpu.isend(0, out.first(sizeof(std::int32_t)), tag));
      r.push_back(
          gpu.irecv_combine(0, bytes_of(many).subspan(k * sizeof(std::int32_t), sizeof(std::int32_t)), adding, tag));
    }
    v += refused(plait::errc::unsupported, [&] { (void)gpu.irecv_combine(0, bytes_of(into), adding, tag); });
    gpu.wait_all(r);
    if (many.back() != 1 + 10) v += "the step after a refused seventeenth combining receive\n";
    return v;
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

namespace {

/// The emulated transport taking no combining receive in a step: a fold run
/// must land every partial in staging instead.
class no_combining_receives : public gpu_comm {
 public:
  using gpu_comm::gpu_comm;
  [[nodiscard]] static constexpr std::size_t max_combining_receives() noexcept { return 0; }
};

}  // namespace

TEST_CASE("nvlink emulation: a fold run stages the combining receives a step cannot hold",
          "[nvlink][reduce][combine_on_receive]") {
  const auto verdicts = plait_test::run_ranks(mode::threads, 3, [&](plait::shm::communicator& boot) -> std::string {
    no_combining_receives gpu(boot, 0, {}, {2, 64});
    gpu.set_timeout(std::chrono::seconds(20));
    std::vector<std::int64_t> send(3 * 50);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = contribution(gpu.rank(), i);
    std::vector<std::int64_t> recv(send.size());
    plait::all_reduce<plait::ring>(gpu, send, recv, plait::sum{});
    for (std::size_t i = 0; i < recv.size(); ++i) {
      if (recv[i] != contribution(0, i) + contribution(1, i) + contribution(2, i))
        return "element " + std::to_string(i);
    }
    return gpu.bytes_combined_on_receive() == 0 ? "" : "a partial was combined on receive beyond the step's room";
  });
  REQUIRE(plait_test::failures(verdicts) == "");
}

TEST_CASE("nvlink emulation: a reduction that throws in a combining receive reaches its caller and poisons",
          "[nvlink][reduce][combine_on_receive][errors]") {
  const mode m = GENERATE(mode::threads, mode::processes);
  CAPTURE(plait_test::to_string(m));
  const auto verdicts = plait_test::run_ranks(m, 2, [&](plait::shm::communicator& boot) -> std::string {
    gpu_comm gpu(boot, 0, {}, {2, 64});
    // The transport has no failure record a peer reads: the peer learns of the throw from its timeout.
    gpu.set_timeout(std::chrono::seconds(2));
    const auto refusing_sum = plait::reduction(
        [me = gpu.rank()](std::int32_t a, std::int32_t b) {
          if (me == plait_test::throwing_rank) throw std::runtime_error("the reduction refuses");
          return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
        },
        plait::associative, plait::commutative);
    std::vector<std::int32_t> send(200, gpu.rank() + 1);
    std::vector<std::int32_t> recv(send.size());
    const std::uint64_t combined = gpu.bytes_combined_on_receive();
    const auto call = [&] { plait::all_reduce<plait::ring>(gpu, send, recv, refusing_sum); };
    const auto next_call = [&] { plait::all_reduce<plait::ring>(gpu, send, recv, plait::sum{}); };
    if (gpu.rank() != plait_test::throwing_rank) {
      return plait_test::expect_error(call, {plait::errc::timeout}, plait_test::throwing_rank);
    }
    std::string verdict = plait_test::refused_by_own_reduction(call);
    if (gpu.bytes_combined_on_receive() == combined) verdict += "the throw did not come from a combining receive\n";
    return verdict + plait_test::expect_error(next_call, {plait::errc::invalid_argument}, -1,
                                              {"unusable", "own code threw mid-call", "the reduction refuses"});
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

/// Stands for the CUDA step kernel instantiated for a reduction: never
/// called (the emulation runs the step itself), only looked for.
int combining_step(void* /*stream*/, const void* /*state*/, const void* /*step*/, void* /*error_word*/,
                   void* /*claim*/) {
  return 1;
}

/// work_table's launchers with the combining step, as the CUDA engine attaches them.
template <class T, class R>
inline constexpr plait::detail::device_reduction folding_table = [] {
  plait::detail::device_reduction d = plait::detail::work_table<serial_runner, T, R>;
  d.combining_step = &combining_step;
  return d;
}();

/// The host emulation whose copy engine folds on its "device" as
/// cuda_device_ops::engine does, counting what it runs. Like the CUDA
/// policy, it combines on receive only a reduction whose launchers came with
/// a combining step, and counts the steps it would have launched that way.
class device_folding : public plait::nvlink::host_emulation {
 public:
  using host_emulation::host_emulation;

  [[nodiscard]] static bool combines(const plait::receive_combine& how) noexcept {
    return host_emulation::combines(how) && how.kernel != nullptr && how.kernel->device != nullptr &&
           how.kernel->device->combining_step == &combining_step;
  }
  void run_step(const plait::nvlink::detail::step_args& a, stream_type stream, const plait::receive_combine* how) {
    if (how != nullptr) {
      if (!combines(*how)) throw std::logic_error("a step combines on receive without its combining step");
      ++combining_steps;
    }
    host_emulation::run_step(a, stream, how);
  }
  std::uint64_t combining_steps = 0;

  class engine : public host_emulation::engine {
   public:
    static constexpr bool folds_on_device = true;
    engine(device_folding& ops, const stream_type* stream) : host_emulation::engine(ops, stream) {}

    template <class T, class Reduction>
    const plait::detail::device_reduction* device_kernel(const Reduction& /*reduction*/) {
      ++attached;
      return &folding_table<T, Reduction>;
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
    // Some schedules leave a rank nothing to combine; the others combine on
    // the engine or inside a step that combines on receive.
    combined += engine.combines + gpu.policy().combining_steps;
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

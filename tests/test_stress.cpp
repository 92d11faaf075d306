// plait-test-labels: quick shm sanitize stress
// plait-test-timeout: 900
// Random collectives — operation, algorithm, layout, shape and P up to 16
// threads — each checked element by element against a serial reference.
// PLAIT_STRESS_COUNT sets how many (default: a CI-sized 300); scripts/stress
// runs 10^4. PLAIT_STRESS_SEED replays a run.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "support/harness.hpp"

namespace {

using extents3 = std::array<std::size_t, 3>;

std::size_t env_number(const char* name, std::size_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 10) : fallback;
}

std::size_t flat(const extents3& i, const extents3& e) { return (i[0] * e[1] + i[1]) * e[2] + i[2]; }
std::size_t volume(const extents3& e) { return e[0] * e[1] * e[2]; }

/// The element rank `r` holds at flat index i of its send buffer in call `call`.
std::uint32_t value(int r, std::size_t i, std::size_t call) {
  return static_cast<std::uint32_t>((static_cast<std::size_t>(r) + 1) * 2654435761u + i * 40503u + call * 977u);
}

/// One random collective, described identically on every rank.
struct trial {
  bool gather = true;
  plait::algorithm_id algorithm = plait::algorithm_id::ring;
  int layout = 0;     // 0: 1-D contiguous; 1..3: along<0..2>; 4: redistribute<1,0>; 5: <0,1>; 6: <2,2>
  extents3 shape{};   // per-rank send shape for along; block shape pieces for redistribute
  std::size_t n = 0;  // 1-D elements per block
  std::string describe() const {
    return std::string(gather ? "all_gather<" : "all_to_all<") + std::string(plait::to_string(algorithm)) +
           "> layout " + std::to_string(layout) + " shape " + std::to_string(shape[0]) + "x" +
           std::to_string(shape[1]) + "x" + std::to_string(shape[2]) + " n " + std::to_string(n);
  }
};

trial draw(std::mt19937_64& rng, int ranks) {
  trial t;
  t.gather = rng() % 2 == 0;
  std::vector<plait::algorithm_id> usable;
  for (plait::algorithm_id id : plait::all_algorithm_ids) {
    const bool serves = t.gather ? plait::supports<plait::op::all_gather>(id, ranks)
                                 : plait::supports<plait::op::all_to_all>(id, ranks);
    if (serves) usable.push_back(id);
  }
  t.algorithm = usable[rng() % usable.size()];
  t.layout = t.gather ? static_cast<int>(rng() % 4) : (rng() % 2 == 0 ? 0 : 4 + static_cast<int>(rng() % 3));
  for (auto& e : t.shape) e = rng() % 4;  // zero extents included
  if (rng() % 3 != 0) {
    for (auto& e : t.shape) e += 1;
  }
  t.n = rng() % 9 == 0 ? 0 : rng() % 300;
  return t;
}

template <class A>
std::string run_trial(plait::shm::communicator& comm, const trial& t, std::size_t call) {
  constexpr bool exchanges = plait::schedules<A, plait::op::all_to_all>;
  if (!t.gather && !exchanges) return "drew an algorithm without all-to-all";
  const int P = comm.size();
  const auto p = static_cast<std::size_t>(P);
  const int me = comm.rank();
  std::vector<std::uint32_t> send, recv, want;
  if (t.layout == 0) {
    const std::size_t count = t.gather ? t.n : t.n * p;
    for (std::size_t i = 0; i < count; ++i) send.push_back(value(me, i, call));
    recv.assign(t.gather ? t.n * p : count, 0);
    if (t.gather) {
      plait::all_gather<A>(comm, send, recv);
      for (int r = 0; r < P; ++r) {
        for (std::size_t i = 0; i < t.n; ++i) want.push_back(value(r, i, call));
      }
    } else {
      if constexpr (exchanges) plait::all_to_all<A>(comm, send, recv);
      for (int r = 0; r < P; ++r) {
        for (std::size_t i = 0; i < t.n; ++i) want.push_back(value(r, static_cast<std::size_t>(me) * t.n + i, call));
      }
    }
    return plait_test::compare(recv, want, t.describe());
  }
  if (t.gather) {
    const std::size_t d = static_cast<std::size_t>(t.layout - 1);
    const extents3 e = t.shape;
    extents3 big = e;
    big[d] *= p;
    for (std::size_t i = 0; i < volume(e); ++i) send.push_back(value(me, i, call));
    recv.assign(volume(big), 0);
    plait::tensor_view<const std::uint32_t, 3> in(send.data(), e);
    plait::tensor_view<std::uint32_t, 3> out(recv.data(), big);
    switch (d) {
      case 0: plait::all_gather<A, plait::along<0>>(comm, in, out); break;
      case 1: plait::all_gather<A, plait::along<1>>(comm, in, out); break;
      default: plait::all_gather<A, plait::along<2>>(comm, in, out); break;
    }
    want.resize(recv.size());
    for (std::size_t i0 = 0; i0 < big[0]; ++i0) {
      for (std::size_t i1 = 0; i1 < big[1]; ++i1) {
        for (std::size_t i2 = 0; i2 < big[2]; ++i2) {
          extents3 local{i0, i1, i2};
          const int source = static_cast<int>(local[d] / e[d]);
          local[d] %= e[d];
          want[flat({i0, i1, i2}, big)] = value(source, flat(local, e), call);
        }
      }
    }
    return plait_test::compare(recv, want, t.describe());
  }
  // redistribute<S, C>: send has P*a along S and b along C; recv has a along S and P*b along C.
  static constexpr std::array<std::array<std::size_t, 2>, 3> dims{{{1, 0}, {0, 1}, {2, 2}}};
  const std::size_t s = dims[static_cast<std::size_t>(t.layout - 4)][0];
  const std::size_t c = dims[static_cast<std::size_t>(t.layout - 4)][1];
  extents3 out_shape = t.shape;  // a along S, b along C
  extents3 in_shape = t.shape;
  in_shape[s] *= p;
  out_shape[c] *= p;
  if (s == c) out_shape = in_shape;
  for (std::size_t i = 0; i < volume(in_shape); ++i) send.push_back(value(me, i, call));
  recv.assign(volume(out_shape), 0);
  plait::tensor_view<const std::uint32_t, 3> in(send.data(), in_shape);
  plait::tensor_view<std::uint32_t, 3> out(recv.data(), out_shape);
  if constexpr (exchanges) {
    switch (t.layout) {
      case 4: plait::all_to_all<A, plait::redistribute<1, 0>>(comm, in, out); break;
      case 5: plait::all_to_all<A, plait::redistribute<0, 1>>(comm, in, out); break;
      default: plait::all_to_all<A, plait::redistribute<2, 2>>(comm, in, out); break;
    }
  }
  want.resize(recv.size());
  const std::size_t b = t.shape[c];
  const std::size_t a = t.shape[s];
  for (std::size_t i0 = 0; i0 < out_shape[0]; ++i0) {
    for (std::size_t i1 = 0; i1 < out_shape[1]; ++i1) {
      for (std::size_t i2 = 0; i2 < out_shape[2]; ++i2) {
        extents3 j{i0, i1, i2};
        const int sender = static_cast<int>(j[c] / b);
        j[c] %= b;
        j[s] = static_cast<std::size_t>(me) * a + j[s];
        want[flat({i0, i1, i2}, out_shape)] = value(sender, flat(j, in_shape), call);
      }
    }
  }
  return plait_test::compare(recv, want, t.describe());
}

}  // namespace

TEST_CASE("random collectives agree with a serial reference", "[stress][shm]") {
  const std::size_t total = env_number("PLAIT_STRESS_COUNT", 300);
  const std::uint64_t seed = env_number("PLAIT_STRESS_SEED", 20261129);
  std::mt19937_64 groups(seed);
  std::size_t done = 0;
  std::size_t batch = 0;
  while (done < total) {
    const int ranks = static_cast<int>(groups() % 16) + 1;
    const std::size_t calls = std::min<std::size_t>(total - done, 25);
    const std::uint64_t batch_seed = groups();
    CAPTURE(seed, batch, ranks);
    const auto verdicts = plait_test::run_ranks(plait_test::mode::threads, ranks, [&](plait::shm::communicator& comm) {
      std::mt19937_64 rng(batch_seed);  // the same draws on every rank
      for (std::size_t k = 0; k < calls; ++k) {
        const trial t = draw(rng, comm.size());
        const std::string verdict = plait::visit_algorithm(t.algorithm, [&](auto tag) -> std::string {
          using A = typename decltype(tag)::type;
          if constexpr (plait::schedules<A, plait::op::all_gather>) {
            return run_trial<A>(comm, t, k);
          } else {
            return "drew an algorithm without all-gather";  // draw() picks only those that serve the call
          }
        });
        if (!verdict.empty()) return "call " + std::to_string(k) + ": " + verdict;
      }
      return std::string{};
    });
    REQUIRE(plait_test::failures(verdicts) == "");
    done += calls;
    ++batch;
  }
  SUCCEED(std::to_string(done) + " random collectives matched the reference");
}

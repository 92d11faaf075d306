// The layer loop behind examples/overlap_prefetch.cpp (shm) and
// examples/overlap_prefetch_mpi.cpp (MPI, for the two-host measurement),
// written once for any communicator.
//
// Every rank holds a 1/P row shard of each layer's weight matrix W_k (d x d
// floats), as FSDP/ZeRO-3 does. Layer k needs all of W_k: y = tanh(x W_k) for
// a batch x of b rows. Blocking: all-gather W_k, then compute. Overlapped:
// the all-gather of W_{k+1} is started before layer k computes (prefetch)
// and waited for before layer k+1; the computation calls test() every 64 rows
// blocks so the transfer moves (or a plait::progress_thread moves it).
// Both modes end with the same activations, checked against a serial
// computation from the full weights. With `idle_us` set, a layer waits that
// long instead of computing (sleeping, looking at the transfer every 100 us):
// the overlap when no core is needed for the computation (the two emulated
// hosts share this machine's cores); then every gathered weight matrix is
// checked instead of the activations.
#pragma once

#include <plait/plait.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace overlap {

struct shape {
  std::size_t layers = 6;
  std::size_t d = 192;      // weights are d x d floats: 144 KiB per layer
  std::size_t batch = 48;   // rows of the activation
  std::size_t repeats = 3;  // timed passes per mode (the median is printed)
  unsigned look_every = 1;  // looks at the transfer (test()) every look_every x 64 rows of W
  std::size_t idle_us = 0;  // > 0: each layer waits this long, using no core, instead of computing
};

inline float weight(std::size_t layer, std::size_t i, std::size_t j) {
  return static_cast<float>(static_cast<int>((layer * 131 + i * 31 + j * 17) % 29) - 14) / 64.0f;
}
inline float input(std::size_t i, std::size_t j) { return static_cast<float>((i * 7 + j * 3) % 11) / 11.0f; }

/// Rows [begin, end) of y = tanh(x W): the CPU kernel (a plain triple loop:
/// the point is a known, real amount of work, not a fast matmul). `look` is
/// called after every 64 rows of W, so a transfer can move meanwhile.
template <class Look>
void matmul_rows(const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& y, std::size_t d,
                 std::size_t begin, std::size_t end, Look&& look) {
  for (std::size_t i = begin; i < end; ++i) {
    for (std::size_t j = 0; j < d; ++j) y[i * d + j] = 0.0f;
    for (std::size_t k = 0; k < d; ++k) {
      const float a = x[i * d + k];
      const float* row = &w[k * d];
      float* out = &y[i * d];
      for (std::size_t j = 0; j < d; ++j) out[j] += a * row[j];
      if (k % 64 == 63) look();
    }
    for (std::size_t j = 0; j < d; ++j) y[i * d + j] = std::tanh(y[i * d + j]);
  }
}

inline void matmul_rows(const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& y, std::size_t d,
                        std::size_t begin, std::size_t end) {
  matmul_rows(x, w, y, d, begin, end, [] {});
}

/// Waits `us` microseconds without using a core: sleeps of 100 us, `look`
/// after each (the idle stand-in for a layer's computation).
template <class Look>
void idle_for(std::size_t us, Look&& look) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    look();
  }
}

/// The activations after every layer, computed serially from the full weights.
inline std::vector<float> reference(const shape& s) {
  std::vector<float> x(s.batch * s.d), y(x.size()), w(s.d * s.d);
  for (std::size_t i = 0; i < s.batch; ++i)
    for (std::size_t j = 0; j < s.d; ++j) x[i * s.d + j] = input(i, j);
  for (std::size_t l = 0; l < s.layers; ++l) {
    for (std::size_t i = 0; i < s.d; ++i)
      for (std::size_t j = 0; j < s.d; ++j) w[i * s.d + j] = weight(l, i, j);
    matmul_rows(x, w, y, s.d, 0, s.batch);
    std::swap(x, y);
  }
  return x;
}

/// What one pass leaves: the final activations, or (idle) every layer's
/// gathered weights; and its time in seconds.
struct pass_result {
  std::vector<float> activations;
  std::vector<std::vector<float>> weights;
  double seconds = 0;
};

/// One rank's pass over every layer. `overlapped`: prefetch layer k+1 during layer k.
template <class Comm>
pass_result pass(Comm& comm, const shape& s, bool overlapped) {
  const auto p = static_cast<std::size_t>(comm.size());
  const std::size_t rows = s.d / p;  // d is a multiple of P (checked by the caller)
  const auto me = static_cast<std::size_t>(comm.rank());
  std::vector<std::vector<float>> shards(s.layers, std::vector<float>(rows * s.d));
  for (std::size_t l = 0; l < s.layers; ++l)
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < s.d; ++j) shards[l][i * s.d + j] = weight(l, me * rows + i, j);
  // Layer k in full[k % 2]; idle, every layer keeps its own, to be checked after the pass.
  const bool idle = s.idle_us > 0;
  std::vector<std::vector<float>> full(idle ? s.layers : 2, std::vector<float>(s.d * s.d));
  const auto weights_of = [&](std::size_t l) -> std::vector<float>& { return full[idle ? l : l % 2]; };
  std::vector<float> x(s.batch * s.d), y(x.size());
  for (std::size_t i = 0; i < s.batch; ++i)
    for (std::size_t j = 0; j < s.d; ++j) x[i * s.d + j] = input(i, j);

  comm.barrier();
  const auto started = std::chrono::steady_clock::now();
  plait::collective_request next;
  if (overlapped) next = plait::iall_gather<plait::ring>(comm, shards[0], weights_of(0));
  for (std::size_t l = 0; l < s.layers; ++l) {
    std::vector<float>& w = weights_of(l);
    if (overlapped) {
      next.wait();  // layer l's weights
      if (l + 1 < s.layers) next = plait::iall_gather<plait::ring>(comm, shards[l + 1], weights_of(l + 1));
    } else {
      plait::all_gather<plait::ring>(comm, shards[l], w);
    }
    // A transport that moves bytes only inside its calls (MPI over TCP:
    // each look writes what the socket buffer takes) needs frequent looks;
    // each costs well under a microsecond.
    unsigned looks = 0;
    const auto look = [&] {
      if (overlapped && ++looks % s.look_every == 0) (void)next.test();
    };
    if (idle) {
      idle_for(s.idle_us, look);
      continue;
    }
    matmul_rows(x, w, y, s.d, 0, s.batch, look);
    std::swap(x, y);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (idle) return {{}, std::move(full), seconds};
  return {x, {}, seconds};
}

/// Both modes, `s.repeats` passes each, interleaved; checks every result
/// against the reference (throws if one differs: the activations, or idle
/// the gathered weights) and returns the medians {blocking, overlapped} in
/// seconds.
template <class Comm>
std::pair<double, double> compare(Comm& comm, const shape& s) {
  if (s.d % static_cast<std::size_t>(comm.size()) != 0) throw std::invalid_argument("d must be a multiple of P");
  const std::vector<float> want = s.idle_us > 0 ? std::vector<float>{} : reference(s);
  const auto fail = [&](const std::string& what) {
    throw std::runtime_error("rank " + std::to_string(comm.rank()) + ": " + what +
                             " differs from the serial reference");
  };
  std::vector<double> blocking, overlapped;
  for (std::size_t r = 0; r < s.repeats; ++r) {
    for (bool o : {false, true}) {
      const pass_result got = pass(comm, s, o);
      for (std::size_t i = 0; i < want.size(); ++i) {
        if (std::fabs(got.activations[i] - want[i]) > 1e-5f * (1.0f + std::fabs(want[i])))
          fail("activation " + std::to_string(i));
      }
      for (std::size_t l = 0; l < got.weights.size(); ++l) {
        for (std::size_t i = 0; i < s.d; ++i)
          for (std::size_t j = 0; j < s.d; ++j)
            if (got.weights[l][i * s.d + j] != weight(l, i, j)) fail("layer " + std::to_string(l) + "'s weight");
      }
      (o ? overlapped : blocking).push_back(got.seconds);
    }
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(blocking), median(overlapped)};
}

}  // namespace overlap

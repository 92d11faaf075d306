// All-gather along the hidden dimension with plait::along<2>: tensor
// parallelism shards a [batch, seq, hidden] activation along hidden, and the
// next layer needs it whole. Four threads each hold [b, s, h/P]; the gather
// writes [b, s, h]: rank j's features land at [:, :, j*h/P, (j+1)*h/P).
// Shown twice: into a dense tensor, and in place into a row-padded buffer
// (a strided destination; the padding is never written). Every rank checks
// the result against the serial reference and the program exits non-zero on
// any difference.
#include <cstddef>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <plait/plait.hpp>

namespace {

constexpr std::size_t batch = 2;
constexpr std::size_t seq = 5;
constexpr std::size_t hidden = 12;  // divisible by P
constexpr float padding = -1.0f;

/// The full activation at (batch, position, feature).
float activation(std::size_t b, std::size_t t, std::size_t f) { return static_cast<float>(b * 10000 + t * 100 + f); }

void rank_main(plait::shm::communicator& comm) {
  const auto p = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::size_t local = hidden / p;

  std::vector<float> shard(batch * seq * local);
  plait::tensor_view<float, 3> mine(shard.data(), {batch, seq, local});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < seq; ++t)
      for (std::size_t f = 0; f < local; ++f) mine(b, t, f) = activation(b, t, me * local + f);

  // 1. Into a dense [b, s, h] tensor.
  std::vector<float> full(batch * seq * hidden);
  plait::tensor_view<float, 3> whole(full.data(), {batch, seq, hidden});
  plait::all_gather<plait::ring, plait::along<2>>(comm, plait::tensor_view<const float, 3>(mine), whole);

  // 2. In place, into rows padded to hidden + 4 floats: this rank's slice is
  // filled first, the gather fills the others and leaves the padding alone.
  const std::size_t row = hidden + 4;
  std::vector<float> padded(batch * seq * row, padding);
  plait::tensor_view<float, 3> strided(padded.data(), {batch, seq, hidden}, {seq * row, row, 1});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < seq; ++t)
      for (std::size_t f = 0; f < local; ++f) strided(b, t, me * local + f) = mine(b, t, f);
  plait::all_gather<plait::bruck, plait::along<2>>(comm, plait::in_place, strided);

  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < seq; ++t) {
      for (std::size_t f = 0; f < hidden; ++f) {
        if (whole(b, t, f) != activation(b, t, f) || strided(b, t, f) != activation(b, t, f)) {
          throw std::runtime_error("rank " + std::to_string(me) + ": wrong feature " + std::to_string(f));
        }
      }
      for (std::size_t f = hidden; f < row; ++f) {
        if (padded[(b * seq + t) * row + f] != padding) throw std::runtime_error("padding was written");
      }
    }
}

}  // namespace

int main() {
  try {
    plait::shm::run_threads(4, rank_main);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gather_hidden_dim: FAILED: %s\n", e.what());
    return 1;
  }
  std::printf(
      "gather_hidden_dim: [b, s, h/P] -> [b, s, h] along dimension 2 on 4 threads, dense and in place into "
      "padded rows: verified\n");
  return 0;
}

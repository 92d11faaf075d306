// Mixture-of-experts token dispatch and combine, the all-to-all-v every MoE
// layer runs twice (DeepEP, vLLM's routed MoE):
//
//   1. route: each token picks its top-k experts; expert e lives on rank e % P
//   2. counts: how many (token, expert) rows this rank sends each rank, then
//      plait::exchange_counts: how many each rank sends this one
//   3. dispatch: all_to_all_v of the rows (hidden vector, token id, expert,
//      gate weight), sorted by destination rank, in one bundle
//   4. expert: a toy expert per rank, y = scale_e * x + shift_e
//   5. combine: all_to_all_v back (the reverse counts), then each token sums
//      its k expert outputs weighted by the gates
//
// Every rank checks its combined tokens against the same computation done
// serially; a wrong value throws and run_processes rethrows it here.
#include <plait/plait.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int hidden = 8;
constexpr int tokens_per_rank = 37;
constexpr int experts_per_rank = 2;
constexpr int top_k = 2;

float input(int rank, int token, int h) { return static_cast<float>((rank * 131 + token * 17 + h * 7) % 23) / 4.0f; }

/// The top-k experts of a token, from a deterministic, skewed "router": low
/// expert numbers win more often, as a real router's hot experts do.
std::vector<int> route(int rank, int token, int experts) {
  std::vector<int> picked;
  unsigned state = static_cast<unsigned>(rank * 7919 + token * 104729 + 1);
  while (static_cast<int>(picked.size()) < top_k) {
    state = state * 1664525u + 1013904223u;
    const double u = static_cast<double>(state >> 8) / static_cast<double>(1u << 24);
    const int e = std::min(experts - 1, static_cast<int>(u * u * experts));  // skewed to small e
    if (std::find(picked.begin(), picked.end(), e) == picked.end()) picked.push_back(e);
  }
  return picked;
}

/// The router's weight of a token's k-th expert (they sum to one).
float gate(int rank, int token, int slot) {
  const float first = 0.55f + 0.4f * static_cast<float>((rank * 5 + token * 3) % 10) / 10.0f;
  return slot == 0 ? first : 1.0f - first;
}
float expert_scale(int e) { return 1.0f + 0.5f * static_cast<float>(e); }
float expert_shift(int e) { return 0.1f * static_cast<float>(e); }

void moe_layer(plait::shm::communicator& comm) {
  const int p = comm.size();
  const int experts = p * experts_per_rank;
  struct row {
    int token, expert, slot;
  };
  // 1-2. Route and count rows per destination rank (expert e on rank e % P).
  std::vector<std::vector<row>> by_dest(static_cast<std::size_t>(p));
  for (int t = 0; t < tokens_per_rank; ++t) {
    const auto picked = route(comm.rank(), t, experts);
    for (int k = 0; k < top_k; ++k)
      by_dest[static_cast<std::size_t>(picked[static_cast<std::size_t>(k)] % p)].push_back(
          {t, picked[static_cast<std::size_t>(k)], k});
  }
  std::vector<std::size_t> send_counts(static_cast<std::size_t>(p));
  for (int d = 0; d < p; ++d) send_counts[static_cast<std::size_t>(d)] = by_dest[static_cast<std::size_t>(d)].size();
  const std::vector<std::size_t> recv_counts = plait::exchange_counts(comm, send_counts);
  const std::size_t sent = std::accumulate(send_counts.begin(), send_counts.end(), std::size_t{0});
  const std::size_t received = std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});

  // 3. Dispatch: hidden vectors [rows, hidden] and their expert ids [rows] in one call.
  std::vector<float> x(sent * hidden);
  std::vector<std::int32_t> expert_of(sent);
  std::vector<row> order;  // where each sent row came from, to combine later
  for (const auto& list : by_dest) {
    for (const row& r : list) {
      for (int h = 0; h < hidden; ++h)
        x[order.size() * hidden + static_cast<std::size_t>(h)] = input(comm.rank(), r.token, h);
      expert_of[order.size()] = r.expert;
      order.push_back(r);
    }
  }
  std::vector<float> x_in(received * hidden);
  std::vector<std::int32_t> expert_in(received);
  using rows2 = plait::tensor_view<float, 2>;
  using const_rows2 = plait::tensor_view<const float, 2>;
  using ids = plait::tensor_view<std::int32_t, 1>;
  using const_ids = plait::tensor_view<const std::int32_t, 1>;
  plait::all_to_all_v(
      comm, plait::bundle(const_rows2(x.data(), {sent, hidden}), const_ids(expert_of.data(), {sent})), send_counts,
      plait::bundle(rows2(x_in.data(), {received, hidden}), ids(expert_in.data(), {received})), recv_counts);

  // 4. The toy experts, on the rows this rank received.
  std::vector<float> y(received * hidden);
  for (std::size_t r = 0; r < received; ++r) {
    const int e = expert_in[r];
    if (e % p != comm.rank()) throw std::runtime_error("a row reached the wrong expert rank");
    for (int h = 0; h < hidden; ++h) {
      y[r * hidden + static_cast<std::size_t>(h)] =
          expert_scale(e) * x_in[r * hidden + static_cast<std::size_t>(h)] + expert_shift(e);
    }
  }

  // 5. Combine: the same blocks back (the counts swap roles), then every
  // token sums its k expert outputs, weighted by the gates.
  std::vector<float> y_back(sent * hidden);
  plait::all_to_all_v(comm, const_rows2(y.data(), {received, hidden}), recv_counts,
                      rows2(y_back.data(), {sent, hidden}), send_counts);
  std::vector<float> combined(static_cast<std::size_t>(tokens_per_rank) * hidden, 0.0f);
  for (std::size_t r = 0; r < order.size(); ++r) {
    const row& o = order[r];
    for (int h = 0; h < hidden; ++h) {
      combined[static_cast<std::size_t>(o.token * hidden + h)] +=
          gate(comm.rank(), o.token, o.slot) * y_back[r * hidden + static_cast<std::size_t>(h)];
    }
  }

  // The serial reference: the same layer without any communication.
  for (int t = 0; t < tokens_per_rank; ++t) {
    const auto picked = route(comm.rank(), t, experts);
    for (int h = 0; h < hidden; ++h) {
      float want = 0.0f;
      for (int k = 0; k < top_k; ++k) {
        const int e = picked[static_cast<std::size_t>(k)];
        want += gate(comm.rank(), t, k) * (expert_scale(e) * input(comm.rank(), t, h) + expert_shift(e));
      }
      if (std::fabs(combined[static_cast<std::size_t>(t * hidden + h)] - want) > 1e-5f) {
        throw std::runtime_error("rank " + std::to_string(comm.rank()) + ": token " + std::to_string(t) +
                                 " combined wrong");
      }
    }
  }
}

}  // namespace

int main() {
  plait::shm::run_processes(4, [](plait::shm::communicator& comm) { moe_layer(comm); });
  std::printf("moe_dispatch: 4 ranks, %d tokens each, top-%d of %d experts: verified\n", tokens_per_rank, top_k,
              4 * experts_per_rank);
  return 0;
}

// oneCCL's side of plait-bench's `--oneccl` column (bench/oneccl.hpp).
#include "oneccl.hpp"

#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <vector>

#include <oneapi/ccl.hpp>

namespace plait {
inline namespace v0 {
namespace bench::oneccl {

struct library::state {
  ccl::shared_ptr_class<ccl::kvs> kvs;
  ccl::communicator comm;
  int ranks;

  state(ccl::shared_ptr_class<ccl::kvs> store, int size, int rank)
      : kvs(std::move(store)), comm(ccl::create_communicator(size, rank, kvs)), ranks(size) {}
};

library::library(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ccl::init();
  ccl::shared_ptr_class<ccl::kvs> kvs;
  ccl::kvs::address_type address{};
  if (rank == 0) {
    kvs = ccl::create_main_kvs();
    address = kvs->get_address();
  }
  if (MPI_Bcast(address.data(), static_cast<int>(address.size()), MPI_BYTE, 0, comm) != MPI_SUCCESS)
    throw std::runtime_error("oneCCL bootstrap: MPI_Bcast of the key-value store's address failed");
  if (rank != 0) kvs = ccl::create_kvs(address);
  state_ = std::make_unique<state>(std::move(kvs), size, rank);
}

library::~library() = default;

std::function<void()> library::bind(const std::string& op, const void* send, void* recv, std::size_t recv_bytes) const {
  const ccl::communicator& comm = state_->comm;
  const auto ranks = static_cast<std::size_t>(state_->ranks);
  if (op == "all_reduce") {
    const std::size_t count = recv_bytes / sizeof(float);
    return [&comm, send, recv, count] {
      ccl::allreduce(send, recv, count, ccl::datatype::float32, ccl::reduction::sum, comm).wait();
    };
  }
  if (op == "reduce_scatter") {
    const std::size_t count = recv_bytes / sizeof(float);  // per block
    return [&comm, send, recv, count] {
      ccl::reduce_scatter(send, recv, count, ccl::datatype::float32, ccl::reduction::sum, comm).wait();
    };
  }
  if (op == "all_gather") {
    // oneCCL's gather is allgatherv; equal counts make it MPI_Allgather.
    const std::vector<std::size_t> counts(ranks, recv_bytes / ranks);
    return [&comm, send, recv, counts] {
      ccl::allgatherv(send, counts.front(), recv, counts, ccl::datatype::int8, comm).wait();
    };
  }
  if (op == "all_to_all") {
    const std::size_t count = recv_bytes / ranks;
    return [&comm, send, recv, count] { ccl::alltoall(send, recv, count, ccl::datatype::int8, comm).wait(); };
  }
  return {};
}

std::string library::description() {
  const auto version = ccl::get_library_version();
  const auto setting = [](const char* name, const char* unset) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr && *value != '\0' ? value : unset);
  };
  return "oneCCL " + std::string(version.full) + ", ATL " + setting("CCL_ATL_TRANSPORT", "default (ofi)") +
         ", provider " + setting("FI_PROVIDER", "default") + ", shm " + setting("CCL_ATL_SHM", "default (0)") +
         ", worker offload " + setting("CCL_WORKER_OFFLOAD", "default (1)") + ", yield " +
         setting("CCL_YIELD", "default");
}

}  // namespace bench::oneccl
}  // namespace v0
}  // namespace plait

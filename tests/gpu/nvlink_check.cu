// Standalone GPU check of the NVLink transport for scripts/gpu-check (no
// Catch2 and no MPI there): runs every check in nvlink_checks.cuh (2-4 ranks
// as processes sharing the GPUs through CUDA IPC, then as threads of one
// process; run_checks.cuh prints and counts them).
#include "nvlink_checks.cuh"
#include "run_checks.cuh"

int main() { return gpu_checks::run_all("nvlink_check", nvlink_checks::all()); }

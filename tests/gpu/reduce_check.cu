// Standalone GPU check of reductions on device buffers over the NVLink
// transport for scripts/gpu-check (no Catch2 and no MPI there): runs every
// check in reduce_checks.cuh (run_checks.cuh prints and counts them).
#include "reduce_checks.cuh"
#include "run_checks.cuh"

int main() { return gpu_checks::run_all("reduce_check", reduce_checks::all()); }

// Standalone GPU check of device packing for scripts/gpu-check (no Catch2
// there): runs every check in pack_checks.cuh (run_checks.cuh prints and
// counts them).
#include "pack_checks.cuh"
#include "run_checks.cuh"

int main() { return gpu_checks::run_all("pack_check", gpu_checks::all()); }

/* A PETSc Krylov solve for scripts/test-pmpi-programs: conjugate gradients
 * (or what -ksp_type says: the script runs gmres too) with Jacobi on the
 * 5-point Laplacian of an n x n grid (-n, default 40), right-hand side all
 * ones. Its dot products and norms are MPI_Allreduce calls made by PETSc
 * itself, so run with libplait_pmpi preloaded and plait forced on, it must
 * print the same iterations and residuals as without it. Rank 0 prints each
 * iteration's residual norm (the one the method tracks) and the true residual
 * norm ||b - A x|| at full precision (%.17g), then the count, the reason and
 * the solution's norm. Plain printf: PETSc's own printing rounds.
 * Not a plait program: nothing here knows about plait. */
#include <petscksp.h>
#include <stdio.h>

static PetscErrorCode monitor(KSP ksp, PetscInt it, PetscReal rnorm, void* ctx) {
  Vec r;
  PetscReal tnorm;
  int rank = *(const int*)ctx;
  PetscFunctionBeginUser;
  PetscCall(KSPBuildResidual(ksp, NULL, NULL, &r));
  PetscCall(VecNorm(r, NORM_2, &tnorm));
  PetscCall(VecDestroy(&r));
  if (rank == 0) printf("%4d %.17g %.17g\n", (int)it, (double)rnorm, (double)tnorm);
  PetscFunctionReturn(0);
}

int main(int argc, char** argv) {
  Mat A;
  Vec x, b;
  KSP ksp;
  PC pc;
  PetscInt n = 40, rstart, rend, its;
  PetscReal xnorm;
  KSPConvergedReason reason;
  int rank, size;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "CG on a 2D Laplacian\n"));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  MPI_Comm_size(PETSC_COMM_WORLD, &size);

  const PetscInt N = n * n;
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, N, N, 5, NULL, 2, NULL, &A));
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  for (PetscInt row = rstart; row < rend; ++row) {
    const PetscInt i = row / n, j = row % n;
    PetscInt cols[5];
    PetscScalar vals[5];
    PetscInt k = 0;
    if (i > 0) cols[k] = row - n, vals[k++] = -1.0;
    if (j > 0) cols[k] = row - 1, vals[k++] = -1.0;
    cols[k] = row, vals[k++] = 4.0;
    if (j < n - 1) cols[k] = row + 1, vals[k++] = -1.0;
    if (i < n - 1) cols[k] = row + n, vals[k++] = -1.0;
    PetscCall(MatSetValues(A, 1, &row, k, cols, vals, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));

  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(VecSet(x, 0.0));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCJACOBI));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 500));
  PetscCall(KSPMonitorSet(ksp, monitor, &rank, NULL));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));

  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(VecNorm(x, NORM_2, &xnorm));
  if (rank == 0) {
    printf("ranks %d grid %d x %d iterations %d reason %s\n", size, (int)n, (int)n, (int)its,
           KSPConvergedReasons[reason]);
    printf("solution norm %.17g\n", (double)xnorm);
  }

  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  return reason > 0 ? 0 : 1;
}

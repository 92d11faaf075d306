! Differential test of libplait_pmpi from Fortran: Open MPI's Fortran
! bindings call PMPI_* directly, so only the library's own Fortran entry
! points (src/pmpi/fortran.cpp) make these calls reach plait. Each
! intercepted function is called through MPI_* and PMPI_* on the same data
! and the results must be equal; Fortran's MPI_IN_PLACE (an address in a
! common block) is covered. Built twice: with mpif.h, and with `use mpi`
! (PLAIT_USE_MPI_MODULE). run_pmpi_test.sh checks the report shows every
! function served.
program test_pmpi_f
#ifdef PLAIT_USE_MPI_MODULE
  use mpi
  implicit none
#else
  implicit none
  include 'mpif.h'
#endif
  integer :: ierr, rank, p, i, j, failures, total
  integer, allocatable :: isend(:), igot(:), iwant(:), counts(:), displs(:)
  integer, allocatable :: scounts(:), sdispls(:), rcounts(:), rdispls(:)
  double precision, allocatable :: dsend(:), dgot(:), dwant(:)
  logical :: lsend, lgot, lwant

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, p, ierr)
  failures = 0

  allocate(isend(4 * p), igot(4 * p + 8), iwant(4 * p + 8), counts(p), displs(p))
  allocate(scounts(p), sdispls(p), rcounts(p), rdispls(p))
  allocate(dsend(4 * p), dgot(4 * p), dwant(4 * p))
  do i = 1, 4 * p
    isend(i) = mod(rank * 131 + i * 7, 97) - 40
    dsend(i) = isend(i) * 0.5d0
  end do

  ! MPI_ALLGATHER, out of place and in place.
  call MPI_ALLGATHER(isend, 3, MPI_INTEGER, igot, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call PMPI_ALLGATHER(isend, 3, MPI_INTEGER, iwant, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLGATHER', all(igot(1:3 * p) == iwant(1:3 * p)))
  igot = -1
  iwant = -1
  igot(rank * 3 + 1:rank * 3 + 3) = isend(1:3)
  iwant = igot
  call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, igot, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call PMPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, iwant, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLGATHER(MPI_IN_PLACE)', all(igot == iwant))

  ! MPI_ALLGATHERV with gapped displacements.
  total = 0
  do j = 1, p
    counts(j) = mod(j, 3)
    displs(j) = total + 1
    total = displs(j) + counts(j)
  end do
  igot = -7
  iwant = -7
  call MPI_ALLGATHERV(isend, counts(rank + 1), MPI_INTEGER, igot, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call PMPI_ALLGATHERV(isend, counts(rank + 1), MPI_INTEGER, iwant, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLGATHERV', all(igot == iwant))

  ! MPI_ALLTOALL, and MPI_ALLTOALLV with gapped receive displacements.
  call MPI_ALLTOALL(dsend, 2, MPI_DOUBLE_PRECISION, dgot, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call PMPI_ALLTOALL(dsend, 2, MPI_DOUBLE_PRECISION, dwant, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLTOALL', all(dgot(1:2 * p) == dwant(1:2 * p)))
  total = 0
  do j = 1, p
    scounts(j) = mod(rank + 2 * (j - 1), 3)
    sdispls(j) = 3 * (j - 1)
    rcounts(j) = mod((j - 1) + 2 * rank, 3)
    rdispls(j) = total + 1
    total = rdispls(j) + rcounts(j)
  end do
  igot = -9
  iwant = -9
  call MPI_ALLTOALLV(isend, scounts, sdispls, MPI_INTEGER, igot, rcounts, rdispls, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call PMPI_ALLTOALLV(isend, scounts, sdispls, MPI_INTEGER, iwant, rcounts, rdispls, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLTOALLV', all(igot == iwant))

  ! The reductions: integers and doubles holding halves (exact in any order).
  call MPI_ALLREDUCE(isend, igot, 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call PMPI_ALLREDUCE(isend, iwant, 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLREDUCE(MPI_INTEGER, MPI_SUM)', all(igot(1:5) == iwant(1:5)))
  dgot = dsend
  dwant = dsend
  call MPI_ALLREDUCE(MPI_IN_PLACE, dgot, 5, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call PMPI_ALLREDUCE(MPI_IN_PLACE, dwant, 5, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLREDUCE(MPI_IN_PLACE, MPI_DOUBLE_PRECISION, MPI_MAX)', all(dgot(1:5) == dwant(1:5)))
  call MPI_REDUCE_SCATTER_BLOCK(isend, igot, 2, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  call PMPI_REDUCE_SCATTER_BLOCK(isend, iwant, 2, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  call check('MPI_REDUCE_SCATTER_BLOCK', all(igot(1:2) == iwant(1:2)))
  do j = 1, p
    counts(j) = mod(j, 2) + 1
  end do
  call MPI_REDUCE_SCATTER(dsend, dgot, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call PMPI_REDUCE_SCATTER(dsend, dwant, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check('MPI_REDUCE_SCATTER', all(dgot(1:counts(rank + 1)) == dwant(1:counts(rank + 1))))

  ! MPI_LOGICAL is not mapped: this call passes to MPI ("datatype" in the report).
  lsend = mod(rank, 2) == 0
  call MPI_ALLREDUCE(lsend, lgot, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call PMPI_ALLREDUCE(lsend, lwant, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLREDUCE(MPI_LOGICAL), passed', lgot .eqv. lwant)

  if (rank == 0) print '(a, i0, a, i0, a)', 'test_pmpi_f: ', p, ' ranks, ', failures, ' failed check(s)'
  call MPI_FINALIZE(ierr)
  if (failures /= 0) stop 1

contains

  ! A check fails on every rank if it fails on any.
  subroutine check(what, ok)
    character(len=*), intent(in) :: what
    logical, intent(in) :: ok
    integer :: bad, any_bad, e
    bad = 0
    if (.not. ok) bad = 1
    call PMPI_ALLREDUCE(bad, any_bad, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, e)
    if (bad /= 0) print '(a, i0, 3a)', 'rank ', rank, ': ', what, ' differs from PMPI''s result'
    if (any_bad /= 0) failures = failures + 1
  end subroutine check

end program test_pmpi_f

! Differential test of libplait_pmpi from Fortran: every intercepted function
! is called through MPI_* and its result compared with a serial reference
! (each rank computes every rank's data; integers, and doubles holding
! halves, are exact in any order of reduction). Not PMPI_*: under MPICH a
! Fortran program's PMPI_ calls reach the library too (docs/pmpi.md), and
! MPICH 4.0.2's own MPI_ALLGATHERV ignores the displacement at P = 1.
! Built three times: with mpif.h, `use mpi` (PLAIT_USE_MPI_MODULE) and
! `use mpi_f08` (PLAIT_USE_MPI_F08); Fortran's MPI_IN_PLACE, which is no C
! constant, is covered, and so are derived datatypes: a resized row of a
! matrix on some ranks against integers on others, a subarray, a struct. run_pmpi_test.sh checks the report shows every
! function served, so calls that never reached the library fail the test.
program test_pmpi_f
#if defined(PLAIT_USE_MPI_F08)
  use mpi_f08
  implicit none
#elif defined(PLAIT_USE_MPI_MODULE)
  use mpi
  implicit none
#else
  implicit none
  include 'mpif.h'
#endif
  integer :: ierr, rank, p, i, j, r, k, off, failures, total
  integer, allocatable :: isend(:), igot(:), iwant(:), counts(:), displs(:)
  integer, allocatable :: scounts(:), sdispls(:), rcounts(:), rdispls(:)
  double precision, allocatable :: dsend(:), dgot(:), dwant(:)
  complex(kind(1d0)) :: zsend(5), zgot(5), zwant(5)
  logical :: lsend, lgot, ok
  integer, allocatable :: matrix(:, :), stack(:, :, :)
  integer :: isize, sizes(2), subsizes(2), starts(2), lengths(2)
  integer(kind=MPI_ADDRESS_KIND) :: lb, extent, offsets(2)
#if defined(PLAIT_USE_MPI_F08)
  type(MPI_Datatype) :: row, row1, sub, pair, members(2)
#else
  integer :: row, row1, sub, pair, members(2)
#endif

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, p, ierr)
  failures = 0

  ! 4 * p + 4: the reductions take 5 elements, more than 4 * p at p = 1.
  allocate(isend(4 * p + 4), igot(4 * p + 8), iwant(4 * p + 8), counts(p), displs(p))
  allocate(scounts(p), sdispls(p), rcounts(p), rdispls(p))
  allocate(dsend(4 * p + 4), dgot(4 * p + 4), dwant(4 * p + 4))
  do i = 1, 4 * p + 4
    isend(i) = val(rank, i)
    dsend(i) = val(rank, i) * 0.5d0
  end do

  ! MPI_ALLGATHER, out of place and in place.
  igot = -1
  iwant = -1
  do r = 0, p - 1
    iwant(r * 3 + 1:r * 3 + 3) = [(val(r, k), k = 1, 3)]
  end do
  call MPI_ALLGATHER(isend, 3, MPI_INTEGER, igot, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLGATHER', all(igot == iwant) .and. ierr == MPI_SUCCESS)
  igot = -1
  igot(rank * 3 + 1:rank * 3 + 3) = isend(1:3)
  call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, igot, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLGATHER(MPI_IN_PLACE)', all(igot == iwant))

  ! MPI_ALLGATHERV with gapped displacements (untouched gaps included).
  total = 0
  do j = 1, p
    counts(j) = mod(j, 3)
    displs(j) = total + 1
    total = displs(j) + counts(j)
  end do
  igot = -7
  iwant = -7
  do j = 1, p
    do k = 1, counts(j)
      iwant(displs(j) + k) = val(j - 1, k)
    end do
  end do
  call MPI_ALLGATHERV(isend, counts(rank + 1), MPI_INTEGER, igot, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLGATHERV', all(igot == iwant))

  ! MPI_ALLTOALL, and MPI_ALLTOALLV with gapped receive displacements.
  do r = 0, p - 1
    dwant(2 * r + 1:2 * r + 2) = [(val(r, 2 * rank + k) * 0.5d0, k = 1, 2)]
  end do
  call MPI_ALLTOALL(dsend, 2, MPI_DOUBLE_PRECISION, dgot, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
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
  do j = 1, p
    ! Rank j - 1 sends this rank its elements 3 * rank + 1 onwards.
    do k = 1, rcounts(j)
      iwant(rdispls(j) + k) = val(j - 1, 3 * rank + k)
    end do
  end do
  call MPI_ALLTOALLV(isend, scounts, sdispls, MPI_INTEGER, igot, rcounts, rdispls, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLTOALLV', all(igot == iwant))

  ! The reductions.
  do i = 1, 5
    iwant(i) = sum([(val(r, i), r = 0, p - 1)])
  end do
#if defined(PLAIT_USE_MPI_F08)
  ! ierror is OPTIONAL in mpi_f08: the entry point gets a null address.
  call MPI_ALLREDUCE(isend, igot, 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
#else
  call MPI_ALLREDUCE(isend, igot, 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
#endif
  call check('MPI_ALLREDUCE(MPI_INTEGER, MPI_SUM)', all(igot(1:5) == iwant(1:5)))
  dgot = dsend
  do i = 1, 5
    dwant(i) = maxval([(val(r, i), r = 0, p - 1)]) * 0.5d0
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, dgot, 5, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLREDUCE(MPI_IN_PLACE, MPI_DOUBLE_PRECISION, MPI_MAX)', all(dgot(1:5) == dwant(1:5)))
  do k = 1, 2
    iwant(k) = minval([(val(r, 2 * rank + k), r = 0, p - 1)])
  end do
  call MPI_REDUCE_SCATTER_BLOCK(isend, igot, 2, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  call check('MPI_REDUCE_SCATTER_BLOCK', all(igot(1:2) == iwant(1:2)))
  do j = 1, p
    counts(j) = mod(j, 2) + 1
  end do
  off = sum(counts(1:rank))
  do k = 1, counts(rank + 1)
    dwant(k) = sum([(val(r, off + k), r = 0, p - 1)]) * 0.5d0
  end do
  call MPI_REDUCE_SCATTER(dsend, dgot, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check('MPI_REDUCE_SCATTER', all(dgot(1:counts(rank + 1)) == dwant(1:counts(rank + 1))))

  ! MPI_DOUBLE_COMPLEX: Gaussian half-integers, summed exactly in any order.
  do i = 1, 5
    zsend(i) = cmplx(dsend(i), -2 * dsend(i), kind(1d0))
    zwant(i) = cmplx(0d0, 0d0, kind(1d0))
    do r = 0, p - 1
      zwant(i) = zwant(i) + cmplx(val(r, i) * 0.5d0, -val(r, i) * 1d0, kind(1d0))
    end do
  end do
  call MPI_ALLREDUCE(zsend, zgot, 5, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLREDUCE(MPI_DOUBLE_COMPLEX, MPI_SUM)', all(zgot == zwant))

  ! Derived datatypes. MPI_ALLGATHER into row r + 1 of a p x 3 matrix on
  ! even ranks (a row of the column-major matrix, resized to one integer so
  ! that rank r's block starts at row r + 1: a strided view), into 3
  ! integers per rank on odd ones: two datatypes of one signature across ranks.
  call MPI_TYPE_SIZE(MPI_INTEGER, isize, ierr)
  call MPI_TYPE_VECTOR(3, 1, p, MPI_INTEGER, row, ierr)
  lb = 0
  extent = isize
  call MPI_TYPE_CREATE_RESIZED(row, lb, extent, row1, ierr)
  call MPI_TYPE_COMMIT(row1, ierr)
  allocate(matrix(p, 3))
  matrix = -1
  igot = -1
  if (mod(rank, 2) == 0) then
    call MPI_ALLGATHER(isend, 3, MPI_INTEGER, matrix, 1, row1, MPI_COMM_WORLD, ierr)
  else
    call MPI_ALLGATHER(isend, 3, MPI_INTEGER, igot, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  end if
  ok = ierr == MPI_SUCCESS
  do r = 0, p - 1
    do k = 1, 3
      if (mod(rank, 2) == 0) ok = ok .and. matrix(r + 1, k) == val(r, k)
      if (mod(rank, 2) == 1) ok = ok .and. igot(3 * r + k) == val(r, k)
    end do
  end do
  call check('MPI_ALLGATHER(a row type on even ranks, integers on odd)', ok)

  ! MPI_ALLTOALL from the 2 x 2 subarray at (2, 2) of each of p 4 x 3
  ! arrays into 4 integers per rank.
  sizes = [4, 3]
  subsizes = [2, 2]
  starts = [1, 1]
  call MPI_TYPE_CREATE_SUBARRAY(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_INTEGER, sub, ierr)
  call MPI_TYPE_COMMIT(sub, ierr)
  allocate(stack(4, 3, p))
  do k = 1, p
    do j = 1, 3
      do i = 1, 4
        stack(i, j, k) = val(rank, i + 4 * (j - 1) + 12 * (k - 1))
      end do
    end do
  end do
  igot = -1
  call MPI_ALLTOALL(stack, 1, sub, igot, 4, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  ok = ierr == MPI_SUCCESS
  do r = 0, p - 1
    ok = ok .and. all(igot(4 * r + 1:4 * r + 4) == [val(r, 6 + 12 * rank), val(r, 7 + 12 * rank), &
                                                     val(r, 10 + 12 * rank), val(r, 11 + 12 * rank)])
  end do
  call check('MPI_ALLTOALL(a subarray type)', ok)

  ! A struct of two double precisions 16 bytes apart, 24 bytes long: no
  ! box, so the library packs it.
  lengths = [1, 1]
  offsets = [0_MPI_ADDRESS_KIND, 16_MPI_ADDRESS_KIND]
  members = [MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION]
  call MPI_TYPE_CREATE_STRUCT(2, lengths, offsets, members, pair, ierr)
  call MPI_TYPE_COMMIT(pair, ierr)
  dgot = -1d0
  call MPI_ALLGATHER(dsend, 1, pair, dgot, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  ok = ierr == MPI_SUCCESS
  do r = 0, p - 1
    ok = ok .and. dgot(2 * r + 1) == val(r, 1) * 0.5d0 .and. dgot(2 * r + 2) == val(r, 3) * 0.5d0
  end do
  call check('MPI_ALLGATHER(a struct type)', ok)
  call MPI_TYPE_FREE(row, ierr)
  call MPI_TYPE_FREE(row1, ierr)
  call MPI_TYPE_FREE(sub, ierr)
  call MPI_TYPE_FREE(pair, ierr)

  ! MPI_LOGICAL is not mapped: this call passes to MPI ("datatype" in the report).
  lsend = mod(rank, 2) == 0
  call MPI_ALLREDUCE(lsend, lgot, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call check('MPI_ALLREDUCE(MPI_LOGICAL), passed', lgot .eqv. (p == 1))

  if (rank == 0) print '(a, i0, a, i0, a)', 'test_pmpi_f: ', p, ' ranks, ', failures, ' failed check(s)'
  call MPI_FINALIZE(ierr)
  if (failures /= 0) stop 1

contains

  ! Rank r's i-th element: small integers, so sums of halves are exact.
  integer function val(r, i)
    integer, intent(in) :: r, i
    val = mod(r * 131 + i * 7, 97) - 40
  end function val

  ! A check fails on every rank if it fails on any (the agreement is a logical
  ! reduction, which the library passes to MPI), and on its own rank anyway.
  subroutine check(what, ok)
    character(len=*), intent(in) :: what
    logical, intent(in) :: ok
    logical :: bad, any_bad
    integer :: e
    bad = .not. ok
    call MPI_ALLREDUCE(bad, any_bad, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, e)
    if (bad) print '(a, i0, 3a)', 'rank ', rank, ': ', what, ' differs from the serial reference'
    if (bad .or. any_bad) failures = failures + 1
  end subroutine check

end program test_pmpi_f

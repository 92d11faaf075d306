// The Fortran entry points (mpif.h and `use mpi`) of what the library serves,
// for Open MPI. Its Fortran bindings call PMPI_* directly, so a C-only library
// never sees a Fortran program's calls: these stand in for the bindings'
// own symbols (mpi_allreduce_ and its other manglings), convert the handles
// and Fortran's MPI_IN_PLACE / MPI_BOTTOM, and call the library's C entry
// points, which decide and serve as for C. `use mpi_f08` (mpi_*_f08_, derived
// handle types) is not covered.
#include <mpi.h>

#include "serve.hpp"

#if defined(OPEN_MPI) && OPEN_MPI

// Fortran's MPI_IN_PLACE and MPI_BOTTOM are the addresses of these common
// blocks in Open MPI's libmpi, not the C constants.
extern "C" int mpi_fortran_in_place_;
extern "C" int mpi_fortran_bottom_;

namespace {

static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint arrays are passed on as int arrays");

const void* c_buffer(const void* fortran) {
  if (fortran == &mpi_fortran_in_place_) return MPI_IN_PLACE;
  if (fortran == &mpi_fortran_bottom_) return MPI_BOTTOM;
  return fortran;
}
void* c_buffer(void* fortran) { return const_cast<void*>(c_buffer(static_cast<const void*>(fortran))); }

MPI_Datatype type(const MPI_Fint* t) { return PMPI_Type_f2c(*t); }
MPI_Comm comm(const MPI_Fint* c) { return PMPI_Comm_f2c(*c); }
MPI_Op op(const MPI_Fint* o) { return PMPI_Op_f2c(*o); }
const int* ints(const MPI_Fint* a) { return reinterpret_cast<const int*>(a); }

void init(MPI_Fint* ierr) { *ierr = MPI_Init(nullptr, nullptr); }

void init_thread(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  int p = 0;
  *ierr = MPI_Init_thread(nullptr, nullptr, *required, &p);
  *provided = p;
}

void finalize(MPI_Fint* ierr) { *ierr = MPI_Finalize(); }

void allgather(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
               MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Allgather(c_buffer(sendbuf), *sendcount, type(sendtype), c_buffer(recvbuf), *recvcount, type(recvtype),
                        comm(c));
}

void allgatherv(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcounts,
                MPI_Fint* displs, MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Allgatherv(c_buffer(sendbuf), *sendcount, type(sendtype), c_buffer(recvbuf), ints(recvcounts),
                         ints(displs), type(recvtype), comm(c));
}

void alltoall(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
              MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Alltoall(c_buffer(sendbuf), *sendcount, type(sendtype), c_buffer(recvbuf), *recvcount, type(recvtype),
                       comm(c));
}

void alltoallv(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype, void* recvbuf,
               MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* ierr) {
  const void* send = c_buffer(sendbuf);
  // In place, the send arguments are ignored (and may be anything).
  const bool in_place = send == MPI_IN_PLACE;
  *ierr = MPI_Alltoallv(send, in_place ? nullptr : ints(sendcounts), in_place ? nullptr : ints(sdispls),
                        in_place ? MPI_DATATYPE_NULL : type(sendtype), c_buffer(recvbuf), ints(recvcounts),
                        ints(rdispls), type(recvtype), comm(c));
}

void reduce_scatter_block(void* sendbuf, void* recvbuf, MPI_Fint* recvcount, MPI_Fint* datatype, MPI_Fint* o,
                          MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Reduce_scatter_block(c_buffer(sendbuf), c_buffer(recvbuf), *recvcount, type(datatype), op(o), comm(c));
}

void reduce_scatter(void* sendbuf, void* recvbuf, MPI_Fint* recvcounts, MPI_Fint* datatype, MPI_Fint* o, MPI_Fint* c,
                    MPI_Fint* ierr) {
  *ierr = MPI_Reduce_scatter(c_buffer(sendbuf), c_buffer(recvbuf), ints(recvcounts), type(datatype), op(o), comm(c));
}

void allreduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* o, MPI_Fint* c,
               MPI_Fint* ierr) {
  *ierr = MPI_Allreduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, type(datatype), op(o), comm(c));
}

}  // namespace

// Every mangling Open MPI's own bindings define (mpi_x, mpi_x_, mpi_x__,
// MPI_X): which one a program calls depends on its compiler and flags.
#define PLAIT_PMPI_FORTRAN(impl, lower, upper, params, args) \
  PLAIT_PMPI_EXPORT void lower params { impl args; }         \
  PLAIT_PMPI_EXPORT void lower##_ params { impl args; }      \
  PLAIT_PMPI_EXPORT void lower##__ params { impl args; }     \
  PLAIT_PMPI_EXPORT void upper params { impl args; }

PLAIT_PMPI_FORTRAN(init, mpi_init, MPI_INIT, (MPI_Fint * ierr), (ierr))
PLAIT_PMPI_FORTRAN(init_thread, mpi_init_thread, MPI_INIT_THREAD,
                   (MPI_Fint * required, MPI_Fint* provided, MPI_Fint* ierr), (required, provided, ierr))
PLAIT_PMPI_FORTRAN(finalize, mpi_finalize, MPI_FINALIZE, (MPI_Fint * ierr), (ierr))
PLAIT_PMPI_FORTRAN(allgather, mpi_allgather, MPI_ALLGATHER,
                   (void* sb, MPI_Fint* sc, MPI_Fint* st, void* rb, MPI_Fint* rc, MPI_Fint* rt, MPI_Fint* c,
                    MPI_Fint* ierr),
                   (sb, sc, st, rb, rc, rt, c, ierr))
PLAIT_PMPI_FORTRAN(allgatherv, mpi_allgatherv, MPI_ALLGATHERV,
                   (void* sb, MPI_Fint* sc, MPI_Fint* st, void* rb, MPI_Fint* rc, MPI_Fint* rd, MPI_Fint* rt,
                    MPI_Fint* c, MPI_Fint* ierr),
                   (sb, sc, st, rb, rc, rd, rt, c, ierr))
PLAIT_PMPI_FORTRAN(alltoall, mpi_alltoall, MPI_ALLTOALL,
                   (void* sb, MPI_Fint* sc, MPI_Fint* st, void* rb, MPI_Fint* rc, MPI_Fint* rt, MPI_Fint* c,
                    MPI_Fint* ierr),
                   (sb, sc, st, rb, rc, rt, c, ierr))
PLAIT_PMPI_FORTRAN(alltoallv, mpi_alltoallv, MPI_ALLTOALLV,
                   (void* sb, MPI_Fint* sc, MPI_Fint* sd, MPI_Fint* st, void* rb, MPI_Fint* rc, MPI_Fint* rd,
                    MPI_Fint* rt, MPI_Fint* c, MPI_Fint* ierr),
                   (sb, sc, sd, st, rb, rc, rd, rt, c, ierr))
PLAIT_PMPI_FORTRAN(reduce_scatter_block, mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK,
                   (void* sb, void* rb, MPI_Fint* rc, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* ierr),
                   (sb, rb, rc, t, o, c, ierr))
PLAIT_PMPI_FORTRAN(reduce_scatter, mpi_reduce_scatter, MPI_REDUCE_SCATTER,
                   (void* sb, void* rb, MPI_Fint* rc, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* ierr),
                   (sb, rb, rc, t, o, c, ierr))
PLAIT_PMPI_FORTRAN(allreduce, mpi_allreduce, MPI_ALLREDUCE,
                   (void* sb, void* rb, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* ierr),
                   (sb, rb, n, t, o, c, ierr))

#endif

// The Fortran entry points the library needs so that Fortran programs' calls
// reach it; which they are depends on how the MPI routes its bindings
// (nm -D on its Fortran libraries; docs/pmpi.md):
//
// - Open MPI (4.1): mpif.h and `use mpi` call mpi_allreduce_ (and its other
//   manglings), `use mpi_f08` calls mpi_allreduce_f08_; all of them go
//   straight to PMPI_Allreduce. The library defines every one of them, for
//   MPI_Init, MPI_Init_thread, MPI_Finalize and the functions it serves: they
//   convert the handles and Fortran's MPI_IN_PLACE / MPI_BOTTOM and call the
//   library's C entry points, which decide and serve as for C.
// - MPICH (4.0): every binding calls the C MPI_* function (mpi_allreduce_ and
//   the f08 mpi_allreduce_f08ts_ call MPI_Allreduce, after turning Fortran's
//   MPI_IN_PLACE into C's), so the C entry points already serve Fortran; the
//   exception is `use mpi_f08`'s MPI_Init, MPI_Init_thread and MPI_Finalize,
//   which call PMPI_*: those three are defined here for both MPIs. MPICH's
//   mpi_init_ must stay its own: it also sets up the addresses its bindings
//   compare MPI_IN_PLACE with.
#include <mpi.h>

#include "serve.hpp"

// Defines `name` as another symbol for `target`'s code: one function, every
// name a binding calls it by (as the MPIs' own bindings do).
#define PLAIT_PMPI_ALIAS(name, target) PLAIT_PMPI_EXPORT decltype(target) name __attribute__((alias(#target)));

namespace {

// `use mpi_f08` passes ierror only if the caller did (it is OPTIONAL).
void set_ierr(MPI_Fint* ierr, int code) {
  if (ierr != nullptr) *ierr = code;
}

}  // namespace

PLAIT_PMPI_EXPORT void mpi_init_f08_(MPI_Fint* ierr) { set_ierr(ierr, MPI_Init(nullptr, nullptr)); }

PLAIT_PMPI_EXPORT void mpi_init_thread_f08_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  int p = 0;
  set_ierr(ierr, MPI_Init_thread(nullptr, nullptr, *required, &p));
  *provided = p;
}

PLAIT_PMPI_EXPORT void mpi_finalize_f08_(MPI_Fint* ierr) { set_ierr(ierr, MPI_Finalize()); }

#if defined(OPEN_MPI) && OPEN_MPI

// Fortran's MPI_IN_PLACE and MPI_BOTTOM (mpif.h, `use mpi` and `use mpi_f08`
// alike) are the addresses of these common blocks in Open MPI's libmpi, not
// the C constants.
extern "C" int mpi_fortran_in_place_;
extern "C" int mpi_fortran_bottom_;

namespace {

static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint arrays are passed on as int arrays");

void* buf(void* fortran) {
  if (fortran == &mpi_fortran_in_place_) return MPI_IN_PLACE;
  if (fortran == &mpi_fortran_bottom_) return MPI_BOTTOM;
  return fortran;
}
MPI_Datatype type(const MPI_Fint* t) { return PMPI_Type_f2c(*t); }
MPI_Comm comm(const MPI_Fint* c) { return PMPI_Comm_f2c(*c); }
MPI_Op op(const MPI_Fint* o) { return PMPI_Op_f2c(*o); }
const int* ints(const MPI_Fint* a) { return reinterpret_cast<const int*>(a); }

}  // namespace

// mpif.h and `use mpi` call one of mpi_x, mpi_x_, mpi_x__, MPI_X, depending
// on the compiler and its flags.
#define PLAIT_PMPI_MPIF_ALIASES(lower, upper, target) \
  PLAIT_PMPI_ALIAS(lower, target)                     \
  PLAIT_PMPI_ALIAS(lower##_, target)                  \
  PLAIT_PMPI_ALIAS(lower##__, target)                 \
  PLAIT_PMPI_ALIAS(upper, target)

PLAIT_PMPI_MPIF_ALIASES(mpi_init, MPI_INIT, mpi_init_f08_)
PLAIT_PMPI_MPIF_ALIASES(mpi_init_thread, MPI_INIT_THREAD, mpi_init_thread_f08_)
PLAIT_PMPI_MPIF_ALIASES(mpi_finalize, MPI_FINALIZE, mpi_finalize_f08_)

// A served function: written once as its f08 symbol (Open MPI's f08 binding
// passes the same arguments as mpif.h's: buffers by address, handles as
// their integer, ierror possibly absent), the mpif.h manglings aliases of it.
#define PLAIT_PMPI_FORTRAN(lower, upper, params, ...)         \
  PLAIT_PMPI_EXPORT void lower##_f08_ params { __VA_ARGS__; } \
  PLAIT_PMPI_MPIF_ALIASES(lower, upper, lower##_f08_)

PLAIT_PMPI_FORTRAN(mpi_allgather, MPI_ALLGATHER,
                   (void* sb, MPI_Fint* sc, MPI_Fint* st, void* rb, MPI_Fint* rc, MPI_Fint* rt, MPI_Fint* c,
                    MPI_Fint* ierr),
                   set_ierr(ierr, MPI_Allgather(buf(sb), *sc, type(st), buf(rb), *rc, type(rt), comm(c))))
PLAIT_PMPI_FORTRAN(mpi_allgatherv, MPI_ALLGATHERV,
                   (void* sb, MPI_Fint* sc, MPI_Fint* st, void* rb, MPI_Fint* rc, MPI_Fint* rd, MPI_Fint* rt,
                    MPI_Fint* c, MPI_Fint* ierr),
                   set_ierr(ierr,
                            MPI_Allgatherv(buf(sb), *sc, type(st), buf(rb), ints(rc), ints(rd), type(rt), comm(c))))
PLAIT_PMPI_FORTRAN(mpi_alltoall, MPI_ALLTOALL,
                   (void* sb, MPI_Fint* sc, MPI_Fint* st, void* rb, MPI_Fint* rc, MPI_Fint* rt, MPI_Fint* c,
                    MPI_Fint* ierr),
                   set_ierr(ierr, MPI_Alltoall(buf(sb), *sc, type(st), buf(rb), *rc, type(rt), comm(c))))
// In place, the send arguments are ignored (and may be anything).
PLAIT_PMPI_FORTRAN(mpi_alltoallv, MPI_ALLTOALLV,
                   (void* sb, MPI_Fint* sc, MPI_Fint* sd, MPI_Fint* st, void* rb, MPI_Fint* rc, MPI_Fint* rd,
                    MPI_Fint* rt, MPI_Fint* c, MPI_Fint* ierr),
                   const bool in_place = buf(sb) == MPI_IN_PLACE;
                   set_ierr(ierr, MPI_Alltoallv(buf(sb), in_place ? nullptr : ints(sc), in_place ? nullptr : ints(sd),
                                                in_place ? MPI_DATATYPE_NULL : type(st), buf(rb), ints(rc), ints(rd),
                                                type(rt), comm(c))))
PLAIT_PMPI_FORTRAN(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK,
                   (void* sb, void* rb, MPI_Fint* rc, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* ierr),
                   set_ierr(ierr, MPI_Reduce_scatter_block(buf(sb), buf(rb), *rc, type(t), op(o), comm(c))))
PLAIT_PMPI_FORTRAN(mpi_reduce_scatter, MPI_REDUCE_SCATTER,
                   (void* sb, void* rb, MPI_Fint* rc, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* ierr),
                   set_ierr(ierr, MPI_Reduce_scatter(buf(sb), buf(rb), ints(rc), type(t), op(o), comm(c))))
PLAIT_PMPI_FORTRAN(mpi_allreduce, MPI_ALLREDUCE,
                   (void* sb, void* rb, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* ierr),
                   set_ierr(ierr, MPI_Allreduce(buf(sb), buf(rb), *n, type(t), op(o), comm(c))))

#endif

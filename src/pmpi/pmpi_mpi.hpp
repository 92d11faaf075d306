// The one way the PMPI library's files include MPI and plait's MPI transport.
// This library defines MPI_Allreduce, MPI_Init and the other entry points
// it serves, so a call to them from inside the library would come back to
// the library (MPI_Allreduce in node_levels would recurse). plait's
// transport calls MPI_* by name; here, after <mpi.h> has declared both
// names, every MPI function plait's headers call is renamed to its PMPI_
// twin while they are included, and back after. The transport itself stays unchanged and
// an MPI profiler layered above this library does not see plait's internal
// traffic as the application's. The test pmpi.no_mpi_imports checks the
// built library imports no MPI_ function, so a new call in the transport
// that this list misses fails a test instead of recursing.
#pragma once

#include <mpi.h>

#define MPI_Allreduce PMPI_Allreduce
#define MPI_Bcast PMPI_Bcast
#define MPI_Cancel PMPI_Cancel
#define MPI_Comm_dup PMPI_Comm_dup
#define MPI_Comm_free PMPI_Comm_free
#define MPI_Comm_get_attr PMPI_Comm_get_attr
#define MPI_Comm_rank PMPI_Comm_rank
#define MPI_Comm_set_errhandler PMPI_Comm_set_errhandler
#define MPI_Comm_size PMPI_Comm_size
#define MPI_Comm_split PMPI_Comm_split
#define MPI_Comm_split_type PMPI_Comm_split_type
#define MPI_Error_class PMPI_Error_class
#define MPI_Error_string PMPI_Error_string
#define MPI_Finalized PMPI_Finalized
#define MPI_Get_address PMPI_Get_address
#define MPI_Get_count PMPI_Get_count
#define MPI_Get_processor_name PMPI_Get_processor_name
#define MPI_Iallgather PMPI_Iallgather
#define MPI_Ibarrier PMPI_Ibarrier
#define MPI_Ibcast PMPI_Ibcast
#define MPI_Improbe PMPI_Improbe
#define MPI_Imrecv PMPI_Imrecv
#define MPI_Initialized PMPI_Initialized
#define MPI_Iprobe PMPI_Iprobe
#define MPI_Irecv PMPI_Irecv
#define MPI_Isend PMPI_Isend
#define MPI_Mrecv PMPI_Mrecv
#define MPI_Recv PMPI_Recv
#define MPI_Request_free PMPI_Request_free
#define MPI_Send PMPI_Send
#define MPI_Test PMPI_Test
#define MPI_Testall PMPI_Testall
#define MPI_Testsome PMPI_Testsome
#define MPI_Type_commit PMPI_Type_commit
#define MPI_Type_create_hindexed PMPI_Type_create_hindexed
#define MPI_Type_free PMPI_Type_free
#define MPI_Wait PMPI_Wait

#include <plait/mpi.hpp>

// plait's inline and template code has been read with the PMPI_ names (a
// macro is expanded where the code is written, not where a template is
// instantiated); the names are restored for the library's own files, whose
// entry points are MPI_Allreduce and the rest.
#undef MPI_Allreduce
#undef MPI_Bcast
#undef MPI_Cancel
#undef MPI_Comm_dup
#undef MPI_Comm_free
#undef MPI_Comm_get_attr
#undef MPI_Comm_rank
#undef MPI_Comm_set_errhandler
#undef MPI_Comm_size
#undef MPI_Comm_split
#undef MPI_Comm_split_type
#undef MPI_Error_class
#undef MPI_Error_string
#undef MPI_Finalized
#undef MPI_Get_address
#undef MPI_Get_count
#undef MPI_Get_processor_name
#undef MPI_Iallgather
#undef MPI_Ibarrier
#undef MPI_Ibcast
#undef MPI_Improbe
#undef MPI_Imrecv
#undef MPI_Initialized
#undef MPI_Iprobe
#undef MPI_Irecv
#undef MPI_Isend
#undef MPI_Mrecv
#undef MPI_Recv
#undef MPI_Request_free
#undef MPI_Send
#undef MPI_Test
#undef MPI_Testall
#undef MPI_Testsome
#undef MPI_Type_commit
#undef MPI_Type_create_hindexed
#undef MPI_Type_free
#undef MPI_Wait

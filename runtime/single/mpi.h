//===- mpi.h - The MPI of one process ---------------------------*- C++ -*-===//
//
// The part of the MPI interface Loom's runtime calls (runtime/host,
// runtime/driver), implemented for a world of exactly one process: every
// communicator has one member, rank 0. Collectives copy (or do nothing in
// place); a send to oneself is matched with a receive on the same
// communicator and tag, in posting order, as MPI matches them. It is what a
// single-rank build links where no MPI is installed (the device bundle,
// scripts/device-bundle.sh, on a bare GPU node): the generated programs and
// the runtime compile unchanged against it, by putting this folder first on
// the include path. Anything a world of one cannot do (a peer other than
// rank 0, a group of other ranks) is an error code, never a hang.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SINGLE_MPI_H
#define LOOM_RUNTIME_SINGLE_MPI_H

#include <cstdint>

/// Marks the build: this is not a real MPI.
#define LOOM_MPI_OF_ONE_PROCESS 1

typedef int MPI_Comm;
typedef int MPI_Group;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Errhandler;
typedef int MPI_Info;
typedef struct LoomSingleRequest *MPI_Request;

typedef struct MPI_Status {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int64_t loomBytes; // bytes received
} MPI_Status;

enum {
  MPI_SUCCESS = 0,
  MPI_ERR_COMM = 5,
  MPI_ERR_COUNT = 2,
  MPI_ERR_TYPE = 3,
  MPI_ERR_RANK = 6,
  MPI_ERR_ROOT = 7,
  MPI_ERR_GROUP = 8,
  MPI_ERR_REQUEST = 19,
  MPI_ERR_TRUNCATE = 15,
  MPI_ERR_PENDING = 18,
  MPI_ERR_OTHER = 16,
};

#define MPI_COMM_NULL 0
#define MPI_COMM_WORLD 1
#define MPI_GROUP_NULL 0
#define MPI_GROUP_EMPTY 1
#define MPI_ERRHANDLER_NULL 0
#define MPI_ERRORS_ARE_FATAL 1
#define MPI_ERRORS_RETURN 2
#define MPI_INFO_NULL 0
#define MPI_REQUEST_NULL ((MPI_Request)0)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)
#define MPI_IN_PLACE ((void *)1)
#define MPI_UNDEFINED (-32766)
#define MPI_MAX_ERROR_STRING 256
#define MPI_COMM_TYPE_SHARED 1
#define MPI_ANY_SOURCE (-1)
#define MPI_ANY_TAG (-1)

// Thread levels. One process's MPI is driven by one thread: it provides
// MPI_THREAD_SINGLE (the runtime then overlaps no collective).
#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

// Comparisons of communicators.
#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

// Data types: the value is the size in bytes, times 16, plus a tag.
#define MPI_BYTE ((MPI_Datatype)(1 * 16 + 1))
#define MPI_CHAR ((MPI_Datatype)(1 * 16 + 2))
#define MPI_INT ((MPI_Datatype)(4 * 16 + 3))
#define MPI_LONG_LONG ((MPI_Datatype)(8 * 16 + 4))
#define MPI_INT64_T ((MPI_Datatype)(8 * 16 + 5))
#define MPI_UINT64_T ((MPI_Datatype)(8 * 16 + 6))
#define MPI_FLOAT ((MPI_Datatype)(4 * 16 + 7))
#define MPI_DOUBLE ((MPI_Datatype)(8 * 16 + 8))

#define MPI_SUM ((MPI_Op)1)
#define MPI_MIN ((MPI_Op)2)
#define MPI_MAX ((MPI_Op)3)

extern "C" {
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Query_thread(int *provided);
int MPI_Initialized(int *flag);
int MPI_Finalize(void);
int MPI_Finalized(int *flag);
int MPI_Abort(MPI_Comm comm, int code);
int MPI_Error_string(int code, char *text, int *length);

int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *copy);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_compare(MPI_Comm a, MPI_Comm b, int *result);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out);
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info,
                        MPI_Comm *out);
int MPI_Comm_group(MPI_Comm comm, MPI_Group *group);
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag,
                          MPI_Comm *out);
int MPI_Group_incl(MPI_Group group, int n, const int ranks[],
                   MPI_Group *out);
int MPI_Group_free(MPI_Group *group);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *handler);
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler handler);
int MPI_Errhandler_free(MPI_Errhandler *handler);

int MPI_Allreduce(const void *in, void *out, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm);
int MPI_Allgather(const void *in, int inCount, MPI_Datatype inType, void *out,
                  int outCount, MPI_Datatype outType, MPI_Comm comm);
int MPI_Allgatherv(const void *in, int inCount, MPI_Datatype inType,
                   void *out, const int outCounts[], const int displacements[],
                   MPI_Datatype outType, MPI_Comm comm);
int MPI_Bcast(void *data, int count, MPI_Datatype type, int root,
              MPI_Comm comm);
int MPI_Barrier(MPI_Comm comm);

int MPI_Isend(const void *data, int count, MPI_Datatype type, int to, int tag,
              MPI_Comm comm, MPI_Request *request);
int MPI_Irecv(void *data, int count, MPI_Datatype type, int from, int tag,
              MPI_Comm comm, MPI_Request *request);
int MPI_Testsome(int count, MPI_Request requests[], int *completed,
                 int indices[], MPI_Status statuses[]);
int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Cancel(MPI_Request *request);
int MPI_Request_free(MPI_Request *request);
int MPI_Get_count(const MPI_Status *status, MPI_Datatype type, int *count);
}

#endif // LOOM_RUNTIME_SINGLE_MPI_H

//===- Mpi.cpp - The MPI of one process ------------------------------------===//
//
// See mpi.h. Communicators are numbers (MPI_COMM_WORLD and every live
// duplicate or split); each has its own message space, as in MPI, so that a
// duplicate's messages never match the original's. Not thread-safe: Loom's
// runtime calls MPI from one thread.
//
//===----------------------------------------------------------------------===//

#include "mpi.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>

struct LoomSingleRequest {
  bool send = false;
  MPI_Comm comm = MPI_COMM_NULL;
  int tag = 0;
  const void *from = nullptr; // send
  void *into = nullptr;       // receive
  int64_t bytes = 0;          // posted
  int64_t received = 0;       // a receive's, once matched
  bool done = false;
  bool cancelled = false;
  int error = MPI_SUCCESS;
};

namespace {

/// The process's MPI state, made on first use (so that MPI may be called
/// from other files' static constructors) and never destroyed (nor from
/// their destructors).
struct State {
  bool initialized = false, finalized = false;
  std::set<MPI_Comm> live = {MPI_COMM_WORLD};
  MPI_Comm nextComm = MPI_COMM_WORLD + 1;
  // Posted and not yet matched, in posting order.
  std::deque<LoomSingleRequest *> sends, receives;
};

State &state() {
  static State *made = new State;
  return *made;
}

bool valid(MPI_Comm comm) { return state().live.count(comm) != 0; }

int64_t sizeOf(MPI_Datatype type) { return type / 16; }
bool validType(MPI_Datatype type) {
  return type > 16 && type % 16 != 0 && type / 16 <= 8;
}

/// The checks every call with a buffer makes: MPI_SUCCESS or the error.
int checkBuffer(MPI_Comm comm, MPI_Datatype type, int count) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  if (!validType(type))
    return MPI_ERR_TYPE;
  return count < 0 ? MPI_ERR_COUNT : MPI_SUCCESS;
}

int newComm(MPI_Comm *out) {
  *out = state().nextComm++;
  state().live.insert(*out);
  return MPI_SUCCESS;
}

void forget(LoomSingleRequest *request) {
  State &mpi = state();
  std::deque<LoomSingleRequest *> &queue =
      request->send ? mpi.sends : mpi.receives;
  queue.erase(std::remove(queue.begin(), queue.end(), request), queue.end());
}

/// Matches `posted` with the oldest opposite request of its communicator
/// and tag, copying the message.
void match(LoomSingleRequest *posted) {
  State &mpi = state();
  std::deque<LoomSingleRequest *> &other =
      posted->send ? mpi.receives : mpi.sends;
  for (auto it = other.begin(); it != other.end(); ++it) {
    LoomSingleRequest *peer = *it;
    if (peer->comm != posted->comm ||
        (peer->tag != posted->tag && peer->tag != MPI_ANY_TAG &&
         posted->tag != MPI_ANY_TAG))
      continue;
    LoomSingleRequest *send = posted->send ? posted : peer;
    LoomSingleRequest *receive = posted->send ? peer : posted;
    int64_t bytes = std::min(send->bytes, receive->bytes);
    if (bytes > 0)
      std::memcpy(receive->into, send->from, static_cast<size_t>(bytes));
    receive->received = bytes;
    if (send->bytes > receive->bytes)
      receive->error = MPI_ERR_TRUNCATE;
    send->done = receive->done = true;
    other.erase(it);
    return;
  }
  (posted->send ? mpi.sends : mpi.receives).push_back(posted);
}

int post(bool send, const void *from, void *into, int count,
         MPI_Datatype type, int peer, int tag, MPI_Comm comm,
         MPI_Request *request) {
  *request = MPI_REQUEST_NULL;
  if (int error = checkBuffer(comm, type, count))
    return error;
  if (peer != 0 && !(peer == MPI_ANY_SOURCE && !send))
    return MPI_ERR_RANK;
  auto *posted = new LoomSingleRequest;
  posted->send = send;
  posted->comm = comm;
  posted->tag = tag;
  posted->from = from;
  posted->into = into;
  posted->bytes = count * sizeOf(type);
  *request = posted;
  match(posted);
  return MPI_SUCCESS;
}

void fill(MPI_Status *status, const LoomSingleRequest *request) {
  if (!status)
    return;
  status->MPI_SOURCE = 0;
  status->MPI_TAG = request->tag;
  status->MPI_ERROR = request->error;
  status->loomBytes = request->send ? 0 : request->received;
}

} // namespace

extern "C" {

int MPI_Init(int *, char ***) {
  state().initialized = true;
  return MPI_SUCCESS;
}

int MPI_Init_thread(int *argc, char ***argv, int, int *provided) {
  *provided = MPI_THREAD_SINGLE;
  return MPI_Init(argc, argv);
}

int MPI_Query_thread(int *provided) {
  *provided = MPI_THREAD_SINGLE;
  return MPI_SUCCESS;
}

int MPI_Initialized(int *flag) {
  *flag = state().initialized;
  return MPI_SUCCESS;
}

int MPI_Finalize(void) {
  state().finalized = true;
  return MPI_SUCCESS;
}

int MPI_Finalized(int *flag) {
  *flag = state().finalized;
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm, int code) { std::exit(code ? code : 1); }

int MPI_Error_string(int code, char *text, int *length) {
  const char *message = "unknown error";
  switch (code) {
  case MPI_SUCCESS:
    message = "no error";
    break;
  case MPI_ERR_COMM:
    message = "invalid communicator";
    break;
  case MPI_ERR_COUNT:
    message = "invalid count";
    break;
  case MPI_ERR_TYPE:
    message = "invalid data type";
    break;
  case MPI_ERR_RANK:
    message = "invalid rank (a world of one process has only rank 0)";
    break;
  case MPI_ERR_ROOT:
    message = "invalid root (a world of one process has only rank 0)";
    break;
  case MPI_ERR_GROUP:
    message = "invalid group (a world of one process has only rank 0)";
    break;
  case MPI_ERR_REQUEST:
    message = "invalid request";
    break;
  case MPI_ERR_TRUNCATE:
    message = "message truncated";
    break;
  case MPI_ERR_PENDING:
    message = "waiting on a message nobody sent (one process)";
    break;
  }
  *length = std::snprintf(text, MPI_MAX_ERROR_STRING, "%s", message);
  return MPI_SUCCESS;
}

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  *rank = 0;
  return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  *size = 1;
  return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *copy) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  return newComm(copy);
}

int MPI_Comm_free(MPI_Comm *comm) {
  if (!valid(*comm) || *comm == MPI_COMM_WORLD)
    return MPI_ERR_COMM;
  state().live.erase(*comm);
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPI_Comm_compare(MPI_Comm a, MPI_Comm b, int *result) {
  if (!valid(a) || !valid(b))
    return MPI_ERR_COMM;
  // Every communicator holds the one process.
  *result = a == b ? MPI_IDENT : MPI_CONGRUENT;
  return MPI_SUCCESS;
}

int MPI_Comm_split(MPI_Comm comm, int color, int, MPI_Comm *out) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  if (color == MPI_UNDEFINED) {
    *out = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  return newComm(out);
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int, MPI_Info,
                        MPI_Comm *out) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  if (type == MPI_UNDEFINED) {
    *out = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  return newComm(out);
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  *group = 2; // the group of rank 0
  return MPI_SUCCESS;
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int, MPI_Comm *out) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  if (group != 2)
    return MPI_ERR_GROUP;
  return newComm(out);
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[],
                   MPI_Group *out) {
  if (group != 2 || n < 0 || n > 1 || (n == 1 && ranks[0] != 0))
    return MPI_ERR_GROUP;
  *out = n == 0 ? MPI_GROUP_EMPTY : 2;
  return MPI_SUCCESS;
}

int MPI_Group_free(MPI_Group *group) {
  *group = MPI_GROUP_NULL;
  return MPI_SUCCESS;
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *handler) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  // Errors always come back as codes here.
  *handler = MPI_ERRORS_RETURN;
  return MPI_SUCCESS;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler) {
  return valid(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Errhandler_free(MPI_Errhandler *handler) {
  *handler = MPI_ERRHANDLER_NULL;
  return MPI_SUCCESS;
}

int MPI_Allreduce(const void *in, void *out, int count, MPI_Datatype type,
                  MPI_Op, MPI_Comm comm) {
  if (int error = checkBuffer(comm, type, count))
    return error;
  // The reduction of one contribution is itself.
  if (in != MPI_IN_PLACE && count > 0)
    std::memmove(out, in, static_cast<size_t>(count * sizeOf(type)));
  return MPI_SUCCESS;
}

int MPI_Allgather(const void *in, int inCount, MPI_Datatype inType, void *out,
                  int outCount, MPI_Datatype outType, MPI_Comm comm) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  if (!validType(outType) || (in != MPI_IN_PLACE && !validType(inType)))
    return MPI_ERR_TYPE;
  if (in == MPI_IN_PLACE)
    return MPI_SUCCESS;
  if (inCount * sizeOf(inType) != outCount * sizeOf(outType))
    return MPI_ERR_TRUNCATE;
  if (inCount > 0)
    std::memmove(out, in, static_cast<size_t>(inCount * sizeOf(inType)));
  return MPI_SUCCESS;
}

int MPI_Allgatherv(const void *in, int inCount, MPI_Datatype inType,
                   void *out, const int outCounts[], const int displacements[],
                   MPI_Datatype outType, MPI_Comm comm) {
  if (!valid(comm))
    return MPI_ERR_COMM;
  if (!validType(outType) || (in != MPI_IN_PLACE && !validType(inType)))
    return MPI_ERR_TYPE;
  if (in == MPI_IN_PLACE)
    return MPI_SUCCESS;
  if (inCount * sizeOf(inType) != outCounts[0] * sizeOf(outType))
    return MPI_ERR_TRUNCATE;
  if (inCount > 0)
    std::memmove(static_cast<char *>(out) + displacements[0] * sizeOf(outType),
                 in, static_cast<size_t>(inCount * sizeOf(inType)));
  return MPI_SUCCESS;
}

int MPI_Bcast(void *, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (int error = checkBuffer(comm, type, count))
    return error;
  return root == 0 ? MPI_SUCCESS : MPI_ERR_ROOT;
}

int MPI_Barrier(MPI_Comm comm) {
  return valid(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
}

int MPI_Isend(const void *data, int count, MPI_Datatype type, int to, int tag,
              MPI_Comm comm, MPI_Request *request) {
  return post(true, data, nullptr, count, type, to, tag, comm, request);
}

int MPI_Irecv(void *data, int count, MPI_Datatype type, int from, int tag,
              MPI_Comm comm, MPI_Request *request) {
  return post(false, nullptr, data, count, type, from, tag, comm, request);
}

int MPI_Testsome(int count, MPI_Request requests[], int *completed,
                 int indices[], MPI_Status statuses[]) {
  bool any = false;
  int error = MPI_SUCCESS;
  *completed = 0;
  for (int i = 0; i < count; ++i) {
    LoomSingleRequest *request = requests[i];
    if (!request)
      continue;
    any = true;
    if (!request->done)
      continue;
    indices[*completed] = i;
    if (statuses)
      fill(&statuses[*completed], request);
    if (request->error != MPI_SUCCESS)
      error = request->error;
    ++*completed;
    delete request;
    requests[i] = MPI_REQUEST_NULL;
  }
  if (!any)
    *completed = MPI_UNDEFINED;
  return error;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  LoomSingleRequest *waited = *request;
  if (!waited)
    return MPI_SUCCESS;
  // Nobody else can ever post the other half: waiting would be for ever.
  if (!waited->done)
    return MPI_ERR_PENDING;
  fill(status, waited);
  int error = waited->error;
  delete waited;
  *request = MPI_REQUEST_NULL;
  return error;
}

int MPI_Cancel(MPI_Request *request) {
  LoomSingleRequest *cancelled = *request;
  if (!cancelled)
    return MPI_ERR_REQUEST;
  if (!cancelled->done) {
    forget(cancelled);
    cancelled->done = cancelled->cancelled = true;
  }
  return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request *request) {
  LoomSingleRequest *freed = *request;
  if (!freed)
    return MPI_ERR_REQUEST;
  // An unmatched send is dropped with it (nobody can receive it later
  // except this process, which let it go).
  if (!freed->done)
    forget(freed);
  delete freed;
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype type, int *count) {
  if (!validType(type))
    return MPI_ERR_TYPE;
  if (!status)
    return MPI_ERR_OTHER; // MPI_STATUS_IGNORE holds no count
  int64_t size = sizeOf(type);
  *count = status->loomBytes % size ? MPI_UNDEFINED
                                    : static_cast<int>(status->loomBytes / size);
  return MPI_SUCCESS;
}

} // extern "C"

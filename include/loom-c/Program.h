/*===- loom-c/Program.h - The C ABI of a compiled Loom program -----*- C -*-===*\
|*                                                                            *|
|* A training step compiled by Loom for the host target can be built as a     *|
|* shared library (`loom-run --emit-library`, docs/program-library.md) that    *|
|* exports exactly these functions. Every rank of the program's communicator  *|
|* loads the library, creates the program on its rank, loads parameters,      *|
|* optimizer state and batches from host arrays, steps, and reads back the    *|
|* loss, parameters and state. Arrays cross in one of two forms:              *|
|*   global - the whole array, as one device would hold it (every rank        *|
|*            passes the same array; reading it back is collective: every     *|
|*            rank of the program must call it);                              *|
|*   local  - the rank's own shard under the argument's layout.               *|
|* No C++ type crosses this boundary. Every function that can fail returns   *|
|* a status: NULL for success, else an object the caller frees with           *|
|* loom_status_destroy, which holds a code and a message naming what failed   *|
|* (the argument, the shape, the rank). Nothing in the library ends the       *|
|* process.                                                                   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef LOOM_C_PROGRAM_H
#define LOOM_C_PROGRAM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this ABI; loom_program_abi_version returns it. */
#define LOOM_PROGRAM_ABI_VERSION 6

typedef enum loom_status_code {
  LOOM_STATUS_OK = 0,
  LOOM_STATUS_INVALID_ARGUMENT = 3,   /* a wrong shape, dtype, name, form */
  LOOM_STATUS_NOT_FOUND = 5,          /* no such argument */
  LOOM_STATUS_FAILED_PRECONDITION = 9, /* wrong rank, not created, ... */
  LOOM_STATUS_INTERNAL = 13,          /* the runtime failed (a collective) */
} loom_status_code;

typedef struct loom_status loom_status;

loom_status_code loom_status_get_code(const loom_status *status);
/* Valid until the status is destroyed. */
const char *loom_status_get_message(const loom_status *status);
void loom_status_destroy(loom_status *status);

typedef enum loom_dtype {
  LOOM_DTYPE_F32 = 0,
  LOOM_DTYPE_F64 = 1,
  LOOM_DTYPE_BF16 = 2,
  LOOM_DTYPE_I1 = 3,
  LOOM_DTYPE_I32 = 4,
  LOOM_DTYPE_I64 = 5,
} loom_dtype;

typedef enum loom_form {
  LOOM_FORM_GLOBAL = 0,
  LOOM_FORM_LOCAL = 1,
} loom_form;

typedef enum loom_arg_role {
  LOOM_ARG_OTHER = 0,
  LOOM_ARG_PARAM = 1, /* nn.param: a trained parameter */
  LOOM_ARG_STATE = 2, /* nn.state: optimizer state */
  LOOM_ARG_DATA = 3,  /* nn.data: a batch input */
  LOOM_ARG_STEP = 4,  /* nn.step: the step counter, which loom_program_step
                         sets (1 at the first step, +1 each step) */
} loom_arg_role;

/* What the program takes as argument `index`; the pointers stay valid as
 * long as the program. */
typedef struct loom_arg_info {
  const char *name; /* the source's name (nn.name), or "" */
  loom_arg_role role;
  loom_dtype dtype;
  int64_t rank;
  const int64_t *global_shape; /* `rank` sizes */
  const int64_t *local_shape;  /* this rank's shard, `rank` sizes; NULL
                                  when `held` is 0 */
  int32_t held;                /* 0: this rank holds nothing of it */
  /* How every device holds it: the layout core's encoding of its layout
   * (runtime/layout/Layout.h, encodeLayout), `layout_size` integers. A
   * driver that switches between variants of a step plans the exchange of
   * their parameters and state from these (since ABI version 5). */
  const int64_t *layout;
  int64_t layout_size;
} loom_arg_info;

typedef struct loom_program loom_program;

int32_t loom_program_abi_version(void);

/* Creates the program on the calling rank. `mpi_comm` points to the
 * MPI_Comm whose ranks run the program (rank r runs device r's program), or
 * is NULL for MPI_COMM_WORLD; MPI must be initialized. Collective over the
 * communicator: every rank succeeds or every rank fails. Fails when the
 * communicator's size is not the program's number of devices. Further
 * programs of the same library in the process must use the same
 * communicator (those of other libraries need not). */
loom_status *loom_program_create(const void *mpi_comm, loom_program **program);
/* Frees the program. Destroying the last program of a library frees its
 * duplicate of the communicator, which is collective: then every rank
 * destroys its program, before MPI_Finalize. Do not dlclose a library while
 * one of its programs exists. */
void loom_program_destroy(loom_program *program);

/* This rank's device and the number of devices the program runs on. */
int64_t loom_program_get_device(const loom_program *program);
int64_t loom_program_get_num_devices(const loom_program *program);

int64_t loom_program_get_num_args(const loom_program *program);
loom_status *loom_program_get_arg_info(const loom_program *program,
                                       int64_t index, loom_arg_info *info);
/* The index of the argument named `name`, or -1. */
int64_t loom_program_find_arg(const loom_program *program, const char *name);

/* Sets argument `index` from `data`, an array of `dtype` with `rank` sizes
 * `shape`: the global array or the rank's shard (`form`). A rank that holds
 * nothing of the argument accepts the global form and ignores it. */
loom_status *loom_program_set_arg(loom_program *program, int64_t index,
                                  loom_form form, loom_dtype dtype,
                                  int64_t rank, const int64_t *shape,
                                  const void *data);
/* Reads argument `index` (after a step: the updated parameters and state)
 * into `data`, described as for loom_program_set_arg. The global form is
 * collective over the program's communicator: every rank reads the same
 * argument at once (else all fail). */
loom_status *loom_program_get_arg(loom_program *program, int64_t index,
                                  loom_form form, loom_dtype dtype,
                                  int64_t rank, const int64_t *shape,
                                  void *data);

/* The program's results (since ABI version 6): a training step's loss and
 * what it feeds back, a forward (inference or rollout) program's outputs
 * (loom-run --emit-library without --train). Described as the arguments
 * are (name "", role LOOM_ARG_OTHER; layout and shapes as for an
 * argument); their values are those of the last loom_program_step, read
 * as loom_program_get_arg reads an argument (the global form collective).
 * Reading one before any step fails with LOOM_STATUS_FAILED_PRECONDITION.
 * A result the step writes over an argument (a training step's updated
 * parameters and state) shares that argument's memory: setting the
 * argument, or switching into the program, changes the result too. */
int64_t loom_program_get_num_results(const loom_program *program);
loom_status *loom_program_get_result_info(const loom_program *program,
                                          int64_t index, loom_arg_info *info);
loom_status *loom_program_get_result(loom_program *program, int64_t index,
                                     loom_form form, loom_dtype dtype,
                                     int64_t rank, const int64_t *shape,
                                     void *data);

/* Runs one training step (collective). `loss`, when not NULL, receives the
 * step's loss (the global value, on every rank) as a double. A step, or a
 * global read, that fails in the runtime (a collective that times out, a
 * kernel's failed check) leaves the program unusable: later calls return
 * LOOM_STATUS_FAILED_PRECONDITION; destroy it. */
loom_status *loom_program_step(loom_program *program, double *loss);

/* Whether the program has a loss result for loom_program_step to give. */
int32_t loom_program_has_loss(const loom_program *program);

/* Whether the program computes the global norm of its gradients (a step
 * compiled with gradient clipping, nn-training-step clip-norm=). */
int32_t loom_program_has_grad_norm(const loom_program *program);

/* The gradients' global norm of the last step, before clipping (the same
 * on every rank; read back by loom_program_step). Not collective. */
loom_status *loom_program_get_grad_norm(const loom_program *program,
                                        double *norm);

/* Sets how many steps the program counts as done, `steps` >= 0: the next
 * loom_program_step is step `steps` + 1 (its step counters, records and
 * traces say so). For variants of one step (programs of other data
 * shapes taking turns on the same parameters, which the caller moves
 * between them): each continues the count. Not collective. */
loom_status *loom_program_set_steps_done(loom_program *program,
                                         int64_t steps);

/* What the library's runtime on this rank records of the steps besides
 * counting traffic, as flags (0, the default: nothing). The setting is
 * the library's, shared by its programs on the rank. */
typedef enum loom_record {
  LOOM_RECORD_TRACE = 1, /* spans of step phases and collectives */
  LOOM_RECORD_CALLS = 2, /* every device library call (NCCL, HCCL) */
} loom_record;
void loom_program_set_recording(loom_program *program, int32_t records);

/* What this rank moved so far, per collective kind (in the order of the
 * kinds' names): the calls and the bytes sent and received, as the
 * compiler's communication report predicts them. The counters are the
 * library's runtime's, shared by its programs on the rank. */
typedef struct loom_traffic {
  const char *collective; /* valid as long as the program */
  int64_t calls;
  int64_t bytes_sent;
  int64_t bytes_received;
} loom_traffic;
int64_t loom_program_get_num_traffic(const loom_program *program);
loom_status *loom_program_get_traffic(const loom_program *program,
                                      int64_t index, loom_traffic *traffic);

/* One device library call (NCCL, HCCL) as recorded at its call site while
 * LOOM_RECORD_CALLS was set; the host target calls no library. The
 * pointers are valid until the next step or the next call of
 * loom_program_get_library_call. */
typedef struct loom_library_call {
  int64_t step;           /* the training step */
  int64_t call;           /* the device collective of the step (1, 2, ...) */
  const char *collective; /* of generated code: all_reduce, exchange, ... */
  const char *primitive;  /* the library call: all_reduce, send, recv, ... */
  const char *dtype;      /* the data type passed: f32, f64, i64 */
  int64_t count;          /* the element count passed */
  int64_t peer;           /* send, recv: the peer's world rank; else -1 */
  int64_t num_members;
  const int64_t *members; /* the communicator's world ranks, in its order */
} loom_library_call;
int64_t loom_program_get_num_library_calls(const loom_program *program);
loom_status *loom_program_get_library_call(const loom_program *program,
                                           int64_t index,
                                           loom_library_call *call);

/* Writes this rank's recorded spans (LOOM_RECORD_TRACE) to `path`: a JSON
 * array of Chrome trace events ("X" events in microseconds of wall time;
 * pid: the rank; tid 0: step phases, tid 1: collectives). */
loom_status *loom_program_write_trace(const loom_program *program,
                                      const char *path);

/* Every function above, as a loader fills them in from one library
 * (loom_program_library_open in include/loom-c/Compiler.h): programs of
 * several libraries can live in one process. */
typedef struct loom_program_api {
  void *library;
  int32_t (*abi_version)(void);
  loom_status *(*create)(const void *mpi_comm, loom_program **program);
  void (*destroy)(loom_program *program);
  int64_t (*get_device)(const loom_program *program);
  int64_t (*get_num_devices)(const loom_program *program);
  int64_t (*get_num_args)(const loom_program *program);
  loom_status *(*get_arg_info)(const loom_program *program, int64_t index,
                               loom_arg_info *info);
  int64_t (*find_arg)(const loom_program *program, const char *name);
  loom_status *(*set_arg)(loom_program *program, int64_t index,
                          loom_form form, loom_dtype dtype, int64_t rank,
                          const int64_t *shape, const void *data);
  loom_status *(*get_arg)(loom_program *program, int64_t index,
                          loom_form form, loom_dtype dtype, int64_t rank,
                          const int64_t *shape, void *data);
  loom_status *(*step)(loom_program *program, double *loss);
  loom_status_code (*status_get_code)(const loom_status *status);
  const char *(*status_get_message)(const loom_status *status);
  void (*status_destroy)(loom_status *status);
  int32_t (*has_loss)(const loom_program *program);
  int32_t (*has_grad_norm)(const loom_program *program);
  loom_status *(*get_grad_norm)(const loom_program *program, double *norm);
  loom_status *(*set_steps_done)(loom_program *program, int64_t steps);
  void (*set_recording)(loom_program *program, int32_t records);
  int64_t (*get_num_traffic)(const loom_program *program);
  loom_status *(*get_traffic)(const loom_program *program, int64_t index,
                              loom_traffic *traffic);
  int64_t (*get_num_library_calls)(const loom_program *program);
  loom_status *(*get_library_call)(const loom_program *program, int64_t index,
                                   loom_library_call *call);
  loom_status *(*write_trace)(const loom_program *program, const char *path);
  int64_t (*get_num_results)(const loom_program *program);
  loom_status *(*get_result_info)(const loom_program *program, int64_t index,
                                  loom_arg_info *info);
  loom_status *(*get_result)(loom_program *program, int64_t index,
                             loom_form form, loom_dtype dtype, int64_t rank,
                             const int64_t *shape, void *data);
} loom_program_api;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_C_PROGRAM_H */

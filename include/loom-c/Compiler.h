/*===- loom-c/Compiler.h - Loom's compiler as a C library ----------*- C -*-===*\
|*                                                                            *|
|* The whole path from a model to a trained program, from C: a context (with *|
|* Loom's dialects and pipelines), parsing a module (argument names kept),    *|
|* applying a run configuration, running named pipelines, emitting a         *|
|* target's sources, building the host program as a shared library and       *|
|* loading it (include/loom-c/Program.h steps it). No C++ type crosses the   *|
|* boundary. Diagnostics (with their locations) go to the context's          *|
|* callback; functions that can fail return a loom_status (NULL: success),   *|
|* as the program library does.                                               *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef LOOM_C_COMPILER_H
#define LOOM_C_COMPILER_H

#include "include/loom-c/Program.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API; loom_compiler_api_version returns it. */
#define LOOM_COMPILER_API_VERSION 4

int32_t loom_compiler_api_version(void);

typedef enum loom_severity {
  LOOM_SEVERITY_NOTE = 0,
  LOOM_SEVERITY_WARNING = 1,
  LOOM_SEVERITY_ERROR = 2,
} loom_severity;

/* A diagnostic: `location` is "file:line:column" (or "" when unknown);
 * both strings are valid during the call only. */
typedef void (*loom_diagnostic_callback)(loom_severity severity,
                                         const char *location,
                                         const char *message, void *user);

typedef struct loom_context loom_context;
typedef struct loom_module loom_module;

/* A context; diagnostics go to `callback` (NULL: errors and warnings to
 * stderr), one at a time, in the order they arise (the context runs
 * pipelines on one thread). Destroy every module of a context before the
 * context. */
loom_context *loom_context_create(loom_diagnostic_callback callback,
                                  void *user);
void loom_context_destroy(loom_context *context);

/* Statuses of this API: the same C type as the program library's, but free
 * each status with the destroy function of the API that returned it (this
 * one's: loom_compiler_status_destroy). */
loom_status_code loom_compiler_status_get_code(const loom_status *status);
const char *loom_compiler_status_get_message(const loom_status *status);
void loom_compiler_status_destroy(loom_status *status);

/* Parses `length` bytes of MLIR text named `name` (for locations), keeping
 * the source's argument names as nn.name. */
loom_status *loom_module_parse(loom_context *context, const char *text,
                               size_t length, const char *name,
                               loom_module **module);
void loom_module_destroy(loom_module *module);
/* The module as MLIR text; free it with loom_string_destroy. */
char *loom_module_print(const loom_module *module);
void loom_string_destroy(char *text);

/* Applies a run configuration (the text format of frontends/config,
 * `length` bytes): the cluster where the module has none, and the layouts
 * of the forward function's arguments by name. */
loom_status *loom_module_apply_config(loom_module *module, const char *text,
                                      size_t length);
/* The pipelines the applied configuration asks for, e.g.
 * "loom-training-pipeline{optimizer=adamw lr=0.01},loom-partition-pipeline"
 * (valid until the module is destroyed or another configuration is applied;
 * "" before a configuration). */
const char *loom_module_get_config_pipeline(const loom_module *module);

/* Runs a textual pass pipeline on the module, with Loom's named pipelines
 * (loom-training-pipeline, loom-partition-pipeline, loom-compile-pipeline)
 * and passes, e.g. "loom-training-pipeline{optimizer=sgd lr=0.1}". */
loom_status *loom_module_run_pipeline(loom_module *module,
                                      const char *pipeline);

/* The C++ of the training step `entry` ("" : the only one) for `target`
 * ("host", "cuda", "ascend", "cluster"); free it with loom_string_destroy.
 * The module is not changed. */
loom_status *loom_module_emit(const loom_module *module, const char *target,
                              const char *entry, char **source);

/* Builds the training step `entry` as a program library for `target`
 * (host, cuda, ascend or cluster, as loom_module_emit) at `path` (loom-run
 * --emit-library). */
loom_status *loom_module_build_library(const loom_module *module,
                                       const char *target, const char *entry,
                                       const char *path);

/* Loads the program library at `path` (dlopen) and fills `api` with its
 * functions; `api->library` is the handle for loom_program_library_close. */
loom_status *loom_program_library_open(const char *path,
                                       loom_program_api *api);
void loom_program_library_close(loom_program_api *api);

/* What the calling rank did in a switch (loom_program_switch). */
typedef struct loom_switch_info {
  int64_t bytes_sent, bytes_received, messages_sent;
  int64_t plan_bytes; /* the plan's volume over all ranks */
  int64_t arguments;  /* the arguments moved */
  double seconds;
  /* Of bytes_sent, those to ranks on other nodes (since version 4): the
   * ranks sharing memory form a node, or LOOM_SWITCH_NODES ("0,0,1,1")
   * names each rank's; the plan takes what a rank lacks from holders on
   * its own node where it can. */
  int64_t bytes_sent_off_node;
} loom_switch_info;

/* Moves every argument of program `to` but its data and step counters
 * from the argument of program `from` of the same name (unnamed: the same
 * index; the same element type and global shape, else the switch fails, as
 * it does for a parameter or state of `to` that `from` lacks) from
 * `from`'s layout into `to`'s, in one exchange between the ranks planned
 * by Loom's layout core: what a rank holds under both stays put, at most
 * one message per ordered pair of ranks (docs/switching.md). The two
 * programs may come from different libraries (two strategies of a step,
 * or a step and another program of the same parameters); both must have
 * been created on `mpi_comm` (a pointer to an MPI_Comm, or NULL for
 * MPI_COMM_WORLD), and every rank of it calls this at once. `info`, when
 * not NULL, receives the calling rank's figures. A failure (ranks that
 * planned different switches, a message of the wrong size, no progress
 * within LOOM_COLLECTIVE_TIMEOUT_S) leaves `to`'s arguments in an unknown
 * state. */
loom_status *loom_program_switch(const loom_program_api *from_api,
                                 loom_program *from,
                                 const loom_program_api *to_api,
                                 loom_program *to, const void *mpi_comm,
                                 loom_switch_info *info);

typedef enum loom_switch_flags {
  /* Move the parameters (nn.param) only; the target's optimizer state and
   * other arguments stay as they are. For the rollout (inference) switch
   * of RL post-training: the weights go from the training program into a
   * forward program of another layout for generation (a plain switch, the
   * forward program having no state), and come back into the training
   * program, whose optimizer state never left, with this flag. */
  LOOM_SWITCH_PARAMETERS_ONLY = 1,
} loom_switch_flags;

/* loom_program_switch with `flags` (loom_switch_flags; since version 4). */
loom_status *loom_program_switch_with(const loom_program_api *from_api,
                                      loom_program *from,
                                      const loom_program_api *to_api,
                                      loom_program *to, const void *mpi_comm,
                                      int32_t flags, loom_switch_info *info);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_C_COMPILER_H */

/*===- ProgramLibraryTest.c - Drives compiled program libraries from C ----===*\
|*                                                                            *|
|* Run under mpirun. Loads one or more program libraries (each a training     *|
|* step compiled by `loom-run --emit-library`, include/loom-c/Program.h) into *|
|* one process with dlopen, creates every program on the ranks, sets the      *|
|* parameters from DIR/param_<k>.npy and zero optimizer state (global form),  *|
|* steps them in turn, each step's batch from DATA/<name>.npy, and writes     *|
|* the losses and the final parameters (read back in global form) to          *|
|* OUT/<library index>/ on rank 0:                                            *|
|*                                                                            *|
|*   program-library-test --init DIR --data DIR --steps N --out DIR LIB...    *|
|*   With two or more libraries, also one run switching between the first   *|
|*   two every step (loom_program_switch), to OUT/switch/.                   *|
|*   program-library-test --errors LIB   (the C ABI's error paths)            *|
|*   program-library-test --ranks-check LIB  (a communicator of the wrong     *|
|*                                      size, and a sub-communicator)         *|
|*   --compile MODEL --config FILE --build PATH: first compile MODEL with the *|
|*       run configuration FILE into the library PATH through the compiler's  *|
|*       C API (include/loom-c/Compiler.h), and train it too                  *|
|*   program-library-test --compile-errors --compile MODEL --config FILE      *|
|*       (the compiler C API's error paths)                                   *|
|*   --rollout FWD --rollout-at K: train LIB (one library) for --steps, and  *|
|*       after step K move its weights into the forward program FWD (another *|
|*       layout), run it on step K+1's batch, write its logits to            *|
|*       OUT/rollout/logits.npy, and move them back (parameters only; the    *|
|*       training program's own weights zeroed first); results to            *|
|*       OUT/rollout/                                                         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "include/loom-c/Compiler.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef loom_program_api Api;

static int rank_ = 0;
/* --trace PATH: where errors() writes the ranks' traces (PATH.<rank>.json). */
static const char *trace_ = NULL;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "program-library-test: rank %d: %s%s%s\n", rank_, what,
          detail ? ": " : "", detail ? detail : "");
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void load(Api *api, const char *path) {
  loom_status *status = loom_program_library_open(path, api);
  if (status) {
    fprintf(stderr, "program-library-test: rank %d: %s\n", rank_,
            loom_compiler_status_get_message(status));
    loom_compiler_status_destroy(status);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

static void check(const Api *api, loom_status *status, const char *what) {
  if (!status)
    return;
  fprintf(stderr, "program-library-test: rank %d: %s: status %d: %s\n", rank_,
          what, (int)api->status_get_code(status), api->status_get_message(status));
  api->status_destroy(status);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Prints an expected failure's code and message (rank 0), or fails. */
static void expect_failure(const Api *api, loom_status *status,
                           const char *what) {
  if (!status)
    die("expected a failure", what);
  if (rank_ == 0)
    printf("%s: status %d: %s\n", what, (int)api->status_get_code(status),
           api->status_get_message(status));
  api->status_destroy(status);
}

/*===------------------------------------------------------------------------===
 * .npy files (version 1, little-endian, C order, f8, f4 or i8)
 *===------------------------------------------------------------------------===*/

typedef struct Array {
  loom_dtype dtype;
  int64_t rank, shape[8];
  void *data;
  int64_t bytes;
} Array;

static int64_t elements(const int64_t *shape, int64_t rank) {
  int64_t n = 1;
  for (int64_t i = 0; i < rank; ++i)
    n *= shape[i];
  return n;
}

static size_t element_size(loom_dtype dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
  case LOOM_DTYPE_I32:
    return 4;
  case LOOM_DTYPE_BF16:
    return 2;
  case LOOM_DTYPE_I1:
    return 1;
  default:
    return 8;
  }
}

static int read_npy(const char *path, Array *array) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return 0;
  unsigned char magic[10];
  if (fread(magic, 1, 10, file) != 10 || memcmp(magic, "\x93NUMPY", 6) ||
      magic[6] != 1)
    die("not a version-1 .npy file", path);
  size_t length = magic[8] | (magic[9] << 8);
  char header[4096];
  if (length >= sizeof(header) || fread(header, 1, length, file) != length)
    die("a bad .npy header", path);
  header[length] = 0;
  if (strstr(header, "'<f8'"))
    array->dtype = LOOM_DTYPE_F64;
  else if (strstr(header, "'<f4'"))
    array->dtype = LOOM_DTYPE_F32;
  else if (strstr(header, "'<i8'"))
    array->dtype = LOOM_DTYPE_I64;
  else
    die("only <f8, <f4 and <i8 .npy files", path);
  if (strstr(header, "'fortran_order': True"))
    die("a Fortran-order .npy file", path);
  const char *open = strchr(strstr(header, "'shape'"), '(');
  array->rank = 0;
  for (const char *at = open + 1; *at && *at != ')';) {
    char *end;
    long long size = strtoll(at, &end, 10);
    if (end == at) {
      ++at;
      continue;
    }
    array->shape[array->rank++] = size;
    at = end;
  }
  array->bytes = elements(array->shape, array->rank) *
                 (int64_t)element_size(array->dtype);
  array->data = malloc(array->bytes ? (size_t)array->bytes : 1);
  if (fread(array->data, 1, (size_t)array->bytes, file) !=
      (size_t)array->bytes)
    die("a truncated .npy file", path);
  fclose(file);
  return 1;
}

static void write_npy(const char *path, const Array *array) {
  FILE *file = fopen(path, "wb");
  if (!file)
    die("cannot write", path);
  char header[256];
  int n = snprintf(header, sizeof(header),
                   "{'descr': '%s', 'fortran_order': False, 'shape': (",
                   array->dtype == LOOM_DTYPE_F64   ? "<f8"
                   : array->dtype == LOOM_DTYPE_F32 ? "<f4"
                                                    : "<i8");
  for (int64_t i = 0; i < array->rank; ++i)
    n += snprintf(header + n, sizeof(header) - n, "%lld,",
                  (long long)array->shape[i]);
  n += snprintf(header + n, sizeof(header) - n, "), }");
  while ((10 + n + 1) % 64)
    header[n++] = ' ';
  header[n++] = '\n';
  unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
  fwrite(magic, 1, 10, file);
  fwrite(header, 1, (size_t)n, file);
  fwrite(array->data, 1, (size_t)array->bytes, file);
  fclose(file);
}

/*===------------------------------------------------------------------------===
 * Training
 *===------------------------------------------------------------------------===*/

typedef struct Run {
  Api api;
  loom_program *program;
  double losses[64];
} Run;

static void set_initial(Run *run, const char *init) {
  Api *api = &run->api;
  int64_t params = 0;
  for (int64_t i = 0; i < api->get_num_args(run->program); ++i) {
    loom_arg_info info;
    check(api, api->get_arg_info(run->program, i, &info), "arg info");
    if (info.role == LOOM_ARG_DATA)
      continue;
    Array array;
    char path[1024];
    if (info.role == LOOM_ARG_PARAM) {
      snprintf(path, sizeof(path), "%s/param_%lld.npy", init,
               (long long)params++);
      if (!read_npy(path, &array))
        die("cannot read", path);
    } else {
      /* Optimizer state and the step counter start at zero. */
      array.dtype = info.dtype;
      array.rank = info.rank;
      memcpy(array.shape, info.global_shape, sizeof(int64_t) * info.rank);
      array.bytes = elements(info.global_shape, info.rank) *
                    (int64_t)element_size(info.dtype);
      array.data = calloc(1, array.bytes ? (size_t)array.bytes : 1);
    }
    check(api,
          api->set_arg(run->program, i, LOOM_FORM_GLOBAL, array.dtype,
                       array.rank, array.shape, array.data),
          info.name);
    free(array.data);
  }
}

static void set_batch(Run *run, const char *data, int64_t step) {
  Api *api = &run->api;
  for (int64_t i = 0; i < api->get_num_args(run->program); ++i) {
    loom_arg_info info;
    check(api, api->get_arg_info(run->program, i, &info), "arg info");
    if (info.role != LOOM_ARG_DATA)
      continue;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.npy", data, info.name);
    Array all;
    if (!read_npy(path, &all))
      die("cannot read", path);
    int64_t batch = all.bytes / all.shape[0];
    check(api,
          api->set_arg(run->program, i, LOOM_FORM_GLOBAL, all.dtype,
                       all.rank - 1, all.shape + 1,
                       (char *)all.data + step * batch),
          info.name);
    free(all.data);
  }
}

static void write_results(Run *run, const char *out, int64_t steps) {
  Api *api = &run->api;
  int64_t params = 0;
  for (int64_t i = 0; i < api->get_num_args(run->program); ++i) {
    loom_arg_info info;
    check(api, api->get_arg_info(run->program, i, &info), "arg info");
    if (info.role != LOOM_ARG_PARAM)
      continue;
    Array array;
    array.dtype = info.dtype;
    array.rank = info.rank;
    memcpy(array.shape, info.global_shape, sizeof(int64_t) * info.rank);
    array.bytes = elements(info.global_shape, info.rank) *
                  (int64_t)element_size(info.dtype);
    array.data = malloc(array.bytes ? (size_t)array.bytes : 1);
    /* Collective: every rank reads it back. */
    check(api,
          api->get_arg(run->program, i, LOOM_FORM_GLOBAL, array.dtype,
                       array.rank, array.shape, array.data),
          info.name);
    char path[1024];
    snprintf(path, sizeof(path), "%s/param_%lld.npy", out, (long long)params++);
    if (rank_ == 0)
      write_npy(path, &array);
    free(array.data);
  }
  if (rank_ == 0) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/losses.txt", out);
    FILE *file = fopen(path, "w");
    for (int64_t s = 0; s < steps; ++s)
      fprintf(file, "%.17g\n", run->losses[s]);
    fclose(file);
  }
}

static char *read_file(const char *path, size_t *length);

/* One training run switching between the programs of the first two
 * libraries (two layouts of one step): step s on library s mod 2, the
 * parameters and optimizer state moved by loom_program_switch at every
 * change, the step count carried on; results to OUT/switch. */
static void switching(Run *runs, const char *init, const char *data,
                      const char *out, int64_t steps) {
  loom_program *programs[2] = {NULL, NULL};
  for (int l = 0; l < 2; ++l)
    check(&runs[l].api, runs[l].api.create(NULL, &programs[l]), "create");
  Run chain = runs[0];
  chain.program = programs[0];
  set_initial(&chain, init);
  long long sent = 0, received = 0, switches = 0, planned = 0;
  for (int64_t s = 0; s < steps; ++s) {
    int l = (int)(s % 2);
    if (s > 0) {
      int previous = 1 - l;
      loom_switch_info info;
      loom_status *status = loom_program_switch(
          &runs[previous].api, programs[previous], &runs[l].api, programs[l],
          NULL, &info);
      if (status) {
        fprintf(stderr, "program-library-test: rank %d: %s\n", rank_,
                loom_compiler_status_get_message(status));
        loom_compiler_status_destroy(status);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      check(&runs[l].api, runs[l].api.set_steps_done(programs[l], s),
            "steps done");
      sent += info.bytes_sent;
      received += info.bytes_received;
      planned += info.plan_bytes;
      ++switches;
    }
    Run step = runs[l];
    step.program = programs[l];
    set_batch(&step, data, s);
    check(&runs[l].api, runs[l].api.step(programs[l], &chain.losses[s]),
          "step");
  }
  Run last = runs[(steps - 1) % 2];
  last.program = programs[(steps - 1) % 2];
  memcpy(last.losses, chain.losses, sizeof(chain.losses));
  char dir[1024];
  snprintf(dir, sizeof(dir), "%s/switch", out);
  write_results(&last, dir, steps);
  /* The ranks' bytes in all must be the plans'. */
  long long totals[2] = {sent, received}, sums[2] = {0, 0};
  MPI_Reduce(totals, sums, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank_ == 0)
    printf("switched %lld times between two programs: %lld bytes sent and "
           "%lld received in all, the plans %lld\n",
           switches, sums[0], sums[1], planned);
  for (int l = 0; l < 2; ++l)
    runs[l].api.destroy(programs[l]);
}

/* Calls loom_program_switch_with, or fails; adds the figures to `sums`
 * (sent, received, planned, sent off node). */
static void switch_or_die(const Api *from_api, loom_program *from,
                          const Api *to_api, loom_program *to, int32_t flags,
                          long long sums[4]) {
  loom_switch_info info;
  loom_status *status = loom_program_switch_with(from_api, from, to_api, to,
                                                 NULL, flags, &info);
  if (status) {
    fprintf(stderr, "program-library-test: rank %d: %s\n", rank_,
            loom_compiler_status_get_message(status));
    loom_compiler_status_destroy(status);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  long long own[3] = {info.bytes_sent, info.bytes_received,
                      info.bytes_sent_off_node};
  long long all[3] = {0, 0, 0};
  MPI_Allreduce(own, all, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  sums[0] = all[0];
  sums[1] = all[1];
  sums[2] = info.plan_bytes;
  sums[3] = all[2];
}

/* The rollout switch of RL post-training: the training program `train`
 * steps; after step `at` its weights move into the forward program of
 * `fwd_api` (another layout), which runs on the next batch and gives its
 * logits back through the ABI; then the weights come back (parameters
 * only: the optimizer state never left) into the training program, whose
 * own weights were zeroed (as if offloaded during generation). */
static void rollout(Run *train, Api *fwd_api, const char *init,
                    const char *data, const char *out, int64_t steps,
                    int64_t at) {
  Api *api = &train->api;
  check(api, api->create(NULL, &train->program), "create");
  set_initial(train, init);
  loom_program *fwd = NULL;
  check(fwd_api, fwd_api->create(NULL, &fwd), "create the rollout program");
  if (fwd_api->get_num_results(fwd) != 1)
    die("the rollout program does not have one result", NULL);
  loom_arg_info result;
  check(fwd_api, fwd_api->get_result_info(fwd, 0, &result), "result info");
  Array logits;
  logits.dtype = result.dtype;
  logits.rank = result.rank;
  memcpy(logits.shape, result.global_shape, sizeof(int64_t) * result.rank);
  logits.bytes =
      elements(result.global_shape, result.rank) * (int64_t)element_size(result.dtype);
  logits.data = malloc((size_t)logits.bytes);
  /* Before it ran, it has no results to give. */
  expect_failure(fwd_api,
                 fwd_api->get_result(fwd, 0, LOOM_FORM_GLOBAL, logits.dtype,
                                     logits.rank, logits.shape, logits.data),
                 "a result before any step");
  expect_failure(fwd_api, fwd_api->get_result_info(fwd, 1, &result),
                 "result info past the end");
  for (int64_t s = 0; s < steps; ++s) {
    if (s == at) {
      long long there[4], back[4];
      switch_or_die(api, train->program, fwd_api, fwd, 0, there);
      Run gen = {*fwd_api, fwd, {0}};
      set_batch(&gen, data, s);
      check(fwd_api, fwd_api->step(fwd, NULL), "the rollout step");
      check(fwd_api,
            fwd_api->get_result(fwd, 0, LOOM_FORM_GLOBAL, logits.dtype,
                                logits.rank, logits.shape, logits.data),
            "the logits");
      /* The training program's weights offloaded (zeroed), then back. */
      for (int64_t i = 0; i < api->get_num_args(train->program); ++i) {
        loom_arg_info info;
        check(api, api->get_arg_info(train->program, i, &info), "arg info");
        if (info.role != LOOM_ARG_PARAM)
          continue;
        size_t bytes = (size_t)elements(info.global_shape, info.rank) *
                       element_size(info.dtype);
        void *zeros = calloc(1, bytes ? bytes : 1);
        check(api,
              api->set_arg(train->program, i, LOOM_FORM_GLOBAL, info.dtype,
                           info.rank, info.global_shape, zeros),
              "offload");
        free(zeros);
      }
      /* A bad node list fails on every rank, before anything moves. */
      setenv("LOOM_SWITCH_NODES", "0,x", 1);
      loom_status *bad = loom_program_switch_with(
          fwd_api, fwd, api, train->program, NULL,
          LOOM_SWITCH_PARAMETERS_ONLY, NULL);
      if (!bad)
        die("a bad LOOM_SWITCH_NODES was accepted", NULL);
      if (rank_ == 0)
        printf("a bad node list: %s\n", loom_compiler_status_get_message(bad));
      loom_compiler_status_destroy(bad);
      /* Unknown flags are refused. */
      bad = loom_program_switch_with(fwd_api, fwd, api, train->program, NULL,
                                     8, NULL);
      if (!bad)
        die("unknown switch flags were accepted", NULL);
      if (rank_ == 0)
        printf("unknown flags: %s\n", loom_compiler_status_get_message(bad));
      loom_compiler_status_destroy(bad);
      /* A node list on rank 0 alone: every rank fails, none waits. */
      if (rank_ == 0)
        setenv("LOOM_SWITCH_NODES", "0,1", 1);
      else
        unsetenv("LOOM_SWITCH_NODES");
      bad = loom_program_switch_with(fwd_api, fwd, api, train->program, NULL,
                                     LOOM_SWITCH_PARAMETERS_ONLY, NULL);
      if (!bad)
        die("node lists that differ between ranks were accepted", NULL);
      if (rank_ == 0)
        printf("node lists that differ: %s\n",
               loom_compiler_status_get_message(bad));
      loom_compiler_status_destroy(bad);
      /* Without the flag the way back fails: the rollout program has no
       * optimizer state to give. */
      unsetenv("LOOM_SWITCH_NODES");
      bad = loom_program_switch(fwd_api, fwd, api, train->program, NULL, NULL);
      if (!bad)
        die("a switch into state the source lacks was accepted", NULL);
      if (rank_ == 0)
        printf("back with the state: %s\n",
               loom_compiler_status_get_message(bad));
      loom_compiler_status_destroy(bad);
      /* Each rank on a node of its own: every byte crosses nodes. */
      setenv("LOOM_SWITCH_NODES", "0,1", 1);
      switch_or_die(fwd_api, fwd, api, train->program,
                    LOOM_SWITCH_PARAMETERS_ONLY, back);
      unsetenv("LOOM_SWITCH_NODES");
      if (rank_ == 0) {
        printf("rollout after step %lld: weights in %lld bytes (plan %lld, "
               "%lld off node), back %lld bytes (plan %lld, %lld off node)\n",
               (long long)at, there[0], there[2], there[3], back[0], back[2],
               back[3]);
        char path[1024];
        snprintf(path, sizeof(path), "%s/rollout/logits.npy", out);
        write_npy(path, &logits);
      }
    }
    set_batch(train, data, s);
    check(api, api->step(train->program, &train->losses[s]), "step");
  }
  char dir[1024];
  snprintf(dir, sizeof(dir), "%s/rollout", out);
  write_results(train, dir, steps);
  free(logits.data);
  fwd_api->destroy(fwd);
  api->destroy(train->program);
}

/* The error paths of the ABI, on a program of library `api`. */
static void errors(Api *api) {
  loom_program *program = NULL;
  check(api, api->create(NULL, &program), "create");
  int64_t x = api->find_arg(program, "x");
  int64_t w1 = api->find_arg(program, "w1");
  if (x < 0 || w1 < 0)
    die("no argument named x or w1", NULL);
  if (api->find_arg(program, "no such") != -1)
    die("found an argument that does not exist", NULL);
  loom_arg_info info;
  check(api, api->get_arg_info(program, w1, &info), "arg info");
  double values[16 * 32] = {0};
  float floats[16 * 32] = {0};
  int64_t shape[2] = {16, 32}, wrong[2] = {16, 33};
  expect_failure(api,
                 api->set_arg(program, w1, LOOM_FORM_GLOBAL, LOOM_DTYPE_F32, 2,
                              shape, floats),
                 "wrong dtype");
  expect_failure(api,
                 api->set_arg(program, w1, LOOM_FORM_GLOBAL, LOOM_DTYPE_F64, 2,
                              wrong, values),
                 "wrong shape");
  expect_failure(api,
                 api->set_arg(program, w1, LOOM_FORM_GLOBAL, LOOM_DTYPE_F64, 1,
                              shape, values),
                 "wrong rank");
  expect_failure(api,
                 api->set_arg(program, 99, LOOM_FORM_GLOBAL, LOOM_DTYPE_F64, 2,
                              shape, values),
                 "no such argument");
  expect_failure(api,
                 api->set_arg(program, w1, LOOM_FORM_LOCAL, LOOM_DTYPE_F64, 2,
                              shape, values),
                 "global shape as local");
  expect_failure(api,
                 api->set_arg(program, w1, LOOM_FORM_GLOBAL, LOOM_DTYPE_F64, 2,
                              shape, NULL),
                 "null data");
  expect_failure(api,
                 api->get_arg(program, w1, LOOM_FORM_GLOBAL, LOOM_DTYPE_I64, 2,
                              shape, values),
                 "get with the wrong dtype");
  /* A local write and a global read give the shards back. */
  check(api,
        api->set_arg(program, w1, LOOM_FORM_LOCAL, LOOM_DTYPE_F64, info.rank,
                     info.local_shape, values),
        "local set");
  expect_failure(api, api->get_arg_info(program, -1, &info), "arg info of -1");
  expect_failure(api, api->get_arg_info(NULL, 0, &info), "arg info of no program");
  expect_failure(api, api->get_result_info(NULL, 0, &info),
                 "result info of no program");
  expect_failure(api, api->get_result_info(program, 0, NULL),
                 "result info into nothing");
  api->destroy(program);

  /* Two programs of one library at once; ranks that read different
   * arguments in global form fail together (none waits); ranks may differ
   * in asking for the loss. */
  loom_program *first = NULL, *second = NULL;
  check(api, api->create(NULL, &first), "create the first");
  check(api, api->create(NULL, &second), "create the second");
  int64_t w2 = api->find_arg(second, "w2");
  int64_t shape2[2] = {32, 8};
  expect_failure(api,
                 api->get_arg(second, rank_ == 0 ? w1 : w2, LOOM_FORM_GLOBAL,
                              LOOM_DTYPE_F64, 2, rank_ == 0 ? shape : shape2,
                              values),
                 "ranks reading different arguments");
  double loss = -1;
  check(api, api->step(first, rank_ == 0 ? NULL : &loss), "a step");
  check(api, api->step(second, &loss), "a step of the second");
  if (rank_ == 0)
    printf("two programs of one library stepped; a NULL loss on rank 0 "
           "only: loss %.6f\n", loss);

  /* What the library's runtime counts and records (ABI version 2): the
   * traffic of all three steps so far (the counters are the library's,
   * shared by its programs), a trace of one step, no device library calls
   * on the host. */
  if (api->has_loss(first) != 1 || api->has_loss(NULL) != 0)
    die("has_loss", "wrong answer");
  /* The step count, set as variants taking turns set it (the next step is
   * the one after); never below 0. */
  expect_failure(api, api->set_steps_done(first, -1), "negative steps done");
  check(api, api->set_steps_done(first, 2), "steps done");
  api->set_recording(first, LOOM_RECORD_TRACE);
  check(api, api->step(first, &loss), "a recorded step");
  api->set_recording(first, 0);
  check(api, api->step(first, &loss), "an unrecorded step");
  int64_t kinds = api->get_num_traffic(first);
  for (int64_t k = 0; k < kinds; ++k) {
    loom_traffic traffic;
    check(api, api->get_traffic(first, k, &traffic), "traffic");
    if (rank_ == 0)
      printf("traffic after 4 steps: %s: calls %lld, sent %lld, received "
             "%lld\n",
             traffic.collective, (long long)traffic.calls,
             (long long)traffic.bytes_sent, (long long)traffic.bytes_received);
  }
  loom_traffic past;
  expect_failure(api, api->get_traffic(first, kinds, &past),
                 "traffic past the end");
  loom_library_call call;
  if (api->get_num_library_calls(first) != 0)
    die("library calls", "the host target made some");
  expect_failure(api, api->get_library_call(first, 0, &call),
                 "a library call on the host");
  if (trace_) {
    char path[1024];
    snprintf(path, sizeof(path), "%s.%d.json", trace_, rank_);
    check(api, api->write_trace(first, path), "write the trace");
    size_t length = 0;
    char *text = read_file(path, &length);
    int events = 0, collectives = 0;
    for (const char *at = text; (at = strstr(at, "\"ph\":\"X\"")); ++at)
      ++events;
    for (const char *at = text; (at = strstr(at, "\"cat\":\"communication\""));
         ++at)
      ++collectives;
    if (length < 2 || text[0] != '[' || !collectives || collectives == events)
      die("the trace", text);
    if (rank_ == 0)
      printf("trace of one step: phases and collectives, a JSON array\n");
    free(text);
    expect_failure(api, api->write_trace(first, "/nonexistent/trace.json"),
                   "a trace into a missing folder");
  }
  api->destroy(first);
  api->destroy(second);
  expect_failure(api, api->create(NULL, NULL), "create without a pointer");
}

/*===------------------------------------------------------------------------===
 * The compiler's C API (include/loom-c/Compiler.h)
 *===------------------------------------------------------------------------===*/

static int diagnostics_ = 0;

static void on_diagnostic(loom_severity severity, const char *location,
                          const char *message, void *user) {
  (void)user;
  ++diagnostics_;
  if (rank_ == 0)
    printf("diagnostic %d at %s: %s\n", (int)severity, location, message);
}

static char *read_file(const char *path, size_t *length) {
  FILE *file = fopen(path, "rb");
  if (!file)
    die("cannot read", path);
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *text = malloc((size_t)size + 1);
  if (fread(text, 1, (size_t)size, file) != (size_t)size)
    die("cannot read", path);
  text[size] = 0;
  fclose(file);
  *length = (size_t)size;
  return text;
}

static void compiled(loom_status *status, const char *what) {
  if (!status)
    return;
  fprintf(stderr, "program-library-test: %s: status %d: %s\n", what,
          (int)loom_compiler_status_get_code(status),
          loom_compiler_status_get_message(status));
  loom_compiler_status_destroy(status);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void compile_failure(loom_status *status, const char *what) {
  if (!status)
    die("expected the compiler to fail", what);
  if (rank_ == 0)
    printf("%s: status %d: %s\n", what,
           (int)loom_compiler_status_get_code(status),
           loom_compiler_status_get_message(status));
  loom_compiler_status_destroy(status);
}

/* The whole path: parse, configure, partition, build the library. */
static void compile(const char *model_path, const char *config_path,
                    const char *library) {
  size_t model_length, config_length;
  char *model = read_file(model_path, &model_length);
  char *config = read_file(config_path, &config_length);
  loom_context *context = loom_context_create(on_diagnostic, NULL);
  loom_module *module = NULL;
  compiled(loom_module_parse(context, model, model_length, model_path, &module),
           "parse");
  compiled(loom_module_apply_config(module, config, config_length),
           "apply the configuration");
  compiled(loom_module_run_pipeline(module,
                                    loom_module_get_config_pipeline(module)),
           loom_module_get_config_pipeline(module));
  compiled(loom_module_build_library(module, "host", "", library), "build");
  loom_module_destroy(module);
  loom_context_destroy(context);
  free(model);
  free(config);
  printf("compiled %s with %s\n", model_path, config_path);
}

/* The compiler API's error paths. */
static void compile_errors(const char *model_path, const char *config_path) {
  size_t model_length, config_length;
  char *model = read_file(model_path, &model_length);
  char *config = read_file(config_path, &config_length);
  loom_context *context = loom_context_create(on_diagnostic, NULL);
  loom_module *module = NULL;
  const char *broken = "func.func @f(%x: tensor<2xf32>) {\n  nn.nope\n}\n";
  compile_failure(
      loom_module_parse(context, broken, strlen(broken), "broken.mlir", &module),
      "parse");
  if (!diagnostics_)
    die("the parse error reached no diagnostic callback", NULL);
  compiled(loom_module_parse(context, model, model_length, model_path, &module),
           "parse");
  /* The configuration with one more layout, whose pattern is a typo. */
  const char *typo = "\nlayouts { match: \"w9\" layout: "
                     "\"#hspmd.union<{[0, 1]: [S1:2]}>\" }\n";
  char *typoed = malloc(config_length + strlen(typo) + 1);
  memcpy(typoed, config, config_length);
  strcpy(typoed + config_length, typo);
  compile_failure(loom_module_apply_config(module, typoed, strlen(typoed)),
                  "a pattern matching nothing");
  free(typoed);
  compile_failure(loom_module_apply_config(module, "run {", 5),
                  "a broken configuration");
  compile_failure(loom_module_run_pipeline(module, "no-such-pipeline"),
                  "an unknown pipeline");
  compiled(loom_module_apply_config(module, config, config_length),
           "apply the configuration");
  compiled(loom_module_run_pipeline(module,
                                    loom_module_get_config_pipeline(module)),
           "the configuration's pipeline");
  char *source = NULL;
  compile_failure(loom_module_emit(module, "tpu", "", &source),
                  "an unknown target");
  compile_failure(loom_module_emit(module, "host", "no_such_step", &source),
                  "an unknown entry");
  compiled(loom_module_emit(module, "host", "", &source), "emit");
  if (!strstr(source, "LOOM_PROGRAM_LIBRARY_ABI"))
    die("the emitted host C++ has no program library entry", NULL);
  loom_string_destroy(source);
  loom_program_api api;
  compile_failure(loom_program_library_open("/nonexistent/program.so", &api),
                  "a missing library");
  loom_module_destroy(module);
  loom_context_destroy(context);
  free(model);
  free(config);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  const char *init = NULL, *data = NULL, *out = NULL;
  const char *model = NULL, *config = NULL, *build = NULL;
  int64_t steps = 0;
  int mode = 0; /* 0 train, 1 errors, 2 ranks */
  const char *rollout_library = NULL;
  long long rollout_at = 1;
  const char *libraries[8];
  int count = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--init") && i + 1 < argc)
      init = argv[++i];
    else if (!strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else if (!strcmp(argv[i], "--out") && i + 1 < argc)
      out = argv[++i];
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--compile") && i + 1 < argc)
      model = argv[++i];
    else if (!strcmp(argv[i], "--config") && i + 1 < argc)
      config = argv[++i];
    else if (!strcmp(argv[i], "--build") && i + 1 < argc)
      build = argv[++i];
    else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
      trace_ = argv[++i];
    else if (!strcmp(argv[i], "--rollout") && i + 1 < argc)
      rollout_library = argv[++i];
    else if (!strcmp(argv[i], "--rollout-at") && i + 1 < argc)
      rollout_at = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--compile-errors"))
      mode = 3;
    else if (!strcmp(argv[i], "--errors"))
      mode = 1;
    else if (!strcmp(argv[i], "--ranks-check"))
      mode = 2;
    else if (count < 8)
      libraries[count++] = argv[i];
  }
  if (mode == 3) {
    if (!model || !config)
      die("--compile-errors needs --compile MODEL --config FILE", NULL);
    if (rank_ == 0)
      compile_errors(model, config);
    MPI_Finalize();
    return 0;
  }
  /* A library compiled here first, through the compiler's C API (on rank
   * 0; the others wait). */
  if (model) {
    if (!config || !build || count >= 8)
      die("--compile needs --config FILE --build PATH", NULL);
    if (rank_ == 0)
      compile(model, config, build);
    MPI_Barrier(MPI_COMM_WORLD);
    libraries[count++] = build;
  }
  if (!count)
    die("no library given", NULL);
  Run runs[8];
  for (int l = 0; l < count; ++l)
    load(&runs[l].api, libraries[l]);

  if (mode == 1) {
    errors(&runs[0].api);
  } else if (mode == 2) {
    /* The whole world (3 ranks) is the wrong size for a 2-device program;
     * the sub-communicator of ranks 0 and 1 runs it. */
    Api *api = &runs[0].api;
    loom_program *program = NULL;
    expect_failure(api, api->create(NULL, &program), "world of 3 ranks");
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank_ < 2 ? 0 : MPI_UNDEFINED, rank_, &pair);
    if (rank_ < 2) {
      check(api, api->create(&pair, &program), "create on ranks 0 and 1");
      loom_arg_info info;
      check(api, api->get_arg_info(program, api->find_arg(program, "w1"), &info),
            "arg info");
      if (rank_ == 0)
        printf("sub-communicator: device %lld holds w1 as %lldx%lld\n",
               (long long)rank_, (long long)info.local_shape[0],
               (long long)info.local_shape[1]);
      api->destroy(program);
      MPI_Comm_free(&pair);
    }
  } else if (rollout_library) {
    if (!init || !data || !out || steps < 1 || steps > 64 || count != 1 ||
        rollout_at < 0 || rollout_at >= steps)
      die("usage: --rollout FWD --rollout-at K --init DIR --data DIR --steps "
          "N --out DIR LIB (0 <= K < N)", NULL);
    Api fwd_api;
    load(&fwd_api, rollout_library);
    rollout(&runs[0], &fwd_api, init, data, out, steps, rollout_at);
    loom_program_library_close(&fwd_api);
  } else {
    if (!init || !data || !out || steps < 1 || steps > 64)
      die("usage: --init DIR --data DIR --steps N --out DIR LIB...", NULL);
    /* Every program exists at once, then they step in turn. */
    for (int l = 0; l < count; ++l) {
      check(&runs[l].api, runs[l].api.create(NULL, &runs[l].program),
            "create");
      set_initial(&runs[l], init);
    }
    for (int64_t s = 0; s < steps; ++s)
      for (int l = 0; l < count; ++l) {
        set_batch(&runs[l], data, s);
        check(&runs[l].api, runs[l].api.step(runs[l].program, &runs[l].losses[s]),
              "step");
      }
    for (int l = 0; l < count; ++l) {
      char dir[1024];
      snprintf(dir, sizeof(dir), "%s/%d", out, l);
      write_results(&runs[l], dir, steps);
      runs[l].api.destroy(runs[l].program);
    }
    if (rank_ == 0)
      printf("trained %d programs for %lld steps\n", count, (long long)steps);
    if (count >= 2)
      switching(runs, init, data, out, steps);
  }
  for (int l = 0; l < count; ++l)
    loom_program_library_close(&runs[l].api);
  MPI_Finalize();
  return 0;
}

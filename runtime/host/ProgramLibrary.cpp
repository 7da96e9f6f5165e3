//===- ProgramLibrary.cpp - A compiled program as a shared library --------===//

#include "runtime/host/ProgramLibrary.h"
#include "runtime/host/DeviceSupport.h"
#include "runtime/layout/Shards.h"

#include <cstring>
#include <exception>
#include <fstream>
#include <optional>
#include <string>

using namespace loom;
using namespace loom::host;
using loom::rt::Runtime;
using loom::rt::RuntimeError;

struct loom_status {
  loom_status_code code;
  std::string message;
};

namespace {

/// An argument or result of the program, as the library sees it.
struct Value {
  std::string name;
  loom_arg_role role = LOOM_ARG_OTHER;
  layout::DType dtype = layout::DType::F32;
  std::vector<int64_t> globalShape, localShape;
  layout::Layout layout;
  /// Its layout's encoding (layout::encodeLayout), for loom_arg_info.
  std::vector<int64_t> layoutTable;
  /// The rank's shard; none where it holds nothing of the value.
  std::optional<layout::Shard> shard;
  /// Where it lives in the arena.
  int64_t offset = 0, bytes = 0;
};

loom_status *makeStatus(loom_status_code code, const std::string &message) {
  return new loom_status{code, message};
}

loom_status *fromStatus(const absl::Status &status) {
  if (status.ok())
    return nullptr;
  loom_status_code code = LOOM_STATUS_INTERNAL;
  switch (status.code()) {
  case absl::StatusCode::kInvalidArgument:
  case absl::StatusCode::kOutOfRange:
    code = LOOM_STATUS_INVALID_ARGUMENT;
    break;
  case absl::StatusCode::kNotFound:
    code = LOOM_STATUS_NOT_FOUND;
    break;
  case absl::StatusCode::kFailedPrecondition:
    code = LOOM_STATUS_FAILED_PRECONDITION;
    break;
  default:
    break;
  }
  return makeStatus(code, std::string(status.message()));
}

/// What a status is where even making one fails (out of memory).
loom_status outOfMemory{LOOM_STATUS_INTERNAL,
                        "out of memory while reporting an error"};

/// Runs `body` (returning a loom_status *), turning what the runtime and the
/// kernels throw into a status; `failure`, when given, records the message
/// (a program whose step or collective failed cannot go on: its arena and
/// its communicators are in an unknown state).
template <typename Body>
loom_status *guarded(Body &&body, std::string *failure = nullptr) {
  try {
    try {
      return body();
    } catch (const RuntimeError &error) {
      if (failure)
        *failure = error.what();
      return makeStatus(LOOM_STATUS_INTERNAL, error.what());
    } catch (const std::exception &error) {
      if (failure)
        *failure = error.what();
      return makeStatus(LOOM_STATUS_INTERNAL,
                        std::string("the program failed: ") + error.what());
    }
  } catch (...) {
    if (failure)
      *failure = "an unknown error";
    return &outOfMemory;
  }
}

std::string shapeText(int64_t rank, const int64_t *shape) {
  if (rank > kMaxRank)
    return "a shape of rank " + std::to_string(rank);
  std::vector<int64_t> sizes(shape, shape + std::max<int64_t>(rank, 0));
  return layout::toString(sizes);
}

/// Reads the values' descriptions from a program's table (see
/// ProgramLibrary.h).
absl::StatusOr<std::vector<Value>>
readValues(const int64_t *table, int64_t size, int64_t count,
           const int64_t *dtypes, const int64_t *offsets, const int64_t *bytes,
           int64_t device) {
  std::vector<Value> values;
  int64_t at = 0;
  auto bad = [&](const std::string &why) {
    return absl::InternalError("the program's interface table is corrupt: " +
                               why);
  };
  for (int64_t i = 0; i < count; ++i) {
    Value value;
    if (at >= size)
      return bad("truncated");
    int64_t rank = table[at++];
    if (rank == -1)
      return absl::FailedPreconditionError(
          "value #" + std::to_string(i) +
          " has a type a program library does not take (only static tensors "
          "of f32, f64, bf16, i1, i32, i64)");
    if (rank < 0 || rank > size - at)
      return bad("a rank of " + std::to_string(rank));
    value.globalShape.assign(table + at, table + at + rank);
    at += rank;
    if (at >= size)
      return bad("truncated");
    int64_t length = table[at++];
    if (length < 0 || length > size - at)
      return bad("a layout of " + std::to_string(length) + " integers");
    absl::StatusOr<layout::Layout> decoded =
        layout::decodeLayout(table + at, length);
    if (!decoded.ok())
      return bad(std::string(decoded.status().message()));
    value.layoutTable.assign(table + at, table + at + length);
    at += length;
    value.layout = *std::move(decoded);
    if (dtypes[i] < 0 || dtypes[i] > static_cast<int64_t>(layout::DType::I64))
      return bad("an unknown element type");
    value.dtype = static_cast<layout::DType>(dtypes[i]);
    absl::StatusOr<layout::Shard> shard =
        layout::getShard(value.layout, value.globalShape, device);
    if (shard.ok()) {
      value.shard = *shard;
      value.localShape = shard->sizes;
    } else if (shard.status().code() != absl::StatusCode::kNotFound) {
      return shard.status();
    }
    value.offset = offsets[i];
    value.bytes = bytes[i];
    int64_t expected =
        value.shard ? value.shard->getNumElements() *
                          layout::getElementBytes(value.dtype)
                    : value.bytes;
    if ((value.shard || value.bytes >= 0) && expected != value.bytes)
      return bad("value #" + std::to_string(i) + " holds " +
                 std::to_string(value.bytes) + " bytes but its shard " +
                 std::to_string(expected));
    values.push_back(std::move(value));
  }
  if (at != size && !(count == 0 && size == 1))
    return bad("unread entries");
  return values;
}

/// The library's programs alive on this rank, and the device target the
/// first of them started (null: the host, or none yet): the last program
/// destroyed finishes it.
int livePrograms = 0;
const device::Target *startedTarget = nullptr;
/// Why the library's device cannot be started again on this rank (its
/// finish failed: its communicators may be left behind); empty while it
/// can.
std::string deviceBroken;

} // namespace

struct loom_program {
  ProgramHandle handle;
  int64_t device = 0, numDevices = 0;
  std::vector<Value> args, results;
  int64_t steps = 0;
  /// Whether a step has run (the results hold its values).
  bool ran = false;
  /// The gradients' global norm of the last step (nn.grad_norm), once a
  /// step has run.
  std::optional<double> gradNorm;
  /// Whether this program holds one attachment of the runtime, and counts
  /// among the library's live programs.
  bool attached = false, live = false;
  /// What loom_program_get_library_call last gave out.
  std::vector<int64_t> members;
  /// Why the program cannot go on (a failed step or collective); empty
  /// while it can.
  std::string failure;

  ~loom_program() {
    // The arena first (device memory, on a device target), then the
    // device, then the runtime.
    handle = ProgramHandle();
    if (live && --livePrograms == 0 && startedTarget) {
      const device::Target *target = startedTarget;
      startedTarget = nullptr;
      try {
        target->finish();
      } catch (const std::exception &error) {
        // (Nothing to report it to: destroying has no status. A later
        // program of the library refuses to start on what is left.)
        deviceBroken = error.what();
      }
    }
    if (attached)
      Runtime::detach();
  }

  /// The value's bytes in the arena, readable on the host.
  std::vector<char> read(const Value &value) const {
    std::vector<char> data(static_cast<size_t>(std::max<int64_t>(value.bytes, 0)));
    if (value.bytes <= 0)
      return data;
    const ProgramView &view = handle.view;
    if (view.fromArena)
      view.fromArena(data.data(), view.arena + value.offset, value.bytes);
    else
      std::memcpy(data.data(), view.arena + value.offset,
                  static_cast<size_t>(value.bytes));
    return data;
  }
  void write(const Value &value, const char *data) {
    if (value.bytes <= 0)
      return;
    const ProgramView &view = handle.view;
    if (view.toArena)
      view.toArena(view.arena + value.offset, data, value.bytes);
    else
      std::memcpy(view.arena + value.offset, data,
                  static_cast<size_t>(value.bytes));
  }
  /// The global array of `value` from every rank's shard (collective).
  absl::Status gather(const Value &value, void *out) {
    std::vector<char> own;
    if (value.shard)
      own = read(value);
    std::vector<char> all;
    std::vector<int64_t> counts;
    Runtime::get().gatherAll(own.data(), static_cast<int64_t>(own.size()), all,
                             counts);
    std::vector<layout::ShardData> shards;
    int64_t at = 0;
    int64_t elementBytes = layout::getElementBytes(value.dtype);
    for (int64_t rank = 0; rank < static_cast<int64_t>(counts.size()); ++rank) {
      absl::StatusOr<layout::Shard> shard =
          layout::getShard(value.layout, value.globalShape, rank);
      int64_t expected =
          shard.ok() ? shard->getNumElements() * elementBytes : 0;
      // (Every rank sees the same counts, so all fail together.)
      if (counts[rank] != expected)
        return absl::FailedPreconditionError(
            "rank " + std::to_string(rank) + " gave " +
            std::to_string(counts[rank]) + " bytes of '" + value.name +
            "' where its shard has " + std::to_string(expected) +
            " (did every rank ask for the same argument?)");
      if (shard.ok())
        shards.push_back({rank, all.data() + at, shard->sizes});
      at += counts[rank];
    }
    return layout::assemble(value.layout, value.globalShape, value.dtype,
                            shards, out);
  }
};

loom_status *loom::host::createProgramFrom(const void *mpiComm,
                                           loom_program **out,
                                           std::initializer_list<Ints> devices,
                                           std::initializer_list<Ints> groups,
                                           std::vector<ProgramFactory> factories,
                                           std::vector<const device::Target *> targets) {
  if (!out)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "loom_program_create: the program pointer is null");
  *out = nullptr;
  return guarded([&]() -> loom_status * {
    Runtime &runtime = Runtime::attach(mpiComm);
    // From here on the program owns the attachment: destroying it detaches,
    // once.
    auto program = std::make_unique<loom_program>();
    program->attached = true;
    int64_t numDevices = 0;
    for (Ints group : devices)
      for (int64_t device : group)
        numDevices = std::max(numDevices, device + 1);
    // Every rank comes to the same conclusion here, so no rank waits.
    if (runtime.getWorldSize() != numDevices)
      return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                        "the program was compiled for " +
                            std::to_string(numDevices) +
                            " devices but its communicator has " +
                            std::to_string(runtime.getWorldSize()) +
                            " ranks (rank r runs device r)");
    int64_t chosen = -1, index = 0;
    for (Ints group : devices) {
      for (int64_t device : group)
        if (device == runtime.getWorldRank())
          chosen = index;
      ++index;
    }
    // What fails on this rank alone is kept until every rank has come to
    // the one agreement below: every rank succeeds, or all fail, and none
    // goes on to collectives the others never reach.
    absl::Status own = absl::OkStatus();
    if (chosen < 0 || chosen >= static_cast<int64_t>(factories.size()))
      own = absl::FailedPreconditionError(
          "no program of this library runs on rank " +
          std::to_string(runtime.getWorldRank()));
    if (own.ok() && !targets.empty() && targets.size() != 1 &&
        targets.size() != factories.size())
      own = absl::InternalError("the library has " +
                                std::to_string(targets.size()) +
                                " targets for " +
                                std::to_string(factories.size()) + " programs");
    // The first program on the rank starts its device: every rank of the
    // world takes part (the first programs of a library are created
    // together), ranks of one target on a node taking its devices in rank
    // order (host ranks of a mixed cluster take none).
    program->live = true;
    const device::Target *target = nullptr;
    if (own.ok() && !targets.empty())
      target = targets.size() == 1 ? targets.begin()[0] : targets[chosen];
    if (livePrograms++ == 0) {
      int color = 0;
      if (target)
        for (const char *c = target->name; *c; ++c)
          color = (color * 31 + *c) & 0xffff;
      int onNode = runtime.getNodeRankAmong(color);
      if (target && !deviceBroken.empty()) {
        own = absl::FailedPreconditionError(
            "the device of an earlier program of this library failed to "
            "finish (" + deviceBroken + "); load the library in a new process");
      } else if (target) {
        // (Finished at the last destroy even where starting fails
        // half-way.)
        startedTarget = target;
        try {
          target->start(onNode);
        } catch (const std::exception &error) {
          own = absl::FailedPreconditionError(error.what());
        }
      }
    }
    // The ranks agree before the programs are made: making a device
    // target's program makes its device communicators, collectively.
    if (!runtime.allAgree(own.ok()))
      return own.ok() ? makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                                   "another rank could not start its device "
                                   "or find its program")
                      : fromStatus(own);
    openGroups(groups);
    program->device = runtime.getWorldRank();
    program->numDevices = numDevices;
    absl::StatusOr<std::vector<Value>> args, results;
    if (own.ok()) {
      try {
        program->handle = factories[chosen]();
      } catch (const RuntimeError &error) {
        own = absl::FailedPreconditionError(error.what());
      } catch (const std::exception &error) {
        own = absl::InternalError(std::string("cannot make the program: ") +
                                  error.what());
      }
    }
    if (own.ok() && target) {
      // The arena is device memory; a step's time covers its device work,
      // which must end in time.
      ProgramView &view = program->handle.view;
      view.toArena = [target](char *arena, const char *from, int64_t bytes) {
        target->toDevice(arena, from, static_cast<size_t>(bytes));
      };
      view.fromArena = [target](char *to, const char *arena, int64_t bytes) {
        target->toHost(to, arena, static_cast<size_t>(bytes));
      };
      view.step = [target, step = view.step] {
        device::StepWatchdog watchdog(
            "step " + std::to_string(Runtime::get().getStep()));
        step();
        target->synchronize();
      };
    }
    if (own.ok()) {
      const ProgramView &view = program->handle.view;
      args = readValues(
          program->handle.argLayouts, program->handle.argLayoutsSize,
          view.argBytes[0] < 0 && view.numArgs == 1 ? 0 : view.numArgs,
          program->handle.argDtypes, view.argOffsets, view.argBytes,
          program->device);
      results = readValues(
          program->handle.resultLayouts, program->handle.resultLayoutsSize,
          view.resultBytes[0] < 0 && view.numResults == 1 ? 0
                                                          : view.numResults,
          program->handle.resultDtypes, view.resultOffsets, view.resultBytes,
          program->device);
      own = !args.ok() ? args.status() : results.status();
    }
    if (!runtime.allAgree(own.ok()))
      return own.ok() ? makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                                   "another rank could not create its "
                                   "program")
                      : fromStatus(own);
    program->args = *std::move(args);
    program->results = *std::move(results);
    for (size_t i = 0; i < program->args.size(); ++i) {
      program->args[i].name = program->handle.argNames[i]
                                  ? program->handle.argNames[i]
                                  : "";
      int64_t role = program->handle.argRoles[i];
      program->args[i].role =
          role >= 0 && role <= 4 ? static_cast<loom_arg_role>(role)
                                 : LOOM_ARG_OTHER;
    }
    *out = program.release();
    return nullptr;
  });
}

namespace {

/// Why `function` cannot run on `program` (null, or failed before), or
/// null when it can.
loom_status *unusable(const loom_program *program, const char *function) {
  if (!program)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      std::string(function) + ": the program is null");
  if (!program->failure.empty())
    return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                      "the program failed before and cannot go on: " +
                          program->failure);
  return nullptr;
}

/// The program's arguments or its results, as one call reads or writes
/// them, and the word its messages use.
struct Values {
  const std::vector<Value> &values;
  const char *kind; // "argument" or "result"
};

Values argumentsOf(const loom_program *program) {
  return {program->args, "argument"};
}

Values resultsOf(const loom_program *program) {
  return {program->results, "result"};
}

/// Checks a call's description of value `index`'s array; "" when it fits,
/// else what is wrong.
std::string checkArray(const loom_program *program, Values of, int64_t index,
                       loom_form form, loom_dtype dtype, int64_t rank,
                       const int64_t *shape, const void *data,
                       bool &nothingHeld) {
  nothingHeld = false;
  if (index < 0 || index >= static_cast<int64_t>(of.values.size()))
    return std::string(of.kind) + " #" + std::to_string(index) +
           ": the program has " + std::to_string(of.values.size()) + " " +
           of.kind + "s";
  const Value &value = of.values[index];
  std::string which = std::string(of.kind) + " #" + std::to_string(index) +
                      (value.name.empty() ? "" : " ('" + value.name + "')");
  if (form != LOOM_FORM_GLOBAL && form != LOOM_FORM_LOCAL)
    return which + ": unknown form " + std::to_string(form);
  if (static_cast<int64_t>(dtype) != static_cast<int64_t>(value.dtype))
    return which + " holds " + layout::getName(value.dtype) + ", got " +
           (dtype >= LOOM_DTYPE_F32 && dtype <= LOOM_DTYPE_I64
                ? layout::getName(static_cast<layout::DType>(dtype))
                : "an unknown dtype");
  if (rank < 0 || (rank > 0 && !shape))
    return which + ": no shape given";
  const std::vector<int64_t> &expected =
      form == LOOM_FORM_GLOBAL ? value.globalShape : value.localShape;
  if (form == LOOM_FORM_LOCAL && !value.shard)
    return which + ": rank " + std::to_string(program->device) +
           " holds nothing of it; pass the global form";
  std::vector<int64_t> given;
  if (rank == static_cast<int64_t>(expected.size()))
    given.assign(shape, shape + rank);
  if (rank != static_cast<int64_t>(expected.size()) || given != expected)
    return which + " has " +
           (form == LOOM_FORM_GLOBAL ? "global" : "local") + " shape " +
           layout::toString(expected) + ", got " + shapeText(rank, shape);
  if (!data && layout::getNumElements(expected) > 0)
    return which + ": the data pointer is null";
  nothingHeld = !value.shard;
  return "";
}

} // namespace

int64_t library::getDevice(const loom_program *program) {
  return program ? program->device : -1;
}

int64_t library::getNumDevices(const loom_program *program) {
  return program ? program->numDevices : 0;
}

int64_t library::getNumArgs(const loom_program *program) {
  return program ? static_cast<int64_t>(program->args.size()) : 0;
}

namespace {

/// loom_program_get_arg_info and loom_program_get_result_info.
loom_status *describe(const loom_program *program, Values of, int64_t index,
                      loom_arg_info *info, const char *function) {
  if (!info)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      std::string(function) + ": a null pointer");
  if (index < 0 || index >= static_cast<int64_t>(of.values.size()))
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      std::string(of.kind) + " #" + std::to_string(index) +
                          ": the program has " +
                          std::to_string(of.values.size()) + " " + of.kind +
                          "s");
  const Value &value = of.values[index];
  info->name = value.name.c_str();
  info->role = value.role;
  info->dtype = static_cast<loom_dtype>(value.dtype);
  info->rank = static_cast<int64_t>(value.globalShape.size());
  // Never null, even for a 0-d value (callers may copy `rank` sizes).
  static const int64_t noSizes[1] = {0};
  info->global_shape =
      value.globalShape.empty() ? noSizes : value.globalShape.data();
  info->local_shape = !value.shard              ? nullptr
                      : value.localShape.empty() ? noSizes
                                                 : value.localShape.data();
  info->held = value.shard ? 1 : 0;
  info->layout = value.layoutTable.empty() ? noSizes : value.layoutTable.data();
  info->layout_size = static_cast<int64_t>(value.layoutTable.size());
  return nullptr;
}

} // namespace

loom_status *library::getArgInfo(const loom_program *program, int64_t index,
                                 loom_arg_info *info) {
  if (!program)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "loom_program_get_arg_info: a null pointer");
  return describe(program, argumentsOf(program), index, info,
                  "loom_program_get_arg_info");
}

int64_t library::getNumResults(const loom_program *program) {
  return program ? static_cast<int64_t>(program->results.size()) : 0;
}

loom_status *library::getResultInfo(const loom_program *program,
                                    int64_t index, loom_arg_info *info) {
  if (!program)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "loom_program_get_result_info: a null pointer");
  return describe(program, resultsOf(program), index, info,
                  "loom_program_get_result_info");
}

int64_t library::findArg(const loom_program *program, const char *name) {
  if (!program || !name || !*name)
    return -1;
  for (size_t i = 0; i < program->args.size(); ++i)
    if (program->args[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

loom_status *library::setArg(loom_program *program, int64_t index,
                             loom_form form, loom_dtype dtype, int64_t rank,
                             const int64_t *shape, const void *data) {
  if (loom_status *status = unusable(program, "loom_program_set_arg"))
    return status;
  return guarded([&]() -> loom_status * {
    bool nothingHeld = false;
    std::string problem =
        checkArray(program, argumentsOf(program), index, form, dtype, rank,
                   shape, data, nothingHeld);
    if (!problem.empty())
      return makeStatus(LOOM_STATUS_INVALID_ARGUMENT, problem);
    const Value &value = program->args[index];
    if (nothingHeld)
      return nullptr;
    if (form == LOOM_FORM_LOCAL) {
      program->write(value, static_cast<const char *>(data));
      return nullptr;
    }
    std::vector<char> shard(static_cast<size_t>(std::max<int64_t>(value.bytes, 1)));
    layout::cutShard(data, value.globalShape, value.dtype, *value.shard,
                     shard.data());
    program->write(value, shard.data());
    return nullptr;
  });
}

namespace {

/// loom_program_get_arg and loom_program_get_result (`result`): value
/// `index` of the arguments or the results into `data`.
loom_status *readArray(loom_program *program, bool result, int64_t index,
                       loom_form form, loom_dtype dtype, int64_t rank,
                       const int64_t *shape, void *data,
                       const char *function) {
  bool global = form == LOOM_FORM_GLOBAL;
  // A failed program still takes part in a global read's agreement (and
  // fails it), so that no other rank waits for it.
  if (!program || !global)
    if (loom_status *status = unusable(program, function))
      return status;
  Values of = result ? resultsOf(program) : argumentsOf(program);
  return guarded([&]() -> loom_status * {
    bool nothingHeld = false;
    std::string problem =
        !program->failure.empty()
            ? "the program failed before and cannot go on: " +
                  program->failure
        : result && !program->ran
            ? std::string("the program has not run yet: its results come "
                          "from loom_program_step")
            : checkArray(program, of, index, form, dtype, rank, shape, data,
                         nothingHeld);
    if (form == LOOM_FORM_LOCAL) {
      if (!problem.empty())
        return makeStatus(result && !program->ran
                              ? LOOM_STATUS_FAILED_PRECONDITION
                              : LOOM_STATUS_INVALID_ARGUMENT,
                          problem);
      std::vector<char> own = program->read(of.values[index]);
      if (!own.empty())
        std::memcpy(data, own.data(), own.size());
      return nullptr;
    }
    // The global form is collective: the ranks first agree that every call
    // is well formed, so that none waits for a rank that has returned.
    Runtime &runtime = Runtime::get();
    bool everyone = runtime.allAgree(problem.empty());
    // (Both collectives on every rank, whatever the first gives.)
    bool sameIndex = runtime.allEqual(index);
    bool sameKind = runtime.allEqual(result ? 1 : 0);
    bool same = sameIndex && sameKind;
    if (!program->failure.empty() || (result && !program->ran))
      return makeStatus(LOOM_STATUS_FAILED_PRECONDITION, problem);
    if (!problem.empty())
      return makeStatus(LOOM_STATUS_INVALID_ARGUMENT, problem);
    if (!everyone)
      return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                        std::string("another rank's ") + function +
                            " was refused");
    if (!same)
      return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                        std::string("the ranks asked for different ") +
                            of.kind + "s; every rank reads the same " +
                            of.kind + " in global form together");
    return fromStatus(program->gather(of.values[index], data));
  }, global ? &program->failure : nullptr);
}

} // namespace

loom_status *library::getArg(loom_program *program, int64_t index,
                             loom_form form, loom_dtype dtype, int64_t rank,
                             const int64_t *shape, void *data) {
  return readArray(program, /*result=*/false, index, form, dtype, rank, shape,
                   data, "loom_program_get_arg");
}

loom_status *library::getResult(loom_program *program, int64_t index,
                                loom_form form, loom_dtype dtype, int64_t rank,
                                const int64_t *shape, void *data) {
  return readArray(program, /*result=*/true, index, form, dtype, rank, shape,
                   data, "loom_program_get_result");
}

/// The value of a 0-d float result, gathered (collective), as a double.
static loom_status *readScalar(loom_program *program, const Value &value,
                               const char *what, double &out) {
  char bytes[8] = {};
  if (absl::Status status = program->gather(value, bytes); !status.ok())
    return fromStatus(status);
  switch (value.dtype) {
  case layout::DType::F32: {
    float f;
    std::memcpy(&f, bytes, sizeof(f));
    out = f;
    return nullptr;
  }
  case layout::DType::F64:
    std::memcpy(&out, bytes, sizeof(double));
    return nullptr;
  case layout::DType::BF16: {
    uint16_t b;
    std::memcpy(&b, bytes, sizeof(b));
    out = layout::bf16ToFloat(b);
    return nullptr;
  }
  default:
    return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                      std::string("the program's ") + what +
                          " is not a floating-point value");
  }
}

/// The program's result `index` if it is one of its results, else null.
static const Value *resultAt(const loom_program *program, int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(program->results.size()))
    return nullptr;
  return &program->results[index];
}

loom_status *library::step(loom_program *program, double *loss) {
  if (loom_status *status = unusable(program, "loom_program_step"))
    return status;
  return guarded([&]() -> loom_status * {
    Runtime &runtime = Runtime::get();
    // The loss is checked before the step runs (a refused step has not
    // changed anything), and read back whether or not the caller wants it:
    // it is collective, and ranks may differ in passing NULL.
    const Value *lossValue =
        resultAt(program, program->handle.view.lossResult);
    const Value *normValue =
        resultAt(program, program->handle.view.gradNormResult);
    // (What the program is, the same on every rank of it: no rank returns
    // here while the others step.)
    if (lossValue && layout::getNumElements(lossValue->globalShape) != 1)
      return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                        "the program's loss is not a scalar");
    if (normValue && layout::getNumElements(normValue->globalShape) != 1)
      return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                        "the program's gradient norm is not a scalar");
    for (const Value &value : program->args)
      if (value.role == LOOM_ARG_STEP && value.shard &&
          (value.dtype != layout::DType::I64 || value.bytes != 8))
        return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                          "the step counter '" + value.name +
                              "' is not one i64 on every rank holding it");
    runtime.setStep(++program->steps);
    // The step counters (nn.step): this step's number.
    for (const Value &value : program->args) {
      if (value.role != LOOM_ARG_STEP || !value.shard)
        continue;
      int64_t count = program->steps;
      program->write(value, reinterpret_cast<const char *>(&count));
    }
    program->handle.view.step();
    program->ran = true;
    // The norm is read back on every step (collective, like the loss), for
    // loom_program_get_grad_norm.
    program->gradNorm.reset();
    if (normValue) {
      double norm = 0;
      if (loom_status *status =
              readScalar(program, *normValue, "gradient norm", norm))
        return status;
      program->gradNorm = norm;
    }
    if (!lossValue)
      return loss ? makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                               "the step ran, but the program has no loss "
                               "result to give")
                  : nullptr;
    double value = 0;
    if (loom_status *status = readScalar(program, *lossValue, "loss", value))
      return status;
    if (loss)
      *loss = value;
    return nullptr;
  }, &program->failure);
}

int32_t library::hasLoss(const loom_program *program) {
  if (!program)
    return 0;
  int64_t loss = program->handle.view.lossResult;
  return loss >= 0 && loss < static_cast<int64_t>(program->results.size());
}

int32_t library::hasGradNorm(const loom_program *program) {
  return program &&
         resultAt(program, program->handle.view.gradNormResult) != nullptr;
}

loom_status *library::getGradNorm(const loom_program *program,
                                  double *norm) {
  if (!program || !norm)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "loom_program_get_grad_norm: null program or norm");
  if (!hasGradNorm(program))
    return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                      "the program computes no gradient norm (compile the "
                      "step with clip-norm)");
  if (!program->gradNorm)
    return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                      "no step has run yet");
  *norm = *program->gradNorm;
  return nullptr;
}

loom_status *library::setStepsDone(loom_program *program, int64_t steps) {
  if (loom_status *status = unusable(program, "loom_program_set_steps_done"))
    return status;
  if (steps < 0)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "loom_program_set_steps_done: the steps done must be "
                      "at least 0, got " +
                          std::to_string(steps));
  program->steps = steps;
  return nullptr;
}

void library::setRecording(loom_program *program, int32_t records) {
  if (!program)
    return;
  setTracing((records & LOOM_RECORD_TRACE) != 0);
  Runtime::get().setKeepLibraryCalls((records & LOOM_RECORD_CALLS) != 0);
}

int64_t library::getNumTraffic(const loom_program *program) {
  return program ? static_cast<int64_t>(Runtime::get().getTraffic().size())
                 : 0;
}

loom_status *library::getTraffic(const loom_program *program, int64_t index,
                                 loom_traffic *traffic) {
  if (!program || !traffic)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "loom_program_get_traffic: a null pointer");
  const auto &all = Runtime::get().getTraffic();
  if (index < 0 || index >= static_cast<int64_t>(all.size()))
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "traffic #" + std::to_string(index) + ": there are " +
                          std::to_string(all.size()) + " collective kinds");
  auto it = std::next(all.begin(), index);
  traffic->collective = it->first.c_str();
  traffic->calls = static_cast<int64_t>(it->second.calls);
  traffic->bytes_sent = static_cast<int64_t>(it->second.bytesSent);
  traffic->bytes_received = static_cast<int64_t>(it->second.bytesReceived);
  return nullptr;
}

int64_t library::getNumLibraryCalls(const loom_program *program) {
  return program
             ? static_cast<int64_t>(Runtime::get().getLibraryCalls().size())
             : 0;
}

loom_status *library::getLibraryCall(const loom_program *program,
                                     int64_t index, loom_library_call *call) {
  if (!program || !call)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "loom_program_get_library_call: a null pointer");
  const std::vector<rt::LibraryCall> &all = Runtime::get().getLibraryCalls();
  if (index < 0 || index >= static_cast<int64_t>(all.size()))
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "library call #" + std::to_string(index) + ": " +
                          std::to_string(all.size()) + " were recorded");
  return guarded([&]() -> loom_status * {
    const rt::LibraryCall &recorded = all[index];
    // (The members' buffer is the program's: valid until the next call.)
    auto *self = const_cast<loom_program *>(program);
    self->members.assign(recorded.group.begin(), recorded.group.end());
    call->step = recorded.step;
    call->call = recorded.call;
    call->collective = recorded.collective.c_str();
    call->primitive = recorded.primitive.c_str();
    call->dtype = recorded.dtype.c_str();
    call->count = recorded.count;
    call->peer = recorded.peer;
    call->num_members = static_cast<int64_t>(self->members.size());
    call->members = self->members.data();
    return nullptr;
  });
}

loom_status *library::writeTrace(const loom_program *program,
                                 const char *path) {
  if (!program || !path)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "loom_program_write_trace: a null pointer");
  return guarded([&]() -> loom_status * {
    std::string json = getTraceJson(static_cast<int>(program->device));
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(json.data(), static_cast<std::streamsize>(json.size()));
    if (!file)
      return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                        std::string("cannot write the trace to '") + path +
                            "'");
    return nullptr;
  });
}

void library::destroy(loom_program *program) { delete program; }

loom_status_code library::getCode(const loom_status *status) {
  return status ? status->code : LOOM_STATUS_OK;
}

const char *library::getMessage(const loom_status *status) {
  return status ? status->message.c_str() : "";
}

void library::destroyStatus(loom_status *status) {
  if (status != &outOfMemory)
    delete status;
}

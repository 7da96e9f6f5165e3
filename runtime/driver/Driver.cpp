//===- Driver.cpp - Running a compiled program on MPI ranks ---------------===//

#include "runtime/driver/Driver.h"

#include "runtime/driver/ProgramSwitch.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

namespace {

int worldRank = 0;

/// Ends the rank with `message` (see Driver.h).
[[noreturn]] void fail(const std::string &message) {
  // (The runtime's own messages already name this rank.)
  std::string me = "rank " + std::to_string(worldRank) + ": ";
  bool ranked = message.rfind(me, 0) == 0;
  std::fprintf(stderr, "loom runtime: %s%s\n", ranked ? "" : me.c_str(),
               message.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  std::_Exit(1);
}

/// Ends the rank if `status` is a failure, after freeing it.
void check(const loom_program_api &api, loom_status *status) {
  if (!status)
    return;
  std::string message = api.status_get_message(status);
  api.status_destroy(status);
  fail(message);
}

bool fileExists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

void makeDirectory(const std::string &path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/')
    partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty())
      continue;
    partial += part + "/";
    ::mkdir(partial.c_str(), 0755);
  }
}

void writeText(const std::string &path, const std::string &text,
               bool append = false) {
  std::ofstream file(path, std::ios::binary |
                               (append ? std::ios::app : std::ios::trunc));
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!file)
    fail("cannot write '" + path + "'");
}

const char *dtypeName(loom_dtype dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return "f32";
  case LOOM_DTYPE_F64:
    return "f64";
  case LOOM_DTYPE_BF16:
    return "bf16";
  case LOOM_DTYPE_I1:
    return "i1";
  case LOOM_DTYPE_I32:
    return "i32";
  case LOOM_DTYPE_I64:
    return "i64";
  }
  return "?";
}

/// An argument as the driver moves it: the global array.
struct Argument {
  loom_arg_info info;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  std::string describe(int64_t index) const {
    std::string text = "argument #" + std::to_string(index);
    if (info.name && *info.name)
      text += std::string(" ('") + info.name + "')";
    return text;
  }
};

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

} // namespace

int loom::driver::runDriver(int argc, char **argv, int first,
                            const loom_program_api &api) {
  return runDriver(argc, argv, first, std::vector<loom_program_api>{api});
}

int loom::driver::runDriver(int argc, char **argv, int first,
                            const std::vector<loom_program_api> &apis) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Collectives started ahead of their use run on the runtime's
    // communication thread, which needs MPI_THREAD_MULTIPLE, unless
    // LOOM_OVERLAP=0 (rt::getWantedThreadLevel; the driver does not link
    // the runtime, whose program libraries it loads).
    const char *overlap = std::getenv("LOOM_OVERLAP");
    bool off = overlap && std::string(overlap) == "0";
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr,
                    off ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE, &provided);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);

  int64_t steps = 1;
  std::string in, out;
  bool trace = false, calls = false, saveArgs = false;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        fail("option " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--steps") {
      std::string text = value();
      char *end = nullptr;
      steps = std::strtoll(text.c_str(), &end, 10);
      if (!end || *end || steps < 1)
        fail("--steps must be a positive integer, got '" + text + "'");
    } else if (arg == "--in") {
      in = value();
    } else if (arg == "--out") {
      out = value();
    } else if (arg == "--trace") {
      trace = true;
    } else if (arg == "--calls") {
      calls = true;
    } else if (arg == "--save-args") {
      saveArgs = true;
    } else {
      fail("unknown option '" + arg +
           "' (expected --steps K, --in DIR, --out DIR, --save-args, "
           "--trace, --calls)");
    }
  }
  // A test hook (see Driver.h), read before anything runs.
  int64_t hangRank = -1, hangStep = -1;
  if (const char *hang = std::getenv("LOOM_TEST_HANG"))
    if (std::sscanf(hang, "%ld:%ld", &hangRank, &hangStep) != 2)
      fail("LOOM_TEST_HANG must be RANK:STEP, got '" + std::string(hang) +
           "'");

  // The programs: one per library (variants of one step, see Driver.h).
  size_t count = apis.size();
  std::vector<loom_program *> programs(count, nullptr);
  std::vector<std::vector<Argument>> variantArgs(count);
  for (size_t v = 0; v < count; ++v) {
    const loom_program_api &api = apis[v];
    check(api, api.create(nullptr, &programs[v]));
    api.set_recording(programs[v], (trace ? LOOM_RECORD_TRACE : 0) |
                                       (calls ? LOOM_RECORD_CALLS : 0));
    std::vector<Argument> &args = variantArgs[v];
    args.resize(static_cast<size_t>(api.get_num_args(programs[v])));
    for (size_t i = 0; i < args.size(); ++i) {
      Argument &arg = args[i];
      check(api, api.get_arg_info(programs[v], static_cast<int64_t>(i),
                                  &arg.info));
      arg.shape.assign(arg.info.global_shape,
                       arg.info.global_shape + arg.info.rank);
      arg.bytes = loom::driver::getElementBytes(arg.info.dtype);
      for (int64_t size : arg.shape)
        arg.bytes *= size;
    }
  }
  // Variants carry the parameters and state from one to the next: those
  // must be the same arguments, of the same types; each variant may lay
  // them out its own way (the strategies of a switching run).
  auto carried = [](const Argument &arg) {
    return arg.info.role != LOOM_ARG_DATA && arg.info.role != LOOM_ARG_STEP;
  };
  for (size_t v = 0; v < count; ++v) {
    const std::vector<Argument> &a = variantArgs[0], &b = variantArgs[v];
    if (a.size() != b.size())
      fail("program " + std::to_string(v) + " has " +
           std::to_string(b.size()) + " arguments, program 0 " +
           std::to_string(a.size()) + ": not variants of one step");
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].info.role != b[i].info.role ||
          std::string(a[i].info.name) != b[i].info.name)
        fail(b[i].describe(static_cast<int64_t>(i)) + " of program " +
             std::to_string(v) + " is not program 0's: not variants of one "
             "step");
      if (!carried(a[i]))
        continue;
      if (a[i].info.dtype != b[i].info.dtype || a[i].shape != b[i].shape)
        fail(b[i].describe(static_cast<int64_t>(i)) + " of program " +
             std::to_string(v) + " is a " + dtypeName(b[i].info.dtype) +
             " array of shape " + shapeText(b[i].shape) + ", program 0's a " +
             dtypeName(a[i].info.dtype) + " array of shape " +
             shapeText(a[i].shape) + ": variants carry the same parameters "
             "and state");
    }
  }
  // The switch records (--out DIR/rank<r>/switch.txt).
  std::string switches;
  loom::driver::SwitchSettings settings = loom::driver::getSwitchSettings();
  // (A test hook: LOOM_TEST_FAULT=skip-switch exchanges the first
  // switch's bytes but leaves the new variant's arguments as they were,
  // which the switching tests must catch.)
  const char *fault = std::getenv("LOOM_TEST_FAULT");
  bool skipFirst = fault && std::string(fault) == "skip-switch";
  // Moves the parameters and state of program `from` into `to` before step
  // `step` (ProgramSwitch.h: one planned exchange).
  auto move = [&](size_t from, size_t to, int64_t step) {
    loom::driver::SwitchSettings these = settings;
    these.skipSetting = skipFirst && switches.empty();
    loom::driver::SwitchRecord record;
    std::string why = loom::driver::switchPrograms(
        apis[from], programs[from], apis[to], programs[to], MPI_COMM_WORLD,
        these, record);
    if (!why.empty())
      fail("the switch from program " + std::to_string(from) + " to " +
           std::to_string(to) + " before step " + std::to_string(step) +
           ": " + why);
    // step, from, to, bytes sent, bytes received, messages sent, the
    // plan's volume (all ranks), seconds.
    switches += std::to_string(step) + " " + std::to_string(from) + " " +
                std::to_string(to) + " " + std::to_string(record.bytesSent) +
                " " + std::to_string(record.bytesReceived) + " " +
                std::to_string(record.messagesSent) + " " +
                std::to_string(record.planBytes) + " " +
                std::to_string(record.seconds) + "\n";
  };
  // The variant of step `step`: DIR/step<n>/variant, else 0.
  auto variantOf = [&](int64_t step) -> size_t {
    std::string path = in + "/step" + std::to_string(step) + "/variant";
    if (in.empty() || !fileExists(path))
      return 0;
    std::ifstream file(path);
    long long v = -1;
    if (!(file >> v) || !(file >> std::ws).eof() || v < 0 ||
        static_cast<size_t>(v) >= count)
      fail("'" + path + "' must hold a variant in [0, " +
           std::to_string(count) + "): one of the programs given");
    return static_cast<size_t>(v);
  };

  // Every argument with a file in `dir`, from its global array, into
  // program `v`.
  std::vector<char> data;
  auto fill = [&](const std::string &dir, size_t v) {
    const loom_program_api &api = apis[v];
    loom_program *program = programs[v];
    const std::vector<Argument> &args = variantArgs[v];
    for (size_t i = 0; i < args.size(); ++i) {
      const Argument &arg = args[i];
      std::string path = dir + "/arg" + std::to_string(i) + ".bin";
      if (!fileExists(path))
        continue;
      std::ifstream file(path, std::ios::binary | std::ios::ate);
      if (!file)
        fail("cannot read '" + path + "'");
      int64_t size = static_cast<int64_t>(file.tellg());
      if (size != arg.bytes)
        fail("'" + path + "' has " + std::to_string(size) + " bytes but " +
             arg.describe(static_cast<int64_t>(i)) + " holds " +
             std::to_string(arg.bytes) + ", a global " +
             dtypeName(arg.info.dtype) + " array of shape " +
             shapeText(arg.shape) + " (a data file for another program?)");
      data.resize(static_cast<size_t>(std::max<int64_t>(size, 1)));
      file.seekg(0);
      file.read(data.data(), size);
      if (!file)
        fail("cannot read '" + path + "'");
      check(api, api.set_arg(program, static_cast<int64_t>(i),
                             LOOM_FORM_GLOBAL, arg.info.dtype, arg.info.rank,
                             arg.shape.data(), data.data()));
    }
  };
  // (Initial arguments into every variant; the first step's starts.)
  for (size_t v = 0; v < count && !in.empty(); ++v)
    fill(in, v);

  std::string me = out + "/rank" + std::to_string(worldRank);
  if (!out.empty()) {
    makeDirectory(me);
    if (worldRank == 0)
      std::remove((out + "/loss.bin").c_str());
    if (worldRank == 0)
      std::remove((out + "/grad_norm.bin").c_str());
  }
  std::string times;
  size_t current = count;
  for (int64_t step = 1; step <= steps; ++step) {
    if (hangRank == worldRank && hangStep == step)
      std::this_thread::sleep_for(std::chrono::hours(1));
    size_t v = variantOf(step);
    if (current != count && v != current) {
      // Another variant takes over: the parameters and state move, the
      // step count goes on.
      move(current, v, step);
      check(apis[v], apis[v].set_steps_done(programs[v], step - 1));
    }
    current = v;
    const loom_program_api &api = apis[v];
    loom_program *program = programs[v];
    if (!in.empty())
      fill(in + "/step" + std::to_string(step), v);
    bool hasLoss = api.has_loss(program) != 0;
    double loss = 0;
    auto start = std::chrono::steady_clock::now();
    check(api, api.step(program, hasLoss ? &loss : nullptr));
    auto stop = std::chrono::steady_clock::now();
    times +=
        std::to_string(std::chrono::duration<double>(stop - start).count()) +
        "\n";
    if (!out.empty() && hasLoss && worldRank == 0)
      writeText(out + "/loss.bin",
                std::string(reinterpret_cast<const char *>(&loss),
                            sizeof(loss)),
                /*append=*/true);
    if (!out.empty() && api.has_grad_norm(program) && worldRank == 0) {
      double norm = 0;
      check(api, api.get_grad_norm(program, &norm));
      writeText(out + "/grad_norm.bin",
                std::string(reinterpret_cast<const char *>(&norm),
                            sizeof(norm)),
                /*append=*/true);
    }
  }

  const loom_program_api &api = apis[current];
  loom_program *program = programs[current];
  if (!out.empty()) {
    writeText(me + "/times.txt", times);
    writeText(me + "/switch.txt", switches);
    // (Each library counts its own traffic: the sums over the variants,
    // by collective kind in order of first appearance.)
    std::vector<std::pair<std::string, std::vector<long long>>> kinds;
    for (size_t v = 0; v < count; ++v)
      for (int64_t k = 0; k < apis[v].get_num_traffic(programs[v]); ++k) {
        loom_traffic traffic;
        check(apis[v], apis[v].get_traffic(programs[v], k, &traffic));
        auto it = std::find_if(kinds.begin(), kinds.end(), [&](auto &kind) {
          return kind.first == traffic.collective;
        });
        if (it == kinds.end())
          it = kinds.insert(kinds.end(),
                            {traffic.collective, {0, 0, 0}});
        it->second[0] += traffic.calls;
        it->second[1] += traffic.bytes_sent;
        it->second[2] += traffic.bytes_received;
      }
    std::string comm;
    for (auto &[kind, sums] : kinds)
      comm += kind + " " + std::to_string(sums[0]) + " " +
              std::to_string(sums[1]) + " " + std::to_string(sums[2]) + "\n";
    writeText(me + "/comm.txt", comm);
    if (calls) {
      std::string text;
      for (int64_t k = 0; k < api.get_num_library_calls(program); ++k) {
        loom_library_call call;
        check(api, api.get_library_call(program, k, &call));
        text += std::to_string(call.step) + " " + std::to_string(call.call) +
                " " + call.collective + " " + call.primitive + " " +
                call.dtype + " " + std::to_string(call.count) + " " +
                std::to_string(call.peer) + " ";
        for (int64_t m = 0; m < call.num_members; ++m)
          text += (m ? "," : "") + std::to_string(call.members[m]);
        text += "\n";
      }
      writeText(me + "/calls.txt", text);
    }
    if (trace)
      check(api, api.write_trace(program, (me + "/trace.json").c_str()));
    // The trained arguments, put back together (collective: every rank
    // reads each in turn).
    const std::vector<Argument> &args = variantArgs[current];
    for (size_t i = 0; saveArgs && i < args.size(); ++i) {
      const Argument &arg = args[i];
      if (arg.info.role == LOOM_ARG_DATA || arg.info.role == LOOM_ARG_STEP)
        continue;
      data.assign(static_cast<size_t>(std::max<int64_t>(arg.bytes, 1)), 0);
      check(api, api.get_arg(program, static_cast<int64_t>(i),
                             LOOM_FORM_GLOBAL, arg.info.dtype, arg.info.rank,
                             arg.shape.data(), data.data()));
      if (worldRank == 0)
        writeText(out + "/arg" + std::to_string(i) + ".bin",
                  std::string(data.data(), static_cast<size_t>(arg.bytes)));
    }
  }
  for (size_t v = 0; v < count; ++v)
    apis[v].destroy(programs[v]);
  MPI_Finalize();
  return 0;
}

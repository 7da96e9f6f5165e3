#!/usr/bin/env python3
"""Runs the built bundle (run.sh calls it) and compares with the host results.

For every program under programs/: the host executable on this CPU (the MPI
of one process, the portable GEMM) and, with a GPU, the CUDA executable,
each for the bundle's steps from the same inputs, against the host target's
results where the bundle was written: every step's loss within 1e-4
relative, every parameter within 1e-3 norm-wise (f32; GEMMs round in other
orders), anything not finite a failure. Then tokens/s, profiling runs
(serialised kernel times of steps 2..N: a run of N steps less a run of 1;
phase times from the trace) and the GEMM benchmark. Whether there is a GPU
is the CUDA runtime's answer (gemm-bench --devices). Prints a report, writes BUILD/report.json, exits 1 if a check
failed. Python's standard library only.
"""
import argparse
import array
import json
import math
import os
import shutil
import subprocess
import sys
import time

LOSS_BOUND = 1e-4
PARAM_BOUND = 1e-3
TIMEOUT_S = 300


def read_array(path, code):
    values = array.array(code)
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % values.itemsize:
        raise ValueError(f"{path}: {len(data)} bytes is not a whole number of elements")
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def relative_norm(got, want):
    if len(got) != len(want):
        return math.inf
    if not all(math.isfinite(x) for x in got) or not all(math.isfinite(x) for x in want):
        return math.inf
    diff = sum((float(a) - float(b)) ** 2 for a, b in zip(got, want))
    norm = sum(float(b) ** 2 for b in want)
    return math.sqrt(diff) / max(math.sqrt(norm), 1e-30)


def run(command, log, env=None, timeout=TIMEOUT_S, out=None):
    """Runs `command` with its output in `log`; `out`, the folder the run
    writes, is emptied first (a rerun must not read an earlier run's)."""
    if out:
        shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    start = time.time()
    with open(log, "w") as out:
        try:
            code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                                  env=env, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
        except OSError as error:
            out.write(f"cannot run {command[0]}: {error}\n")
            code = "not run"
    with open(log) as f:
        text = f.read()
    return code, text, time.time() - start


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0.0


class Program:
    def __init__(self, bundle, name):
        self.name = name
        self.dir = os.path.join(bundle, "programs", name)
        with open(os.path.join(self.dir, "steps")) as f:
            self.steps = int(f.read())
        ref = os.path.join(self.dir, "reference")
        self.losses = read_array(os.path.join(ref, "loss.bin"), "d")
        self.params = []
        with open(os.path.join(ref, "params.txt")) as f:
            for line in f:
                k, i = line.split()
                self.params.append((int(k), int(i), read_array(os.path.join(ref, f"arg{i}.bin"), "f")))
        with open(os.path.join(ref, "steps.jsonl")) as f:
            self.log = [json.loads(line) for line in f if line.strip()]
        self.tokens = self.log[0]["tokens"] if self.log else 0
        self.reference_rate = median([s["tokens_per_s"] for s in self.log[1:]])

    def compare(self, out):
        """The worst loss and parameter errors of a run's outputs."""
        losses = read_array(os.path.join(out, "loss.bin"), "d")
        if len(losses) != len(self.losses):
            return math.inf, math.inf, f"{len(losses)} losses for {len(self.losses)} steps"
        loss_error = 0.0
        for got, want in zip(losses, self.losses):
            err = (abs(got - want) / max(abs(want), 1e-30)
                   if math.isfinite(got) and math.isfinite(want) else math.inf)
            loss_error = max(loss_error, err)
        param_error = 0.0
        for k, i, want in self.params:
            got = read_array(os.path.join(out, f"arg{i}.bin"), "f")
            param_error = max(param_error, relative_norm(got, want))
        return loss_error, param_error, ""

    def rate(self, out):
        with open(os.path.join(out, "rank0", "times.txt")) as f:
            seconds = [float(line) for line in f if line.strip()]
        steady = median(seconds[1:] if len(seconds) > 1 else seconds)
        return self.tokens / steady if steady > 0 else 0.0


def phase_times(trace_path):
    """Mean milliseconds of each phase's spans in a Chrome trace, the first
    span of each (step 1's) left out where there are more."""
    with open(trace_path) as f:
        events = json.load(f)
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    spans = {}
    for event in events:
        if event.get("ph") != "X" or "dur" not in event:
            continue
        spans.setdefault(event.get("name", "?"), []).append(event["dur"] / 1e3)
    result = {}
    for name, durations in spans.items():
        steady = durations[1:] if len(durations) > 1 else durations
        result[name] = (sum(steady) / len(steady), len(steady))
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--cuda", default="ON")
    parser.add_argument("--nvidia-smi-gpu", type=int, default=0,
                        help="1: nvidia-smi lists a GPU (run.sh asks it)")
    args = parser.parse_args()
    bundle, build = args.bundle, args.build
    cuda = args.cuda == "ON"
    runs = os.path.join(build, "runs")
    os.makedirs(runs, exist_ok=True)
    report_path = os.path.join(build, "report.json")
    if os.path.exists(report_path):
        os.remove(report_path)
    failures = []

    def fail(message):
        failures.append(message)
        print(f"FAIL: {message}")

    # Whether there is a GPU: the CUDA runtime's answer. Without a driver it
    # answers with an error (no libcuda: "driver version is insufficient"),
    # which is "no GPU" where nvidia-smi lists none either; where nvidia-smi
    # lists a GPU the runtime cannot use (a driver too old for this CUDA),
    # that is a failure.
    gpu = False
    if cuda:
        code, text, _ = run([os.path.join(build, "gemm-bench"), "--devices"],
                            os.path.join(runs, "devices.log"))
        lines = text.strip().splitlines()
        count = lines[-1].strip() if lines else ""
        if code == 0 and count.isdigit():
            gpu = int(count) > 0
            print(f"cuda devices: {count}")
        elif not args.nvidia_smi_gpu:
            print(f"cuda devices: 0 (the CUDA runtime: {count or 'exit %s' % code})")
        else:
            fail(f"nvidia-smi lists a GPU but the CUDA runtime cannot count the devices "
                 f"(exit {code}): {text.strip()[-500:]}")
        if args.nvidia_smi_gpu and not gpu and code == 0:
            fail("nvidia-smi lists a GPU but the CUDA runtime finds none")
    args.gpu = gpu
    report = {"gpu": gpu, "cuda_built": cuda, "programs": {}}

    # 1. The CUDA kernel tests.
    if cuda:
        code, text, seconds = run([os.path.join(build, "cuda-kernel-tests")],
                                  os.path.join(runs, "cuda-kernel-tests.log"))
        summary = [l for l in text.splitlines() if " test" in l and (
            l.startswith("[  PASSED  ]") or l.startswith("[  SKIPPED ]") or
            l.startswith("[  FAILED  ]"))]
        skipped = any(l.startswith("[  SKIPPED ]") for l in summary)
        state = "failed" if code != 0 else ("skipped (no GPU)" if skipped and not args.gpu else "passed")
        print(f"cuda kernel tests: {state} in {seconds:.1f} s: " + "; ".join(summary[:3]))
        report["kernel_tests"] = {"state": state, "summary": summary}
        if code != 0:
            fail("the CUDA kernel tests (" + os.path.join(runs, "cuda-kernel-tests.log") + ")")
        elif args.gpu and skipped:
            fail("the CUDA kernel tests skipped on a node with a GPU")

    # 2. The programs.
    names = sorted(os.listdir(os.path.join(bundle, "programs")))
    for name in names:
        program = Program(bundle, name)
        entry = {"steps": program.steps, "tokens_per_step": program.tokens,
                 "reference_host_tokens_per_s": program.reference_rate}
        report["programs"][name] = entry
        targets = ["host"] + (["cuda"] if cuda else [])
        for target in targets:
            out = os.path.join(runs, name, target)
            if not os.path.exists(os.path.join(build, f"{name}-{target}")):
                # (The CUDA programs need NCCL: CMake says when it found none.)
                fail(f"{name}, {target}: not built (for cuda: no NCCL found; see "
                     f"the configure log, set NCCL_ROOT)")
                entry[target] = {"state": "not built"}
                continue
            command = [os.path.join(build, f"{name}-{target}"), "--steps", str(program.steps),
                       "--in", os.path.join(program.dir, "in"), "--out", out, "--save-args"]
            code, text, seconds = run(command, out + ".log", out=out)
            where = f"{name} on {'this CPU' if target == 'host' else 'the GPU'}"
            if target == "cuda" and not args.gpu:
                if code != 0 and "no CUDA device" in text:
                    print(f"{name}, cuda: skipped (no GPU; the program built and said so)")
                    entry["cuda"] = {"state": "skipped (no GPU)"}
                else:
                    fail(f"{where}: without a GPU it must end with 'no CUDA device' (exit {code}): {text[-500:]}")
                continue
            if code != 0:
                fail(f"{where}: exit {code}: {text[-1500:]}")
                entry[target] = {"state": "failed"}
                continue
            try:
                loss_error, param_error, problem = program.compare(out)
                rate = program.rate(out)
            except (OSError, ValueError) as error:
                fail(f"{where}: cannot read its results: {error}")
                entry[target] = {"state": "failed"}
                continue
            ok = loss_error <= LOSS_BOUND and param_error <= PARAM_BOUND and not problem
            entry[target] = {"state": "passed" if ok else "failed", "loss_error": loss_error,
                             "param_error": param_error, "tokens_per_s": rate}
            print(f"{name}, {target}: {program.steps} steps, loss error {loss_error:.2e} "
                  f"(bound {LOSS_BOUND:g}), {len(program.params)} parameters error "
                  f"{param_error:.2e} (bound {PARAM_BOUND:g}), {rate:.0f} tokens/s "
                  f"{'' if ok else problem or '-- OUT OF BOUNDS'}")
            if not ok:
                fail(f"{where}: loss error {loss_error:.3e}, parameter error {param_error:.3e} {problem}")
        if cuda and args.gpu and entry.get("cuda", {}).get("state") == "passed":
            cuda_rate = entry["cuda"]["tokens_per_s"]
            host_rate = entry["host"].get("tokens_per_s", 0) if "host" in entry else 0
            ratio = lambda rate: f"x{cuda_rate / rate:.1f}" if rate > 0 else "n/a"
            print(f"{name}: tokens/s GPU {cuda_rate:.0f}, this CPU {host_rate:.0f} "
                  f"({ratio(host_rate)}), the host target where the bundle was made "
                  f"{program.reference_rate:.0f} ({ratio(program.reference_rate)})")
            # Profiling runs: serialised kernel times of steps 2..N (N steps
            # less 1, which pays for module loading and cuBLAS's set-up),
            # and the phases' spans.
            profile = {}
            counts = (1, program.steps) if program.steps > 1 else (1,)
            for count in counts:
                out = os.path.join(runs, name, f"profile{count}")
                times_file = out + "-kernel-times.txt"
                if os.path.exists(times_file):
                    os.remove(times_file)
                env = dict(os.environ, LOOM_CUDA_KERNEL_TIMES=times_file)
                command = [os.path.join(build, f"{name}-cuda"), "--steps", str(count),
                           "--in", os.path.join(program.dir, "in"), "--out", out, "--trace"]
                code, text, _ = run(command, out + ".log", env=env, out=out)
                try:
                    if code != 0:
                        raise OSError(f"exit {code}: {text[-1000:]}")
                    with open(times_file) as f:
                        for line in f:
                            kernel, launches, seconds = line.split()
                            sign = 1 if count == counts[-1] else -1
                            n, t = profile.get(kernel, (0, 0.0))
                            profile[kernel] = (n + sign * int(launches), t + sign * float(seconds))
                except (OSError, ValueError) as error:
                    fail(f"{name}: the profiling run of {count} step(s) failed: {error}")
                    profile = None
                    break
            if profile is None:
                continue
            steady = program.steps - 1 if program.steps > 1 else 1
            kernels = sorted(((max(t, 0.0), k, n) for k, (n, t) in profile.items() if n > 0),
                             reverse=True)
            total = sum(t for t, _, _ in kernels) or 1.0
            which = (f"steps 2..{program.steps}" if program.steps > 1
                     else "step 1 (set-up included)")
            print(f"{name}: kernel times of {which} (serialised: the stream "
                  f"drained after each launch), per step, top 12 of {len(kernels)}:")
            for seconds, kernel, launches in kernels[:12]:
                print(f"  {kernel:24s} {launches / steady:7.0f} launches {seconds / steady * 1e3:9.3f} ms "
                      f"{seconds / launches * 1e6:8.1f} us each {seconds / total:6.1%}")
            entry["kernel_times_per_step"] = [
                {"kernel": k, "launches": n / steady, "seconds": t / steady} for t, k, n in kernels]
            try:
                phases = phase_times(os.path.join(out, "rank0", "trace.json"))
            except (OSError, ValueError) as error:
                fail(f"{name}: cannot read the trace: {error}")
                continue
            print(f"{name}: phases (mean ms per span, each name's first span left out; "
                  f"serialised kernels): " +
                  ", ".join(f"{p} {ms:.3f}" for p, (ms, _) in sorted(phases.items())))
            entry["phases_ms"] = {p: ms for p, (ms, _) in phases.items()}

    # 3. GEMM throughput against cuBLAS.
    if cuda and args.gpu:
        gemms = [os.path.join(bundle, "programs", n, "gemms.txt") for n in names]
        code, text, _ = run([os.path.join(build, "gemm-bench")] + gemms,
                            os.path.join(runs, "gemm-bench.log"))
        print(text, end="")
        report["gemm_bench"] = text
        if code != 0:
            fail("the GEMM benchmark")
    elif cuda:
        print("gemm benchmark: skipped (no GPU)")

    with open(report_path, "w") as f:
        json.dump(report, f, indent=1)
    if failures:
        print(f"bundle: {len(failures)} check(s) failed")
        return 1
    print("bundle: all checks passed" + ("" if args.gpu else " (the GPU part skipped: no GPU)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

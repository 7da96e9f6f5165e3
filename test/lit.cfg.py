# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Loom"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".td"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.loom_obj_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "CMakeLists.txt",
                   "unit", "fuzz", "bench", "Inputs",
                   "check-round-trip.sh"]

config.substitutions.append(("%loom_src_root", config.loom_src_root))
config.substitutions.append(("%mlir_include_dir", config.mlir_include_dir))
config.substitutions.append(("%loom_build_root", config.loom_obj_root))
# Print -> parse -> print is stable in custom, generic and bytecode form.
config.substitutions.append(
    ("%check-round-trip",
     "bash " + os.path.join(config.loom_src_root, "test", "check-round-trip.sh")))


def python_with_numpy():
    """A Python that can import numpy and scipy, which the interpreter's
    numeric checks use: lit may run under Debian's python3, which lacks
    them."""
    import shutil
    import subprocess
    import sys
    for candidate in (sys.executable, shutil.which("python3")):
        if not candidate:
            continue
        try:
            found = subprocess.run(
                [candidate, "-c", "import numpy, scipy, sys; print(sys.executable)"],
                capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    return sys.executable


config.substitutions.append(("%python", python_with_numpy()))
# Where the CPU test double of the CANN libraries is (the Ascend target's
# tests put it on the library path).
config.substitutions.append(("%ascend_double_dir",
                             getattr(config, "loom_ascend_double_dir", "")))

# OPENBLAS_CORETYPE: scripts/blas-families.sh runs the suite with each
# OpenBLAS kernel family forced.
llvm_config.with_system_environment(["HOME", "TMP", "TEMP",
                                     "OPENBLAS_CORETYPE"])
llvm_config.use_default_substitutions()

# Sanitized tools: fail loudly on the first error.
config.environment["ASAN_OPTIONS"] = "allow_user_poisoning=0:detect_leaks=1"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"

tool_dirs = [config.loom_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["loom-opt", "loom-run", "loom-rank", "loom-batch", "loom-switch", "loom-place", "loom-translate", "loom-tblgen"], tool_dirs)
llvm_config.with_environment("PATH", config.loom_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

if config.loom_sanitized:
    config.available_features.add("sanitized")
if config.loom_fuzzer:
    config.available_features.add("fuzzer")
# The CUDA target is built (nvcc, cuBLAS, NCCL found); a GPU is present.
if getattr(config, "loom_cuda", False):
    config.available_features.add("cuda")
    import shutil
    import subprocess
    smi = shutil.which("nvidia-smi")
    if smi and subprocess.run([smi, "-L"], capture_output=True).returncode == 0:
        config.available_features.add("cuda-device")

//===- SanitizerDefaults.cpp - Default options of sanitized Loom tools ----===//
//
// Linked into every executable of the sanitized build. Loom's code is built
// with AddressSanitizer but Debian's libMLIR/libLLVM are not: LLVM's bump
// allocator poisons fresh slabs when it is instantiated in instrumented code,
// and uninstrumented MLIR code then allocates from those slabs without
// unpoisoning them. Manual poisoning is therefore switched off by default;
// every other check stays on. ASAN_OPTIONS set by the user still override.
//
//===----------------------------------------------------------------------===//

extern "C" const char *__asan_default_options();
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

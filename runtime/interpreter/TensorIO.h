//===- TensorIO.h - Random tensors and printing ----------------*- C++ -*-===//
//
// What loom-run needs besides .npy files: reproducible random inputs and a
// text form of results that round-trips.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_TENSORIO_H
#define LOOM_RUNTIME_INTERPRETER_TENSORIO_H

#include "runtime/interpreter/Tensor.h"

#include "llvm/Support/raw_ostream.h"

namespace loom::interp {

/// How random inputs are drawn.
struct RandomSpec {
  uint64_t seed = 0;
  /// Integer elements are uniform in [intLow, intHigh).
  int64_t intLow = 0, intHigh = 8;
};

/// A tensor of `kind` and `shape` whose elements are a pure function of
/// (`spec.seed`, `stream`, element index), drawn with splitmix64: floats
/// uniform in [-1, 1) (then rounded to the element type), integers uniform
/// in [intLow, intHigh) (up to a modulo bias below 2^-40 for ranges under
/// 2^24), i1 true or false with probability 1/2. `stream` separates
/// independent tensors, e.g. the argument index.
Tensor makeRandomTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                        const RandomSpec &spec, uint64_t stream);

/// Prints the elements as nested brackets (`[[1, 2], [3, 4]]`; a 0-d tensor
/// as its value) with enough digits to round-trip: %.9g for f32 and bf16,
/// %.17g for f64; i1 as true/false.
void printTensorValues(llvm::raw_ostream &os, const Tensor &tensor);

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_TENSORIO_H

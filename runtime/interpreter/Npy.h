//===- Npy.h - Reading and writing NumPy .npy files ------------*- C++ -*-===//
//
// The .npy format (versions 1.0, 2.0 and 3.0 are read; 1.0 is written, 2.0
// when the header needs it), little-endian, C order. Element types map as
//
//   '<f4' f32    '<f8' f64    '<i4' i32    '<i8' i64    '|b1' i1
//   '<u2' bf16   (NumPy has no bfloat16: the file holds the bit patterns as
//                 uint16; `x.view(np.uint16)` of an ml_dtypes bfloat16 array,
//                 or `(f32.view(np.uint32) >> 16).astype(np.uint16)`, which
//                 truncates)
//
// '=' (native order) is accepted for the multi-byte types, since every host
// Loom runs on is little-endian; big-endian data and Fortran order are
// rejected with a message that says so.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_NPY_H
#define LOOM_RUNTIME_INTERPRETER_NPY_H

#include "runtime/interpreter/Tensor.h"

#include "llvm/Support/Error.h"

#include <string>

namespace loom::interp {

/// Parses the contents of a .npy file; `name` (usually the path) prefixes
/// error messages. Rejects, with a message, anything it cannot represent
/// exactly: unknown or big-endian types, Fortran order, truncated or
/// oversized data, tensors larger than `maxBytes`.
llvm::Expected<Tensor> parseNpy(llvm::StringRef contents, llvm::StringRef name,
                                uint64_t maxBytes = uint64_t{1} << 34);

/// Reads a .npy file.
llvm::Expected<Tensor> readNpyFile(llvm::StringRef path,
                                   uint64_t maxBytes = uint64_t{1} << 34);

/// The contents of a .npy file holding `tensor`.
std::string serializeNpy(const Tensor &tensor);

/// Writes `tensor` to `path` as a .npy file.
llvm::Error writeNpyFile(llvm::StringRef path, const Tensor &tensor);

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_NPY_H

// RUN: loom-tblgen -gen-host-kernel-decls -I %loom_src_root -I %mlir_include_dir %s | FileCheck %s --check-prefix=HOST
// RUN: loom-tblgen -gen-ascend-kernel-decls -I %loom_src_root -I %mlir_include_dir %s | FileCheck %s --check-prefix=ASCEND
// RUN: loom-tblgen -gen-ascend-loom-ops -I %loom_src_root -I %mlir_include_dir %s | FileCheck %s --check-prefix=LOOMOPS
// RUN: loom-tblgen -gen-kernel-contracts -I %loom_src_root -I %mlir_include_dir %s | FileCheck %s --check-prefix=TABLE

// The kernel contract of two made-up ops: what each backend derives from the
// ODS arguments and the contract's fields (docs/op-contract.md).

include "dialects/nn/IR/NNAttrs.td"

// Results, then operands (an index tensor, an optional 0-d i64, a variadic
// list), then attributes by name; kernels on the host and CUDA only.
def Test_PickOp : NN_Op<"pick"> {
  let arguments = (ins NN_FloatTensor:$table, NN_IntTensor:$ids,
                       Variadic<NN_FloatTensor>:$extra,
                       Optional<NN_I64Scalar>:$offset,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale,
                       UnitAttr:$clip, I64Attr:$dim);
  let results = (outs NN_FloatTensor:$result);
  let kernelTargets = [NN_Host, NN_Cuda];
}

// Loom's own Ascend operator, on f32 and i32 (Ascend drops f64).
def Test_ShiftOp : NN_Op<"shift"> {
  let arguments = (ins NN_NumericTensor:$input, NN_BoolTensor:$mask,
                       NN_ReduceKindAttr:$kind);
  let results = (outs NN_NumericTensor:$result);
  let kernelTypes = [F32, F64, I32];
  let ascendLoomOperator = "aclnnLoomShift";
}

// HOST: // nn.pick: pick(result, table, ids (index), extra..., offset? (0-d i64), clip (bool), dim (int64_t), scale (double)); f32, f64
// HOST-NEXT: void pick(float *result, Shape resultShape, const float *table, Shape tableShape, IndexPtr ids, Shape idsShape, std::initializer_list<const float *> extra, std::initializer_list<Shape> extraShapes, const int64_t *offset, Shape offsetShape, bool clip, int64_t dim, double scale);
// HOST-NEXT: void pick(double *result,
// HOST: // nn.shift: shift(result, input, mask (i1), kind (const char *)); f32, f64, i32
// HOST-NEXT: void shift(float *result, Shape resultShape, const float *input, Shape inputShape, const bool *mask, Shape maskShape, const char *kind);
// HOST-NEXT: void shift(double *result,
// HOST-NEXT: void shift(int32_t *result,

// ASCEND: namespace detail {
// ASCEND-NOT: pick
// ASCEND: void shift(Arg result, Arg input, Arg mask, const char *kind);
// ASCEND: } // namespace detail
// ASCEND-NOT: pick
// ASCEND: // nn.shift: {{.*}}; f32, i32
// ASCEND-NEXT: inline void shift(float *result, Shape resultShape, const float *input, Shape inputShape, const bool *mask, Shape maskShape, const char *kind) {
// ASCEND-NEXT:   detail::shift(detail::arg(result, resultShape), detail::arg(input, inputShape), detail::arg(mask, maskShape), kind);
// ASCEND: inline void shift(int32_t *result,
// ASCEND-NOT: double

// LOOMOPS: LOOM_OP(aclnnLoomShift, const aclTensor *input, const aclTensor *mask, const char *kind, aclTensor *result)
// LOOMOPS: #define LOOM_ASCEND_LOOM_OPERATORS(X2) \
// LOOMOPS-NEXT:   X2(aclnnLoomShift)

// TABLE: static const KernelTensor kPickOperands[] = {{[{][{]}}"table", KernelTensor::Typed, false, false}, {"ids", KernelTensor::Index, false, false}, {"extra", KernelTensor::Typed, false, true}, {"offset", KernelTensor::Scalar, true, false}, };
// TABLE: static const KernelAttr kPickAttrs[] = {{[{][{]}}"clip", KernelAttr::Unit, true}, {"dim", KernelAttr::I64, false}, {"scale", KernelAttr::F64, false}, };
// TABLE: {"nn.pick", kPickResults, kPickOperands, kPickAttrs, false, {true, kPickHostTypes}, {true, kPickCudaTypes}, {false, kPickAscendTypes}},
// TABLE: {"nn.shift", kShiftResults, kShiftOperands, kShiftAttrs, false, {true, kShiftHostTypes}, {true, kShiftCudaTypes}, {true, kShiftAscendTypes}},

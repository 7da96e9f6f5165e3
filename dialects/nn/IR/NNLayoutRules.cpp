//===- NNLayoutRules.cpp - Factor rules of the nn ops ---------------------===//
//
// LayoutRuleOpInterface for every nn op: the op's iteration space as factors
// and every operand and result dimension as a list of factors (FactorRule.h,
// docs/rationale/partitioning.md). Ops are grouped by family; each family
// shares one helper, and each op's method only says which family it is in and
// with which dimensions.
//
// Conventions shared by the families:
// * A dimension of size 1 that broadcasts against a larger one (numpy
//   broadcasting, nn.broadcast) maps to no factor: it is never split, and
//   the operand is duplicated along a split of the dimension it broadcasts
//   to. A dynamic operand dimension is taken to be the full dimension (a
//   dynamic size that turns out to be a broadcast 1 at run time must not be
//   split; propagation only splits static sizes it can check).
// * A factor's size is the known (static) one of the sizes of the
//   dimensions it describes, mlir::ShapedType::kDynamic when none is known.
// * Where a split would need the local op to know its global position (iota,
//   dropout's mask, a causal mask without positions, slice_grad's offsets,
//   an embedding shard's first row), the rule still offers the split: the
//   local ops that partitioning emits take the shard's offset.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>
#include <optional>

using namespace mlir;
using namespace loom;
using namespace loom::nn;

namespace {

constexpr FactorKind kParallel = FactorKind::Parallel;
constexpr FactorKind kReduction = FactorKind::Reduction;
constexpr FactorKind kReplicated = FactorKind::Replicated;

bool isDynamic(int64_t size) { return ShapedType::isDynamic(size); }

/// The shape of a ranked tensor value; empty for anything else.
ArrayRef<int64_t> shapeOf(Value value) {
  if (auto type = dyn_cast<RankedTensorType>(value.getType()))
    return type.getShape();
  return {};
}

/// The known one of two sizes of one dimension (dynamic if neither is).
int64_t knownSize(int64_t a, int64_t b) { return isDynamic(a) ? b : a; }

/// Adds one factor of `kind` per dimension of `shape`; returns their indices.
SmallVector<int64_t> addFactors(FactorRule &rule, ArrayRef<int64_t> shape,
                                FactorKind kind = kParallel) {
  SmallVector<int64_t> indices;
  for (int64_t size : shape)
    indices.push_back(rule.addFactor(size, kind));
  return indices;
}

/// A tensor whose dimension d is exactly factor `factors[d]`.
TensorFactors oneEach(ArrayRef<int64_t> factors) {
  TensorFactors tensor;
  for (int64_t factor : factors)
    tensor.push_back({factor});
  return tensor;
}

/// A tensor of shape `shape` that broadcasts (numpy rules: aligned at the
/// last dimension) against `target`, whose dimension d is factor
/// `factors[d]`. A dimension of size 1 against a larger (or dynamic) one is
/// a broadcast dimension and maps to no factor.
TensorFactors broadcastTo(ArrayRef<int64_t> shape, ArrayRef<int64_t> target,
                          ArrayRef<int64_t> factors) {
  TensorFactors tensor;
  int64_t lead = static_cast<int64_t>(target.size()) -
                 static_cast<int64_t>(shape.size());
  for (auto [dim, size] : llvm::enumerate(shape)) {
    int64_t targetDim = lead + static_cast<int64_t>(dim);
    if (targetDim < 0 || (size == 1 && target[targetDim] != 1))
      tensor.push_back({});
    else
      tensor.push_back({factors[targetDim]});
  }
  return tensor;
}

/// The rule of ops whose operands all broadcast against the shape of their
/// first result and whose results all have that shape: one factor per
/// result dimension, of kind `kindOf(dim)`. Element-wise ops (all
/// parallel), softmax (its axis replicated) and normalisations (the
/// normalised trailing dimensions replicated; scale and bias, which have the
/// trailing shape, map to those factors) are all of this form. Non-tensor
/// operands and 0-d tensors map to no dimension.
FactorRule alignedRule(Operation *op,
                       llvm::function_ref<FactorKind(int64_t)> kindOf) {
  FactorRule rule;
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  SmallVector<int64_t> factors;
  for (auto [dim, size] : llvm::enumerate(shape))
    factors.push_back(rule.addFactor(size, kindOf(dim)));
  for (Value operand : op->getOperands())
    rule.addOperand(broadcastTo(shapeOf(operand), shape, factors));
  for (Value result : op->getResults())
    rule.addResult(broadcastTo(shapeOf(result), shape, factors));
  return rule;
}

FactorRule elementwiseRule(Operation *op) {
  return alignedRule(op, [](int64_t) { return kParallel; });
}

/// Normalisations over the last `normalized` dimensions: the leading
/// dimensions are parallel, the normalised ones replicated (each output
/// element depends on the whole normalised group, through its mean and
/// variance; splitting them would need a distributed norm, a decomposition
/// rather than a rule).
FactorRule normRule(Operation *op, int64_t normalized) {
  int64_t rank = static_cast<int64_t>(shapeOf(op->getResult(0)).size());
  return alignedRule(op, [&](int64_t dim) {
    return dim >= rank - normalized ? kReplicated : kParallel;
  });
}

/// Softmax-like ops: the axis is replicated (the max and the sum along it
/// are needed whole), every other dimension parallel.
FactorRule axisRule(Operation *op, int64_t axis) {
  return alignedRule(
      op, [&](int64_t dim) { return dim == axis ? kReplicated : kParallel; });
}

//===----------------------------------------------------------------------===//
// Reshape: the common refinement of two shapes
//===----------------------------------------------------------------------===//

/// Factors of a reshape from `in` to `out`. Both shapes enumerate the same
/// elements in row-major order, so wherever a prefix of `in` and a prefix of
/// `out` hold the same number of elements, the dimensions on either side of
/// that boundary are independent: the dimensions split into groups with
/// equal products. Inside a group the factors are found by a gcd chain:
/// with `a` and `b` the parts of the current input and output dimensions
/// not yet covered, their gcd is the next (more minor) factor of both; when
/// a part reaches 1 the next dimension of its side starts. Every dimension
/// is then a product of consecutive factors, major first, shared by both
/// sides: `[8, 32] -> [8, 4, 8]` gives `[i, j*k] -> [i, j, k]`, `[4, 6] ->
/// [8, 3]` gives `[i, j*k] -> [i*j, k]`.
///
/// When the gcd is 1 the rest of the group does not nest (`[2, 3] -> [3,
/// 2]`: no split of one side is a split of the other). The uncovered parts
/// then get their own replicated factors, the input's in the input only and
/// the output's in the output only: the reshape gathers them. The common
/// major factors found before still split both sides alike (`[6, 4] -> [4,
/// 6]` shares a major factor of 2: both halves hold the first and the last
/// 12 elements).
///
/// Dimensions of size 1 map to no factor. Groups are found from both ends
/// while the sizes are static; what is left in the middle, holding dynamic
/// sizes, is one group: when one side of it is a single dimension, that
/// dimension is the product of the other side's dimensions, one factor
/// each (`[?, 32] -> [?, 4, 8]`: `[i, j*k] -> [i, j, k]`); otherwise its
/// dimensions get their own replicated factors. A zero-sized tensor has no
/// elements to refine: every dimension gets its own replicated factor.
class ReshapeRefiner {
public:
  ReshapeRefiner(ArrayRef<int64_t> in, ArrayRef<int64_t> out)
      : in(in), out(out), inFactors(in.size()), outFactors(out.size()) {}

  FactorRule build() {
    SmallVector<int64_t> a, b; // The dimensions that are not 1.
    bool empty = false;
    for (auto [dim, size] : llvm::enumerate(in)) {
      empty |= size == 0;
      if (size != 1)
        a.push_back(dim);
    }
    for (auto [dim, size] : llvm::enumerate(out)) {
      empty |= size == 0;
      if (size != 1)
        b.push_back(dim);
    }
    if (empty) {
      unshared(a, b);
      return finish();
    }

    // Groups from the front, then from the back, while sizes are static.
    int64_t i = 0, j = 0, ie = a.size(), je = b.size();
    SmallVector<std::pair<ArrayRef<int64_t>, ArrayRef<int64_t>>> front, back;
    while (i < ie && j < je) {
      std::optional<std::pair<int64_t, int64_t>> end =
          matchGroup(ArrayRef(a).slice(i, ie - i),
                     ArrayRef(b).slice(j, je - j), /*fromBack=*/false);
      if (!end)
        break;
      front.push_back({ArrayRef(a).slice(i, end->first),
                       ArrayRef(b).slice(j, end->second)});
      i += end->first;
      j += end->second;
    }
    while (i < ie && j < je) {
      std::optional<std::pair<int64_t, int64_t>> end =
          matchGroup(ArrayRef(a).slice(i, ie - i),
                     ArrayRef(b).slice(j, je - j), /*fromBack=*/true);
      if (!end)
        break;
      ie -= end->first;
      je -= end->second;
      back.push_back({ArrayRef(a).slice(ie, end->first),
                      ArrayRef(b).slice(je, end->second)});
    }

    for (auto [ga, gb] : front)
      refine(ga, gb);
    middle(ArrayRef(a).slice(i, ie - i), ArrayRef(b).slice(j, je - j));
    for (auto [ga, gb] : llvm::reverse(back))
      refine(ga, gb);
    return finish();
  }

private:
  /// The smallest group of static dimensions at the front (or back) of `ga`
  /// and `gb` with equal products, as the number of dimensions it takes from
  /// each; none if a dynamic size or the end comes first.
  std::optional<std::pair<int64_t, int64_t>>
  matchGroup(ArrayRef<int64_t> ga, ArrayRef<int64_t> gb, bool fromBack) {
    auto sizeA = [&](int64_t k) {
      return in[fromBack ? ga[ga.size() - 1 - k] : ga[k]];
    };
    auto sizeB = [&](int64_t k) {
      return out[fromBack ? gb[gb.size() - 1 - k] : gb[k]];
    };
    int64_t na = ga.size(), nb = gb.size();
    int64_t ka = 0, kb = 0, pa = 1, pb = 1;
    do {
      // Grow the side with the smaller product (both, at the start).
      if (pa <= pb) {
        if (ka == na || isDynamic(sizeA(ka)) ||
            llvm::MulOverflow(pa, sizeA(ka), pa))
          return std::nullopt;
        ++ka;
      }
      if (pb < pa) {
        if (kb == nb || isDynamic(sizeB(kb)) ||
            llvm::MulOverflow(pb, sizeB(kb), pb))
          return std::nullopt;
        ++kb;
      }
    } while (pa != pb);
    return std::make_pair(ka, kb);
  }

  /// The gcd chain over one group of static dimensions (see the class).
  void refine(ArrayRef<int64_t> ga, ArrayRef<int64_t> gb) {
    size_t ka = 0, kb = 0;
    int64_t ra = ga.empty() ? 1 : in[ga[0]];
    int64_t rb = gb.empty() ? 1 : out[gb[0]];
    while (ka < ga.size() && kb < gb.size()) {
      int64_t g = std::gcd(ra, rb);
      if (g == 1)
        break;
      int64_t factor = rule.addFactor(g, kParallel);
      inFactors[ga[ka]].push_back(factor);
      outFactors[gb[kb]].push_back(factor);
      ra /= g;
      rb /= g;
      if (ra == 1 && ++ka < ga.size())
        ra = in[ga[ka]];
      if (rb == 1 && ++kb < gb.size())
        rb = out[gb[kb]];
    }
    // What does not nest: each side's uncovered parts, replicated.
    if (ka < ga.size()) {
      inFactors[ga[ka]].push_back(rule.addFactor(ra, kReplicated));
      for (int64_t dim : ga.drop_front(ka + 1))
        inFactors[dim].push_back(rule.addFactor(in[dim], kReplicated));
    }
    if (kb < gb.size()) {
      outFactors[gb[kb]].push_back(rule.addFactor(rb, kReplicated));
      for (int64_t dim : gb.drop_front(kb + 1))
        outFactors[dim].push_back(rule.addFactor(out[dim], kReplicated));
    }
  }

  /// The group left between the static groups at both ends.
  void middle(ArrayRef<int64_t> ga, ArrayRef<int64_t> gb) {
    if (llvm::none_of(ga, [&](int64_t d) { return isDynamic(in[d]); }) &&
        llvm::none_of(gb, [&](int64_t d) { return isDynamic(out[d]); })) {
      refine(ga, gb);
      return;
    }
    if (ga.size() == 1 && !gb.empty()) {
      for (int64_t dim : gb) {
        int64_t size = gb.size() == 1 ? knownSize(out[dim], in[ga[0]])
                                      : out[dim];
        int64_t factor = rule.addFactor(size, kParallel);
        outFactors[dim].push_back(factor);
        inFactors[ga[0]].push_back(factor);
      }
      return;
    }
    if (gb.size() == 1 && !ga.empty()) {
      for (int64_t dim : ga) {
        int64_t factor = rule.addFactor(in[dim], kParallel);
        inFactors[dim].push_back(factor);
        outFactors[gb[0]].push_back(factor);
      }
      return;
    }
    unshared(ga, gb);
  }

  /// Every dimension its own replicated factor.
  void unshared(ArrayRef<int64_t> ga, ArrayRef<int64_t> gb) {
    for (int64_t dim : ga)
      inFactors[dim].push_back(rule.addFactor(in[dim], kReplicated));
    for (int64_t dim : gb)
      outFactors[dim].push_back(rule.addFactor(out[dim], kReplicated));
  }

  FactorRule finish() {
    rule.addOperand(std::move(inFactors));
    rule.addResult(std::move(outFactors));
    return std::move(rule);
  }

  ArrayRef<int64_t> in, out;
  FactorRule rule;
  TensorFactors inFactors, outFactors;
};

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The factors of attention over query `[b, sq, h, dk]`, key `[b, sk, g,
/// dk]` and value `[b, sk, g, dv]`. The query heads are `g * r`: query head
/// `h` reads key/value head `h / r`, so the kv-group is the major factor
/// and the GQA ratio `r = h / g` the minor one (omitted when it is 1).
struct AttentionFactors {
  int64_t b, sq, g, dk, sk, dv;
  std::optional<int64_t> r;

  /// `forward`: the query sequence, the ratio and the value width are
  /// parallel (nn.attention); otherwise reductions (nn.attention_grad: each
  /// is a dimension of some gradients and summed over in the others).
  AttentionFactors(FactorRule &rule, Value query, Value key, Value value,
                   bool forward) {
    ArrayRef<int64_t> q = shapeOf(query), k = shapeOf(key), v = shapeOf(value);
    FactorKind forwardOnly = forward ? kParallel : kReduction;
    b = rule.addFactor(knownSize(q[0], knownSize(k[0], v[0])), kParallel);
    sq = rule.addFactor(q[1], forwardOnly);
    int64_t heads = q[2], groups = knownSize(k[2], v[2]);
    g = rule.addFactor(groups, kParallel);
    if (isDynamic(heads) || isDynamic(groups))
      r = rule.addFactor(ShapedType::kDynamic, forwardOnly);
    else if (groups != 0 && heads != groups)
      r = rule.addFactor(heads / groups, forwardOnly);
    dk = rule.addFactor(knownSize(q[3], k[3]), kReplicated);
    sk = rule.addFactor(knownSize(k[1], v[1]), kReplicated);
    dv = rule.addFactor(v[3], forwardOnly);
  }

  DimFactors heads() const {
    DimFactors dim{g};
    if (r)
      dim.push_back(*r);
    return dim;
  }
  TensorFactors query() const { return {{b}, {sq}, heads(), {dk}}; }
  TensorFactors key() const { return {{b}, {sk}, {g}, {dk}}; }
  TensorFactors value() const { return {{b}, {sk}, {g}, {dv}}; }
  TensorFactors output() const { return {{b}, {sq}, heads(), {dv}}; }
  /// subtree_end indexes keys, positions queries.
  TensorFactors subtreeEnd() const { return {{b}, {sk}}; }
  TensorFactors positions() const { return {{b}, {sq}}; }
};

} // namespace

//===----------------------------------------------------------------------===//
// Element-wise ops, constants and optimizer updates: every dimension
// parallel, broadcast dimensions of operands map to no factor.
//===----------------------------------------------------------------------===//

#define NN_ELEMENTWISE_RULE(OpClass)                                           \
  FactorRule OpClass::getFactorRule() { return elementwiseRule(*this); }

/// An element-wise rule for an op linear in each of `groups`.
static FactorRule linearElementwiseRule(
    Operation *op, std::initializer_list<std::initializer_list<unsigned>>
                       groups) {
  FactorRule rule = elementwiseRule(op);
  for (std::initializer_list<unsigned> group : groups)
    rule.addLinearGroup(SmallVector<unsigned>(group));
  return rule;
}

// Sums are linear in both operands at once, a product in either, a quotient
// in its numerator.
FactorRule AddOp::getFactorRule() {
  return linearElementwiseRule(*this, {{0, 1}});
}
FactorRule SubOp::getFactorRule() {
  return linearElementwiseRule(*this, {{0, 1}});
}
FactorRule MulOp::getFactorRule() {
  return linearElementwiseRule(*this, {{0}, {1}});
}
FactorRule DivOp::getFactorRule() {
  return linearElementwiseRule(*this, {{0}});
}
FactorRule NegOp::getFactorRule() {
  return linearElementwiseRule(*this, {{0}});
}
// Picks from two partial sums of the same devices: a partial of the pick.
FactorRule SelectOp::getFactorRule() {
  return linearElementwiseRule(*this, {{1, 2}});
}
// The derivative of GELU is linear in the incoming gradient.
FactorRule GeluGradOp::getFactorRule() {
  return linearElementwiseRule(*this, {{0}});
}
NN_ELEMENTWISE_RULE(MinimumOp)
NN_ELEMENTWISE_RULE(MaximumOp)
NN_ELEMENTWISE_RULE(ExpOp)
NN_ELEMENTWISE_RULE(LogOp)
NN_ELEMENTWISE_RULE(SqrtOp)
NN_ELEMENTWISE_RULE(RsqrtOp)
NN_ELEMENTWISE_RULE(TanhOp)
NN_ELEMENTWISE_RULE(ReluOp)
NN_ELEMENTWISE_RULE(SiluOp)
NN_ELEMENTWISE_RULE(SinOp)
NN_ELEMENTWISE_RULE(CosOp)
NN_ELEMENTWISE_RULE(GeluOp)
NN_ELEMENTWISE_RULE(CompareOp)
NN_ELEMENTWISE_RULE(ClampOp)
NN_ELEMENTWISE_RULE(CastOp)
// The mask is a function of the element's global linear index: a shard's
// local op computes it from its global indices.
NN_ELEMENTWISE_RULE(DropoutOp)
NN_ELEMENTWISE_RULE(FillOp)
// A shard of an iota holds its global indices (the local op adds its
// offset along `dim`).
NN_ELEMENTWISE_RULE(IotaOp)
// Parameters, gradients and optimizer states are updated element by
// element; the 0-d step counter maps to no factor.
NN_ELEMENTWISE_RULE(SgdUpdateOp)
NN_ELEMENTWISE_RULE(AdamWUpdateOp)

#undef NN_ELEMENTWISE_RULE

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

/// Batch dimensions (broadcast like element-wise ops), M and N parallel, the
/// contracting K a reduction whose split leaves partial sums.
FactorRule MatmulOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs()),
                    out = shapeOf(getResult());
  ArrayRef<int64_t> batchShape = out.drop_back(2);
  SmallVector<int64_t> batch = addFactors(rule, batchShape);
  int64_t m = rule.addFactor(out[out.size() - 2], kParallel);
  int64_t n = rule.addFactor(out.back(), kParallel);
  bool transposeLhs = getTransposeLhs(), transposeRhs = getTransposeRhs();
  size_t lhsK = transposeLhs ? lhs.size() - 2 : lhs.size() - 1;
  size_t rhsK = transposeRhs ? rhs.size() - 1 : rhs.size() - 2;
  int64_t k = rule.addFactor(knownSize(lhs[lhsK], rhs[rhsK]), kReduction,
                             PartialKind::Sum);

  TensorFactors lhsFactors = broadcastTo(lhs.drop_back(2), batchShape, batch);
  lhsFactors.push_back({transposeLhs ? k : m});
  lhsFactors.push_back({transposeLhs ? m : k});
  TensorFactors rhsFactors = broadcastTo(rhs.drop_back(2), batchShape, batch);
  rhsFactors.push_back({transposeRhs ? n : k});
  rhsFactors.push_back({transposeRhs ? k : n});
  TensorFactors outFactors = oneEach(batch);
  outFactors.push_back({m});
  outFactors.push_back({n});
  rule.addOperand(std::move(lhsFactors));
  rule.addOperand(std::move(rhsFactors));
  rule.addResult(std::move(outFactors));
  // Linear in each operand: a partial times a whole is a partial.
  rule.addLinearGroup({0});
  rule.addLinearGroup({1});
  return rule;
}

/// Kept dimensions parallel; reduced ones reductions of the op's kind: `sum`
/// and `max` combine partial results with sum and max. `mean` is a sum too:
/// the local op of a split mean divides its partial sum by the global count
/// (the product of the global sizes of the reduced dimensions, not the
/// shard's), so the partial means add up to the mean. Every ReduceKind has
/// a partial form; one without (a product, say, as PartialKind has none)
/// would make its reduced dimensions replicated. Reduced dimensions kept as
/// 1 map to no factor.
FactorRule ReduceOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput());
  PartialKind partial = getKind() == ReduceKind::Max ? PartialKind::Max
                                                     : PartialKind::Sum;
  TensorFactors inFactors, outFactors;
  for (auto [dim, size] : llvm::enumerate(in)) {
    bool reduced = llvm::is_contained(getDims(), static_cast<int64_t>(dim));
    int64_t factor =
        rule.addFactor(size, reduced ? kReduction : kParallel, partial);
    inFactors.push_back({factor});
    if (!reduced)
      outFactors.push_back({factor});
    else if (getKeepDims())
      outFactors.push_back({});
  }
  rule.addOperand(std::move(inFactors));
  rule.addResult(std::move(outFactors));
  // A sum (or mean, a scaled sum) of partial sums is a partial sum.
  if (getKind() != ReduceKind::Max)
    rule.addLinearGroup({0});
  return rule;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// Every result dimension parallel; the input's dimensions map to the
/// result dimensions they become (none when they grow from 1), new
/// dimensions are result-only factors (the input is duplicated along them).
FactorRule BroadcastOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  SmallVector<int64_t> factors = addFactors(rule, out);
  SmallVector<int64_t> mapping;
  if (std::optional<ArrayRef<int64_t>> dims = getBroadcastDims())
    mapping.assign(dims->begin(), dims->end());
  else
    for (size_t dim = 0; dim < in.size(); ++dim)
      mapping.push_back(out.size() - in.size() + dim);
  TensorFactors inFactors;
  for (auto [size, outDim] : llvm::zip(in, mapping)) {
    if (size == 1 && out[outDim] != 1)
      inFactors.push_back({});
    else
      inFactors.push_back({factors[outDim]});
  }
  rule.addOperand(std::move(inFactors));
  rule.addResult(oneEach(factors));
  rule.addLinearGroup({0});
  return rule;
}

FactorRule ReshapeOp::getFactorRule() {
  FactorRule rule =
      ReshapeRefiner(shapeOf(getInput()), shapeOf(getResult())).build();
  rule.addLinearGroup({0});
  return rule;
}

/// The input's factors, permuted.
FactorRule TransposeOp::getFactorRule() {
  FactorRule rule;
  SmallVector<int64_t> factors = addFactors(rule, shapeOf(getInput()));
  TensorFactors outFactors;
  for (int64_t dim : getPermutation())
    outFactors.push_back({factors[dim]});
  rule.addOperand(oneEach(factors));
  rule.addResult(std::move(outFactors));
  rule.addLinearGroup({0});
  return rule;
}

/// A dimension the slice takes whole (offset 0, stride 1, full static size)
/// is parallel. Any other is replicated: a factor of the input's size in the
/// input, one of the slice's size in the result (the input is gathered
/// along it and the slice computed whole).
FactorRule SliceOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  TensorFactors inFactors, outFactors;
  for (auto [dim, size] : llvm::enumerate(in)) {
    if (getOffsets()[dim] == 0 && getStrides()[dim] == 1 && !isDynamic(size) &&
        getSizes()[dim] == size) {
      int64_t factor = rule.addFactor(size, kParallel);
      inFactors.push_back({factor});
      outFactors.push_back({factor});
      continue;
    }
    inFactors.push_back({rule.addFactor(size, kReplicated)});
    outFactors.push_back({rule.addFactor(out[dim], kReplicated)});
  }
  rule.addOperand(std::move(inFactors));
  rule.addResult(std::move(outFactors));
  rule.addLinearGroup({0});
  return rule;
}

/// The scatter of nn.slice: a dimension written whole is parallel. Along
/// any other, `grad` has a reduction(sum) factor (a shard of `grad` written
/// at its positions into zeros is a partial sum of the result; the local op
/// needs the shard's offset) and the result its own replicated factor.
FactorRule SliceGradOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> grad = shapeOf(getGrad()), out = shapeOf(getResult());
  TensorFactors gradFactors, outFactors;
  for (auto [dim, size] : llvm::enumerate(out)) {
    if (getOffsets()[dim] == 0 && getStrides()[dim] == 1 && !isDynamic(size) &&
        grad[dim] == size) {
      int64_t factor = rule.addFactor(size, kParallel);
      gradFactors.push_back({factor});
      outFactors.push_back({factor});
      continue;
    }
    gradFactors.push_back(
        {rule.addFactor(grad[dim], kReduction, PartialKind::Sum)});
    outFactors.push_back({rule.addFactor(size, kReplicated)});
  }
  rule.addOperand(std::move(gradFactors));
  rule.addResult(std::move(outFactors));
  rule.addLinearGroup({0});
  return rule;
}

/// Other dimensions parallel, shared by all; along `dim` every input and
/// the result have their own replicated factor (offering a split of the
/// joined dimension would need the pieces re-cut at the split points).
FactorRule ConcatOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> out = shapeOf(getResult());
  int64_t concatDim = static_cast<int64_t>(getDim());
  SmallVector<TensorFactors> inFactors(getInputs().size());
  TensorFactors outFactors;
  for (auto [dim, size] : llvm::enumerate(out)) {
    if (static_cast<int64_t>(dim) != concatDim) {
      int64_t factor = rule.addFactor(size, kParallel);
      for (TensorFactors &input : inFactors)
        input.push_back({factor});
      outFactors.push_back({factor});
      continue;
    }
    for (auto [input, value] : llvm::zip(inFactors, getInputs()))
      input.push_back({rule.addFactor(shapeOf(value)[dim], kReplicated)});
    outFactors.push_back({rule.addFactor(size, kReplicated)});
  }
  for (TensorFactors &input : inFactors)
    rule.addOperand(std::move(input));
  rule.addResult(std::move(outFactors));
  SmallVector<unsigned> all(getInputs().size());
  std::iota(all.begin(), all.end(), 0u);
  rule.addLinearGroup(all);
  return rule;
}

/// Other dimensions parallel, shared by input, indices and result. Along
/// `dim` the input is replicated (any index may read any row), while the
/// indices and the result share a parallel factor: each result element
/// reads through its own index.
FactorRule GatherOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), indices = shapeOf(getIndices());
  int64_t gatherDim = static_cast<int64_t>(getDim());
  TensorFactors inFactors, indexFactors;
  for (auto [dim, size] : llvm::enumerate(in)) {
    if (static_cast<int64_t>(dim) != gatherDim) {
      int64_t factor = rule.addFactor(knownSize(size, indices[dim]), kParallel);
      inFactors.push_back({factor});
      indexFactors.push_back({factor});
      continue;
    }
    inFactors.push_back({rule.addFactor(size, kReplicated)});
    indexFactors.push_back({rule.addFactor(indices[dim], kParallel)});
  }
  rule.addOperand(std::move(inFactors));
  rule.addOperand(indexFactors);
  rule.addResult(std::move(indexFactors));
  rule.addLinearGroup({0});
  return rule;
}

/// The scatter-add of nn.gather: other dimensions parallel; along `dim`,
/// `grad` and the indices share a reduction(sum) factor (each shard
/// scatter-adds its elements into zeros: partial sums) and the result has
/// its own parallel factor, which the operands lack: a device holding a
/// block of the result scatters the indices that fall in it (the local op
/// gets the block's start as `offset`), from the whole gradient.
FactorRule GatherGradOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> grad = shapeOf(getGrad()), out = shapeOf(getResult());
  int64_t scatterDim = static_cast<int64_t>(getDim());
  TensorFactors gradFactors, outFactors;
  for (auto [dim, size] : llvm::enumerate(out)) {
    if (static_cast<int64_t>(dim) != scatterDim) {
      int64_t factor = rule.addFactor(knownSize(size, grad[dim]), kParallel);
      gradFactors.push_back({factor});
      outFactors.push_back({factor});
      continue;
    }
    gradFactors.push_back(
        {rule.addFactor(grad[dim], kReduction, PartialKind::Sum)});
    outFactors.push_back({rule.addFactor(size, kParallel)});
  }
  rule.addOperand(gradFactors);
  rule.addOperand(std::move(gradFactors));
  if (getOffset())
    rule.addOperand({});
  rule.addResult(std::move(outFactors));
  rule.addLinearGroup({0});
  return rule;
}

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

FactorRule SoftmaxOp::getFactorRule() {
  return axisRule(*this, static_cast<int64_t>(getDim()));
}
FactorRule LogSoftmaxOp::getFactorRule() {
  return axisRule(*this, static_cast<int64_t>(getDim()));
}
FactorRule LayerNormOp::getFactorRule() {
  return normRule(*this, static_cast<int64_t>(getNormalizedDims()));
}
FactorRule RmsNormOp::getFactorRule() {
  return normRule(*this, static_cast<int64_t>(getNormalizedDims()));
}
FactorRule LayerNormGradOp::getFactorRule() {
  // Linear in the incoming gradient (the input and scale held fixed).
  FactorRule rule = normRule(*this, static_cast<int64_t>(getNormalizedDims()));
  rule.addLinearGroup({0});
  return rule;
}
FactorRule RmsNormGradOp::getFactorRule() {
  // Linear in the incoming gradient (the input and scale held fixed).
  FactorRule rule = normRule(*this, static_cast<int64_t>(getNormalizedDims()));
  rule.addLinearGroup({0});
  return rule;
}

//===----------------------------------------------------------------------===//
// Transformer building blocks
//===----------------------------------------------------------------------===//

/// `[batch..., seq, heads, head_dim]`: all parallel but head_dim, whose
/// features rotate in pairs `(i, i + d/2)` (replicated). The positions
/// `[batch..., seq]` map to the leading factors.
FactorRule RopeOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput());
  SmallVector<int64_t> factors = addFactors(rule, in.drop_back());
  factors.push_back(rule.addFactor(in.back(), kReplicated));
  rule.addOperand(oneEach(factors));
  rule.addOperand(oneEach(ArrayRef(factors).drop_back(2)));
  rule.addResult(oneEach(factors));
  return rule;
}

/// Vocabulary-parallel embedding: the table's vocab dimension is a
/// reduction(sum) factor. A device holding rows `[lo, hi)` looks up the ids
/// in its range and yields zeros for the others, so the results are partial
/// sums with exactly one non-zero term per id. The op itself leaves an
/// out-of-range id undefined, so the local op of a split is a masked lookup
/// (ids shifted by `lo`, zeros outside), not nn.embedding itself. The ids'
/// dimensions and each dimension of a row are parallel.
FactorRule EmbeddingOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> table = shapeOf(getTable());
  int64_t vocab = rule.addFactor(table[0], kReduction, PartialKind::Sum);
  SmallVector<int64_t> row = addFactors(rule, table.drop_front());
  SmallVector<int64_t> ids = addFactors(rule, shapeOf(getIds()));
  TensorFactors outFactors = oneEach(ids);
  llvm::append_range(outFactors, oneEach(row));
  TensorFactors tableFactors = {{vocab}};
  llvm::append_range(tableFactors, oneEach(row));
  rule.addOperand(std::move(tableFactors));
  rule.addOperand(oneEach(ids));
  if (getOffset())
    rule.addOperand({});
  rule.addResult(std::move(outFactors));
  rule.addLinearGroup({0});
  return rule;
}

/// Batch, kv-groups, GQA ratio, query sequence and value width parallel: a
/// split of the query sequence is context parallelism (each device attends
/// its queries to all keys; masks need the queries' global positions, which
/// the local op gets as explicit positions). The key sequence is replicated
/// (the softmax runs over all keys) and so is head_dim (q.k feeds the
/// softmax, so partial dot products cannot be combined after it).
FactorRule AttentionOp::getFactorRule() {
  FactorRule rule;
  AttentionFactors f(rule, getQuery(), getKey(), getValue(), /*forward=*/true);
  rule.addOperand(f.query());
  rule.addOperand(f.key());
  rule.addOperand(f.value());
  if (getSubtreeEnd())
    rule.addOperand(f.subtreeEnd());
  if (getPositions())
    rule.addOperand(f.positions());
  rule.addResult(f.output());
  return rule;
}

/// Batch and kv-groups are parallel. The query sequence and the GQA ratio
/// are dimensions of dquery but summed over in dkey and dvalue; the value
/// width is a dimension of dvalue but contracted (`grad . value`) into
/// dquery and dkey: reductions (sum), so a split of the query sequence
/// (context parallelism) leaves dquery split and dkey, dvalue partial sums
/// of the local queries' contributions. The key sequence and head_dim are
/// replicated as in the forward op (the softmax needs all keys).
FactorRule AttentionGradOp::getFactorRule() {
  FactorRule rule;
  AttentionFactors f(rule, getQuery(), getKey(), getValue(),
                     /*forward=*/false);
  rule.addOperand(f.output());
  rule.addOperand(f.query());
  rule.addOperand(f.key());
  rule.addOperand(f.value());
  if (getSubtreeEnd())
    rule.addOperand(f.subtreeEnd());
  if (getPositions())
    rule.addOperand(f.positions());
  rule.addResult(f.query());
  rule.addResult(f.key());
  rule.addResult(f.value());
  rule.addLinearGroup({0});
  return rule;
}

/// The loss is `sum over tokens of weight * loss(token) / normalizer`, the
/// normaliser fixed (an attribute or an operand): a split of the tokens
/// leaves partial sums, so the token dimensions are reduction(sum) factors
/// (the 0-d result has no dimension). The classes are replicated (the
/// logsumexp runs over all of them); a vocabulary-parallel cross-entropy is
/// a decomposition into ops, not this rule.
FactorRule CrossEntropyOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> logits = shapeOf(getLogits());
  ArrayRef<int64_t> labels = shapeOf(getLabels());
  SmallVector<int64_t> tokens;
  for (auto [size, labelSize] : llvm::zip(logits.drop_back(), labels))
    tokens.push_back(rule.addFactor(knownSize(size, labelSize), kReduction,
                                    PartialKind::Sum));
  int64_t classes = rule.addFactor(logits.back(), kReplicated);
  TensorFactors logitFactors = oneEach(tokens);
  logitFactors.push_back({classes});
  rule.addOperand(std::move(logitFactors));
  rule.addOperand(oneEach(tokens));
  if (getWeights())
    rule.addOperand(oneEach(tokens));
  if (getNormalizerValue())
    rule.addOperand({});
  rule.addResult({});
  return rule;
}

/// Per token the gradient is independent: tokens parallel, classes
/// replicated (softmax), the 0-d grad and normaliser map to no dimension.
FactorRule CrossEntropyGradOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> logits = shapeOf(getLogits());
  ArrayRef<int64_t> labels = shapeOf(getLabels());
  SmallVector<int64_t> tokens;
  for (auto [size, labelSize] : llvm::zip(logits.drop_back(), labels))
    tokens.push_back(rule.addFactor(knownSize(size, labelSize), kParallel));
  int64_t classes = rule.addFactor(logits.back(), kReplicated);
  TensorFactors logitFactors = oneEach(tokens);
  logitFactors.push_back({classes});
  rule.addOperand({});
  rule.addOperand(logitFactors);
  rule.addOperand(oneEach(tokens));
  if (getWeights())
    rule.addOperand(oneEach(tokens));
  if (getNormalizerValue())
    rule.addOperand({});
  rule.addResult(std::move(logitFactors));
  rule.addLinearGroup({0});
  return rule;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// Every leading dimension parallel (rows pick their top k alone); the last
/// one replicated, in the input (a row's top k needs the whole row) and in
/// the result (its own size, k).
FactorRule TopkOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput());
  SmallVector<int64_t> leading =
      addFactors(rule, in.drop_back(), kParallel);
  TensorFactors inFactors = oneEach(leading), outFactors = oneEach(leading);
  inFactors.push_back({rule.addFactor(in.back(), kReplicated)});
  outFactors.push_back(
      {rule.addFactor(shapeOf(getResult()).back(), kReplicated)});
  rule.addOperand(std::move(inFactors));
  rule.addResult(std::move(outFactors));
  return rule;
}

/// Replicated: a slot counts every entry before it, of all tokens (the
/// routing of a token split is a different computation, which expert
/// parallelism lowers to exchanges).
FactorRule MoeRouteOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> experts = shapeOf(getExperts());
  TensorFactors in, slots, counts;
  for (int64_t size : experts)
    in.push_back({rule.addFactor(size, kReplicated)});
  for (int64_t size : experts)
    slots.push_back({rule.addFactor(size, kReplicated)});
  counts.push_back(
      {rule.addFactor(shapeOf(getCounts())[0], kReplicated)});
  rule.addOperand(std::move(in));
  if (Value hosts = getHosts()) {
    TensorFactors placement;
    placement.push_back({rule.addFactor(shapeOf(hosts)[0], kReplicated)});
    rule.addOperand(std::move(placement));
  }
  // (A share's route is a local program's: its table whole everywhere.)
  if (Value shares = getShares()) {
    TensorFactors table;
    for (int64_t size : shapeOf(shares))
      table.push_back({rule.addFactor(size, kReplicated)});
    rule.addOperand(std::move(table));
    rule.addOperand({});
  }
  rule.addResult(std::move(slots));
  rule.addResult(std::move(counts));
  return rule;
}

/// Replicated: a plan reads every row and layer of the forecast (every
/// rank makes the same one).
FactorRule MoePlanOp::getFactorRule() {
  FactorRule rule;
  TensorFactors in, hosts, lookup;
  for (int64_t size : shapeOf(getForecast()))
    in.push_back({rule.addFactor(size, kReplicated)});
  hosts.push_back({rule.addFactor(shapeOf(getHosts())[0], kReplicated)});
  lookup.push_back({rule.addFactor(shapeOf(getLookup())[0], kReplicated)});
  rule.addOperand(std::move(in));
  // The previous lookup, whole on every device like the results.
  if (getPrevious())
    rule.addOperand({{rule.addFactor(shapeOf(getPrevious())[0], kReplicated)}});
  rule.addResult(std::move(hosts));
  rule.addResult(std::move(lookup));
  return rule;
}

/// Tokens split: each shard scatters its own tokens into the whole buffer,
/// a partial sum of it (the slots are global rows). The width is parallel;
/// the choices and the buffer rows replicated (a row belongs to whichever
/// token the routing put there). Linear in the input and in the weights.
FactorRule MoeDispatchOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), slots = shapeOf(getSlots()),
                    out = shapeOf(getResult());
  int64_t t = rule.addFactor(knownSize(in[0], slots[0]), kReduction,
                             PartialKind::Sum);
  int64_t h = rule.addFactor(knownSize(in[1], out[1]), kParallel);
  int64_t k = rule.addFactor(slots[1], kReplicated);
  int64_t n = rule.addFactor(out[0], kReplicated);
  rule.addOperand({{t}, {h}});
  rule.addOperand({{t}, {k}});
  if (getWeights())
    rule.addOperand({{t}, {k}});
  rule.addResult({{n}, {h}});
  rule.addLinearGroup({0});
  if (getWeights())
    rule.addLinearGroup({2});
  return rule;
}

/// Tokens and width parallel (a token gathers its rows from the whole
/// buffer); the buffer rows and the choices replicated. Linear in the
/// buffer and in the weights.
FactorRule MoeCombineOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), slots = shapeOf(getSlots()),
                    out = shapeOf(getResult());
  int64_t n = rule.addFactor(in[0], kReplicated);
  int64_t h = rule.addFactor(knownSize(in[1], out[1]), kParallel);
  int64_t t = rule.addFactor(knownSize(slots[0], out[0]), kParallel);
  int64_t k = rule.addFactor(slots[1], kReplicated);
  rule.addOperand({{n}, {h}});
  rule.addOperand({{t}, {k}});
  if (getWeights())
    rule.addOperand({{t}, {k}});
  rule.addResult({{t}, {h}});
  rule.addLinearGroup({0});
  if (getWeights())
    rule.addLinearGroup({2});
  return rule;
}

/// Tokens and choices parallel, the width a reduction (partial dot
/// products add up), the buffer rows replicated. Linear in either float
/// operand.
FactorRule MoeSlotDotOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> buffer = shapeOf(getBuffer()), tokens = shapeOf(getTokens()),
                    slots = shapeOf(getSlots());
  int64_t n = rule.addFactor(buffer[0], kReplicated);
  int64_t h = rule.addFactor(knownSize(buffer[1], tokens[1]), kReduction,
                             PartialKind::Sum);
  int64_t t = rule.addFactor(knownSize(tokens[0], slots[0]), kParallel);
  int64_t k = rule.addFactor(slots[1], kParallel);
  rule.addOperand({{n}, {h}});
  rule.addOperand({{t}, {h}});
  rule.addOperand({{t}, {k}});
  rule.addResult({{t}, {k}});
  rule.addLinearGroup({0});
  rule.addLinearGroup({1});
  return rule;
}

/// The blocks of a grouped matmul (or its weight gradient) as a factor:
/// without blocks, the buffer rows and the experts are one replicated factor
/// each (which rows an expert owns depends on all the counts before it).
/// With B blocks, each splits into a parallel factor of B blocks, shared by
/// the rows and the experts (block b's rows belong to block b's experts
/// whatever the counts), and a replicated one inside the block: split along
/// the blocks, each device multiplies its own rows by its own experts
/// (expert parallelism; nn.moe_route ... blocks = B). Returns the block
/// factor, or -1 where there is none: one block, or a size of the rows or
/// of the experts that is dynamic (in any tensor that has the dimension: a
/// local op must know its blocks from static sizes) or that the blocks do
/// not divide.
static int64_t addBlockFactor(FactorRule &rule, ArrayRef<int64_t> rowSizes,
                              ArrayRef<int64_t> expertSizes, int64_t blocks) {
  if (blocks <= 1)
    return -1;
  for (int64_t size : llvm::concat<const int64_t>(rowSizes, expertSizes))
    if (isDynamic(size) || size % blocks != 0)
      return -1;
  return rule.addFactor(blocks, kParallel);
}

/// The factors of a dimension of `size` that the block factor `block` (or
/// none, -1) splits: the block factor, then a replicated one for the rest.
static DimFactors addBlockedFactors(FactorRule &rule, int64_t block,
                                    int64_t size) {
  if (block < 0)
    return {rule.addFactor(size, kReplicated)};
  return {block,
          rule.addFactor(size / rule.getFactor(block).size, kReplicated)};
}

/// The buffer rows and the experts replicated, but for their blocks
/// (addBlockFactor); the contraction a reduction, the output width
/// parallel. Linear in the input and in the weight.
FactorRule GroupedMatmulOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), weight = shapeOf(getWeight()),
                    out = shapeOf(getResult());
  bool transposed = getTransposeRhs();
  int64_t rows = knownSize(in[0], out[0]);
  int64_t experts = knownSize(weight[0], shapeOf(getCounts())[0]);
  int64_t block = addBlockFactor(rule, {in[0], out[0]},
                                 {weight[0], shapeOf(getCounts())[0]},
                                 getBlocks());
  DimFactors n = addBlockedFactors(rule, block, rows);
  int64_t k = rule.addFactor(knownSize(in[1], weight[transposed ? 2 : 1]),
                             kReduction, PartialKind::Sum);
  int64_t f = rule.addFactor(knownSize(weight[transposed ? 1 : 2], out[1]),
                             kParallel);
  DimFactors e = addBlockedFactors(rule, block, experts);
  rule.addOperand({n, {k}});
  rule.addOperand(transposed ? TensorFactors{e, {f}, {k}}
                             : TensorFactors{e, {k}, {f}});
  rule.addOperand({e});
  rule.addResult({n, {f}});
  rule.addLinearGroup({0});
  rule.addLinearGroup({1});
  return rule;
}

/// Both matrix widths parallel; the buffer rows and the experts as for the
/// grouped matmul. Linear in either buffer.
FactorRule GroupedMatmulGradOp::getFactorRule() {
  FactorRule rule;
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs()),
                    out = shapeOf(getResult());
  int64_t rows = knownSize(lhs[0], rhs[0]);
  int64_t block =
      addBlockFactor(rule, {lhs[0], rhs[0]},
                     {out[0], shapeOf(getCounts())[0]}, getBlocks());
  DimFactors n = addBlockedFactors(rule, block, rows);
  int64_t a = rule.addFactor(knownSize(lhs[1], out[1]), kParallel);
  int64_t b = rule.addFactor(knownSize(rhs[1], out[2]), kParallel);
  DimFactors e = addBlockedFactors(rule, block, out[0]);
  rule.addOperand({n, {a}});
  rule.addOperand({n, {b}});
  rule.addOperand({e});
  rule.addResult({e, {a}, {b}});
  rule.addLinearGroup({0});
  rule.addLinearGroup({1});
  return rule;
}

//===- ArenaPlan.cpp - Static memory plan of a local program --------------===//

#include "codegen/Common/ArenaPlan.h"

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <map>

using namespace mlir;
using namespace loom;
using namespace loom::codegen;

bool loom::codegen::isView(Operation *op) {
  return isa<nn::ReshapeOp, hspmd::AnnotateOp, hspmd::WaitOp>(op);
}

StringRef loom::codegen::getCppElementType(Type type) {
  if (type.isF32())
    return "float";
  if (type.isF64())
    return "double";
  if (type.isInteger(64))
    return "int64_t";
  if (type.isInteger(32))
    return "int32_t";
  if (type.isInteger(1))
    return "bool";
  return {};
}

std::string loom::codegen::formatIntList(ArrayRef<int64_t> values) {
  return "{" +
         llvm::join(llvm::map_range(
                        values, [](int64_t v) { return std::to_string(v); }),
                    ", ") +
         "}";
}

namespace {

int64_t alignUp(int64_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

/// The bytes of a static tensor of a supported element type, or failure
/// after a diagnostic at `where`.
FailureOr<int64_t> getTensorBytes(Type type, Location where, StringRef what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      getCppElementType(tensor.getElementType()).empty())
    return emitError(where)
           << what << " has type " << type
           << "; code generation needs static tensors of f32, f64, i64, i32 "
              "or i1";
  Type element = tensor.getElementType();
  int64_t size = element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8;
  return tensor.getNumElements() * size;
}

/// First-fit allocation over free byte ranges.
class FreeList {
public:
  int64_t allocate(int64_t bytes) {
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < bytes)
        continue;
      int64_t offset = it->first, size = it->second;
      free.erase(it);
      if (size > bytes)
        free[offset + bytes] = size - bytes;
      return offset;
    }
    // Grow at the end (merging with a free range that ends there).
    int64_t offset = top;
    if (!free.empty()) {
      auto last = std::prev(free.end());
      if (last->first + last->second == top) {
        offset = last->first;
        free.erase(last);
      }
    }
    top = offset + bytes;
    return offset;
  }
  void release(int64_t offset, int64_t bytes) {
    auto [it, inserted] = free.emplace(offset, bytes);
    (void)inserted;
    auto next = std::next(it);
    if (next != free.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free.erase(next);
    }
    if (it != free.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free.erase(it);
      }
    }
  }
  int64_t getTop() const { return top; }

private:
  std::map<int64_t, int64_t> free;
  int64_t top = 0;
};

bool isElementwiseUpdate(Operation *op) {
  return isa<nn::SgdUpdateOp, nn::AdamWUpdateOp>(op);
}

} // namespace

FailureOr<ArenaPlan> loom::codegen::planArena(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitError()
           << "code generation needs a function of one "
              "block; @"
           << func.getSymName() << " has " << func.getBody().getBlocks().size();
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  ArenaPlan plan;

  // Program positions; the return is last.
  DenseMap<Operation *, int64_t> position;
  int64_t end = 0;
  for (Operation &op : body)
    position[&op] = end++;

  // Roots: a view's root is its operand's root.
  DenseMap<Value, Value> rootOf;
  auto root = [&](Value value) {
    auto it = rootOf.find(value);
    return it == rootOf.end() ? value : it->second;
  };
  for (Operation &op : body)
    if (isView(&op))
      rootOf[op.getResult(0)] = root(op.getOperand(0));

  // Last use of every root, over its views.
  DenseMap<Value, int64_t> lastUse;
  for (Operation &op : body)
    for (Value operand : op.getOperands()) {
      int64_t &last = lastUse[root(operand)];
      last = std::max(last, position[&op]);
    }

  // Updates of arguments, in place where possible.
  unsigned numArgs = func.getNumArguments();
  DenseMap<Value, unsigned> tiedArg; // result value -> argument
  std::vector<int> argUpdatedBy(numArgs, -1);
  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    auto updates = func.getResultAttrOfType<IntegerAttr>(
        r, nn::NNDialect::getUpdatesAttrName());
    if (!updates)
      continue;
    int64_t target = updates.getInt();
    if (target < 0 || target >= numArgs ||
        func.getArgument(target).getType() != func.getResultTypes()[r])
      return func.emitError() << "result #" << r << " of @" << func.getSymName()
                              << " updates argument #" << target
                              << ", which does not exist or has another type";
    Value result = ret.getOperand(r);
    BlockArgument arg = func.getArgument(target);
    Operation *def = result.getDefiningOp();
    bool inPlace =
        def && !isView(def) && isElementwiseUpdate(def) &&
        !tiedArg.count(result) && argUpdatedBy[target] < 0 &&
        llvm::any_of(def->getOperands(), [&](Value v) { return v == arg; }) &&
        lastUse.lookup(arg) <= position[def] &&
        llvm::count(ret.getOperands(), result) == 1;
    argUpdatedBy[target] = r;
    if (inPlace) {
      tiedArg[result] = target;
      ++plan.inPlaceUpdates;
    } else {
      plan.copiesBack.push_back({r, static_cast<unsigned>(target)});
    }
  }

  // Names: arguments by role, values by op.
  auto argName = [&](unsigned i) -> std::string {
    if (auto name = func.getArgAttrOfType<StringAttr>(
            i, nn::NNDialect::getNameAttrName()))
      return name.getValue().str();
    static const std::pair<llvm::StringLiteral, const char *> roles[] = {
        {nn::NNDialect::getParamAttrName(), "param"},
        {nn::NNDialect::getStateAttrName(), "state"},
        {nn::NNDialect::getStepAttrName(), "step"},
        {nn::NNDialect::getDataAttrName(), "data"}};
    for (auto [attr, prefix] : roles)
      if (func.getArgAttr(i, attr))
        return std::string(prefix) + "_" + std::to_string(i);
    return "arg_" + std::to_string(i);
  };

  int64_t persistentTop = 0;
  // Names are C++ identifiers, unique in the program (C++ keywords and the
  // class's own members get a trailing underscore).
  // clang-format off
  llvm::StringSet<> used = {
      // The class's own members and functions.
      "arena", "arg_offsets", "arg_bytes", "result_offsets", "result_bytes",
      "loss_result", "grad_norm_result", "step", "forward", "backward", "update", "run", "main",
      "loom", "std",
      // C++20 keywords and alternative tokens.
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor",
      "bool", "break", "case", "catch", "char", "char8_t", "char16_t",
      "char32_t", "class", "compl", "concept", "const", "consteval",
      "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long",
      "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
      "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof",
      "static", "static_assert", "static_cast", "struct", "switch", "template",
      "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "xor", "xor_eq",
      // Macros and names the standard headers may define.
      "assert", "errno", "NULL", "EOF", "stdin", "stdout", "stderr",
      "offsetof", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
      "uint16_t", "uint32_t", "uint64_t", "size_t", "INT64_MIN", "INT64_MAX"};
  // clang-format on
  used.insert(func.getSymName());
  auto uniqueName = [&](std::string name) {
    for (char &c : name)
      if (!llvm::isAlnum(c) && c != '_')
        c = '_';
    // Communicators, plans and requests are comm_<n>, plan_<n> and
    // request_<n>.
    if (name.empty() || llvm::isDigit(name.front()) ||
        llvm::StringRef(name).starts_with("comm_") ||
        llvm::StringRef(name).starts_with("plan_") ||
        llvm::StringRef(name).starts_with("request_"))
      name = "v_" + name;
    std::string candidate = name;
    for (int n = 1; used.contains(candidate); ++n)
      candidate = name + "_" + std::to_string(n);
    used.insert(candidate);
    return candidate;
  };
  auto addBuffer = [&](int64_t bytes, std::string name, bool persistent,
                       int64_t offset) {
    Buffer buffer;
    buffer.bytes = bytes;
    buffer.name = uniqueName(std::move(name));
    buffer.persistent = persistent;
    buffer.offset = bytes ? offset : -1;
    plan.buffers.push_back(std::move(buffer));
    return static_cast<unsigned>(plan.buffers.size() - 1);
  };

  for (BlockArgument arg : func.getArguments()) {
    FailureOr<int64_t> bytes =
        getTensorBytes(arg.getType(), arg.getLoc(),
                       "argument #" + std::to_string(arg.getArgNumber()) +
                           " of @" + func.getSymName().str());
    if (failed(bytes))
      return failure();
    unsigned id =
        addBuffer(*bytes, argName(arg.getArgNumber()), true, persistentTop);
    if (*bytes)
      persistentTop += alignUp(*bytes);
    plan.bufferOf[arg] = id;
    plan.argBuffers.push_back(id);
  }

  // Results that are neither updates nor computed in place: persistent.
  DenseMap<Value, unsigned> resultBufferOf;
  plan.resultBuffers.assign(func.getNumResults(), 0);
  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    Value value = ret.getOperand(r);
    if (tiedArg.count(value))
      continue;
    if (llvm::any_of(plan.copiesBack,
                     [&](auto copy) { return copy.first == r; }))
      continue;
    FailureOr<int64_t> bytes = getTensorBytes(
        value.getType(), ret.getLoc(),
        "result #" + std::to_string(r) + " of @" + func.getSymName().str());
    if (failed(bytes))
      return failure();
    std::string name = func.getResultAttr(r, nn::NNDialect::getLossAttrName())
                           ? std::string("loss")
                           : "result_" + std::to_string(r);
    unsigned id = addBuffer(*bytes, name, true, persistentTop);
    if (*bytes)
      persistentTop += alignUp(*bytes);
    plan.resultBuffers[r] = id;
    // The op that computes it writes there directly, unless the value is an
    // argument, a view, or returned before.
    Operation *def = value.getDefiningOp();
    if (def && !isView(def) && !resultBufferOf.count(value) &&
        !isa<BlockArgument>(value))
      resultBufferOf[value] = id;
    else
      plan.resultCopies.push_back({r, value});
  }
  plan.persistentBytes = persistentTop;

  // Transient values, first fit in program order.
  FreeList arena;
  llvm::StringMap<unsigned> counters;
  std::map<int64_t, SmallVector<unsigned>> releaseAt;
  for (Operation &op : body) {
    if (&op == ret)
      break;
    int64_t here = position[&op];
    if (isView(&op)) {
      Value result = op.getResult(0);
      FailureOr<int64_t> bytes =
          getTensorBytes(result.getType(), op.getLoc(), "the result");
      if (failed(bytes))
        return failure();
      plan.bufferOf[result] = plan.bufferOf.lookup(root(result));
    }
    // Views take no bytes of their own; other ops get their results'.
    for (OpResult result : op.getResults()) {
      if (isView(&op))
        break;
      FailureOr<int64_t> bytes =
          getTensorBytes(result.getType(), op.getLoc(),
                         "result #" + std::to_string(result.getResultNumber()));
      if (failed(bytes))
        return failure();
      if (auto it = tiedArg.find(result); it != tiedArg.end()) {
        plan.bufferOf[result] = plan.argBuffers[it->second];
        plan.resultBuffers[argUpdatedBy[it->second]] =
            plan.argBuffers[it->second];
        continue;
      }
      if (auto it = resultBufferOf.find(result); it != resultBufferOf.end()) {
        plan.bufferOf[result] = it->second;
        continue;
      }
      std::string mnemonic = op.getName().stripDialect().str();
      std::string name = mnemonic + "_" + std::to_string(counters[mnemonic]++);
      plan.transientTotal += alignUp(*bytes);
      unsigned id = addBuffer(*bytes, name, false, 0);
      if (*bytes) {
        plan.buffers[id].offset = arena.allocate(alignUp(*bytes));
        // Returned values (copied back at the end) live to the end.
        int64_t last = lastUse.lookup(result);
        if (last < here)
          last = here;
        if (last != position[ret])
          releaseAt[last].push_back(id);
      }
      plan.bufferOf[result] = id;
    }
    if (auto it = releaseAt.find(here); it != releaseAt.end())
      for (unsigned id : it->second)
        arena.release(plan.buffers[id].offset, alignUp(plan.buffers[id].bytes));
  }
  plan.transientPeak = arena.getTop();
  // Copied-back results: their value's buffer, unless that is an argument
  // another copy back overwrites first (a returned parameter feeding
  // another's update): then a snapshot taken before any copy back.
  llvm::DenseSet<unsigned> overwritten;
  for (auto [r, arg] : plan.copiesBack)
    overwritten.insert(plan.argBuffers[arg]);
  for (auto [r, arg] : plan.copiesBack) {
    Value value = ret.getOperand(r);
    unsigned source = plan.bufferOf.lookup(value);
    plan.resultBuffers[r] = source;
    if (!overwritten.contains(source) || source == plan.argBuffers[arg])
      continue;
    int64_t bytes = plan.buffers[source].bytes;
    unsigned id = addBuffer(bytes, "previous_" + plan.buffers[source].name,
                            true, persistentTop);
    persistentTop += alignUp(bytes);
    plan.resultBuffers[r] = id;
    plan.resultCopies.push_back({r, value});
  }
  plan.persistentBytes = persistentTop;
  // Transient offsets follow the persistent part.
  for (Buffer &buffer : plan.buffers)
    if (!buffer.persistent && buffer.offset >= 0)
      buffer.offset += plan.persistentBytes;
  return plan;
}

//===- LowerToCalls.cpp - Local programs to the target-neutral call layer -===//
//
// See Passes.td (LowerToCallsPass) for what the layer looks like. Each op
// becomes one call; which runtime function a call names and how fields are
// initialised is left to the target's emitter.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/ArenaPlan.h"
#include "codegen/Common/CallLayerAttrs.h"
#include "codegen/Common/KernelContract.h"
#include "codegen/Passes.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/hspmd/IR/HSPMDTransfers.h"
#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cstdio>
#include <map>
#include <optional>
#include <set>

namespace loom::codegen {
#define GEN_PASS_DEF_LOWERTOCALLSPASS
#include "codegen/Passes.h.inc"
} // namespace loom::codegen

using namespace mlir;
using namespace loom;
using namespace loom::codegen;

namespace {

/// The most entries of a list the runtimes take as a shape (kMaxRank of
/// runtime/kernels/HostKernels.h).
constexpr int64_t kMaxCallRank = 8;

/// Builds the class of one local program.
class ProgramLowering {
public:
  ProgramLowering(func::FuncOp func, func::FuncOp global,
                  ArrayRef<int64_t> devices,
                  std::set<std::vector<int64_t>> &allGroups)
      : func(func), global(global), devices(devices), allGroups(allGroups),
        context(func.getContext()), builder(context) {
    // Collectives run over the function's group, which is more than the
    // devices running this function where the group's devices hold blocks
    // of different shapes (hspmd.devices).
    if (auto group = func->getAttrOfType<hspmd::DeviceGroupAttr>(
            hspmd::HSPMDDialect::getGroupAttrName()))
      groupDevices.assign(group.getDevices().begin(), group.getDevices().end());
    else
      groupDevices.assign(devices.begin(), devices.end());
  }

  LogicalResult lower(OpBuilder &moduleBuilder);

private:
  LogicalResult lowerOp(Operation *op);
  /// The tables that describe the program's arguments and results to a
  /// program library (runtime/host/ProgramLibrary.h).
  LogicalResult addInterfaceTables();
  /// The field holding `value`'s buffer, read in the current method (null
  /// for a value of no bytes).
  Value bufferRef(Value value);
  void addTensorArgs(Value value, SmallVectorImpl<Value> &operands,
                     SmallVectorImpl<Attribute> &args);
  LogicalResult addAttributeArg(Operation *op, StringRef name,
                                SmallVectorImpl<Attribute> &args);
  /// The communicator field of a collective's sub-group.
  FailureOr<Value> commRef(Operation *op, ArrayRef<int64_t> mesh,
                           ArrayRef<int64_t> axes);
  /// The communicator field of `group` (the op's, when empty) as a mesh
  /// of `mesh`, sub-groups over `axes`; with `mpiOnly`, the host
  /// runtime's MPI communicator on every target (no library communicator:
  /// a group spanning several programs, which may be of other targets).
  FailureOr<Value> commRef(Operation *op, ArrayRef<int64_t> group,
                           ArrayRef<int64_t> mesh, ArrayRef<int64_t> axes,
                           bool mpiOnly = false);
  FailureOr<Value> exchangeRef(hspmd::ExchangeOp op);
  /// The request field of a started collective (made on first use), which
  /// its start fills and its wait completes.
  Value requestRef(Operation *start);
  /// A call at the location of the op being lowered (the function's
  /// otherwise), so that a target's diagnostics point at the op.
  void call(StringRef callee, ArrayRef<Value> operands,
            ArrayRef<Attribute> args);
  std::optional<Location> opLoc;
  Attribute opaque(const Twine &text) {
    return emitc::OpaqueAttr::get(context, text.str());
  }
  Attribute operandIndex(unsigned i) { return builder.getIndexAttr(i); }
  void addField(StringRef name, Type type, NamedAttrList attrs,
                Attribute initial = {});
  /// A field holding `values` as an int64 array ({-1} when empty).
  void addInt64Table(StringRef name, SmallVector<int64_t> values);
  Type pointerTo(Type element);
  SmallVector<int64_t> groupOf(Operation *op) const;

  func::FuncOp func;
  /// The function `func` specialises (itself for one device).
  func::FuncOp global;
  /// The devices that run this program, and those of its group.
  SmallVector<int64_t> devices, groupDevices;
  std::set<std::vector<int64_t>> &allGroups;
  MLIRContext *context;
  OpBuilder builder;
  ArenaPlan plan;
  emitc::ClassOp cls;
  /// Fields made so far, by key.
  std::map<std::string, std::string> commFields;
  unsigned numExchanges = 0;
  llvm::DenseMap<Operation *, std::string> requestFields;
  std::map<std::string, Type> fieldTypes;
};

/// The layout core's code of an element type (runtime/layout/Collectives.h,
/// DType), or -1.
static int64_t dtypeCode(Type type) {
  if (type.isF32())
    return static_cast<int64_t>(layout::DType::F32);
  if (type.isF64())
    return static_cast<int64_t>(layout::DType::F64);
  if (type.isBF16())
    return static_cast<int64_t>(layout::DType::BF16);
  if (type.isInteger(1))
    return static_cast<int64_t>(layout::DType::I1);
  if (type.isInteger(32))
    return static_cast<int64_t>(layout::DType::I32);
  if (type.isInteger(64))
    return static_cast<int64_t>(layout::DType::I64);
  return -1;
}

LogicalResult ProgramLowering::addInterfaceTables() {
  // Per value: its global rank and shape, then its layout's table (length
  // first), as runtime/host/ProgramLibrary.h reads them.
  auto describe = [&](Type localType, Type globalType,
                      hspmd::UnionAttr layout, SmallVector<int64_t> &table,
                      SmallVector<int64_t> &dtypes) -> LogicalResult {
    auto local = dyn_cast<RankedTensorType>(localType);
    auto whole = dyn_cast<RankedTensorType>(globalType);
    // A value the C ABI cannot move is marked (rank -1): creating the
    // program refuses it.
    if (!local || !whole || !whole.hasStaticShape() ||
        dtypeCode(local.getElementType()) < 0) {
      dtypes.push_back(-1);
      table.push_back(-1);
      return success();
    }
    dtypes.push_back(dtypeCode(local.getElementType()));
    table.push_back(whole.getRank());
    llvm::append_range(table, whole.getShape());
    layout::Layout core;
    if (layout) {
      core = hspmd::toLayoutCore(layout);
    } else {
      // No layout: every device of the group holds the whole value.
      SmallVector<layout::Axis> axes;
      if (groupDevices.size() > 1)
        axes.push_back(layout::Axis::duplicate(groupDevices.size()));
      core = layout::Layout::group(
          std::vector<int64_t>(groupDevices.begin(), groupDevices.end()),
          std::vector<layout::Axis>(axes.begin(), axes.end()));
    }
    std::vector<int64_t> encoded = layout::encodeLayout(core);
    table.push_back(static_cast<int64_t>(encoded.size()));
    table.append(encoded.begin(), encoded.end());
    return success();
  };
  StringRef globalLayout = hspmd::HSPMDDialect::getGlobalLayoutAttrName();
  StringRef ownLayout = hspmd::HSPMDDialect::getLayoutAttrName();
  SmallVector<int64_t> argTable, argDtypes, argRoles, resultTable,
      resultDtypes;
  SmallVector<std::string> names;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto layout = func.getArgAttrOfType<hspmd::UnionAttr>(i, globalLayout);
    if (!layout)
      layout = global.getArgAttrOfType<hspmd::UnionAttr>(i, ownLayout);
    if (failed(describe(func.getArgument(i).getType(),
                        global.getArgument(i).getType(), layout, argTable,
                        argDtypes)))
      return failure();
    int64_t role = 0;
    if (func.getArgAttr(i, nn::NNDialect::getParamAttrName()))
      role = 1;
    else if (func.getArgAttr(i, nn::NNDialect::getStateAttrName()))
      role = 2;
    else if (func.getArgAttr(i, nn::NNDialect::getDataAttrName()))
      role = 3;
    else if (func.getArgAttr(i, nn::NNDialect::getStepAttrName()))
      role = 4;
    argRoles.push_back(role);
    auto name = func.getArgAttrOfType<StringAttr>(i, nn::NNDialect::getNameAttrName());
    if (!name)
      name = global.getArgAttrOfType<StringAttr>(i, nn::NNDialect::getNameAttrName());
    names.push_back(name ? name.getValue().str() : "");
  }
  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    auto layout = func.getResultAttrOfType<hspmd::UnionAttr>(r, globalLayout);
    if (!layout)
      layout = global.getResultAttrOfType<hspmd::UnionAttr>(r, ownLayout);
    if (failed(describe(func.getResultTypes()[r], global.getResultTypes()[r],
                        layout, resultTable, resultDtypes)))
      return failure();
  }
  addInt64Table("arg_layouts", argTable);
  addInt64Table("arg_dtypes", argDtypes);
  addInt64Table("arg_roles", argRoles);
  addInt64Table("result_layouts", resultTable);
  addInt64Table("result_dtypes", resultDtypes);
  std::string initial = "{";
  for (auto [i, name] : llvm::enumerate(names)) {
    initial += i ? ", \"" : "\"";
    for (char c : name) {
      unsigned char byte = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        initial += '\\';
        initial += c;
      } else if (byte < 0x20 || byte >= 0x7f) {
        // Octal, three digits: nothing that follows can extend it.
        char escape[5];
        std::snprintf(escape, sizeof(escape), "\\%03o", byte);
        initial += escape;
      } else {
        initial += c;
      }
    }
    initial += "\"";
  }
  if (names.empty())
    initial += "nullptr";
  initial += "}";
  addField("arg_names",
           emitc::ArrayType::get({std::max<int64_t>(names.size(), 1)},
                                 emitc::PointerType::get(emitc::OpaqueType::get(
                                     context, "const char"))),
           {}, opaque(initial));
  return success();
}

void ProgramLowering::addInt64Table(StringRef name,
                                    SmallVector<int64_t> values) {
  // (An empty table would be a zero-length array: -1 stands for none.)
  if (values.empty())
    values.push_back(-1);
  auto type = emitc::ArrayType::get({static_cast<int64_t>(values.size())},
                                    builder.getI64Type());
  auto tensorType = RankedTensorType::get(
      {static_cast<int64_t>(values.size())}, builder.getI64Type());
  addField(name, type, {},
           DenseIntElementsAttr::get(tensorType, ArrayRef<int64_t>(values)));
}

Type ProgramLowering::pointerTo(Type element) {
  if (element.isInteger(1))
    return emitc::PointerType::get(emitc::OpaqueType::get(context, "bool"));
  return emitc::PointerType::get(element);
}

SmallVector<int64_t> ProgramLowering::groupOf(Operation *op) const {
  if (auto group = op->getAttrOfType<hspmd::DeviceGroupAttr>(
          hspmd::HSPMDDialect::getGroupAttrName()))
    return SmallVector<int64_t>(group.getDevices());
  return groupDevices;
}

void ProgramLowering::addField(StringRef name, Type type, NamedAttrList attrs,
                               Attribute initial) {
  OpBuilder::InsertionGuard guard(builder);
  // Fields come before every method.
  Block &body = cls.getBody().front();
  auto methods = body.getOps<emitc::FuncOp>();
  if (methods.empty())
    builder.setInsertionPointToEnd(&body);
  else
    builder.setInsertionPoint(*methods.begin());
  auto field = emitc::FieldOp::create(builder, func.getLoc(),
                                      builder.getStringAttr(name),
                                      TypeAttr::get(type), initial);
  for (NamedAttribute attr : attrs)
    field->setAttr(attr.getName(), attr.getValue());
  fieldTypes[name.str()] = type;
}

Value ProgramLowering::bufferRef(Value value) {
  const Buffer &buffer = plan.buffers[plan.bufferOf.lookup(value)];
  if (buffer.offset < 0)
    return {};
  Type type = fieldTypes.at(buffer.name);
  return emitc::GetFieldOp::create(
      builder, func.getLoc(), type,
      FlatSymbolRefAttr::get(context, buffer.name));
}

void ProgramLowering::addTensorArgs(Value value,
                                    SmallVectorImpl<Value> &operands,
                                    SmallVectorImpl<Attribute> &args) {
  if (Value ref = bufferRef(value)) {
    args.push_back(operandIndex(operands.size()));
    operands.push_back(ref);
  } else {
    // A tensor of no elements: a typed null, so overloads still resolve.
    Type element = cast<RankedTensorType>(value.getType()).getElementType();
    args.push_back(
        opaque("static_cast<" + getCppElementType(element) + " *>(nullptr)"));
  }
  args.push_back(opaque(
      formatIntList(cast<RankedTensorType>(value.getType()).getShape())));
}

LogicalResult
ProgramLowering::addAttributeArg(Operation *op, StringRef name,
                                 SmallVectorImpl<Attribute> &args) {
  Attribute attr = op->getAttr(name);
  if (!attr) {
    // Absent: a flag is false; other kinds have an "absent" value.
    args.push_back(opaque("loom::kAbsent"));
    return success();
  }
  if (isa<UnitAttr>(attr)) {
    args.push_back(opaque("true"));
  } else if (auto flag = dyn_cast<BoolAttr>(attr)) {
    args.push_back(opaque(flag.getValue() ? "true" : "false"));
  } else if (auto number = dyn_cast<FloatAttr>(attr)) {
    args.push_back(builder.getF64FloatAttr(number.getValueAsDouble()));
  } else if (auto number = dyn_cast<IntegerAttr>(attr)) {
    args.push_back(builder.getI64IntegerAttr(number.getInt()));
  } else if (auto list = dyn_cast<DenseI64ArrayAttr>(attr)) {
    args.push_back(opaque(formatIntList(list.asArrayRef())));
  } else if (auto list = dyn_cast<ArrayAttr>(attr);
             list && llvm::all_of(list, llvm::IsaPred<IntegerAttr>)) {
    SmallVector<int64_t> values;
    for (Attribute element : list)
      values.push_back(cast<IntegerAttr>(element).getInt());
    args.push_back(opaque(formatIntList(values)));
  } else {
    // Enumerations: their keyword as printed.
    std::string text;
    llvm::raw_string_ostream os(text);
    attr.print(os, /*elideType=*/true);
    StringRef keyword = text;
    size_t open = keyword.find('<'), close = keyword.rfind('>');
    if (open != StringRef::npos && close != StringRef::npos && close > open)
      keyword = keyword.slice(open + 1, close);
    // `#nn<gelu_approximation none>`: the case is the last word.
    keyword = keyword.trim().rsplit(' ').second.empty()
                  ? keyword.trim()
                  : keyword.trim().rsplit(' ').second;
    if (keyword.empty() || !llvm::all_of(keyword, [](char c) {
          return llvm::isAlnum(c) || c == '_';
        }))
      return op->emitError() << "code generation cannot pass attribute '"
                             << name << "' (" << attr << ") to a kernel";
    args.push_back(opaque("\"" + keyword + "\""));
  }
  return success();
}

FailureOr<Value> ProgramLowering::commRef(Operation *op, ArrayRef<int64_t> mesh,
                                          ArrayRef<int64_t> axes) {
  return commRef(op, {}, mesh, axes);
}

FailureOr<Value> ProgramLowering::commRef(Operation *op,
                                          ArrayRef<int64_t> devices,
                                          ArrayRef<int64_t> mesh,
                                          ArrayRef<int64_t> axes,
                                          bool mpiOnly) {
  SmallVector<int64_t> group =
      devices.empty() ? groupOf(op) : SmallVector<int64_t>(devices);
  // The runtimes take a mesh, its axes (and a permute's lists) as shapes.
  if (mesh.size() > static_cast<size_t>(kMaxCallRank))
    return op->emitOpError()
           << "runs over a mesh of " << mesh.size()
           << " axes; the runtimes take at most " << kMaxCallRank;
  int64_t size = 1;
  for (int64_t n : mesh)
    size *= n;
  if (size != static_cast<int64_t>(group.size()))
    return op->emitOpError() << "runs over a mesh of " << size
                             << " devices but its group has " << group.size();
  std::string key = formatIntList(group) + formatIntList(mesh) +
                    formatIntList(axes) + (mpiOnly ? "mpi" : "");
  auto it = commFields.find(key);
  if (it == commFields.end()) {
    std::string name = "comm_" + std::to_string(commFields.size());
    NamedAttrList attrs;
    attrs.append(kCommAttr, UnitAttr::get(context));
    if (mpiOnly)
      attrs.append(kMpiOnlyAttr, UnitAttr::get(context));
    attrs.append(kDevicesAttr, builder.getDenseI64ArrayAttr(group));
    attrs.append(kMeshAttr, builder.getDenseI64ArrayAttr(mesh));
    attrs.append(kAxesAttr, builder.getDenseI64ArrayAttr(axes));
    addField(name, emitc::OpaqueType::get(context, kCommAttr), attrs);
    it = commFields.emplace(key, name).first;
    for (ArrayRef<int64_t> indices :
         hspmd::getCollectiveSubgroups(mesh, axes)) {
      std::vector<int64_t> members;
      for (int64_t index : indices)
        members.push_back(group[index]);
      allGroups.insert(members);
    }
  }
  return emitc::GetFieldOp::create(builder, op->getLoc(),
                                   fieldTypes.at(it->second),
                                   FlatSymbolRefAttr::get(context, it->second))
      .getResult();
}

Value ProgramLowering::requestRef(Operation *start) {
  std::string &name = requestFields[start];
  if (name.empty()) {
    name = "request_" + std::to_string(requestFields.size() - 1);
    NamedAttrList attrs;
    attrs.append(kRequestAttr, UnitAttr::get(context));
    addField(name, emitc::OpaqueType::get(context, kRequestAttr), attrs);
  }
  // The field's address: the runtimes fill and complete it in place.
  Type type = fieldTypes.at(name);
  Value field = emitc::GetFieldOp::create(builder, start->getLoc(), type,
                                          FlatSymbolRefAttr::get(context, name))
                    .getResult();
  return field;
}

FailureOr<Value> ProgramLowering::exchangeRef(hspmd::ExchangeOp op) {
  hspmd::UnionAttr from = op.getSource(), to = op.getTarget();
  ArrayRef<int64_t> shape = op.getShape();
  auto type = cast<RankedTensorType>(op.getInput().getType());
  int64_t elementBytes =
      type.getElementType().isInteger(1)
          ? 1
          : type.getElementType().getIntOrFloatBitWidth() / 8;
  std::string why;
  FailureOr<hspmd::ExchangePlan> exchange =
      hspmd::planExchange(from, to, shape, elementBytes, why);
  if (failed(exchange))
    return op.emitError() << "cannot plan the exchange: " << why;
  std::set<int64_t> deviceSet;
  for (int64_t d : from.getAllDevices())
    deviceSet.insert(d);
  for (int64_t d : to.getAllDevices())
    deviceSet.insert(d);
  SmallVector<int64_t> members(deviceSet.begin(), deviceSet.end());
  // The serialised plan (runtime/host/Program.h, ExchangePlan).
  SmallVector<int64_t> data;
  int64_t rank = shape.size();
  data.push_back(rank);
  llvm::append_range(data, shape);
  data.push_back(from.getRelation() == hspmd::UnionRelation::Partial);
  data.push_back(members.size());
  auto appendShard = [&](std::optional<hspmd::Shard> shard) {
    data.push_back(shard.has_value());
    for (int64_t d = 0; d < rank; ++d)
      data.push_back(shard ? shard->offsets[d] : 0);
    for (int64_t d = 0; d < rank; ++d)
      data.push_back(shard ? shard->sizes[d] : 0);
  };
  for (int64_t device : members) {
    data.push_back(device);
    appendShard(hspmd::getShard(from, shape, device));
    appendShard(hspmd::getShard(to, shape, device));
  }
  data.push_back(exchange->reductions.size());
  for (const hspmd::Reduction &reduction : exchange->reductions) {
    llvm::append_range(data, reduction.offsets);
    llvm::append_range(data, reduction.sizes);
    data.push_back(reduction.devices.size());
    llvm::append_range(data, reduction.devices);
  }
  data.push_back(exchange->transfers.size());
  for (const hspmd::Transfer &transfer : exchange->transfers) {
    data.push_back(transfer.source);
    data.push_back(transfer.destination);
    llvm::append_range(data, transfer.offsets);
    llvm::append_range(data, transfer.sizes);
  }
  std::string name = "plan_" + std::to_string(numExchanges++);
  NamedAttrList attrs;
  attrs.append(kExchangeAttr, builder.getDenseI64ArrayAttr(data));
  attrs.append(kDevicesAttr, builder.getDenseI64ArrayAttr(members));
  addField(name, emitc::OpaqueType::get(context, kExchangeAttr), attrs);
  allGroups.insert(std::vector<int64_t>(members.begin(), members.end()));
  return emitc::GetFieldOp::create(builder, op->getLoc(), fieldTypes.at(name),
                                   FlatSymbolRefAttr::get(context, name))
      .getResult();
}

void ProgramLowering::call(StringRef callee, ArrayRef<Value> operands,
                           ArrayRef<Attribute> args) {
  emitc::CallOpaqueOp::create(builder, opLoc ? *opLoc : func.getLoc(),
                              TypeRange(), callee, operands,
                              builder.getArrayAttr(args));
}

LogicalResult ProgramLowering::lowerOp(Operation *op) {
  // A wait is a view of its start's buffer that completes it first.
  if (auto wait = dyn_cast<hspmd::WaitOp>(op)) {
    Operation *start = wait.getPending().getDefiningOp();
    call("loom.comm.wait", {requestRef(start)}, {operandIndex(0)});
    return success();
  }
  if (isView(op))
    return success();
  SmallVector<Value> operands;
  SmallVector<Attribute> args;
  auto results = [&] {
    for (Value result : op->getResults())
      addTensorArgs(result, operands, args);
  };
  // Operands: an absent optional one is `nullptr, {}`, a variadic group of
  // several two braced lists (the pointers, by field name, and the shapes).
  auto group = [&](ValueRange values, bool variadic) {
    if (!variadic && values.size() == 1)
      return addTensorArgs(values.front(), operands, args);
    if (!variadic && values.empty()) {
      args.push_back(opaque("nullptr"));
      args.push_back(opaque("{}"));
      return;
    }
    SmallVector<std::string> pointers, shapes;
    for (Value value : values) {
      const Buffer &buffer = plan.buffers[plan.bufferOf.lookup(value)];
      pointers.push_back(buffer.offset < 0 ? "nullptr" : buffer.name);
      shapes.push_back(
          formatIntList(cast<RankedTensorType>(value.getType()).getShape()));
    }
    args.push_back(opaque("{" + llvm::join(pointers, ", ") + "}"));
    args.push_back(opaque("{" + llvm::join(shapes, ", ") + "}"));
  };
  const KernelContract *contract =
      lookupKernelContract(op->getName().getStringRef());
  auto inputs = [&] {
    auto segments = dyn_cast_or_null<DenseI32ArrayAttr>(
        op->getInherentAttr(OpTrait::AttrSizedOperandSegments<
                                void>::getOperandSegmentSizeAttr())
            .value_or(Attribute()));
    if (contract) {
      // The op's ODS operand groups, as its kernel contract lists them:
      // from the segment sizes, or, without them, at most one optional or
      // variadic group holds what the fixed ones leave.
      ArrayRef<KernelTensor> tensors = contract->operands;
      unsigned variable = llvm::count_if(tensors, [](const KernelTensor &t) {
        return t.optional || t.variadic;
      });
      unsigned rest = op->getNumOperands() - (tensors.size() - variable);
      unsigned next = 0;
      for (auto [i, tensor] : llvm::enumerate(tensors)) {
        unsigned size = segments ? segments.asArrayRef()[i]
                        : tensor.optional || tensor.variadic ? rest
                                                             : 1;
        group(op->getOperands().slice(next, size), tensor.variadic);
        next += size;
      }
      return;
    }
    if (segments) {
      unsigned next = 0;
      for (int32_t size : segments.asArrayRef()) {
        group(op->getOperands().slice(next, size), size > 1);
        next += size;
      }
      return;
    }
    for (Value operand : op->getOperands())
      addTensorArgs(operand, operands, args);
  };

  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense || !dense.isSplat()) {
      if (dense && dense.getNumElements() == 0)
        return success();
      return op->emitError() << "code generation supports splat tensor "
                                "constants only";
    }
    results();
    Type element = dense.getElementType();
    double value =
        isa<FloatType>(element)
            ? dense.getSplatValue<APFloat>().convertToDouble()
            : static_cast<double>(dense.getSplatValue<APInt>().getSExtValue());
    args.push_back(builder.getF64FloatAttr(value));
    call("loom.kernel.fill", operands, args);
    return success();
  }

  if (op->getDialect() && op->getDialect()->getNamespace() ==
                              nn::NNDialect::getDialectNamespace()) {
    // Results, operands, then attributes by name: the op's kernel contract.
    if (!contract)
      return op->emitOpError() << "has no kernel contract";
    results();
    inputs();
    for (const KernelAttr &attr : contract->attributes)
      if (failed(addAttributeArg(op, attr.name, args)))
        return failure();
    call(("loom.kernel." + op->getName().stripDialect()).str(), operands, args);
    return success();
  }

  auto collective = [&](ArrayRef<int64_t> mesh, ArrayRef<int64_t> axes,
                        ArrayRef<Attribute> extra) -> LogicalResult {
    results();
    inputs();
    FailureOr<Value> comm = commRef(op, mesh, axes);
    if (failed(comm))
      return failure();
    args.push_back(operandIndex(operands.size()));
    operands.push_back(*comm);
    llvm::append_range(args, extra);
    call(("loom.comm." + op->getName().stripDialect()).str(), operands, args);
    return success();
  };
  auto keyword = [&](hspmd::ReductionKind kind) {
    return opaque("\"" + hspmd::stringifyReductionKind(kind) + "\"");
  };
  auto i64 = [&](int64_t v) -> Attribute {
    return builder.getI64IntegerAttr(v);
  };

  if (hspmd::isGlobalViewCollective(op))
    return op->emitError() << "is in the global view; code generation needs "
                              "local programs (run --hspmd-specialize first)";
  // The runtimes' collectives move f32, f64 and i64; a local slice (a copy
  // on the device, by element size) takes any element type.
  if (op->getDialect() &&
      op->getDialect()->getNamespace() ==
          hspmd::HSPMDDialect::getDialectNamespace() &&
      !isa<hspmd::LocalSliceOp>(op))
    for (Value value : op->getOperands()) {
      Type element = cast<RankedTensorType>(value.getType()).getElementType();
      if (!element.isF32() && !element.isF64() && !element.isInteger(64))
        return op->emitOpError()
               << "moves " << element
               << " elements; the runtimes' collectives move f32, f64 and "
                  "i64 (cast before and after)";
    }
  if (auto reduce = dyn_cast<hspmd::AllReduceOp>(op))
    return collective(reduce.getMesh(), reduce.getAxes(),
                      {keyword(reduce.getReduction())});
  if (auto gather = dyn_cast<hspmd::AllGatherOp>(op))
    return collective(gather.getMesh(), gather.getAxes(),
                      {i64(gather.getDim())});
  if (auto scatter = dyn_cast<hspmd::ReduceScatterOp>(op))
    return collective(scatter.getMesh(), scatter.getAxes(),
                      {i64(scatter.getDim()), keyword(scatter.getReduction())});
  if (auto all = dyn_cast<hspmd::AllToAllOp>(op))
    return collective(all.getMesh(), all.getAxes(),
                      {i64(all.getSplitDim()), i64(all.getConcatDim())});
  // The buffer, then the row indices it names.
  if (auto sparse = dyn_cast<hspmd::SparseReduceScatterOp>(op))
    return collective(sparse.getMesh(), sparse.getAxes(), {});
  if (auto sparse = dyn_cast<hspmd::SparseAllGatherOp>(op))
    return collective(sparse.getMesh(), sparse.getAxes(), {});
  // The collective's arguments, then the request its wait completes.
  if (auto start = dyn_cast<hspmd::SparseAllGatherStartOp>(op)) {
    results();
    inputs();
    FailureOr<Value> comm = commRef(op, start.getMesh(), start.getAxes());
    if (failed(comm))
      return failure();
    args.push_back(operandIndex(operands.size()));
    operands.push_back(*comm);
    args.push_back(operandIndex(operands.size()));
    operands.push_back(requestRef(op));
    call("loom.comm.sparse_all_gather_start", operands, args);
    return success();
  }
  if (auto sparse = dyn_cast<hspmd::SparseExchangeOp>(op)) {
    // One sub-group of every device named, in order (the host runtime's
    // MPI communicator: the devices run several programs, perhaps of other
    // targets, and the device targets stage the rows through host memory),
    // and their blocks.
    results();
    inputs();
    int64_t members = sparse.getAmong().size();
    FailureOr<Value> comm = commRef(op, sparse.getAmong(), {members},
                                    {int64_t(0)}, /*mpiOnly=*/true);
    if (failed(comm))
      return failure();
    args.push_back(operandIndex(operands.size()));
    operands.push_back(*comm);
    args.push_back(opaque(formatIntList(sparse.getBlocks())));
    args.push_back(opaque(sparse.getGather() ? "true" : "false"));
    call("loom.comm.sparse_exchange", operands, args);
    return success();
  }
  if (auto permute = dyn_cast<hspmd::PermuteOp>(op)) {
    // The permutation and the sizes of the axes it permutes: each rank
    // finds its source and destination from its place in the sub-group.
    SmallVector<int64_t> sizes;
    for (int64_t axis : permute.getAxes())
      sizes.push_back(permute.getMesh()[axis]);
    return collective(permute.getMesh(), permute.getAxes(),
                      {opaque(formatIntList(permute.getPerm())),
                       opaque(formatIntList(sizes))});
  }
  if (auto slice = dyn_cast<hspmd::LocalSliceOp>(op))
    return collective(slice.getMesh(), slice.getAxes(), {i64(slice.getDim())});
  if (auto make = dyn_cast<hspmd::MakePartialOp>(op))
    return collective(make.getMesh(), make.getAxes(),
                      {i64(make.getDim().value_or(-1))});
  if (auto index = dyn_cast<hspmd::AxisIndexOp>(op)) {
    results();
    FailureOr<Value> comm = commRef(op, index.getMesh(), index.getAxes());
    if (failed(comm))
      return failure();
    args.push_back(operandIndex(operands.size()));
    operands.push_back(*comm);
    args.push_back(i64(index.getStride()));
    args.push_back(i64(index.getBase()));
    call("loom.comm.axis_index", operands, args);
    return success();
  }
  if (auto exchange = dyn_cast<hspmd::ExchangeOp>(op)) {
    results();
    inputs();
    FailureOr<Value> plan = exchangeRef(exchange);
    if (failed(plan))
      return failure();
    args.push_back(operandIndex(operands.size()));
    operands.push_back(*plan);
    call("loom.comm.exchange", operands, args);
    return success();
  }
  return op->emitOpError() << "has no lowering to the call layer";
}

LogicalResult ProgramLowering::lower(OpBuilder &moduleBuilder) {
  FailureOr<ArenaPlan> planned = planArena(func);
  if (failed(planned))
    return failure();
  plan = std::move(*planned);
  Location loc = func.getLoc();
  cls = emitc::ClassOp::create(moduleBuilder, loc, func.getSymName(),
                               /*final_specifier=*/false);
  Block *body = new Block();
  cls.getBody().push_back(body);
  builder.setInsertionPointToStart(body);
  cls->setAttr(kDevicesAttr, builder.getDenseI64ArrayAttr(devices));
  if (auto specializes = func->getAttr(hspmd::HSPMDDialect::getSpecializesAttrName()))
    cls->setAttr(kSpecializesAttr, specializes);

  // The arena and its buffers.
  NamedAttrList arenaAttrs;
  arenaAttrs.append(kArenaAttr, UnitAttr::get(context));
  arenaAttrs.append(kBytesAttr,
                    builder.getI64IntegerAttr(plan.getArenaBytes()));
  arenaAttrs.append(kPersistentBytesAttr,
                    builder.getI64IntegerAttr(plan.persistentBytes));
  arenaAttrs.append(kTransientPeakAttr,
                    builder.getI64IntegerAttr(plan.transientPeak));
  addField("arena", emitc::OpaqueType::get(context, kArenaAttr), arenaAttrs);
  // Element types per buffer, from the values that live there.
  std::vector<Type> elementOf(plan.buffers.size());
  for (auto [value, id] : plan.bufferOf)
    elementOf[id] = cast<RankedTensorType>(value.getType()).getElementType();
  for (auto [r, id] : llvm::enumerate(plan.resultBuffers))
    if (!elementOf[id])
      elementOf[id] =
          cast<RankedTensorType>(func.getResultTypes()[r]).getElementType();
  for (auto [id, buffer] : llvm::enumerate(plan.buffers)) {
    if (buffer.offset < 0 || fieldTypes.count(buffer.name))
      continue;
    NamedAttrList attrs;
    attrs.append(kOffsetAttr, builder.getI64IntegerAttr(buffer.offset));
    attrs.append(kBytesAttr, builder.getI64IntegerAttr(buffer.bytes));
    addField(buffer.name, pointerTo(elementOf[id]), attrs);
  }
  // The driver's tables.
  auto table = [&](StringRef name, ArrayRef<unsigned> ids, bool offsets) {
    SmallVector<int64_t> values;
    for (unsigned id : ids)
      values.push_back(offsets ? plan.buffers[id].offset
                               : plan.buffers[id].bytes);
    addInt64Table(name, values);
  };
  table("arg_offsets", plan.argBuffers, true);
  table("arg_bytes", plan.argBuffers, false);
  table("result_offsets", plan.resultBuffers, true);
  table("result_bytes", plan.resultBuffers, false);
  int64_t loss = -1;
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (func.getResultAttr(r, nn::NNDialect::getLossAttrName()))
      loss = r;
  addField("loss_result", builder.getI64Type(), {},
           builder.getI64IntegerAttr(loss));
  int64_t gradNorm = -1;
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (func.getResultAttr(r, nn::NNDialect::getGradNormAttrName()))
      gradNorm = r;
  addField("grad_norm_result", builder.getI64Type(), {},
           builder.getI64IntegerAttr(gradNorm));
  if (failed(addInterfaceTables()))
    return failure();

  // Phases.
  Block &block = func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  Operation *lossDef =
      loss >= 0 ? ret.getOperand(loss).getDefiningOp() : nullptr;
  Operation *firstUpdate = nullptr;
  for (Operation &op : block)
    if (isa<nn::SgdUpdateOp, nn::AdamWUpdateOp>(op)) {
      firstUpdate = &op;
      break;
    }
  SmallVector<std::string> phases;
  auto phaseOf = [&](Operation *op, bool &pastLoss, bool &pastUpdate) {
    if (op == firstUpdate)
      pastUpdate = true;
    if (pastUpdate)
      return std::string("update");
    if (!lossDef)
      return std::string("run");
    std::string phase = pastLoss ? "backward" : "forward";
    if (op == lossDef)
      pastLoss = true;
    return phase;
  };
  bool pastLoss = false, pastUpdate = false;
  std::string current;
  emitc::FuncOp method;
  auto voidType = FunctionType::get(context, {}, {});
  auto startMethod = [&](StringRef name) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(body);
    method = emitc::FuncOp::create(builder, loc, name, voidType);
    Block *entry = method.addEntryBlock();
    builder.setInsertionPointToEnd(entry);
    emitc::ReturnOp::create(builder, loc, Value());
    phases.push_back(name.str());
  };
  for (Operation &op : block) {
    if (&op == ret)
      break;
    std::string phase = phaseOf(&op, pastLoss, pastUpdate);
    if (phase != current) {
      current = phase;
      startMethod(phase);
    }
    builder.setInsertionPoint(method.getBody().front().getTerminator());
    opLoc = op.getLoc();
    if (failed(lowerOp(&op)))
      return failure();
    opLoc.reset();
  }
  // Results returned by copy, then updates copied back, at the end of the
  // step.
  if (!plan.resultCopies.empty() || !plan.copiesBack.empty()) {
    if (current.empty()) {
      startMethod("run");
      current = "run";
    }
    builder.setInsertionPoint(method.getBody().front().getTerminator());
    auto copy = [&](Value dst, Value src, Value shapeOf) {
      if (!dst || !src)
        return; // nothing to copy
      SmallVector<Value> operands;
      SmallVector<Attribute> args;
      std::string shape =
          formatIntList(cast<RankedTensorType>(shapeOf.getType()).getShape());
      for (Value v : {dst, src}) {
        if (v) {
          args.push_back(operandIndex(operands.size()));
          operands.push_back(v);
        } else {
          args.push_back(opaque("nullptr"));
        }
        args.push_back(opaque(shape));
      }
      call("loom.kernel.copy", operands, args);
    };
    for (auto [r, value] : plan.resultCopies) {
      const Buffer &dst = plan.buffers[plan.resultBuffers[r]];
      if (dst.offset < 0)
        continue;
      Value dstRef =
          emitc::GetFieldOp::create(builder, loc, fieldTypes.at(dst.name),
                                    FlatSymbolRefAttr::get(context, dst.name));
      copy(dstRef, bufferRef(value), value);
    }
    for (auto [r, argIndex] : plan.copiesBack) {
      Value arg = func.getArgument(argIndex);
      Value value = ret.getOperand(r);
      unsigned source = plan.resultBuffers[r];
      if (source == plan.bufferOf.lookup(arg) ||
          plan.buffers[source].offset < 0)
        continue;
      const Buffer &buffer = plan.buffers[source];
      Value sourceRef = emitc::GetFieldOp::create(
          builder, loc, fieldTypes.at(buffer.name),
          FlatSymbolRefAttr::get(context, buffer.name));
      copy(bufferRef(arg), sourceRef, value);
    }
  }
  // step(): the phases in order.
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(body);
    auto step = emitc::FuncOp::create(builder, loc, "step", voidType);
    Block *entry = step.addEntryBlock();
    builder.setInsertionPointToEnd(entry);
    for (const std::string &phase : phases)
      emitc::CallOp::create(builder, loc, phase, TypeRange(), ValueRange());
    emitc::ReturnOp::create(builder, loc, Value());
  }
  return success();
}

struct LowerToCallsPass
    : loom::codegen::impl::LowerToCallsPassBase<LowerToCallsPass> {
  using LowerToCallsPassBase::LowerToCallsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The entry and its programs.
    func::FuncOp global;
    if (!entry.empty()) {
      global = module.lookupSymbol<func::FuncOp>(entry);
      if (!global) {
        module.emitError() << "no function @" << entry << " to lower";
        return signalPassFailure();
      }
    } else {
      SmallVector<func::FuncOp> found;
      for (func::FuncOp func : module.getOps<func::FuncOp>()) {
        if (func.isExternal() ||
            func->hasAttr(hspmd::HSPMDDialect::getSpecializesAttrName()) ||
            func->hasAttr(hspmd::HSPMDDialect::getPartOfAttrName()))
          continue;
        for (unsigned r = 0; r < func.getNumResults(); ++r)
          if (func.getResultAttr(r, nn::NNDialect::getLossAttrName())) {
            found.push_back(func);
            break;
          }
      }
      if (found.size() != 1) {
        module.emitError() << "--loom-lower-to-calls needs entry=NAME: "
                           << found.size()
                           << " functions have an nn.loss result";
        return signalPassFailure();
      }
      global = found.front();
    }
    SmallVector<std::pair<func::FuncOp, SmallVector<int64_t>>> programs;
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      auto of = func->getAttrOfType<FlatSymbolRefAttr>(
          hspmd::HSPMDDialect::getSpecializesAttrName());
      if (!of || of.getValue() != global.getSymName())
        continue;
      auto group = func->getAttrOfType<hspmd::DeviceGroupAttr>(
          hspmd::HSPMDDialect::getGroupAttrName());
      if (!group) {
        func.emitError() << "specialises @" << global.getSymName()
                         << " but has no hspmd.group";
        return signalPassFailure();
      }
      SmallVector<int64_t> running(group.getDevices());
      if (auto subset = func->getAttrOfType<DenseI64ArrayAttr>(
              hspmd::HSPMDDialect::getDevicesAttrName()))
        running.assign(subset.asArrayRef().begin(), subset.asArrayRef().end());
      programs.push_back({func, running});
    }
    if (programs.empty())
      programs.push_back({global, {0}});
    // Every device runs one program.
    std::set<int64_t> seen;
    for (auto &[func, devices] : programs)
      for (int64_t device : devices)
        if (!seen.insert(device).second) {
          func.emitError() << "device " << device
                           << " is in the groups of two programs of @"
                           << global.getSymName()
                           << " (merge overlapping groups first)";
          return signalPassFailure();
        }

    std::set<std::vector<int64_t>> allGroups;
    OpBuilder builder(module.getContext());
    builder.setInsertionPointToEnd(module.getBody());
    SmallVector<Attribute> programNames;
    for (auto &[func, devices] : programs) {
      ProgramLowering lowering(func, global, devices, allGroups);
      if (failed(lowering.lower(builder)))
        return signalPassFailure();
      programNames.push_back(FlatSymbolRefAttr::get(func.getSymNameAttr()));
    }
    // The groups every rank opens at start-up, in one order for all: by
    // size, then by devices.
    std::vector<std::vector<int64_t>> groups(allGroups.begin(),
                                             allGroups.end());
    llvm::sort(groups, [](const auto &a, const auto &b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    SmallVector<Attribute> groupAttrs;
    for (const auto &group : groups)
      if (group.size() > 1)
        groupAttrs.push_back(builder.getDenseI64ArrayAttr(group));
    module->setAttr(kProgramsAttr, builder.getArrayAttr(programNames));
    module->setAttr(kGroupsAttr, builder.getArrayAttr(groupAttrs));
    // Only the call layer remains.
    for (Operation &op : llvm::make_early_inc_range(module.getOps()))
      if (isa<func::FuncOp>(op))
        op.erase();
  }
};

} // namespace

//===- Emission.cpp - Final emission of the call layer for a target -------===//

#include "codegen/Common/Emission.h"
#include "codegen/Common/ArenaPlan.h"
#include "codegen/Common/CallLayerAttrs.h"
#include "codegen/Common/KernelContract.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace loom::codegen;

namespace {

std::string cppType(Type type) {
  if (auto opaque = dyn_cast<emitc::OpaqueType>(type))
    return opaque.getValue().str();
  StringRef element = getCppElementType(type);
  return element.empty() ? "char" : element.str();
}

/// The element type, in the contract's spelling ("f32"), of the tensor
/// argument `arg` of `call` (an operand index or a typed null); empty for
/// an absent tensor.
std::string elementOf(emitc::CallOpaqueOp call, Attribute arg) {
  if (auto index = dyn_cast<IntegerAttr>(arg)) {
    Type type = call.getOperand(index.getInt()).getType();
    auto pointer = dyn_cast<emitc::PointerType>(type);
    if (!pointer)
      return {};
    Type element = pointer.getPointee();
    if (auto opaque = dyn_cast<emitc::OpaqueType>(element))
      return opaque.getValue() == "bool" ? "i1" : opaque.getValue().str();
    std::string text;
    llvm::raw_string_ostream os(text);
    element.print(os);
    return text;
  }
  auto opaque = dyn_cast<emitc::OpaqueAttr>(arg);
  StringRef text = opaque ? opaque.getValue() : StringRef();
  if (!text.consume_front("static_cast<") || !text.consume_back(" *>(nullptr)"))
    return {};
  return llvm::StringSwitch<std::string>(text)
      .Case("float", "f32")
      .Case("double", "f64")
      .Case("int32_t", "i32")
      .Case("int64_t", "i64")
      .Case("bool", "i1")
      .Default(text.str());
}

} // namespace

LogicalResult loom::codegen::checkKernels(Operation *scope,
                                          const TargetSpelling &target) {
  bool missing = false;
  llvm::StringSet<> reported;
  scope->walk([&](emitc::CallOpaqueOp call) {
    StringRef callee = call.getCallee();
    if (!callee.consume_front("loom.kernel."))
      return;
    std::string op = ("nn." + callee).str();
    const KernelContract *contract = lookupKernelContract(op);
    if (!contract)
      return; // not an op's kernel (copy)
    const KernelTarget &kernels = *contract->getTarget(target.name);
    if (!kernels.implemented) {
      if (reported.insert(op).second)
        call.emitError() << "the " << target.name << " target has no kernel "
                         << "for " << op << " (its kernel contract, in the "
                         << "op's ODS, does not list " << target.name << ")";
      missing = true;
      return;
    }
    // The typed tensors' element types: results, then operands, each a
    // pointer and a shape (a variadic group two lists, typed by the
    // result).
    ArrayAttr args = call.getArgsAttr();
    unsigned next = 0;
    for (ArrayRef<KernelTensor> tensors :
         {contract->results, contract->operands})
      for (const KernelTensor &tensor : tensors) {
        if (next + 1 >= args.size())
          return;
        Attribute arg = args[next];
        next += 2;
        if (tensor.kind != KernelTensor::Typed || tensor.variadic)
          continue;
        std::string type = elementOf(call, arg);
        if (type.empty() || kernels.hasType(type))
          continue;
        missing = true;
        if (!reported.insert(op + " " + type).second)
          continue;
        InFlightDiagnostic diag = call.emitError();
        diag << "the " << target.name << " target has no kernel for " << op
             << " on " << type << " (its kernels take "
             << llvm::join(kernels.types, ", ") << ")";
        if (target.name == "ascend" && type == "f64")
          diag << "; Ascend hardware has no f64 (aclnnMatmul and HCCL's "
                  "reductions take f32, f16 and bf16 on Atlas A2/A3): build "
                  "the model in f32";
      }
  });
  return failure(missing);
}

const TargetSpelling &loom::codegen::hostSpelling() {
  static const TargetSpelling host{"host", "loom::host",
                                   "runtime/host/Program.h",
                                   "loom::rt::Communicator*"};
  return host;
}

const TargetSpelling &loom::codegen::cudaSpelling() {
  static const TargetSpelling cuda{"cuda", "loom::cuda",
                                   "runtime/cuda/Program.h",
                                   "loom::cuda::Communicator*"};
  return cuda;
}

const TargetSpelling &loom::codegen::ascendSpelling() {
  static const TargetSpelling ascend{"ascend", "loom::ascend",
                                     "runtime/ascend/Program.h",
                                     "loom::ascend::Communicator*"};
  return ascend;
}

LogicalResult loom::codegen::emitForTarget(ModuleOp module,
                                           const TargetSpelling &target) {
  return emitForTargets(module, [&](emitc::ClassOp) { return &target; });
}

LogicalResult loom::codegen::emitForTargets(
    ModuleOp module,
    llvm::function_ref<const TargetSpelling *(emitc::ClassOp)> targetOf) {
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);
  auto programs = module->getAttrOfType<ArrayAttr>(kProgramsAttr);
  auto groups = module->getAttrOfType<ArrayAttr>(kGroupsAttr);
  if (!programs || !groups)
    return module.emitError() << "final emission needs the call layer: run "
                                 "--loom-lower-to-calls first";
  auto opaqueType = [&](StringRef text) {
    return emitc::OpaqueType::get(context, text);
  };
  auto opaque = [&](const Twine &text) {
    return emitc::OpaqueAttr::get(context, text.str());
  };

  SmallVector<std::string> classNames, deviceLists;
  SmallVector<const TargetSpelling *> classTargets;
  for (emitc::ClassOp cls : module.getOps<emitc::ClassOp>()) {
    const TargetSpelling *spelling = targetOf(cls);
    if (!spelling)
      return failure();
    const TargetSpelling &target = *spelling;
    if (failed(checkKernels(cls, target)))
      return failure();
    classTargets.push_back(spelling);
    auto devices = cls->getAttrOfType<DenseI64ArrayAttr>(kDevicesAttr);
    classNames.push_back(cls.getSymName().str());
    deviceLists.push_back(formatIntList(devices.asArrayRef()));
    int64_t arenaBytes = 0;
    for (emitc::FieldOp field : cls.getOps<emitc::FieldOp>()) {
      Operation *op = field;
      if (op->hasAttr(kArenaAttr)) {
        arenaBytes = op->getAttrOfType<IntegerAttr>(kBytesAttr).getInt();
        field.setType(opaqueType(std::string(target.ns) + "::Arena"));
        field.setInitialValueAttr(opaque(std::string(target.ns) + "::Arena(" +
                                         Twine(arenaBytes) + ")"));
      } else if (auto offset = op->getAttrOfType<IntegerAttr>(kOffsetAttr)) {
        Type pointee = cast<emitc::PointerType>(field.getType()).getPointee();
        field.setInitialValueAttr(opaque(std::string(target.ns) + "::at<" +
                                         cppType(pointee) + ">(arena, " +
                                         Twine(offset.getInt()) + ")"));
      } else if (op->hasAttr(kCommAttr)) {
        auto get = [&](StringRef name) {
          return formatIntList(
              op->getAttrOfType<DenseI64ArrayAttr>(name).asArrayRef());
        };
        bool mpiOnly = op->hasAttr(kMpiOnlyAttr);
        field.setType(
            opaqueType(mpiOnly ? "loom::rt::Communicator*" : target.commType));
        field.setInitialValueAttr(opaque(
            std::string(mpiOnly ? "loom::host" : target.ns) + "::subgroup(" +
            get(kDevicesAttr) + ", " + get(kMeshAttr) + ", " + get(kAxesAttr) +
            ")"));
      } else if (op->hasAttr(kRequestAttr)) {
        // A started collective's state, completed by its wait.
        field.setType(opaqueType(std::string(target.ns) + "::Request"));
      } else if (auto plan =
                     op->getAttrOfType<DenseI64ArrayAttr>(kExchangeAttr)) {
        auto members = op->getAttrOfType<DenseI64ArrayAttr>(kDevicesAttr);
        field.setType(opaqueType(std::string(target.ns) + "::ExchangePlan"));
        field.setInitialValueAttr(
            opaque(std::string(target.ns) + "::ExchangePlan(" +
                   formatIntList(members.asArrayRef()) + ", " +
                   formatIntList(plan.asArrayRef()) + ")"));
      }
      for (StringRef name :
           {kArenaAttr, kBytesAttr, kOffsetAttr, kCommAttr, kMpiOnlyAttr,
            kRequestAttr, kDevicesAttr, kMeshAttr, kAxesAttr, kExchangeAttr,
            kPersistentBytesAttr, kTransientPeakAttr})
        op->removeAttr(name);
    }
    // Reads of fields whose type changed.
    cls.walk([&](emitc::GetFieldOp get) {
      auto field = SymbolTable::lookupSymbolIn(cls, get.getFieldNameAttr());
      if (auto typed = dyn_cast_or_null<emitc::FieldOp>(field))
        get.getResult().setType(typed.getType());
    });
    cls.walk([&](emitc::CallOpaqueOp call) {
      StringRef callee = call.getCallee();
      for (StringRef prefix : {"loom.kernel.", "loom.comm."})
        if (callee.consume_front(prefix)) {
          call.setCallee(std::string(target.ns) + "::" + callee.str());
          break;
        }
    });
    // Phases are spans of the profiler (nothing when it is off).
    for (auto method : cls.getOps<emitc::FuncOp>()) {
      if (method.getSymName() != "step")
        continue;
      for (auto phase : llvm::make_early_inc_range(
               method.getBody().getOps<emitc::CallOp>())) {
        OpBuilder at(phase);
        emitc::CallOpaqueOp::create(
            at, phase.getLoc(), TypeRange(),
            std::string(target.ns) + "::tracePhaseBegin", ValueRange(),
            at.getArrayAttr({opaque("\"" + phase.getCallee() + "\"")}));
        at.setInsertionPointAfter(phase);
        emitc::CallOpaqueOp::create(at, phase.getLoc(), TypeRange(),
                                    std::string(target.ns) + "::tracePhaseEnd",
                                    ValueRange());
      }
    }
    // A comment naming what the class runs.
    builder.setInsertionPoint(cls);
    std::string comment = "// @" + cls.getSymName().str() + " (" + target.name +
                          " target) on device";
    comment += devices.size() > 1 ? "s " : " ";
    comment += formatIntList(devices.asArrayRef()) + "; arena of " +
               std::to_string(arenaBytes) + " bytes per device.";
    emitc::VerbatimOp::create(builder, cls.getLoc(), comment);
    for (StringRef name : {kDevicesAttr, kSpecializesAttr})
      cls->removeAttr(name);
  }

  // Headers, the C ABI and main.
  if (classTargets.empty())
    return module.emitError() << "the call layer has no program";
  const TargetSpelling &first = *classTargets.front();
  bool mixed = llvm::any_of(classTargets, [&](const TargetSpelling *t) {
    return t->name != first.name;
  });
  builder.setInsertionPointToStart(module.getBody());
  emitc::VerbatimOp::create(
      builder, module.getLoc(),
      mixed ? std::string("// Generated by Loom for a mixed cluster "
                          "(loom-translate --loom-to-cluster-cpp): one class "
                          "per device group's program, each for its "
                          "devices' target.")
            : ("// Generated by Loom for the " + first.name +
               " target (loom-translate --loom-to-" + first.name +
               "-cpp): one class per device group's program, one method per "
               "step phase; see " +
               first.header + "."));
  llvm::SmallVector<std::string> headers;
  for (const TargetSpelling *t : classTargets)
    if (!llvm::is_contained(headers, t->header))
      headers.push_back(t->header);
  for (const std::string &header : headers)
    emitc::IncludeOp::create(builder, module.getLoc(), header,
                             /*is_standard=*/false);
  // The C ABI of include/loom-c/Program.h over every program (one
  // target's creation, or the host's with each program's target: a mixed
  // cluster), then `main`, which runs the driver over it. Built with
  // -DLOOM_PROGRAM_LIBRARY the file is a program library instead of an
  // executable (runtime/host/ProgramLibrary.h).
  builder.setInsertionPointToEnd(module.getBody());
  std::vector<std::string> groupLists;
  for (Attribute group : groups)
    groupLists.push_back(
        formatIntList(cast<DenseI64ArrayAttr>(group).asArrayRef()));
  std::string create = first.ns + "::createProgram";
  std::string targetList;
  if (mixed) {
    create = "loom::host::createProgram";
    SmallVector<std::string> targets;
    for (const TargetSpelling *t : classTargets)
      targets.push_back(t->name == "host" ? "nullptr"
                                          : "&" + t->ns + "::target()");
    targetList = ", {" + llvm::join(targets, ", ") + "}";
  }
  emitc::VerbatimOp::create(
      builder, module.getLoc(),
      "LOOM_PROGRAM_LIBRARY_ABI((" + create + "<" +
          llvm::join(classNames, ", ") + ">(mpi_comm, program, {" +
          llvm::join(deviceLists, ", ") + "}, {" +
          llvm::join(groupLists, ", ") + "}" + targetList + ")))");
  emitc::VerbatimOp::create(builder, module.getLoc(),
                            "#ifndef LOOM_PROGRAM_LIBRARY");
  Type argvType =
      emitc::PointerType::get(emitc::PointerType::get(opaqueType("char")));
  auto mainType = FunctionType::get(context, {builder.getI32Type(), argvType},
                                    {builder.getI32Type()});
  auto main = emitc::FuncOp::create(builder, module.getLoc(), "main", mainType);
  Block *entry = main.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
  auto run = emitc::CallOpaqueOp::create(
      builder, module.getLoc(), TypeRange{builder.getI32Type()},
      "loom::host::runProgramExecutable",
      ValueRange{entry->getArgument(0), entry->getArgument(1)});
  emitc::ReturnOp::create(builder, module.getLoc(), run.getResult(0));
  builder.setInsertionPointToEnd(module.getBody());
  emitc::VerbatimOp::create(builder, module.getLoc(), "#endif");
  module->removeAttr(kProgramsAttr);
  module->removeAttr(kGroupsAttr);
  return success();
}

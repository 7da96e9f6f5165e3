//===- KernelContractGen.cpp - Kernel contracts of nn ops -----------------===//
//
// Generates, from the nn ops' ODS (dialects/nn/IR/NNDialect.td, "Kernel
// contract"), what every target's kernels and the code generator must agree
// on (docs/op-contract.md):
//
//   -gen-host-kernel-decls     the loom::host declarations (HostKernels.h)
//   -gen-cuda-kernel-decls     the loom::cuda declarations (CudaKernels.h)
//   -gen-ascend-kernel-decls   loom::ascend's overloads and their detail::
//                              layer (AscendKernels.h)
//   -gen-ascend-kernel-defs    the detail:: kernels that are one call of
//                              Loom's own operator (Kernels.cpp)
//   -gen-ascend-loom-ops       Loom's own operators (LoomOps.h)
//   -gen-kernel-contracts      the table the call layer is built from and
//                              final emission checks (KernelContract.cpp)
//   -gen-{host,cuda,ascend}-kernel-dispatch
//                              per target, a call of any kernel from a
//                              generic argument list (the conformance
//                              suite, test/conformance)
//
// A kernel takes, in this order: each result (a pointer and its Shape),
// each operand (the same; an optional one may be absent, a variadic one is
// two lists), then each attribute in alphabetical order of its name.
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/Attribute.h"
#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <string>
#include <vector>

using namespace llvm;
using mlir::tblgen::NamedTypeConstraint;
using mlir::tblgen::Operator;

namespace {

/// How a kernel takes a tensor (NN_KernelArg).
enum class Kind { Typed, Bool, Index, Scalar, I64 };

struct Tensor {
  std::string name;
  Kind kind = Kind::Typed;
  bool optional = false, variadic = false;
  /// The parameter names: `name` and its shape.
  std::string param() const { return convertToCamelFromSnakeCase(name); }
  std::string shapeParam() const { return param() + (variadic ? "Shapes" : "Shape"); }
};

struct Attr {
  std::string name;
  /// "F64", "I64", "Unit", "Bool", "I64Array", "Enum".
  std::string kind;
  std::string cppType;
  bool optional = false;
  std::string param() const { return convertToCamelFromSnakeCase(name); }
};

struct ElementType {
  std::string name; // "f32"
  std::string cpp;  // "float"
};

struct Target {
  std::string name;
  bool implemented = false;
  std::vector<ElementType> types;
};

struct Contract {
  const Record *def = nullptr;
  std::string mnemonic; // "layer_norm"
  std::vector<Tensor> results, operands;
  std::vector<Attr> attrs; // by name
  bool independent = false;
  Target host{"host", false, {}}, cuda{"cuda", false, {}},
      ascend{"ascend", false, {}};
  std::string loomOperator;
  bool customKernel = false;

  /// The typed tensors, results first.
  std::vector<const Tensor *> typed() const {
    std::vector<const Tensor *> list;
    for (const Tensor &t : results)
      if (t.kind == Kind::Typed)
        list.push_back(&t);
    for (const Tensor &t : operands)
      if (t.kind == Kind::Typed)
        list.push_back(&t);
    return list;
  }
};

ElementType elementType(const Record *type, const Record *op) {
  StringRef name = type->getName();
  if (name == "F32")
    return {"f32", "float"};
  if (name == "F64")
    return {"f64", "double"};
  if (name == "I32")
    return {"i32", "int32_t"};
  if (name == "I64")
    return {"i64", "int64_t"};
  if (name == "I1")
    return {"i1", "bool"};
  PrintFatalError(op->getLoc(), "kernel element type " + name +
                                    " has no C++ type in the kernel contract");
}

Tensor tensorOf(const NamedTypeConstraint &value, const Record *op) {
  Tensor tensor;
  tensor.name = value.name.str();
  tensor.optional = value.isOptional();
  tensor.variadic = value.isVariadic();
  if (value.isVariadicOfVariadic())
    PrintFatalError(op->getLoc(), "kernels take no variadic of variadic");
  const Record *def = &value.constraint.getDef();
  if (def->isSubClassOf("Optional") || def->isSubClassOf("Variadic"))
    def = def->getValueAsDef("baseType");
  if (def->getValue("kernelArg")) {
    StringRef kind = def->getValueAsString("kernelArg");
    if (kind == "bool")
      tensor.kind = Kind::Bool;
    else if (kind == "index")
      tensor.kind = Kind::Index;
    else if (kind == "scalar")
      tensor.kind = Kind::Scalar;
    else if (kind == "i64")
      tensor.kind = Kind::I64; // (an int64_t pointer, as a scalar's)
    else if (kind != "typed")
      PrintFatalError(def->getLoc(), "unknown kernelArg '" + kind + "'");
  }
  if (tensor.variadic && tensor.kind != Kind::Typed &&
      tensor.kind != Kind::Scalar)
    PrintFatalError(op->getLoc(), "variadic operand '" + tensor.name +
                                      "': kernels take lists of typed "
                                      "tensors or of 0-d i64 ones only");
  return tensor;
}

Attr attrOf(const mlir::tblgen::NamedAttribute &named, const Record *op) {
  Attr attr;
  attr.name = named.name.str();
  attr.optional = named.attr.isOptional();
  mlir::tblgen::Attribute base = named.attr.getBaseAttr();
  const Record &def = base.getDef();
  StringRef name = def.getName();
  if (name == "F64Attr")
    attr = {attr.name, "F64", "double", attr.optional};
  else if (name == "I64Attr")
    attr = {attr.name, "I64", "int64_t", attr.optional};
  else if (name == "UnitAttr")
    attr = {attr.name, "Unit", "bool", attr.optional};
  else if (name == "BoolAttr")
    attr = {attr.name, "Bool", "bool", attr.optional};
  else if (name == "DenseI64ArrayAttr")
    attr = {attr.name, "I64Array", "Shape", attr.optional};
  else if (def.isSubClassOf("EnumAttr") || def.isSubClassOf("EnumAttrInfo"))
    attr = {attr.name, "Enum", "const char *", attr.optional};
  else
    PrintFatalError(op->getLoc(), "attribute '" + attr.name + "' (" + name +
                                      ") has no kernel parameter type");
  return attr;
}

std::vector<Contract> collect(const RecordKeeper &records) {
  std::vector<Contract> contracts;
  for (const Record *def : records.getAllDerivedDefinitions("Op")) {
    if (!def->getValue("kernelTypes"))
      continue;
    Operator op(def);
    Contract c;
    c.def = def;
    c.mnemonic = op.getOperationName();
    StringRef prefix = op.getDialectName();
    c.mnemonic = StringRef(c.mnemonic).drop_front(prefix.size() + 1).str();
    for (const NamedTypeConstraint &result : op.getResults()) {
      if (result.isVariableLength())
        PrintFatalError(def->getLoc(), "kernels take no optional or variadic "
                                       "results");
      c.results.push_back(tensorOf(result, def));
    }
    for (int i = 0, e = op.getNumOperands(); i < e; ++i)
      c.operands.push_back(tensorOf(op.getOperand(i), def));
    for (const mlir::tblgen::NamedAttribute &named : op.getAttributes())
      if (!named.attr.isDerivedAttr())
        c.attrs.push_back(attrOf(named, def));
    llvm::sort(c.attrs,
               [](const Attr &a, const Attr &b) { return a.name < b.name; });
    c.independent = def->getValueAsBit("kernelTypesIndependent");
    for (const Record *target : def->getValueAsListOfDefs("kernelTargets")) {
      StringRef name = target->getValueAsString("name");
      Target *t = name == "host"   ? &c.host
                  : name == "cuda" ? &c.cuda
                  : name == "ascend"
                      ? &c.ascend
                      : nullptr;
      if (!t)
        PrintFatalError(def->getLoc(), "unknown kernel target " + name);
      t->implemented = true;
    }
    for (Target *t : {&c.host, &c.cuda, &c.ascend})
      for (const Record *type :
           def->getValueAsListOfDefs(t->name + "KernelTypes"))
        t->types.push_back(elementType(type, def));
    c.loomOperator = def->getValueAsString("ascendLoomOperator").str();
    c.customKernel = def->getValueAsBit("ascendCustomKernel");
    contracts.push_back(std::move(c));
  }
  llvm::sort(contracts, [](const Contract &a, const Contract &b) {
    return a.mnemonic < b.mnemonic;
  });
  return contracts;
}

/// The element types of the typed tensors, one list per overload.
std::vector<std::vector<ElementType>> overloads(const Contract &c,
                                                const Target &target) {
  size_t slots = c.typed().size();
  std::vector<std::vector<ElementType>> all;
  if (!c.independent || slots <= 1) {
    for (const ElementType &type : target.types)
      all.push_back(std::vector<ElementType>(slots, type));
    return all;
  }
  // Every combination, the first typed tensor varying slowest.
  all.push_back({});
  for (size_t s = 0; s < slots; ++s) {
    std::vector<std::vector<ElementType>> next;
    for (const auto &prefix : all)
      for (const ElementType &type : target.types) {
        next.push_back(prefix);
        next.back().push_back(type);
      }
    all = std::move(next);
  }
  return all;
}

/// `type name`, `const char *name`.
std::string declare(StringRef type, StringRef name) {
  return (type.ends_with("*") ? type + name : type + " " + name).str();
}

/// The kernel's parameters for one overload.
std::string params(const Contract &c, ArrayRef<ElementType> types) {
  std::vector<std::string> list;
  size_t slot = 0;
  auto add = [&](const Tensor &t, bool result) {
    std::string elem;
    switch (t.kind) {
    case Kind::Typed:
      elem = types[slot++].cpp;
      break;
    case Kind::Bool:
      elem = "bool";
      break;
    case Kind::Index:
      list.push_back("IndexPtr " + t.param());
      list.push_back("Shape " + t.shapeParam());
      return;
    case Kind::Scalar:
    case Kind::I64:
      elem = "int64_t";
      break;
    }
    if (t.variadic) {
      list.push_back("std::initializer_list<const " + elem + " *> " +
                     t.param());
      list.push_back("std::initializer_list<Shape> " + t.shapeParam());
      return;
    }
    list.push_back((result ? "" : "const ") + elem + " *" + t.param());
    list.push_back("Shape " + t.shapeParam());
  };
  for (const Tensor &t : c.results)
    add(t, true);
  for (const Tensor &t : c.operands)
    add(t, false);
  for (const Attr &a : c.attrs)
    list.push_back(declare(a.cppType, a.param()));
  return llvm::join(list, ", ");
}

/// `nn.gather: gather(result, input, indices (index), dim (int64_t))`.
std::string summary(const Contract &c) {
  std::vector<std::string> names;
  for (const Tensor &t : c.results)
    names.push_back(t.name);
  for (const Tensor &t : c.operands)
    names.push_back(t.name + (t.optional ? "?" : t.variadic ? "..." : "") +
                    (t.kind == Kind::Index    ? " (index)"
                     : t.kind == Kind::Scalar ? " (0-d i64)"
                     : t.kind == Kind::I64    ? " (i64)"
                     : t.kind == Kind::Bool   ? " (i1)"
                                              : ""));
  for (const Attr &a : c.attrs)
    names.push_back(a.name + " (" + a.cppType + ")");
  return "nn." + c.mnemonic + ": " + c.mnemonic + "(" +
         llvm::join(names, ", ") + ")";
}

std::string typeNames(const Target &t) {
  std::vector<std::string> names;
  for (const ElementType &type : t.types)
    names.push_back(type.name);
  return llvm::join(names, ", ");
}

bool emitDecls(const RecordKeeper &records, raw_ostream &os,
               const Target Contract::*target) {
  emitSourceFileHeader("Kernel declarations of the nn ops", os, records);
  for (const Contract &c : collect(records)) {
    const Target &t = c.*target;
    if (!t.implemented)
      continue;
    os << "// " << summary(c) << "; " << typeNames(t) << "\n";
    for (const auto &types : overloads(c, t))
      os << "void " << c.mnemonic << "(" << params(c, types) << ");\n";
    os << "\n";
  }
  return false;
}

/// The detail:: layer's parameters (every tensor an Arg).
std::string detailParams(const Contract &c) {
  std::vector<std::string> list;
  for (const Tensor &t : c.results)
    list.push_back("Arg " + t.param());
  for (const Tensor &t : c.operands)
    list.push_back((t.variadic ? "const std::vector<Arg> &" : "Arg ") +
                   t.param());
  for (const Attr &a : c.attrs)
    list.push_back(declare(a.cppType, a.param()));
  return llvm::join(list, ", ");
}

std::string argOf(const Tensor &t) {
  if (t.variadic)
    return "detail::args(" + t.param() + ", " + t.shapeParam() + ")";
  if (t.kind == Kind::Index)
    return "detail::indexArg(" + t.param() + ", " + t.shapeParam() + ")";
  return "detail::arg(" + t.param() + ", " + t.shapeParam() + ")";
}

bool emitAscendDecls(const RecordKeeper &records, raw_ostream &os) {
  emitSourceFileHeader("Ascend kernels of the nn ops", os, records);
  std::vector<Contract> contracts = collect(records);
  os << "namespace detail {\n";
  for (const Contract &c : contracts)
    if (c.ascend.implemented)
      os << "void " << c.mnemonic << "(" << detailParams(c) << ");\n";
  os << "} // namespace detail\n\n";
  for (const Contract &c : contracts) {
    if (!c.ascend.implemented)
      continue;
    os << "// " << summary(c) << "; " << typeNames(c.ascend) << "\n";
    for (const auto &types : overloads(c, c.ascend)) {
      os << "inline void " << c.mnemonic << "(" << params(c, types)
         << ") {\n  detail::" << c.mnemonic << "(";
      std::vector<std::string> args;
      for (const Tensor &t : c.results)
        args.push_back(argOf(t));
      for (const Tensor &t : c.operands)
        args.push_back(argOf(t));
      for (const Attr &a : c.attrs)
        args.push_back(a.param());
      os << llvm::join(args, ", ") << ");\n}\n";
    }
    os << "\n";
  }
  return false;
}

/// Loom's operator's parameters: operands, attributes, results.
std::string loomOperatorParams(const Contract &c) {
  std::vector<std::string> list;
  // A variadic operand is a tensor list, an integer array an int array
  // (both null when empty or absent, as CANN's optional parameters).
  for (const Tensor &t : c.operands)
    list.push_back((t.variadic ? "const aclTensorList *" : "const aclTensor *") +
                   t.param());
  for (const Attr &a : c.attrs)
    list.push_back(a.cppType == "Shape" ? std::string("const aclIntArray *") +
                                              a.param()
                                        : declare(a.cppType, a.param()));
  for (const Tensor &t : c.results)
    list.push_back("aclTensor *" + t.param());
  return llvm::join(list, ", ");
}

bool emitLoomOps(const RecordKeeper &records, raw_ostream &os) {
  emitSourceFileHeader("Loom's own Ascend operators", os, records);
  std::vector<Contract> contracts = collect(records);
  os << "#ifdef LOOM_OP\n";
  for (const Contract &c : contracts)
    if (!c.loomOperator.empty())
      os << "// nn." << c.mnemonic << "\nLOOM_OP(" << c.loomOperator << ", "
         << loomOperatorParams(c) << ")\n";
  os << "#endif // LOOM_OP\n\n";
  os << "#define LOOM_ASCEND_LOOM_OPERATORS(X2)";
  for (const Contract &c : contracts)
    if (!c.loomOperator.empty())
      os << " \\\n  X2(" << c.loomOperator << ")";
  os << "\n";
  return false;
}

bool emitAscendDefs(const RecordKeeper &records, raw_ostream &os) {
  emitSourceFileHeader("Ascend kernels that are one Loom operator", os,
                       records);
  for (const Contract &c : collect(records)) {
    if (c.loomOperator.empty() || c.customKernel || !c.ascend.implemented)
      continue;
    os << "void detail::" << c.mnemonic << "(" << detailParams(c) << ") {\n";
    std::vector<std::string> empties, args;
    for (const Tensor &t : c.results)
      empties.push_back("empty(" + t.param() + ")");
    os << "  if (" << llvm::join(empties, " && ") << ")\n    return;\n";
    for (const Tensor &t : c.operands)
      args.push_back((t.variadic ? "tensorListOrNull(" : "tensor(") +
                     t.param() + ")");
    for (const Attr &a : c.attrs)
      // An absent array (kAbsentShape, also what an unset default-valued
      // one is passed as) is a null array.
      args.push_back(a.cppType != "Shape" ? a.param()
                                          : "intArrayOrNull(" + a.param() + ")");
    for (const Tensor &t : c.results)
      args.push_back("tensor(" + t.param() + ")");
    os << "  LOOM_ACLNN(" << c.loomOperator << ", " << llvm::join(args, ", ")
       << ");\n}\n\n";
  }
  return false;
}

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::Typed:
    return "Typed";
  case Kind::Bool:
    return "Bool";
  case Kind::Index:
    return "Index";
  case Kind::Scalar:
    return "Scalar";
  case Kind::I64:
    return "I64";
  }
  return "";
}

bool emitContracts(const RecordKeeper &records, raw_ostream &os) {
  emitSourceFileHeader("Kernel contracts of the nn ops", os, records);
  std::vector<Contract> contracts = collect(records);
  for (const Contract &c : contracts) {
    std::string id = convertToCamelFromSnakeCase(c.mnemonic, true);
    auto tensors = [&](StringRef what, ArrayRef<Tensor> list) {
      if (list.empty())
        return;
      os << "static const KernelTensor k" << id << what << "[] = {";
      for (const Tensor &t : list)
        os << "{\"" << t.name << "\", KernelTensor::" << kindName(t.kind)
           << ", " << (t.optional ? "true" : "false") << ", "
           << (t.variadic ? "true" : "false") << "}, ";
      os << "};\n";
    };
    tensors("Results", c.results);
    tensors("Operands", c.operands);
    if (!c.attrs.empty()) {
      os << "static const KernelAttr k" << id << "Attrs[] = {";
      for (const Attr &a : c.attrs)
        os << "{\"" << a.name << "\", KernelAttr::" << a.kind << ", "
           << (a.optional ? "true" : "false") << "}, ";
      os << "};\n";
    }
    for (const Target *t : {&c.host, &c.cuda, &c.ascend}) {
      if (t->types.empty())
        continue;
      os << "static const char *const k" << id
         << convertToCamelFromSnakeCase(t->name, true) << "Types[] = {";
      for (const ElementType &type : t->types)
        os << "\"" << type.name << "\", ";
      os << "};\n";
    }
  }
  os << "\nstatic const KernelContract kKernelContracts[] = {\n";
  for (const Contract &c : contracts) {
    std::string id = convertToCamelFromSnakeCase(c.mnemonic, true);
    auto list = [&](bool some, StringRef name) {
      return some ? ("k" + id + name).str() : std::string("{}");
    };
    auto target = [&](const Target &t) {
      return formatv("{{{0}, {1}}", t.implemented ? "true" : "false",
                     list(!t.types.empty(),
                          convertToCamelFromSnakeCase(t.name, true) + "Types"))
          .str();
    };
    os << "  {\"nn." << c.mnemonic << "\", " << list(!c.results.empty(), "Results")
       << ", " << list(!c.operands.empty(), "Operands") << ", "
       << list(!c.attrs.empty(), "Attrs") << ", "
       << (c.independent ? "true" : "false") << ", " << target(c.host) << ", "
       << target(c.cuda) << ", " << target(c.ascend) << "},\n";
  }
  os << "};\n";
  return false;
}


//===----------------------------------------------------------------------===//
// -gen-{host,cuda,ascend}-kernel-dispatch
//===----------------------------------------------------------------------===//

/// The argument of one tensor in a dispatcher: `what` is the generic
/// buffer expression (a KernelBuffer).
std::string dispatchArg(const Tensor &t, bool result, StringRef elem,
                        StringRef what) {
  switch (t.kind) {
  case Kind::Index:
    return ("indexPtr(" + what + "), " + what + ".shape").str();
  case Kind::Typed:
  case Kind::Bool:
  case Kind::Scalar:
  case Kind::I64:
    break;
  }
  return ("static_cast<" + Twine(result ? "" : "const ") + elem + " *>(" +
          what + ".data), " + what + ".shape")
      .str();
}

std::string elemOf(const Tensor &t, ArrayRef<ElementType> types,
                   size_t &slot) {
  switch (t.kind) {
  case Kind::Typed:
    return types[slot++].cpp;
  case Kind::Bool:
    return "bool";
  case Kind::Scalar:
  case Kind::I64:
  case Kind::Index:
    return "int64_t";
  }
  return "";
}

const char *attrMember(StringRef kind) {
  if (kind == "F64")
    return "f64";
  if (kind == "I64")
    return "i64";
  if (kind == "I64Array")
    return "shape";
  if (kind == "Enum")
    return "keyword";
  return "flag"; // Unit, Bool
}

/// The dispatcher of one target: `dispatch(op, types, call)` calls
/// `loom::<target>::<op>` with the overload of `types` (the element types
/// of the typed tensors, results first) and the arguments of `call`
/// (test/conformance/KernelCall.h), and returns false when the target has
/// no such kernel. Variadic groups become braced lists by a switch on
/// their size (up to kMaxRank).
bool emitDispatch(const RecordKeeper &records, raw_ostream &os,
                  const Target Contract::*target) {
  emitSourceFileHeader("Kernel dispatcher of the nn ops", os, records);
  // A variadic group of any size a Shape allows.
  constexpr int kMaxRank = 8;
  os << "static_assert(::loom::host::kMaxRank == " << kMaxRank
     << ", \"the variadic switches cover lists of up to kMaxRank\");\n\n";
  std::vector<Contract> contracts = collect(records);
  std::string ns = "loom::" + (contracts.empty()
                                   ? std::string("host")
                                   : (contracts.front().*target).name);
  for (const Contract &c : contracts) {
    const Target &t = c.*target;
    if (!t.implemented)
      continue;
    unsigned variadics = llvm::count_if(
        c.operands, [](const Tensor &x) { return x.variadic; });
    if (variadics > 1)
      PrintFatalError(c.def->getLoc(),
                      "the kernel dispatcher takes one variadic group");
    os << "// " << summary(c) << "\n";
    os << "inline bool dispatch_" << c.mnemonic
       << "(const std::vector<std::string> &types, const KernelCall &call) "
          "{\n";
    os << "  if (call.results.size() != " << c.results.size()
       << " || call.operands.size() != " << c.operands.size()
       << " || call.attributes.size() != " << c.attrs.size()
       << ")\n    return false;\n";
    for (const auto &types : overloads(c, t)) {
      std::vector<std::string> conds;
      for (size_t i = 0; i < types.size(); ++i)
        conds.push_back("types[" + std::to_string(i) + "] == \"" +
                        types[i].name + "\"");
      os << "  if (types.size() == " << types.size();
      for (const std::string &cond : conds)
        os << " && " << cond;
      os << ") {\n";
      // The arguments before and after the variadic group.
      std::vector<std::string> before, after;
      std::string variadicElem;
      int variadicIndex = -1;
      size_t slot = 0;
      for (size_t i = 0; i < c.results.size(); ++i) {
        std::string elem = elemOf(c.results[i], types, slot);
        before.push_back(dispatchArg(c.results[i], true, elem,
                                     "call.results[" + std::to_string(i) +
                                         "]"));
      }
      for (size_t i = 0; i < c.operands.size(); ++i) {
        const Tensor &x = c.operands[i];
        std::string elem = elemOf(x, types, slot);
        if (x.variadic) {
          variadicElem = elem;
          variadicIndex = static_cast<int>(i);
          continue;
        }
        (variadicIndex < 0 ? before : after)
            .push_back(dispatchArg(x, false, elem,
                                   "one(call.operands[" + std::to_string(i) +
                                       "])"));
      }
      for (size_t i = 0; i < c.attrs.size(); ++i)
        (variadicIndex < 0 ? before : after)
            .push_back("call.attributes[" + std::to_string(i) + "]." +
                       attrMember(c.attrs[i].kind));
      auto emitCall = [&](StringRef indent, ArrayRef<std::string> middle) {
        std::vector<std::string> all(before);
        all.insert(all.end(), middle.begin(), middle.end());
        all.insert(all.end(), after.begin(), after.end());
        os << indent << ns << "::" << c.mnemonic << "(" << join(all, ", ")
           << ");\n"
           << indent << "return true;\n";
      };
      if (variadicIndex < 0) {
        emitCall("    ", {});
      } else {
        std::string group =
            "call.operands[" + std::to_string(variadicIndex) + "]";
        os << "    switch (" << group << ".size()) {\n";
        for (int n = 0; n <= kMaxRank; ++n) {
          std::vector<std::string> pointers, shapes;
          for (int k = 0; k < n; ++k) {
            std::string b = group + "[" + std::to_string(k) + "]";
            pointers.push_back("static_cast<const " + variadicElem + " *>(" +
                               b + ".data)");
            shapes.push_back(b + ".shape");
          }
          os << "    case " << n << ": {\n";
          emitCall("      ", {"{" + join(pointers, ", ") + "}",
                              "{" + join(shapes, ", ") + "}"});
          os << "    }\n";
        }
        os << "    default:\n      return false;\n    }\n";
      }
      os << "  }\n";
    }
    os << "  return false;\n}\n\n";
  }
  os << "/// Calls the kernel of `op` (\"nn.add\") for `types`; false when the "
        "target has none.\n";
  os << "inline bool dispatch(const std::string &op, const "
        "std::vector<std::string> &types, const KernelCall &call) {\n";
  for (const Contract &c : contracts)
    if ((c.*target).implemented)
      os << "  if (op == \"nn." << c.mnemonic << "\")\n    return dispatch_"
         << c.mnemonic << "(types, call);\n";
  os << "  return false;\n}\n";
  return false;
}

mlir::GenRegistration
    genHost("gen-host-kernel-decls", "Generate the host kernel declarations",
            [](const RecordKeeper &records, raw_ostream &os) {
              return emitDecls(records, os, &Contract::host);
            });
mlir::GenRegistration
    genCuda("gen-cuda-kernel-decls", "Generate the CUDA kernel declarations",
            [](const RecordKeeper &records, raw_ostream &os) {
              return emitDecls(records, os, &Contract::cuda);
            });
mlir::GenRegistration genAscend("gen-ascend-kernel-decls",
                                "Generate the Ascend kernels' overloads",
                                emitAscendDecls);
mlir::GenRegistration genAscendDefs(
    "gen-ascend-kernel-defs",
    "Generate the Ascend kernels that call one Loom operator", emitAscendDefs);
mlir::GenRegistration genLoomOps("gen-ascend-loom-ops",
                                 "Generate Loom's own Ascend operators",
                                 emitLoomOps);
mlir::GenRegistration genHostDispatch(
    "gen-host-kernel-dispatch", "Generate the host kernel dispatcher",
    [](const RecordKeeper &records, raw_ostream &os) {
      return emitDispatch(records, os, &Contract::host);
    });
mlir::GenRegistration genCudaDispatch(
    "gen-cuda-kernel-dispatch", "Generate the CUDA kernel dispatcher",
    [](const RecordKeeper &records, raw_ostream &os) {
      return emitDispatch(records, os, &Contract::cuda);
    });
mlir::GenRegistration genAscendDispatch(
    "gen-ascend-kernel-dispatch", "Generate the Ascend kernel dispatcher",
    [](const RecordKeeper &records, raw_ostream &os) {
      return emitDispatch(records, os, &Contract::ascend);
    });
mlir::GenRegistration genContracts("gen-kernel-contracts",
                                   "Generate the kernel contract table",
                                   emitContracts);

} // namespace

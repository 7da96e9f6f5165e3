//===- HSPMDAttrs.cpp - Attribute verifiers and queries -------------------===//

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <limits>
#include <mutex>
#include <set>
#include <vector>

using namespace mlir;
using namespace loom::hspmd;

ArrayRef<int64_t> loom::hspmd::internBlockSizes(ArrayRef<int64_t> sizes) {
  if (sizes.empty())
    return {};
  // std::set never moves its elements, so the vectors' storage is stable.
  static std::mutex mutex;
  static std::set<std::vector<int64_t>> pool;
  std::lock_guard<std::mutex> lock(mutex);
  return *pool.emplace(sizes.begin(), sizes.end()).first;
}

Axis Axis::split(int64_t dim, ArrayRef<int64_t> sizes) {
  return {AxisKind::Split, dim, static_cast<int64_t>(sizes.size()),
          ReductionKind::Sum, internBlockSizes(sizes)};
}

llvm::raw_ostream &loom::hspmd::operator<<(llvm::raw_ostream &os,
                                           const Axis &axis) {
  switch (axis.kind) {
  case AxisKind::Split:
    os << 'S' << axis.dim << ':';
    if (axis.sizes.empty())
      return os << axis.degree;
    os << '[';
    llvm::interleaveComma(axis.sizes, os);
    return os << ']';
  case AxisKind::Duplicate:
    return os << "D:" << axis.degree;
  case AxisKind::Partial:
    return os << "P(" << stringifyReductionKind(axis.reduction)
              << "):" << axis.degree;
  }
  llvm_unreachable("unknown axis kind");
}

std::string Axis::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << *this;
  return text;
}

//===----------------------------------------------------------------------===//
// DeviceGroupAttr
//===----------------------------------------------------------------------===//

LogicalResult DeviceGroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      ArrayRef<int64_t> devices) {
  if (devices.empty())
    return emitError() << "device group is empty";
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t id : devices) {
    if (id < 0)
      return emitError() << "device id " << id << " is negative";
    if (!seen.insert(id).second)
      return emitError() << "device " << id << " appears twice in group ["
                         << devices << "]";
  }
  return success();
}

int64_t DeviceGroupAttr::indexOf(int64_t device) const {
  const auto *it = llvm::find(getDevices(), device);
  return it == getDevices().end() ? -1 : it - getDevices().begin();
}

bool DeviceGroupAttr::overlaps(DeviceGroupAttr other) const {
  return llvm::any_of(getDevices(),
                      [&](int64_t id) { return other.indexOf(id) >= 0; });
}

//===----------------------------------------------------------------------===//
// DistStatesAttr
//===----------------------------------------------------------------------===//

/// Split dimensions beyond this are rejected so that rank arithmetic cannot
/// overflow; no tensor has that many dimensions.
static constexpr int64_t kMaxSplitDim = std::numeric_limits<int32_t>::max();

LogicalResult DistStatesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                     ArrayRef<Axis> axes) {
  int64_t numDevices = 1;
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis.degree < 1)
      return emitError() << "axis " << axis.str() << " has degree " << axis.degree
                         << "; expected at least 1";
    if (axis.isSplit() && (axis.dim < 0 || axis.dim > kMaxSplitDim))
      return emitError() << "split of dimension " << axis.dim
                         << " is out of range";
    if (!axis.isSplit() && axis.dim != -1)
      return emitError() << "axis " << axis.str() << " names dimension "
                         << axis.dim << "; only split axes name a dimension";
    if (!axis.sizes.empty() &&
        (!axis.isSplit() ||
         static_cast<int64_t>(axis.sizes.size()) != axis.degree))
      return emitError() << "axis " << axis.str() << " lists "
                         << axis.sizes.size() << " block sizes for degree "
                         << axis.degree;
    int64_t covered = 0;
    for (int64_t block : axis.sizes) {
      if (block < 1)
        return emitError() << "axis " << axis.str() << " has a block of size "
                           << block << "; expected at least 1";
      if (__builtin_add_overflow(covered, block, &covered))
        return emitError() << "the block sizes of " << axis.str()
                           << " overflow a 64-bit size";
    }
    std::optional<int64_t> product = llvm::checkedMul(numDevices, axis.degree);
    if (!product)
      return emitError() << "the degrees of the axes overflow a 64-bit device "
                            "count";
    numDevices = *product;
    for (const Axis &earlier : axes.take_front(i))
      if (earlier.sameKindAs(axis))
        return emitError() << "axis " << axis.str() << " repeats " << earlier.str()
                           << " in the order; each dimension is split at most "
                              "once and D and P appear at most once";
  }
  return success();
}

int64_t DistStatesAttr::getNumDevices() const {
  int64_t product = 1;
  for (const Axis &axis : getAxes())
    product *= axis.degree;
  return product;
}

int64_t DistStatesAttr::getDuplicateDegree() const {
  for (const Axis &axis : getAxes())
    if (axis.isDuplicate())
      return axis.degree;
  return 1;
}

int64_t DistStatesAttr::getPartialDegree() const {
  for (const Axis &axis : getAxes())
    if (axis.isPartial())
      return axis.degree;
  return 1;
}

std::optional<ReductionKind> DistStatesAttr::getPartialKind() const {
  for (const Axis &axis : getAxes())
    if (axis.isPartial())
      return axis.reduction;
  return std::nullopt;
}

int64_t DistStatesAttr::getSplitDegree(int64_t dim) const {
  for (const Axis &axis : getAxes())
    if (axis.isSplit() && axis.dim == dim)
      return axis.degree;
  return 1;
}

int64_t DistStatesAttr::getMinRank() const {
  int64_t rank = 0;
  for (const Axis &axis : getAxes())
    if (axis.isSplit())
      rank = std::max(rank, axis.dim + 1);
  return rank;
}

SmallVector<int64_t> DistStatesAttr::getCoordinates(int64_t index) const {
  ArrayRef<Axis> axes = getAxes();
  SmallVector<int64_t> coords(axes.size());
  for (int64_t i = axes.size() - 1; i >= 0; --i) {
    coords[i] = index % axes[i].degree;
    index /= axes[i].degree;
  }
  return coords;
}

int64_t DistStatesAttr::getIndex(ArrayRef<int64_t> coordinates) const {
  int64_t index = 0;
  for (auto [axis, coord] : llvm::zip_equal(getAxes(), coordinates))
    index = index * axis.degree + coord;
  return index;
}

//===----------------------------------------------------------------------===//
// UnionAttr
//===----------------------------------------------------------------------===//

LogicalResult UnionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                UnionRelation relation, int64_t splitDim,
                                ReductionKind reduction,
                                ArrayRef<int64_t> shares, bool explicitSizes,
                                ArrayRef<DeviceGroupAttr> groups,
                                ArrayRef<DistStatesAttr> states) {
  if (groups.empty())
    return emitError() << "union has no member";
  if (groups.size() != states.size())
    return emitError() << "union has " << groups.size() << " groups but "
                       << states.size() << " states";
  for (auto [i, member] : llvm::enumerate(llvm::zip_equal(groups, states))) {
    auto [group, memberStates] = member;
    if (!group || !memberStates)
      return emitError() << "union member " << i << " is incomplete";
    if (group.size() != memberStates.getNumDevices())
      return emitError() << "union member " << i << " has " << group.size()
                         << " devices but its states span "
                         << memberStates.getNumDevices();
    for (int64_t j = 0; j < static_cast<int64_t>(i); ++j)
      if (groups[j].overlaps(group))
        return emitError() << "union members " << j << " and " << i
                           << " overlap: groups [" << groups[j].getDevices()
                           << "] and [" << group.getDevices() << "]";
  }

  if (relation == UnionRelation::Split &&
      (splitDim < 0 || splitDim > kMaxSplitDim))
    return emitError() << "split of dimension " << splitDim
                       << " is out of range";
  if (relation == UnionRelation::Replicated && !shares.empty())
    return emitError() << "a replicated union takes no shares";
  if (explicitSizes && relation != UnionRelation::Split)
    return emitError() << "explicit sizes need a split relation";
  if (!shares.empty() || explicitSizes) {
    if (shares.size() != groups.size())
      return emitError() << "union has " << groups.size() << " groups but "
                         << shares.size() << " shares";
    int64_t total = 0;
    for (int64_t share : shares) {
      if (share <= 0)
        return emitError() << "share " << share << " is not positive";
      std::optional<int64_t> sum = llvm::checkedAdd(total, share);
      if (!sum)
        return emitError() << "shares [" << shares
                           << "] overflow a 64-bit total";
      total = *sum;
    }
  }

  // What a member holds must be comparable across members: complete values
  // in a replicated union (a pending reduction is not a replica of another
  // group's), and the same kind of pending reduction, or none, in a split.
  // (A single member is the whole layout; its relation is moot.)
  if (relation == UnionRelation::Replicated && groups.size() > 1) {
    for (auto [i, memberStates] : llvm::enumerate(states))
      if (std::optional<ReductionKind> kind = memberStates.getPartialKind())
        return emitError()
               << "union member " << i << " of a replicated union is partial ("
               << stringifyReductionKind(*kind)
               << "); replicated groups hold complete values, use "
                  "partial(<kind>) to combine contributions across groups";
  }
  if (relation == UnionRelation::Split) {
    std::optional<ReductionKind> first = states.front().getPartialKind();
    for (auto [i, memberStates] : llvm::enumerate(states)) {
      std::optional<ReductionKind> kind = memberStates.getPartialKind();
      if (kind != first)
        return emitError()
               << "union members 0 and " << i
               << " of a split union disagree on the pending reduction ("
               << (first ? stringifyReductionKind(*first) : "none") << " vs "
               << (kind ? stringifyReductionKind(*kind) : "none") << ")";
    }
  }

  if (relation == UnionRelation::Partial) {
    for (auto [i, memberStates] : llvm::enumerate(states)) {
      std::optional<ReductionKind> local = memberStates.getPartialKind();
      if (local && *local != reduction)
        return emitError()
               << "union member " << i << " is partial with "
               << stringifyReductionKind(*local)
               << " but the union is partial with "
               << stringifyReductionKind(reduction);
    }
    if (reduction == ReductionKind::Mean && !shares.empty() &&
        llvm::any_of(shares, [&](int64_t s) { return s != shares.front(); }))
      return emitError()
             << "a mean-partial across groups with unequal shares [" << shares
             << "] averages averages; use partial(sum) and scale by the "
                "global count";
  }
  return success();
}

SmallVector<int64_t> UnionAttr::getAllDevices() const {
  SmallVector<int64_t> devices;
  for (DeviceGroupAttr group : getGroups())
    llvm::append_range(devices, group.getDevices());
  return devices;
}

int64_t UnionAttr::getMemberOf(int64_t device) const {
  for (auto [i, group] : llvm::enumerate(getGroups()))
    if (group.indexOf(device) >= 0)
      return i;
  return -1;
}

//===----------------------------------------------------------------------===//
// StrategySetAttr
//===----------------------------------------------------------------------===//

LogicalResult
StrategySetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        ArrayRef<StringAttr> names, ArrayRef<UnionAttr> layouts,
                        int64_t optimizerIndex) {
  if (names.empty())
    return emitError() << "strategy set is empty";
  if (names.size() != layouts.size())
    return emitError() << "strategy set has " << names.size() << " names but "
                       << layouts.size() << " layouts";
  for (auto [i, name] : llvm::enumerate(names)) {
    if (!name || name.getValue().empty())
      return emitError() << "strategy " << i << " has an empty name";
    if (!layouts[i])
      return emitError() << "strategy '" << name.getValue()
                         << "' has no layout";
    for (StringAttr earlier : names.take_front(i))
      if (earlier == name)
        return emitError() << "strategy '" << name.getValue()
                           << "' is named twice";
  }
  if (optimizerIndex < 0 || optimizerIndex >= static_cast<int64_t>(names.size()))
    return emitError() << "optimizer strategy index " << optimizerIndex
                       << " is out of range for " << names.size()
                       << " strategies";
  return success();
}

UnionAttr StrategySetAttr::lookup(StringRef name) const {
  for (auto [strategyName, layout] : llvm::zip_equal(getNames(), getLayouts()))
    if (strategyName.getValue() == name)
      return layout;
  return {};
}

//===----------------------------------------------------------------------===//
// DeviceAttr and ClusterAttr
//===----------------------------------------------------------------------===//

LogicalResult DeviceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t id, StringRef kind, llvm::APFloat speed,
                                 int64_t memory, int64_t node) {
  if (id < 0)
    return emitError() << "device id " << id << " is negative";
  if (kind.empty())
    return emitError() << "device " << id << " has an empty kind";
  if (!speed.isFiniteNonZero() || speed.isNegative()) {
    SmallString<16> text;
    speed.toString(text);
    return emitError() << "device " << id << " has speed " << text
                       << "; expected a positive number";
  }
  if (memory <= 0)
    return emitError() << "device " << id << " has memory " << memory
                       << " GiB; expected a positive number";
  if (node < 0)
    return emitError() << "device " << id << " is on negative node " << node;
  return success();
}

LogicalResult ClusterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<DeviceAttr> devices) {
  if (devices.empty())
    return emitError() << "cluster has no device";
  llvm::SmallDenseSet<int64_t> seen;
  for (DeviceAttr device : devices) {
    if (!device)
      return emitError() << "cluster has a null device";
    if (!seen.insert(device.getId()).second)
      return emitError() << "device id " << device.getId()
                         << " appears twice in the cluster";
  }
  return success();
}

DeviceAttr ClusterAttr::lookup(int64_t id) const {
  for (DeviceAttr device : getDevices())
    if (device.getId() == id)
      return device;
  return {};
}

//===----------------------------------------------------------------------===//
// Custom syntax
//
//   states   ::= `[` (axis (`,` axis)*)? `]`
//   axis     ::= `S` dim `:` (degree | `[` block-sizes `]`) | `D:` degree
//              | `P(` kind `):` degree
//   union    ::= (relation `:`)? member (`,` member)*
//   relation ::= `replicated`
//              | `split` `(` dim `)` ((`shares` | `sizes`) `[` ints `]`)?
//              | `partial` `(` kind `)` (`shares` `[` ints `]`)?
//   member   ::= `{` `[` device-ids `]` `:` states `}`
//
//===----------------------------------------------------------------------===//

namespace {

ParseResult parseIntList(AsmParser &parser, SmallVectorImpl<int64_t> &values) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        int64_t value;
        if (parser.parseInteger(value))
          return failure();
        values.push_back(value);
        return success();
      });
}

void printIntList(AsmPrinter &printer, ArrayRef<int64_t> values) {
  printer << '[';
  llvm::interleaveComma(values, printer);
  printer << ']';
}

ParseResult parseReductionKind(AsmParser &parser, ReductionKind &kind) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLParen() || parser.parseKeyword(&keyword))
    return failure();
  std::optional<ReductionKind> parsed = symbolizeReductionKind(keyword);
  if (!parsed)
    return parser.emitError(loc) << "unknown reduction kind '" << keyword
                                 << "'; expected sum, mean, max or min";
  kind = *parsed;
  return parser.parseRParen();
}

ParseResult parseAxis(AsmParser &parser, Axis &axis) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return parser.emitError(loc)
           << "expected an axis: S<dim>:<degree>, S<dim>:[<sizes>], "
              "D:<degree> or P(<kind>):<degree>";
  if (keyword == "D") {
    axis = Axis::duplicate(1);
  } else if (keyword == "P") {
    if (failed(parser.parseOptionalLParen()))
      return parser.emitError(loc)
             << "partial axis needs a reduction kind, e.g. P(sum):2";
    StringRef kindName;
    SMLoc kindLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&kindName) || parser.parseRParen())
      return failure();
    std::optional<ReductionKind> kind = symbolizeReductionKind(kindName);
    if (!kind)
      return parser.emitError(kindLoc)
             << "unknown reduction kind '" << kindName
             << "'; expected sum, mean, max or min";
    axis = Axis::partial(1, *kind);
  } else if (keyword.size() > 1 && keyword.front() == 'S' &&
             llvm::all_of(keyword.drop_front(), llvm::isDigit)) {
    int64_t dim;
    if (keyword.drop_front().getAsInteger(10, dim))
      return parser.emitError(loc) << "split dimension in '" << keyword
                                   << "' is out of range";
    axis = Axis::split(dim, 1);
  } else {
    return parser.emitError(loc)
           << "unknown axis '" << keyword
           << "'; expected S<dim>:<degree>, S<dim>:[<sizes>], D:<degree> or "
              "P(<kind>):<degree>";
  }
  if (parser.parseColon())
    return failure();
  if (axis.isSplit() && succeeded(parser.parseOptionalLSquare())) {
    // Explicit block sizes, one per coordinate: `S1:[16, 8, 8]`.
    SmallVector<int64_t> sizes;
    if (parser.parseCommaSeparatedList([&]() -> ParseResult {
          return parser.parseInteger(sizes.emplace_back());
        }) ||
        parser.parseRSquare())
      return failure();
    axis = Axis::split(axis.dim, sizes);
    return success();
  }
  if (parser.parseInteger(axis.degree))
    return failure();
  return success();
}

ParseResult parseMember(AsmParser &parser, SmallVectorImpl<DeviceGroupAttr> &groups,
                        SmallVectorImpl<DistStatesAttr> &states) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t> devices;
  if (parser.parseLBrace() || parseIntList(parser, devices) || parser.parseColon())
    return failure();
  auto group = parser.getChecked<DeviceGroupAttr>(loc, parser.getContext(),
                                                  devices);
  if (!group)
    return failure();
  FailureOr<DistStatesAttr> memberStates = DistStatesAttr::parseBody(parser);
  if (failed(memberStates) || parser.parseRBrace())
    return failure();
  groups.push_back(group);
  states.push_back(*memberStates);
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// DistStatesAttr
//===----------------------------------------------------------------------===//

FailureOr<DistStatesAttr> DistStatesAttr::parseBody(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<Axis> axes;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() {
        return parseAxis(parser, axes.emplace_back());
      }))
    return failure();
  auto attr = parser.getChecked<DistStatesAttr>(loc, parser.getContext(), axes);
  if (!attr)
    return failure();
  return attr;
}

void DistStatesAttr::printBody(AsmPrinter &printer) const {
  printer << '[';
  llvm::interleaveComma(getAxes(), printer.getStream());
  printer << ']';
}

Attribute DistStatesAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  FailureOr<DistStatesAttr> attr = parseBody(parser);
  if (failed(attr) || parser.parseGreater())
    return {};
  return *attr;
}

void DistStatesAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printBody(printer);
  printer << '>';
}

//===----------------------------------------------------------------------===//
// UnionAttr
//===----------------------------------------------------------------------===//

FailureOr<UnionAttr> UnionAttr::parseBody(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  UnionRelation relation = UnionRelation::Replicated;
  int64_t splitDim = -1;
  ReductionKind reduction = ReductionKind::Sum;
  SmallVector<int64_t> shares;
  bool explicitSizes = false;
  bool hasRelation = true;

  if (succeeded(parser.parseOptionalKeyword("replicated"))) {
    relation = UnionRelation::Replicated;
  } else if (succeeded(parser.parseOptionalKeyword("split"))) {
    relation = UnionRelation::Split;
    if (parser.parseLParen() || parser.parseInteger(splitDim) ||
        parser.parseRParen())
      return failure();
  } else if (succeeded(parser.parseOptionalKeyword("partial"))) {
    relation = UnionRelation::Partial;
    if (parseReductionKind(parser, reduction))
      return failure();
  } else {
    hasRelation = false;
  }
  // Shares are parsed after any relation so that the verifier can say which
  // relations take them.
  if (hasRelation) {
    explicitSizes = succeeded(parser.parseOptionalKeyword("sizes"));
    if ((explicitSizes || succeeded(parser.parseOptionalKeyword("shares"))) &&
        parseIntList(parser, shares))
      return failure();
  }
  if (hasRelation && parser.parseColon())
    return failure();

  SmallVector<DeviceGroupAttr> groups;
  SmallVector<DistStatesAttr> states;
  if (parser.parseCommaSeparatedList(
          [&]() { return parseMember(parser, groups, states); }))
    return failure();
  if (!hasRelation && groups.size() > 1)
    return parser.emitError(loc)
           << "a union of " << groups.size()
           << " groups needs a relation: replicated, split(<dim>) or "
              "partial(<kind>)";
  auto attr = parser.getChecked<UnionAttr>(loc, parser.getContext(), relation,
                                           splitDim, reduction, shares,
                                           explicitSizes, groups, states);
  if (!attr)
    return failure();
  return attr;
}

void UnionAttr::printBody(AsmPrinter &printer) const {
  if (getNumGroups() > 1 || getRelation() != UnionRelation::Replicated) {
    printer << stringifyUnionRelation(getRelation());
    if (getRelation() == UnionRelation::Split)
      printer << '(' << getSplitDim() << ')';
    else if (getRelation() == UnionRelation::Partial)
      printer << '(' << stringifyReductionKind(getReduction()) << ')';
    if (!getShares().empty()) {
      printer << (getExplicitSizes() ? " sizes " : " shares ");
      printIntList(printer, getShares());
    }
    printer << ": ";
  }
  llvm::interleaveComma(llvm::zip_equal(getGroups(), getStates()), printer,
                        [&](auto member) {
                          auto [group, states] = member;
                          printer << '{';
                          printIntList(printer, group.getDevices());
                          printer << ": ";
                          states.printBody(printer);
                          printer << '}';
                        });
}

Attribute UnionAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  FailureOr<UnionAttr> attr = parseBody(parser);
  if (failed(attr) || parser.parseGreater())
    return {};
  return *attr;
}

void UnionAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printBody(printer);
  printer << '>';
}

//===----------------------------------------------------------------------===//
// StrategySetAttr
//===----------------------------------------------------------------------===//

Attribute StrategySetAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<StringAttr> names;
  SmallVector<UnionAttr> layouts;
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            std::string name;
            UnionAttr layout;
            if (parser.parseString(&name) || parser.parseEqual() ||
                parser.parseCustomAttributeWithFallback(layout))
              return failure();
            names.push_back(parser.getBuilder().getStringAttr(name));
            layouts.push_back(layout);
            return success();
          }) ||
      parser.parseComma() || parser.parseKeyword("optimizer") ||
      parser.parseEqual())
    return {};
  SMLoc optimizerLoc = parser.getCurrentLocation();
  std::string optimizer;
  if (parser.parseString(&optimizer) || parser.parseGreater())
    return {};
  const auto *it = llvm::find_if(
      names, [&](StringAttr name) { return name.getValue() == optimizer; });
  if (it == names.end()) {
    parser.emitError(optimizerLoc)
        << "optimizer strategy '" << optimizer << "' is not in the set";
    return {};
  }
  return parser.getChecked<StrategySetAttr>(loc, parser.getContext(), names,
                                            layouts, it - names.begin());
}

void StrategySetAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(llvm::zip_equal(getNames(), getLayouts()), printer,
                        [&](auto strategy) {
                          auto [name, layout] = strategy;
                          printer << name << " = ";
                          printer.printAttribute(layout);
                        });
  printer << "], optimizer = " << getNames()[getOptimizerIndex()] << '>';
}

//===----------------------------------------------------------------------===//
// DeviceAttr and ClusterAttr
//===----------------------------------------------------------------------===//

Attribute DeviceAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  int64_t id, memory, node;
  std::string kind;
  double speed;
  if (parser.parseLess() || parser.parseInteger(id) || parser.parseComma() ||
      parser.parseString(&kind) || parser.parseComma() ||
      parser.parseKeyword("speed") || parser.parseEqual() ||
      parser.parseFloat(speed) || parser.parseComma() ||
      parser.parseKeyword("mem") || parser.parseEqual() ||
      parser.parseInteger(memory) || parser.parseComma() ||
      parser.parseKeyword("node") || parser.parseEqual() ||
      parser.parseInteger(node) || parser.parseGreater())
    return {};
  return parser.getChecked<DeviceAttr>(loc, parser.getContext(), id, kind,
                                       llvm::APFloat(speed), memory, node);
}

void DeviceAttr::print(AsmPrinter &printer) const {
  printer << '<' << getId() << ", \"";
  llvm::printEscapedString(getKind(), printer.getStream());
  // Shortest spelling that reads back exactly, always with a decimal point.
  SmallString<16> speed;
  getSpeed().toString(speed);
  if (!StringRef(speed).contains('.')) {
    size_t exponent = std::min(StringRef(speed).find_insensitive('e'),
                               static_cast<size_t>(speed.size()));
    speed.insert(speed.begin() + exponent, {'.', '0'});
  }
  printer << "\", speed = " << speed;
  printer << ", mem = " << getMemory() << ", node = " << getNode() << '>';
}

Attribute ClusterAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<DeviceAttr> devices;
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&]() {
            return parser.parseCustomAttributeWithFallback(
                devices.emplace_back());
          }) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<ClusterAttr>(loc, parser.getContext(), devices);
}

void ClusterAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getDevices(), printer, [&](DeviceAttr device) {
    printer.printAttribute(device);
  });
  printer << "]>";
}

#define GET_ATTRDEF_CLASSES
#include "dialects/hspmd/IR/HSPMDAttrs.cpp.inc"

void HSPMDDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/hspmd/IR/HSPMDAttrs.cpp.inc"
      >();
}

#include "dialects/hspmd/IR/HSPMDEnums.cpp.inc"

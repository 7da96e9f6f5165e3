//===- KernelSupport.cpp - Helpers shared by the host kernels -------------===//

#include "runtime/kernels/KernelSupport.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace loom::host;
using namespace loom::host::detail;

namespace {
char prefixStorage[128] = "";
FailureHandler failureHandler = nullptr;
} // namespace

void loom::host::setFailureHandler(FailureHandler handler) {
  failureHandler = handler;
}

FailureHandler loom::host::getFailureHandler() { return failureHandler; }

void loom::host::setFailurePrefix(const char *prefix) {
  std::snprintf(prefixStorage, sizeof(prefixStorage), "%s", prefix);
}

const char *loom::host::failurePrefix() { return prefixStorage; }

void detail::fatal(const char *kernel, const char *format, ...) {
  char message[1024];
  int used = std::snprintf(message, sizeof(message), "loom::host::%s: ", kernel);
  va_list args;
  va_start(args, format);
  if (used >= 0 && static_cast<size_t>(used) < sizeof(message))
    std::vsnprintf(message + used, sizeof(message) - used, format, args);
  va_end(args);
  if (failureHandler)
    failureHandler(message); // does not return
  std::fprintf(stderr, "%s%s\n", failurePrefix(), message);
  std::fflush(stderr);
  std::abort();
}

const char *detail::formatShape(const Shape &shape, int slot) {
  thread_local char buffers[4][256];
  char *buffer = buffers[slot & 3];
  size_t size = sizeof(buffers[0]), used = 0;
  if (shape.rank < 0 || shape.rank > kMaxRank) {
    std::snprintf(buffer, size, "<rank %lld>",
                  static_cast<long long>(shape.rank));
    return buffer;
  }
  used += std::snprintf(buffer + used, size - used, "[");
  for (int64_t d = 0; d < shape.rank; ++d)
    used += std::snprintf(buffer + used, size - used, d ? ", %lld" : "%lld",
                          static_cast<long long>(shape.dims[d]));
  std::snprintf(buffer + used, size - used, "]");
  return buffer;
}

bool detail::sameShape(const Shape &a, const Shape &b) {
  if (a.rank != b.rank)
    return false;
  for (int64_t d = 0; d < a.rank; ++d)
    if (a.dims[d] != b.dims[d])
      return false;
  return true;
}

void detail::checkShape(const char *kernel, const char *what,
                        const Shape &actual, const Shape &expected) {
  LOOM_HOST_CHECK(sameShape(actual, expected), kernel,
                  "%s has shape %s, expected %s", what, formatShape(actual, 0),
                  formatShape(expected, 1));
}

void detail::checkValid(const char *kernel, const char *what,
                        const Shape &shape) {
  LOOM_HOST_CHECK(shape.rank >= 0 && shape.rank <= kMaxRank, kernel,
                  "%s has rank %lld, not in [0, %d]", what,
                  static_cast<long long>(shape.rank), kMaxRank);
  for (int64_t d = 0; d < shape.rank; ++d)
    LOOM_HOST_CHECK(shape.dims[d] >= 0, kernel, "%s has shape %s", what,
                    formatShape(shape));
}

void detail::checkSameCount(const char *kernel, const Shape &result,
                            const Shape &input) {
  checkValid(kernel, "the result", result);
  checkValid(kernel, "the input", input);
  LOOM_HOST_CHECK(result.numElements() == input.numElements(), kernel,
                  "the result of shape %s and the input of shape %s hold "
                  "different numbers of elements",
                  formatShape(result, 0), formatShape(input, 1));
}

//===----------------------------------------------------------------------===//
// Keywords
//===----------------------------------------------------------------------===//

bool detail::parseGeluTanh(const char *kernel, const char *keyword) {
  if (!keyword || std::strcmp(keyword, "none") == 0)
    return false;
  if (std::strcmp(keyword, "tanh") == 0)
    return true;
  fatal(kernel, "unknown approximation '%s' (expected none or tanh)", keyword);
}

loom::math::Predicate detail::parsePredicate(const char *kernel,
                                             const char *keyword) {
  using loom::math::Predicate;
  static const struct {
    const char *name;
    Predicate predicate;
  } table[] = {{"eq", Predicate::EQ}, {"ne", Predicate::NE},
               {"lt", Predicate::LT}, {"le", Predicate::LE},
               {"gt", Predicate::GT}, {"ge", Predicate::GE}};
  if (keyword)
    for (const auto &entry : table)
      if (std::strcmp(keyword, entry.name) == 0)
        return entry.predicate;
  fatal(kernel, "unknown predicate '%s' (expected eq, ne, lt, le, gt or ge)",
        keyword ? keyword : "(null)");
}

ReduceKind detail::parseReduceKind(const char *kernel, const char *keyword) {
  if (keyword) {
    if (std::strcmp(keyword, "sum") == 0)
      return ReduceKind::Sum;
    if (std::strcmp(keyword, "mean") == 0)
      return ReduceKind::Mean;
    if (std::strcmp(keyword, "max") == 0)
      return ReduceKind::Max;
  }
  fatal(kernel, "unknown reduction '%s' (expected sum, mean or max)",
        keyword ? keyword : "(null)");
}

MaskKind detail::parseMaskKind(const char *kernel, const char *keyword) {
  if (keyword) {
    if (std::strcmp(keyword, "none") == 0)
      return MaskKind::None;
    if (std::strcmp(keyword, "causal") == 0)
      return MaskKind::Causal;
    if (std::strcmp(keyword, "tree") == 0)
      return MaskKind::Tree;
  }
  fatal(kernel, "unknown mask '%s' (expected none, causal or tree)",
        keyword ? keyword : "(null)");
}

//===----------------------------------------------------------------------===//
// Strides
//===----------------------------------------------------------------------===//

void detail::getRowMajorStrides(const Shape &shape, int64_t *strides) {
  int64_t stride = 1;
  for (int64_t d = shape.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape.dims[d];
  }
}

void detail::getBroadcastStrides(const char *kernel, const Shape &shape,
                                 const Shape &result, int64_t *strides) {
  LOOM_HOST_CHECK(shape.rank >= 0 && shape.rank <= result.rank, kernel,
                  "operand of shape %s does not broadcast to the result "
                  "shape %s",
                  formatShape(shape, 0), formatShape(result, 1));
  int64_t own[kMaxRank];
  getRowMajorStrides(shape, own);
  int64_t offset = result.rank - shape.rank;
  for (int64_t d = 0; d < offset; ++d)
    strides[d] = 0;
  for (int64_t d = 0; d < shape.rank; ++d) {
    int64_t size = shape.dims[d], target = result.dims[offset + d];
    LOOM_HOST_CHECK(size == target || size == 1, kernel,
                    "operand of shape %s does not broadcast to the result "
                    "shape %s",
                    formatShape(shape, 0), formatShape(result, 1));
    strides[offset + d] = size == 1 ? 0 : own[d];
  }
}

AxisSplit detail::splitAt(const Shape &shape, int64_t dim) {
  AxisSplit split;
  for (int64_t d = 0; d < shape.rank; ++d) {
    if (d < dim)
      split.outer *= shape.dims[d];
    else if (d == dim)
      split.size = shape.dims[d];
    else
      split.inner *= shape.dims[d];
  }
  return split;
}

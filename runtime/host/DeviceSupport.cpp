//===- DeviceSupport.cpp - What device targets' runtimes share ------------===//

#include "runtime/host/DeviceSupport.h"

#include <cstring>
#include <vector>

using namespace loom;
using namespace loom::host;

int64_t device::chunk(int64_t count, int64_t k, int64_t j) {
  return count / k + (j < count % k ? 1 : 0);
}

void device::count(const char *kind, int64_t sent, int64_t received) {
  rt::Traffic &traffic = rt::Runtime::get().count(kind);
  traffic.calls += 1;
  traffic.bytesSent += sent;
  traffic.bytesReceived += received;
}

void device::countAllReduce(int64_t elements, int64_t elementBytes, int64_t k,
                            int64_t rank) {
  int64_t bytes = elements * elementBytes;
  int64_t own = chunk(elements, k, rank) * elementBytes;
  count("all_reduce", bytes - own + (k - 1) * own, bytes - own + (k - 1) * own);
}

static void splitAt(const Shape &shape, int64_t dim, int64_t &outer,
                    int64_t &extent, int64_t &inner) {
  outer = extent = inner = 1;
  for (int64_t d = 0; d < shape.rank; ++d)
    (d < dim ? outer : d == dim ? extent : inner) *= shape[d];
}

device::Block device::blockOf(const Shape &shape, int64_t dim, int64_t k,
                              int64_t j, int64_t elementBytes) {
  int64_t outer, extent, inner;
  splitAt(shape, dim, outer, extent, inner);
  Block block;
  block.row = static_cast<size_t>(extent / k * inner * elementBytes);
  block.wide = static_cast<size_t>(extent * inner * elementBytes);
  block.start = static_cast<size_t>(j * (extent / k) * inner * elementBytes);
  block.outer = static_cast<size_t>(outer);
  return block;
}

bool device::leadingDim(const Shape &shape, int64_t dim) {
  int64_t outer, extent, inner;
  splitAt(shape, dim, outer, extent, inner);
  return dim == 0 || outer == 1;
}

void device::stagedExchange(
    ExchangePlan &plan, void *out, int64_t outElements, const void *in,
    int64_t inElements, int64_t elementBytes, rt::ElementType type,
    const std::function<void()> &drain,
    const std::function<void(void *, const void *, size_t)> &toHost,
    const std::function<void(void *, const void *, size_t)> &toDevice) {
  // The host runtime's plan over MPI, on host copies of the buffers.
  std::vector<char> source(static_cast<size_t>(inElements * elementBytes));
  std::vector<char> target(static_cast<size_t>(outElements * elementBytes));
  drain();
  if (!source.empty())
    toHost(source.data(), in, source.size());
  plan.run(target.empty() ? nullptr : target.data(), outElements,
           source.empty() ? nullptr : source.data(), elementBytes, type);
  if (!target.empty())
    toDevice(out, target.data(), target.size());
}

void device::encodeScalar(char (&bytes)[8], int64_t elementBytes, bool isFloat,
                          double value) {
  std::memset(bytes, 0, sizeof(bytes));
  if (isFloat && elementBytes == 4) {
    float v = static_cast<float>(value);
    std::memcpy(bytes, &v, 4);
  } else if (isFloat) {
    std::memcpy(bytes, &value, 8);
  } else if (elementBytes == 4) {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(bytes, &v, 4);
  } else {
    int64_t v = static_cast<int64_t>(value);
    std::memcpy(bytes, &v, 8);
  }
}

//===- Double.h - Internals of the CPU test double of CANN ------*- C++ -*-===//
//
// A TEST DOUBLE for hardware we do not have. libloom_ascend_double.so
// defines every function of AscendApi.h and LoomOps.h on the CPU, so that
// Loom's Ascend runtime can run (and be tested) without an Ascend device or
// the CANN SDK: "device" memory is heap memory, streams run their work
// synchronously when it is launched, the aclnn operators call Loom's host
// kernels (runtime/kernels) and HCCL is carried over MPI. It computes
// nothing the way an NPU would; its value is that it checks the calling
// protocol strictly (initialisation order, the current device, live
// handles, device memory ranges, the two-phase operator protocol and its
// workspace, stream synchronisation before a workspace is freed) and fails
// with CANN's status codes and a message (aclGetRecentErrMsg) where real
// hardware would fail or, worse, silently compute garbage.
//
// This header is internal to runtime/ascend/double.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ASCEND_DOUBLE_DOUBLE_H
#define LOOM_RUNTIME_ASCEND_DOUBLE_DOUBLE_H

// The library is compiled with -fvisibility=hidden: the declarations of the
// API get default visibility here, so their definitions, and nothing else,
// are exported (exports.map also keeps the host kernels' symbols local).
#pragma GCC visibility push(default)
#include "runtime/ascend/AscendApi.h"
#include "runtime/ascend/LoomOps.h"
#pragma GCC visibility pop

#include "runtime/kernels/HostKernels.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

//===----------------------------------------------------------------------===//
// The opaque aclnn types
//===----------------------------------------------------------------------===//

/// A tensor descriptor: a view (dims, strides in elements, storage offset in
/// elements) into storage of `storageDims` elements at `data`.
struct aclTensor {
  uint64_t serial = 0;
  aclDataType dtype = ACL_DT_UNDEFINED;
  std::vector<int64_t> dims, strides, storageDims;
  int64_t offset = 0;
  aclFormat format = ACL_FORMAT_ND;
  void *data = nullptr;
};

/// A scalar, the value copied at creation.
struct aclScalar {
  uint64_t serial = 0;
  aclDataType dtype = ACL_DT_UNDEFINED;
  double floating = 0; // ACL_FLOAT, ACL_DOUBLE
  int64_t integer = 0; // ACL_INT32, ACL_INT64, ACL_BOOL
};

struct aclIntArray {
  uint64_t serial = 0;
  std::vector<int64_t> values;
};

/// As in CANN, a tensor list owns its tensors: aclDestroyTensorList
/// destroys them.
struct aclTensorList {
  uint64_t serial = 0;
  std::vector<aclTensor *> tensors;
};

namespace loom::ascend::testdouble {

//===----------------------------------------------------------------------===//
// Status codes (CANN's numbers: acl/acl_base.h, acl/error_codes/
// rt_error_codes.h, the aclnn return codes, hccl/hccl_types.h)
//===----------------------------------------------------------------------===//

constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_UNINITIALIZE = 100001;
constexpr aclError ACL_ERROR_REPEAT_INITIALIZE = 100002;
constexpr aclError ACL_ERROR_INVALID_FILE = 100003;
constexpr aclError ACL_ERROR_REPEAT_FINALIZE = 100037;
constexpr aclError ACL_ERROR_RT_PARAM_INVALID = 107000;
constexpr aclError ACL_ERROR_RT_INVALID_DEVICEID = 107001;
constexpr aclError ACL_ERROR_RT_CONTEXT_NULL = 107002;
constexpr aclError ACL_ERROR_RT_STREAM_CONTEXT = 107003;
constexpr aclError ACL_ERROR_RT_MEMORY_ALLOCATION = 207001;
constexpr aclError ACL_ERROR_RT_STREAM_NOT_COMPLETE = 507004;

constexpr aclnnStatus ACLNN_SUCCESS = 0;
constexpr aclnnStatus ACLNN_ERR_PARAM_NULLPTR = 161001;
constexpr aclnnStatus ACLNN_ERR_PARAM_INVALID = 161002;
constexpr aclnnStatus ACLNN_ERR_RUNTIME_ERROR = 361001;

//===----------------------------------------------------------------------===//
// Errors and the call log (Log.cpp)
//===----------------------------------------------------------------------===//

/// Records the printf-style message as the calling thread's recent error
/// (what aclGetRecentErrMsg returns next) and returns `code`. Prints
/// nothing.
int fail(int code, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/// printf into a std::string.
std::string format(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

/// One line of the call log (LOOM_ASCEND_DOUBLE_LOG=<prefix> appends one
/// line per entry point to `<prefix>.<rank>`): the function's name, then
/// key=value pairs, then ` -> <result>` or ` -> error <code>`. Written when
/// the object goes out of scope; nothing is formatted when the log is off.
class CallLog {
public:
  explicit CallLog(const char *function);
  ~CallLog();
  CallLog(const CallLog &) = delete;
  CallLog &operator=(const CallLog &) = delete;

  bool enabled() const { return on; }
  /// Appends a space and the printf-style text.
  void add(const char *format, ...) __attribute__((format(printf, 2, 3)));
  /// Appends ` -> error <code>` when `code` is non-zero; returns `code`.
  template <typename T> T status(T code) {
    if (code != 0)
      add("-> error %d", static_cast<int>(code));
    return code;
  }

private:
  bool on;
  std::string line;
};

//===----------------------------------------------------------------------===//
// The runtime: devices, memory and streams (Runtime.cpp)
//===----------------------------------------------------------------------===//

/// Guards every table of the double (allocations, streams, handles).
std::recursive_mutex &stateMutex();

/// A live aclrtMalloc allocation.
struct Allocation {
  uint64_t id = 0;
  uintptr_t base = 0;
  uint64_t size = 0;
  int32_t device = 0;
};

/// The live allocation holding all of [address, address + bytes), or null
/// (also for null `address`). Call with stateMutex() held.
const Allocation *findAllocation(const void *address, uint64_t bytes);

/// `mem3`, `mem3+64` for an address in an allocation, `host` otherwise,
/// `null` for null: deterministic names for the call log.
std::string describeAddress(const void *address);

/// A stream: work runs when launched; `pending` counts launches since the
/// last synchronisation, `workspaces` the allocations handed to operators
/// as workspaces since then.
struct Stream {
  uint64_t id = 0; // 0: the default stream (a null aclrtStream)
  int32_t device = 0;
  uint64_t pending = 0;
  std::vector<uint64_t> workspaces;
};

/// Checks that aclInit has run and the calling thread has a current device;
/// sets `device`. Returns an aclError (with the message set) otherwise.
aclError requireDevice(const char *function, int32_t &device);

/// Resolves `handle` (null: the current device's default stream) to a live
/// stream of the current device, or fails with an aclError. Call with
/// stateMutex() held.
aclError resolveStream(const char *function, aclrtStream handle,
                       Stream *&stream);

/// `stream1`, or `default`.
std::string describeStream(const Stream &stream);
/// The name of a stream handle: `stream1`, `default` for null, `unknown`
/// for a handle that is not a live stream.
std::string describeStreamHandle(aclrtStream handle);

/// Whether aclInit has run (and aclFinalize not since).
bool initialized();

//===----------------------------------------------------------------------===//
// Tensors, scalars, arrays (Tensors.cpp)
//===----------------------------------------------------------------------===//

/// Whether each handle is one the double created and has not destroyed.
/// Call with stateMutex() held.
bool isLive(const aclTensor *tensor);
bool isLive(const aclScalar *scalar);
bool isLive(const aclIntArray *array);
bool isLive(const aclTensorList *list);
/// The serial number of a live tensor (for the liveness check at launch).
uint64_t serialOf(const aclTensor *tensor);

/// Bytes per element of an aclDataType value (0 for an unknown type).
uint64_t elementSize(int dtype);
/// `f32`, `f64`, `i32`, ... (`unknown`).
const char *dtypeName(int dtype);
/// A shape as `[2, 3]`, for messages.
std::string formatShape(const host::Shape &shape);

/// The value of an enumeration argument, read as its bits: a caller may
/// pass any value (the double checks it), and loading a value that is not
/// an enumerator as the enumeration type is undefined behaviour.
template <typename E> int enumValue(const E &value) {
  std::underlying_type_t<E> raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return static_cast<int>(raw);
}

//===----------------------------------------------------------------------===//
// Operators (Executor.cpp)
//===----------------------------------------------------------------------===//

/// An operand or result of an operator as its executor sees it: the
/// descriptor, copied when the operator is planned.
struct TensorArg {
  bool present = false;
  const aclTensor *handle = nullptr;
  uint64_t serial = 0;
  const char *what = "";
  aclDataType dtype = ACL_DT_UNDEFINED;
  uint64_t elementBytes = 0;
  host::Shape shape;
  int64_t strides[host::kMaxRank] = {};
  /// The first element of the view (data + offset elements).
  char *base = nullptr;
  /// The storage the tensor describes, [data, data + storageBytes), and the
  /// allocation holding it when the operator was planned.
  char *storage = nullptr;
  uint64_t storageBytes = 0;
  uint64_t allocation = 0;
  /// The bytes the view spans from `base` (0 for an empty view).
  uint64_t extentBytes = 0;
  bool contiguous = false;

  int64_t numElements() const { return shape.numElements(); }
  uint64_t bytes() const {
    return static_cast<uint64_t>(numElements()) * elementBytes;
  }
  template <typename T> T *as() const { return reinterpret_cast<T *>(base); }
};

/// Row-major strides of `shape`.
void rowMajorStrides(const host::Shape &shape, int64_t *strides);

/// Whether a view is the transpose (last two dimensions swapped) of a
/// contiguous tensor; sets `stored` to that tensor's shape.
bool isTransposedContiguous(const TensorArg &arg, host::Shape &stored);

/// Whether the byte ranges two views span intersect.
bool overlaps(const TensorArg &a, const TensorArg &b);

/// Copies the (strided) view `src` into contiguous memory at `dst`.
void gatherView(char *dst, const TensorArg &src);

/// Calls `fn(offsetA, offsetB)` (element offsets, advancing by the two
/// stride vectors) for every index of `shape` in row-major order.
template <typename Fn>
void forEachIndex(const host::Shape &shape, const int64_t *stridesA,
                  const int64_t *stridesB, Fn &&fn) {
  int64_t total = shape.numElements();
  if (total == 0)
    return;
  int64_t rank = shape.rank;
  int64_t index[host::kMaxRank] = {};
  int64_t a = 0, b = 0;
  for (int64_t n = 0; n < total; ++n) {
    fn(a, b);
    for (int64_t d = rank - 1; d >= 0; --d) {
      a += stridesA[d];
      b += stridesB[d];
      if (++index[d] < shape.dims[d])
        break;
      a -= stridesA[d] * shape.dims[d];
      b -= stridesB[d] * shape.dims[d];
      index[d] = 0;
    }
  }
}

/// Where a kernel writes one result: into the result itself, or, when the
/// result overlaps an operand the kernel reads (the host kernels never
/// alias) or the operator stages its results, into a workspace slot that
/// is copied into the result afterwards.
struct Output {
  TensorArg arg;
  bool staged = false;
  uint64_t slot = 0;

  char *target(char *workspace) const {
    return staged ? workspace + slot : arg.base;
  }
  template <typename T> T *as(char *workspace) const {
    return reinterpret_cast<T *>(target(workspace));
  }
  /// Copies a staged result into place.
  void commit(char *workspace) const;
};

/// An input a kernel reads contiguously: the tensor itself, or its view
/// gathered into a workspace slot.
struct Input {
  TensorArg arg;
  bool gathered = false;
  uint64_t slot = 0;

  const char *source(char *workspace) const {
    return gathered ? workspace + slot : arg.base;
  }
  template <typename T> const T *as(char *workspace) const {
    return reinterpret_cast<const T *>(source(workspace));
  }
  /// Gathers the view into its slot.
  void prepare(char *workspace) const;
};

/// The work of one operator, built by its GetWorkspaceSize function: the
/// checks that function makes, the workspace the work needs, and the work
/// itself. Holds stateMutex() and logs the GetWorkspaceSize call.
class Plan {
public:
  /// `op` is the launch function's name (`aclnnMatmul`).
  explicit Plan(const char *op);

  /// Sets the message (prefixed by the GetWorkspaceSize function's name),
  /// logs the failure and returns `code`.
  aclnnStatus fail(aclnnStatus code, const char *format, ...)
      __attribute__((format(printf, 3, 4)));

  /// Describes tensor `t` into `arg`: it must be a live tensor (null is
  /// ACLNN_ERR_PARAM_NULLPTR unless `optional`, and then `arg.present` is
  /// false) whose storage lies in device memory.
  aclnnStatus tensor(const aclTensor *t, const char *what, TensorArg &arg,
                     bool optional = false);
  /// As tensor(), and the tensor must be contiguous.
  aclnnStatus contiguous(const aclTensor *t, const char *what, TensorArg &arg,
                         bool optional = false);
  /// An input read contiguously: gathered into the workspace when it is a
  /// strided view.
  aclnnStatus input(const aclTensor *t, const char *what, Input &in);
  /// A contiguous result. It is staged in the workspace when `stage` is set
  /// or when it overlaps one of `reads` other than `alias` (a result may
  /// alias that operand exactly: same address and shape).
  aclnnStatus output(const aclTensor *t, const char *what, Output &out,
                     std::initializer_list<const TensorArg *> reads,
                     bool stage = false, const TensorArg *alias = nullptr);
  /// Results must not overlap one another.
  aclnnStatus disjoint(std::initializer_list<const Output *> outputs);
  /// A live scalar (null: ACLNN_ERR_PARAM_NULLPTR).
  aclnnStatus scalar(const aclScalar *s, const char *what);
  /// A live tensor list, recorded for the liveness check at launch (its
  /// tensors are checked one by one with tensor()).
  aclnnStatus list(const aclTensorList *l, const char *what);

  /// Element-type and shape checks.
  aclnnStatus requireFloat(const TensorArg &arg);
  aclnnStatus requireIndex(const TensorArg &arg);
  aclnnStatus requireSameType(const TensorArg &arg, const TensorArg &like);
  aclnnStatus requireShape(const TensorArg &arg, const host::Shape &shape);
  /// A 0-d int64 tensor (offset, step), when present.
  aclnnStatus requireScalarIndex(const TensorArg &arg);
  /// A written view whose elements are distinct memory.
  aclnnStatus requireNoSelfOverlap(const TensorArg &arg);

  /// Reserves a 64-byte-aligned slot of at least `bytes` (at least 64) in
  /// the workspace; returns its offset.
  uint64_t reserve(uint64_t bytes);

  /// Hands the plan to an executor (the work runs at launch with the
  /// workspace's address), sets `*workspaceSize` and `*executor`.
  aclnnStatus finish(std::function<void(char *workspace)> work,
                     uint64_t *workspaceSize, aclOpExecutor **executor);
  /// As finish(), for work that checks what only the launch can see (the
  /// values of device data, such as group sizes): a non-zero status it
  /// returns, with its message set by fail(), is the launch's status.
  aclnnStatus finishChecked(std::function<aclnnStatus(char *workspace)> work,
                            uint64_t *workspaceSize,
                            aclOpExecutor **executor);

private:
  const char *op;
  std::string function;
  CallLog call;
  std::unique_lock<std::recursive_mutex> lock;
  uint64_t workspace = 0;
  std::vector<TensorArg> tensors;
  std::vector<std::pair<const aclTensorList *, uint64_t>> lists;
};

/// The launch half of every operator: checks the executor, the workspace
/// and the stream, marks the workspace in flight on the stream, runs the
/// work and frees the executor.
aclnnStatus launch(const char *op, void *workspace, uint64_t workspaceSize,
                   aclOpExecutor *executor, aclrtStream stream);

/// Calls `fn(T{})` with T = float or double for ACL_FLOAT / ACL_DOUBLE.
/// Calls `fn(T{})` for the element types the host kernels move: f32, f64,
/// i32, i64 and bool. Returns false for any other type.
template <typename Fn> bool dispatchData(aclDataType dtype, Fn &&fn) {
  switch (dtype) {
  case ACL_FLOAT:
    fn(float{});
    return true;
  case ACL_DOUBLE:
    fn(double{});
    return true;
  case ACL_INT32:
    fn(int32_t{});
    return true;
  case ACL_INT64:
    fn(int64_t{});
    return true;
  case ACL_BOOL:
    fn(bool{});
    return true;
  default:
    return false;
  }
}

template <typename Fn> void dispatchFloat(aclDataType dtype, Fn &&fn) {
  if (dtype == ACL_FLOAT)
    fn(float{});
  else
    fn(double{});
}

/// An index tensor's elements as the host kernels take them (null when
/// the operand is absent).
inline host::IndexPtr indexPtr(const TensorArg &arg) {
  if (!arg.present)
    return nullptr;
  if (arg.dtype == ACL_INT32)
    return reinterpret_cast<const int32_t *>(arg.base);
  return reinterpret_cast<const int64_t *>(arg.base);
}

/// A 0-d i64 operand (offset, step) as the host kernels take it.
inline const int64_t *scalarIndexPtr(const TensorArg &arg) {
  return arg.present ? reinterpret_cast<const int64_t *>(arg.base) : nullptr;
}

/// A scalar's value as a double.
inline double scalarValue(const aclScalar *scalar) {
  if (scalar->dtype == ACL_FLOAT || scalar->dtype == ACL_DOUBLE)
    return scalar->floating;
  return static_cast<double>(scalar->integer);
}

/// Returns from the enclosing function when `expr` is a non-zero status.
#define LOOM_DOUBLE_TRY(expr)                                                  \
  do {                                                                         \
    if (aclnnStatus loomStatus = (expr))                                       \
      return loomStatus;                                                       \
  } while (false)

} // namespace loom::ascend::testdouble

/// An executor: a planned operator, used by exactly one launch.
struct aclOpExecutor {
  uint64_t serial = 0;
  const char *op = "";
  uint64_t workspace = 0;
  std::vector<loom::ascend::testdouble::TensorArg> tensors;
  std::vector<std::pair<const aclTensorList *, uint64_t>> lists;
  std::function<aclnnStatus(char *)> work;
};

#endif // LOOM_RUNTIME_ASCEND_DOUBLE_DOUBLE_H

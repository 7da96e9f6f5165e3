//===- Tensors.cpp - aclTensor, aclScalar and arrays of the test double ---===//
//
// Part of the CPU test double of CANN (see Double.h): the descriptors of
// the aclnn operator base. Every handle is registered while it lives, so
// that the double never reads through a pointer it did not hand out: a
// destroyed or foreign handle is an error, not a crash. As in CANN, a
// tensor list owns the tensors it was created with and destroys them.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/double/Double.h"

#include <unordered_map>

using namespace loom::ascend::testdouble;
namespace testdouble = loom::ascend::testdouble;
namespace host = loom::host;

namespace {

struct Registry {
  uint64_t nextTensor = 1, nextScalar = 1, nextArray = 1, nextList = 1;
  std::unordered_map<const aclTensor *, uint64_t> tensors;
  /// The list that owns a tensor, if any.
  std::unordered_map<const aclTensor *, const aclTensorList *> owners;
  std::unordered_map<const aclScalar *, uint64_t> scalars;
  std::unordered_map<const aclIntArray *, uint64_t> arrays;
  std::unordered_map<const aclTensorList *, uint64_t> lists;
};

Registry &registry() {
  static Registry *instance = new Registry;
  return *instance;
}

std::string formatDims(const int64_t *dims, uint64_t count) {
  std::string text = "[";
  for (uint64_t i = 0; i < count; ++i)
    text += format(i ? ",%lld" : "%lld", static_cast<long long>(dims[i]));
  return text + "]";
}

/// Checks the arguments of aclCreateTensor; sets the message and returns
/// false when they do not describe a tensor.
bool checkTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                 aclDataType dataType, const int64_t *stride, int64_t offset,
                 aclFormat format, const int64_t *storageDims,
                 uint64_t storageDimsNum, void *tensorData) {
  const char *fn = "aclCreateTensor";
  if (elementSize(enumValue(dataType)) == 0) {
    fail(ACLNN_ERR_PARAM_INVALID, "%s: %d is not a known aclDataType", fn,
         enumValue(dataType));
    return false;
  }
  if (enumValue(format) != ACL_FORMAT_ND) {
    fail(ACLNN_ERR_PARAM_INVALID,
         "%s: format %d; the test double supports ACL_FORMAT_ND only", fn,
         enumValue(format));
    return false;
  }
  if (viewDimsNum > static_cast<uint64_t>(host::kMaxRank) ||
      storageDimsNum > static_cast<uint64_t>(host::kMaxRank)) {
    fail(ACLNN_ERR_PARAM_INVALID,
         "%s: %llu view and %llu storage dimensions; at most %d are "
         "supported",
         fn, static_cast<unsigned long long>(viewDimsNum),
         static_cast<unsigned long long>(storageDimsNum), host::kMaxRank);
    return false;
  }
  if (viewDimsNum && (!viewDims || !stride)) {
    fail(ACLNN_ERR_PARAM_NULLPTR, "%s: viewDims or stride is null", fn);
    return false;
  }
  if (storageDimsNum && !storageDims) {
    fail(ACLNN_ERR_PARAM_NULLPTR, "%s: storageDims is null", fn);
    return false;
  }
  if (offset < 0) {
    fail(ACLNN_ERR_PARAM_INVALID, "%s: negative storage offset %lld", fn,
         static_cast<long long>(offset));
    return false;
  }
  // Sizes and strides up to 2^40 and element counts up to 2^62 keep every
  // sum and product below in range of unsigned __int128.
  constexpr int64_t kLimit = int64_t(1) << 40;
  constexpr unsigned __int128 kMaxCount = static_cast<unsigned __int128>(1)
                                          << 62;
  unsigned __int128 viewCount = 1, reach = static_cast<uint64_t>(offset);
  for (uint64_t d = 0; d < viewDimsNum; ++d) {
    if (viewDims[d] < 0 || viewDims[d] > kLimit || stride[d] < 0 ||
        stride[d] > kLimit) {
      fail(ACLNN_ERR_PARAM_INVALID,
           "%s: dimension %llu has size %lld and stride %lld (sizes and "
           "strides must be non-negative; the test double has no negative "
           "strides)",
           fn, static_cast<unsigned long long>(d),
           static_cast<long long>(viewDims[d]),
           static_cast<long long>(stride[d]));
      return false;
    }
    viewCount *= static_cast<uint64_t>(viewDims[d]);
    if (viewCount > kMaxCount) {
      fail(ACLNN_ERR_PARAM_INVALID, "%s: the view has too many elements", fn);
      return false;
    }
  }
  unsigned __int128 storageCount = 1;
  for (uint64_t d = 0; d < storageDimsNum; ++d) {
    if (storageDims[d] < 0 || storageDims[d] > kLimit) {
      fail(ACLNN_ERR_PARAM_INVALID, "%s: storage dimension %llu has size %lld",
           fn, static_cast<unsigned long long>(d),
           static_cast<long long>(storageDims[d]));
      return false;
    }
    storageCount *= static_cast<uint64_t>(storageDims[d]);
    if (storageCount > kMaxCount) {
      fail(ACLNN_ERR_PARAM_INVALID, "%s: the storage is too large", fn);
      return false;
    }
  }
  if (storageCount * elementSize(enumValue(dataType)) > kMaxCount) {
    fail(ACLNN_ERR_PARAM_INVALID, "%s: the storage is too large", fn);
    return false;
  }
  if (viewCount == 0)
    return true;
  for (uint64_t d = 0; d < viewDimsNum; ++d)
    reach += static_cast<unsigned __int128>(viewDims[d] - 1) *
             static_cast<uint64_t>(stride[d]);
  if (reach >= storageCount) {
    fail(ACLNN_ERR_PARAM_INVALID,
         "%s: the view (dims %s, strides %s, offset %lld) reaches beyond the "
         "storage of dims %s",
         fn, formatDims(viewDims, viewDimsNum).c_str(),
         formatDims(stride, viewDimsNum).c_str(),
         static_cast<long long>(offset),
         formatDims(storageDims, storageDimsNum).c_str());
    return false;
  }
  if (!tensorData) {
    fail(ACLNN_ERR_PARAM_NULLPTR, "%s: tensorData is null", fn);
    return false;
  }
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Shared with the other files of the double
//===----------------------------------------------------------------------===//

bool testdouble::isLive(const aclTensor *tensor) {
  return tensor && registry().tensors.count(tensor);
}
bool testdouble::isLive(const aclScalar *scalar) {
  return scalar && registry().scalars.count(scalar);
}
bool testdouble::isLive(const aclIntArray *array) {
  return array && registry().arrays.count(array);
}
bool testdouble::isLive(const aclTensorList *list) {
  return list && registry().lists.count(list);
}
uint64_t testdouble::serialOf(const aclTensor *tensor) {
  auto it = registry().tensors.find(tensor);
  return it == registry().tensors.end() ? 0 : it->second;
}

uint64_t testdouble::elementSize(int dtype) {
  switch (dtype) {
  case ACL_INT8:
  case ACL_UINT8:
  case ACL_BOOL:
    return 1;
  case ACL_FLOAT16:
  case ACL_BF16:
  case ACL_INT16:
  case ACL_UINT16:
    return 2;
  case ACL_FLOAT:
  case ACL_INT32:
  case ACL_UINT32:
    return 4;
  case ACL_DOUBLE:
  case ACL_INT64:
  case ACL_UINT64:
    return 8;
  default:
    return 0;
  }
}

const char *testdouble::dtypeName(int dtype) {
  switch (dtype) {
  case ACL_FLOAT:
    return "f32";
  case ACL_FLOAT16:
    return "f16";
  case ACL_INT8:
    return "i8";
  case ACL_INT32:
    return "i32";
  case ACL_UINT8:
    return "u8";
  case ACL_INT16:
    return "i16";
  case ACL_UINT16:
    return "u16";
  case ACL_UINT32:
    return "u32";
  case ACL_INT64:
    return "i64";
  case ACL_UINT64:
    return "u64";
  case ACL_DOUBLE:
    return "f64";
  case ACL_BOOL:
    return "bool";
  case ACL_BF16:
    return "bf16";
  default:
    return "unknown";
  }
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                           aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData) {
  CallLog call("aclCreateTensor");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  bool valid = checkTensor(viewDims, viewDimsNum, dataType, stride, offset,
                           format, storageDims, storageDimsNum, tensorData);
  if (call.enabled() && valid)
    call.add("dtype=%s dims=%s strides=%s offset=%lld storage=%s data=%s",
             dtypeName(enumValue(dataType)),
             formatDims(viewDims, viewDimsNum).c_str(),
             formatDims(stride, viewDimsNum).c_str(),
             static_cast<long long>(offset),
             formatDims(storageDims, storageDimsNum).c_str(),
             describeAddress(tensorData).c_str());
  if (!valid) {
    call.add("-> null");
    return nullptr;
  }
  auto *tensor = new aclTensor;
  Registry &r = registry();
  tensor->serial = r.nextTensor++;
  tensor->dtype = dataType;
  tensor->dims.assign(viewDims, viewDims + viewDimsNum);
  tensor->strides.assign(stride, stride + viewDimsNum);
  tensor->storageDims.assign(storageDims, storageDims + storageDimsNum);
  tensor->offset = offset;
  tensor->format = format;
  tensor->data = tensorData;
  r.tensors.emplace(tensor, tensor->serial);
  call.add("-> tensor%llu", static_cast<unsigned long long>(tensor->serial));
  return tensor;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
  CallLog call("aclDestroyTensor");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  if (!tensor) {
    call.add("null");
    return ACLNN_SUCCESS;
  }
  Registry &r = registry();
  if (!isLive(tensor))
    return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                            "aclDestroyTensor: not a live tensor (destroyed "
                            "already, or destroyed by the tensor list that "
                            "owned it)"));
  call.add("tensor%llu", static_cast<unsigned long long>(tensor->serial));
  auto owner = r.owners.find(tensor);
  if (owner != r.owners.end())
    return call.status(
        fail(ACLNN_ERR_PARAM_INVALID,
             "aclDestroyTensor: tensor%llu belongs to tensorlist%llu, which "
             "destroys it (aclDestroyTensorList destroys the tensors of the "
             "list)",
             static_cast<unsigned long long>(tensor->serial),
             static_cast<unsigned long long>(owner->second->serial)));
  r.tensors.erase(tensor);
  delete tensor;
  return ACLNN_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Scalars and arrays
//===----------------------------------------------------------------------===//

aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
  CallLog call("aclCreateScalar");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  int dtype = enumValue(dataType);
  call.add("dtype=%s", dtypeName(dtype));
  if (!value) {
    fail(ACLNN_ERR_PARAM_NULLPTR, "aclCreateScalar: value is null");
    call.add("-> null");
    return nullptr;
  }
  auto *scalar = new aclScalar;
  switch (dtype) {
  case ACL_FLOAT:
    scalar->floating = *static_cast<const float *>(value);
    break;
  case ACL_DOUBLE:
    scalar->floating = *static_cast<const double *>(value);
    break;
  case ACL_INT32:
    scalar->integer = *static_cast<const int32_t *>(value);
    break;
  case ACL_INT64:
    scalar->integer = *static_cast<const int64_t *>(value);
    break;
  case ACL_BOOL:
    scalar->integer = *static_cast<const unsigned char *>(value) != 0;
    break;
  default:
    delete scalar;
    fail(ACLNN_ERR_PARAM_INVALID,
         "aclCreateScalar: the test double has scalars of f32, f64, i32, "
         "i64 and bool, not %s",
         dtypeName(dtype));
    call.add("-> null");
    return nullptr;
  }
  scalar->dtype = dataType;
  Registry &r = registry();
  scalar->serial = r.nextScalar++;
  r.scalars.emplace(scalar, scalar->serial);
  call.add("-> scalar%llu", static_cast<unsigned long long>(scalar->serial));
  return scalar;
}

aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
  CallLog call("aclDestroyScalar");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  if (!scalar) {
    call.add("null");
    return ACLNN_SUCCESS;
  }
  if (!isLive(scalar))
    return call.status(
        fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyScalar: not a live scalar"));
  call.add("scalar%llu", static_cast<unsigned long long>(scalar->serial));
  registry().scalars.erase(scalar);
  delete scalar;
  return ACLNN_SUCCESS;
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
  CallLog call("aclCreateIntArray");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  if (call.enabled() && (value || !size))
    call.add("values=%s", formatDims(value, size).c_str());
  if (!value && size) {
    fail(ACLNN_ERR_PARAM_NULLPTR, "aclCreateIntArray: value is null");
    call.add("-> null");
    return nullptr;
  }
  auto *array = new aclIntArray;
  Registry &r = registry();
  array->serial = r.nextArray++;
  if (size)
    array->values.assign(value, value + size);
  r.arrays.emplace(array, array->serial);
  call.add("-> intarray%llu", static_cast<unsigned long long>(array->serial));
  return array;
}

aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
  CallLog call("aclDestroyIntArray");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  if (!array) {
    call.add("null");
    return ACLNN_SUCCESS;
  }
  if (!isLive(array))
    return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                            "aclDestroyIntArray: not a live int array"));
  call.add("intarray%llu", static_cast<unsigned long long>(array->serial));
  registry().arrays.erase(array);
  delete array;
  return ACLNN_SUCCESS;
}

aclTensorList *aclCreateTensorList(const aclTensor *const *value,
                                   uint64_t size) {
  CallLog call("aclCreateTensorList");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  call.add("size=%llu", static_cast<unsigned long long>(size));
  Registry &r = registry();
  auto refuse = [&] {
    call.add("-> null");
    return nullptr;
  };
  if (!value && size) {
    fail(ACLNN_ERR_PARAM_NULLPTR, "aclCreateTensorList: value is null");
    return refuse();
  }
  for (uint64_t i = 0; i < size; ++i) {
    if (!isLive(value[i])) {
      fail(value[i] ? ACLNN_ERR_PARAM_INVALID : ACLNN_ERR_PARAM_NULLPTR,
           "aclCreateTensorList: element %llu is not a live tensor",
           static_cast<unsigned long long>(i));
      return refuse();
    }
    if (r.owners.count(value[i])) {
      fail(ACLNN_ERR_PARAM_INVALID,
           "aclCreateTensorList: element %llu (tensor%llu) already belongs to "
           "a tensor list",
           static_cast<unsigned long long>(i),
           static_cast<unsigned long long>(value[i]->serial));
      return refuse();
    }
    for (uint64_t j = 0; j < i; ++j)
      if (value[j] == value[i]) {
        fail(ACLNN_ERR_PARAM_INVALID,
             "aclCreateTensorList: tensor%llu appears twice (the list owns "
             "its tensors)",
             static_cast<unsigned long long>(value[i]->serial));
        return refuse();
      }
  }
  auto *list = new aclTensorList;
  list->serial = r.nextList++;
  for (uint64_t i = 0; i < size; ++i) {
    // The list owns its tensors (aclDestroyTensorList destroys them), and
    // operators only read them.
    list->tensors.push_back(const_cast<aclTensor *>(value[i]));
    r.owners.emplace(value[i], list);
  }
  r.lists.emplace(list, list->serial);
  call.add("-> tensorlist%llu", static_cast<unsigned long long>(list->serial));
  return list;
}

aclnnStatus aclDestroyTensorList(const aclTensorList *array) {
  CallLog call("aclDestroyTensorList");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  if (!array) {
    call.add("null");
    return ACLNN_SUCCESS;
  }
  Registry &r = registry();
  if (!isLive(array))
    return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                            "aclDestroyTensorList: not a live tensor list"));
  call.add("tensorlist%llu", static_cast<unsigned long long>(array->serial));
  for (aclTensor *tensor : array->tensors) {
    r.owners.erase(tensor);
    r.tensors.erase(tensor);
    delete tensor;
  }
  r.lists.erase(array);
  delete array;
  return ACLNN_SUCCESS;
}

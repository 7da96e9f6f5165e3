//===- Npy.cpp - Reading and writing NumPy .npy files ---------------------===//

#include "runtime/interpreter/Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace loom::interp;

namespace {

constexpr llvm::StringLiteral kMagic("\x93NUMPY");

llvm::Error makeError(llvm::StringRef name, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "'" + name + "': " + message);
}

/// The element kind of a NumPy type descriptor, or an explanation.
llvm::Expected<ElementKind> parseDescr(llvm::StringRef descr,
                                       llvm::StringRef name) {
  if (descr == "|b1" || descr == "b1" || descr == "?")
    return ElementKind::I1;
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '=')) {
    llvm::StringRef type = descr.drop_front();
    if (type == "f4")
      return ElementKind::F32;
    if (type == "f8")
      return ElementKind::F64;
    if (type == "i4")
      return ElementKind::I32;
    if (type == "i8")
      return ElementKind::I64;
    if (type == "u2")
      return ElementKind::BF16;
  }
  if (descr.starts_with(">"))
    return makeError(name, "big-endian data ('" + descr +
                               "') is not supported; store it little-endian");
  return makeError(name, "unsupported element type '" + descr +
                             "' (expected '<f4', '<f8', '<i4', '<i8', '|b1' "
                             "or '<u2' for bf16 bits)");
}

/// A minimal reader of the Python dict literal in a .npy header.
class HeaderParser {
public:
  HeaderParser(llvm::StringRef text, llvm::StringRef name)
      : text(text), name(name) {}

  llvm::Error parse(std::string &descr, bool &fortranOrder,
                    llvm::SmallVectorImpl<int64_t> &shape) {
    bool sawDescr = false, sawOrder = false, sawShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("the header is not a Python dict");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (llvm::Error err = parseString(key))
        return err;
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after '" + key + "'");
      skipSpace();
      if (key == "descr") {
        if (llvm::Error err = parseString(descr))
          return err;
        sawDescr = true;
      } else if (key == "fortran_order") {
        if (text.consume_front("True"))
          fortranOrder = true;
        else if (text.consume_front("False"))
          fortranOrder = false;
        else
          return fail("fortran_order is neither True nor False");
        sawOrder = true;
      } else if (key == "shape") {
        if (llvm::Error err = parseShape(shape))
          return err;
        sawShape = true;
      } else {
        return fail("unexpected key '" + key + "'");
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}'");
    }
    if (!sawDescr || !sawOrder || !sawShape)
      return fail("the header lacks 'descr', 'fortran_order' or 'shape'");
    return llvm::Error::success();
  }

private:
  llvm::Error fail(const llvm::Twine &message) {
    return makeError(name, "malformed .npy header: " + message);
  }
  void skipSpace() { text = text.ltrim(" \t\n\r"); }
  bool consume(char c) { return text.consume_front(llvm::StringRef(&c, 1)); }

  llvm::Error parseString(std::string &out) {
    if (text.empty() || (text[0] != '\'' && text[0] != '"'))
      return fail("expected a quoted string");
    char quote = text[0];
    size_t end = text.find(quote, 1);
    if (end == llvm::StringRef::npos)
      return fail("unterminated string");
    out = text.slice(1, end).str();
    text = text.drop_front(end + 1);
    return llvm::Error::success();
  }

  llvm::Error parseShape(llvm::SmallVectorImpl<int64_t> &shape) {
    if (!consume('('))
      return fail("the shape is not a tuple");
    while (true) {
      skipSpace();
      if (consume(')'))
        return llvm::Error::success();
      size_t digits = 0;
      while (digits < text.size() && llvm::isDigit(text[digits]))
        ++digits;
      // Python 2 wrote long integers with an 'L' suffix.
      int64_t size;
      if (digits == 0 || digits > 18 ||
          text.take_front(digits).getAsInteger(10, size))
        return fail("a dimension of the shape is not a small non-negative "
                    "integer");
      shape.push_back(size);
      text = text.drop_front(digits);
      consume('L');
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return llvm::Error::success();
      return fail("expected ',' or ')' in the shape");
    }
  }

  llvm::StringRef text;
  llvm::StringRef name;
};

uint32_t readLittleEndian(llvm::StringRef bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  return value;
}

} // namespace

llvm::Expected<Tensor> loom::interp::parseNpy(llvm::StringRef contents,
                                              llvm::StringRef name,
                                              uint64_t maxBytes) {
  if (!contents.starts_with(kMagic))
    return makeError(name, "not a .npy file (no \\x93NUMPY magic)");
  if (contents.size() < 10)
    return makeError(name, "truncated .npy header");
  unsigned major = static_cast<uint8_t>(contents[6]);
  size_t lengthBytes;
  if (major == 1)
    lengthBytes = 2;
  else if (major == 2 || major == 3)
    lengthBytes = 4;
  else
    return makeError(name, "unsupported .npy version " + llvm::Twine(major) +
                               " (expected 1, 2 or 3)");
  size_t prefix = 8 + lengthBytes;
  if (contents.size() < prefix)
    return makeError(name, "truncated .npy header");
  uint64_t headerLength = readLittleEndian(contents.slice(8, prefix));
  if (contents.size() - prefix < headerLength)
    return makeError(name, "truncated .npy header");
  llvm::StringRef header = contents.substr(prefix, headerLength);
  llvm::StringRef body = contents.drop_front(prefix + headerLength);

  std::string descr;
  bool fortranOrder = false;
  llvm::SmallVector<int64_t> shape;
  if (llvm::Error err =
          HeaderParser(header, name).parse(descr, fortranOrder, shape))
    return std::move(err);
  llvm::Expected<ElementKind> kind = parseDescr(descr, name);
  if (!kind)
    return kind.takeError();
  std::optional<int64_t> count = getCheckedNumElements(shape);
  uint64_t elementSize = getElementSize(*kind);
  if (!count || static_cast<uint64_t>(*count) > maxBytes / elementSize)
    return makeError(name, "shape " + formatShape(shape) +
                               " is larger than the interpreter's limit of " +
                               llvm::Twine(maxBytes) + " bytes");
  if (fortranOrder && shape.size() > 1)
    return makeError(name, "Fortran-order data is not supported; save a "
                           "C-contiguous array (np.ascontiguousarray)");
  uint64_t expected = static_cast<uint64_t>(*count) * elementSize;
  if (body.size() != expected)
    return makeError(name, "holds " + llvm::Twine(body.size()) +
                               " bytes of data but shape " +
                               formatShape(shape) + " of '" + descr +
                               "' needs " + llvm::Twine(expected));

  Tensor tensor(*kind, shape);
  if (expected)
    std::memcpy(tensor.rawData(), body.data(), expected);
  if (*kind == ElementKind::I1)
    for (uint8_t &value : tensor.values<uint8_t>())
      value = value != 0;
  return tensor;
}

llvm::Expected<Tensor> loom::interp::readNpyFile(llvm::StringRef path,
                                                 uint64_t maxBytes) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(path, "cannot read: " + buffer.getError().message());
  return parseNpy((*buffer)->getBuffer(), path, maxBytes);
}

std::string loom::interp::serializeNpy(const Tensor &tensor) {
  std::string dict;
  llvm::raw_string_ostream os(dict);
  os << "{'descr': '";
  switch (tensor.getKind()) {
  case ElementKind::F32:
    os << "<f4";
    break;
  case ElementKind::F64:
    os << "<f8";
    break;
  case ElementKind::BF16:
    os << "<u2";
    break;
  case ElementKind::I1:
    os << "|b1";
    break;
  case ElementKind::I32:
    os << "<i4";
    break;
  case ElementKind::I64:
    os << "<i8";
    break;
  }
  os << "', 'fortran_order': False, 'shape': (";
  llvm::interleaveComma(tensor.getShape(), os);
  os << (tensor.getRank() == 1 ? ",), }" : "), }");

  // Pad with spaces so that the data starts at a multiple of 64 bytes, and
  // end the header with a newline, as NumPy does.
  size_t unpadded = dict.size() + 1;
  bool version2 = 10 + unpadded > 65535;
  size_t prefix = version2 ? 12 : 10;
  size_t total = (prefix + unpadded + 63) / 64 * 64;
  dict.append(total - prefix - unpadded, ' ');
  dict.push_back('\n');

  std::string out(kMagic.data(), kMagic.size());
  out.push_back(static_cast<char>(version2 ? 2 : 1));
  out.push_back(0);
  size_t length = dict.size();
  for (size_t i = 0; i < (version2 ? 4u : 2u); ++i)
    out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  out += dict;
  if (tensor.getByteSize())
    out.append(reinterpret_cast<const char *>(tensor.rawData()),
               tensor.getByteSize());
  return out;
}

llvm::Error loom::interp::writeNpyFile(llvm::StringRef path,
                                       const Tensor &tensor) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError(path, "cannot write: " + ec.message());
  os << serializeNpy(tensor);
  os.close();
  if (os.has_error())
    return makeError(path, "cannot write: " + os.error().message());
  return llvm::Error::success();
}

// runtime/cpu/npy.cpp — NumPy .npy reader and writer.
//
// Reads format versions 1.0, 2.0 and 3.0 with descr '<f4', '<f8', '<i4', '|b1'
// (also '<b1', and '=' for little-endian on this little-endian host), C order,
// any rank including 0. Every error names the file first. Writes version 1.0
// (2.0 if the header would not fit) with the header padded so the data starts
// at a multiple of 64 bytes; bf16 is widened exactly to '<f4'. Files are
// written through spmdrt/output_file.h, so readers never see a partial file.
#include "spmdrt/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cctype>
#include <cstdio>

#include "internal.h"
#include "spmdrt/checked.h"
#include "spmdrt/kernels.h"
#include "spmdrt/output_file.h"

namespace spmd::rt {

namespace {

static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

[[noreturn]] void npy_fail(const std::string &path, const std::string &what) {
  throw RuntimeError(path + ": " + what);
}

/// A tiny parser for the Python dict literal in the header, e.g.
/// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(const std::string &path, std::string_view text) : path_(path), text_(text) {}

  void parse(std::string &descr, bool &fortran_order, Shape &shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      std::string key = parse_string();
      expect(':');
      skip_space();
      if (key == "descr") {
        descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        shape = parse_shape();
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad("expected ',' or '}'");
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) bad("trailing characters after the dictionary");
    if (!have_descr || !have_order || !have_shape) {
      bad("missing key (needs 'descr', 'fortran_order' and 'shape')");
    }
  }

 private:
  [[noreturn]] void bad(const std::string &what) {
    npy_fail(path_, "bad .npy header: " + what + " in \"" + std::string(text_) + "\"");
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') bad("expected a string");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }
  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    bad("expected True or False");
  }
  Shape parse_shape() {
    expect('(');
    Shape shape;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("expected a dimension");
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (value > (int64_t{1} << 50)) bad("dimension too large");
        value = value * 10 + (text_[pos_++] - '0');
      }
      if (peek() == 'L') ++pos_;  // Python 2 long suffix
      shape.push_back(value);
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ')') {
        bad("expected ',' or ')' in shape");
      }
    }
    ++pos_;
    return shape;
  }

  const std::string &path_;
  std::string_view text_;
  size_t pos_ = 0;
};

DType parse_descr(const std::string &path, const std::string &descr) {
  if (descr == "<f4" || descr == "=f4") return DType::F32;
  if (descr == "<f8" || descr == "=f8") return DType::F64;
  if (descr == "<i4" || descr == "=i4") return DType::I32;
  if (descr == "|b1" || descr == "<b1" || descr == "=b1") return DType::Bool;
  if (!descr.empty() && descr[0] == '>') {
    npy_fail(path, "big-endian dtype '" + descr + "' is not supported (use little-endian)");
  }
  npy_fail(path, "unsupported dtype '" + descr + "' (supported: <f4, <f8, <i4, |b1)");
}

std::string descr_of(DType dtype) {
  switch (dtype) {
    case DType::F32:
    case DType::BF16:
      return "<f4";
    case DType::F64:
      return "<f8";
    case DType::I32:
      return "<i4";
    case DType::Bool:
      return "|b1";
  }
  return "";
}

uint32_t read_le(const char *bytes, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    value |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  return value;
}

/// The largest header accepted: NumPy's own headers are a few hundred bytes.
constexpr size_t kMaxHeaderBytes = size_t{1} << 20;

/// A file descriptor read in bounded pieces: never more than asked for.
class BoundedReader {
 public:
  explicit BoundedReader(const std::string &path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) npy_fail(path, std::string("cannot open file for reading: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        ::close(fd_);
        npy_fail(path, "is a directory, not a .npy file");
      }
      if (S_ISREG(st.st_mode)) size_ = static_cast<int64_t>(st.st_size);
    }
  }
  ~BoundedReader() { ::close(fd_); }
  BoundedReader(const BoundedReader &) = delete;
  BoundedReader &operator=(const BoundedReader &) = delete;

  /// The file's size when it is a regular file, else -1 (a pipe, a device).
  int64_t size() const { return size_; }

  /// Reads up to `n` bytes into `out` (less only at end of file); returns how many.
  size_t read(char *out, size_t n) {
    size_t done = 0;
    while (done < n) {
      ssize_t got = ::read(fd_, out + done, std::min<size_t>(n - done, size_t{1} << 30));
      if (got == 0) break;
      if (got < 0) {
        if (errno == EINTR) continue;
        npy_fail(path_, std::string("read error: ") + std::strerror(errno));
      }
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  const std::string &path_;
  int fd_ = -1;
  int64_t size_ = -1;
};

}  // namespace

Tensor read_npy(const std::string &path, const NpyHeaderCheck &check_header) {
  BoundedReader file(path);
  char prefix[12];
  const size_t got = file.read(prefix, 10);
  if (got < 10) npy_fail(path, "too short to be a .npy file (" + std::to_string(got) + " bytes)");
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0) npy_fail(path, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(prefix[6]);
  const int minor = static_cast<unsigned char>(prefix[7]);
  if (major < 1 || major > 3 || minor != 0) {
    npy_fail(path, "unsupported .npy format version " + std::to_string(major) + "." +
                       std::to_string(minor));
  }
  const size_t length_width = major == 1 ? 2 : 4;
  if (length_width == 4 && file.read(prefix + 10, 2) < 2) npy_fail(path, "truncated header");
  const size_t header_length = read_le(prefix + 8, length_width);
  if (header_length > kMaxHeaderBytes)
    npy_fail(path, "the header claims " + std::to_string(header_length) +
                       " bytes, more than the 1 MiB limit");
  const size_t data_start = 8 + length_width + header_length;
  std::string header_bytes(header_length, '\0');
  if (file.read(header_bytes.data(), header_length) < header_length)
    npy_fail(path, "truncated header");
  std::string_view header(header_bytes);
  while (!header.empty() &&
         (header.back() == '\n' || header.back() == ' ' || header.back() == '\0')) {
    header.remove_suffix(1);
  }
  std::string descr;
  bool fortran_order = false;
  Shape shape;
  HeaderParser(path, header).parse(descr, fortran_order, shape);
  const DType dtype = parse_descr(path, descr);
  if (fortran_order) {
    npy_fail(path, "Fortran-order arrays are not supported (save with C order)");
  }
  const std::optional<int64_t> bytes = checked_array_bytes(shape, dtype_size(dtype));
  if (!bytes) npy_fail(path, "shape " + shape_str(shape) + " of " + descr + " is too large");
  const auto expected = static_cast<size_t>(*bytes);
  if (check_header) check_header(dtype, shape);
  // A regular file's size tells everything before any data is read; a pipe or
  // a device is read up to what the header promises, plus one byte to see
  // whether more follows.
  if (file.size() >= 0) {
    const auto available = static_cast<size_t>(file.size()) - std::min<size_t>(data_start, file.size());
    if (available < expected) {
      npy_fail(path, "truncated data: shape " + shape_str(shape) + " of " + descr + " needs " +
                         std::to_string(expected) + " bytes but the file has " +
                         std::to_string(available));
    }
    if (available > expected) {
      npy_fail(path, std::to_string(available - expected) + " unexpected bytes after the data");
    }
  }
  Tensor tensor = Tensor::empty(dtype, shape);
  const size_t read = file.read(reinterpret_cast<char *>(tensor.raw()), expected);
  if (read < expected) {
    npy_fail(path, "truncated data: shape " + shape_str(shape) + " of " + descr + " needs " +
                       std::to_string(expected) + " bytes but the file has " +
                       std::to_string(read));
  }
  char extra = 0;
  if (file.read(&extra, 1) != 0) npy_fail(path, "unexpected bytes after the data");
  if (dtype == DType::Bool) {  // normalise to 0/1
    auto *p = tensor.data<uint8_t>();
    for (int64_t i = 0; i < tensor.numel(); ++i) p[i] = p[i] != 0;
  }
  return tensor;
}

NpyFile encode_npy(const Tensor &tensor) {
  if (!tensor.defined()) throw RuntimeError("cannot write an undefined tensor");
  NpyFile file;
  file.data = tensor.dtype() == DType::BF16 ? cast(tensor, DType::F32) : tensor;
  const Tensor &data = file.data;
  std::string shape = "(";
  for (size_t i = 0; i < data.shape().size(); ++i) {
    shape += (i ? ", " : "") + std::to_string(data.shape()[i]);
  }
  shape += data.shape().size() == 1 ? ",)" : ")";  // Python's one-element tuple
  std::string header = "{'descr': '" + descr_of(data.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces and a final newline so magic + version + length + header is a
  // multiple of 64.
  size_t prefix = 10;
  if ((header.size() + 1 + prefix + 63) / 64 * 64 - prefix > 65535) prefix = 12;  // version 2.0
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string preamble = "\x93NUMPY";
  preamble += static_cast<char>(prefix == 10 ? 1 : 2);
  preamble += '\0';
  const size_t length = header.size();
  for (size_t i = 0; i < prefix - 8; ++i) preamble += static_cast<char>((length >> (8 * i)) & 0xff);
  file.header = preamble + header;
  return file;
}

std::string_view NpyFile::data_bytes() const {
  return {reinterpret_cast<const char *>(data.raw()), data.nbytes()};
}

void write_npy(const std::string &path, const Tensor &tensor) {
  const NpyFile file = encode_npy(tensor);
  write_output_file(path, {file.header, file.data_bytes()});
}

}  // namespace spmd::rt

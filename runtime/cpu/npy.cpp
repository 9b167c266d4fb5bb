// runtime/cpu/npy.cpp — NumPy .npy reader and writer.
//
// Reads format versions 1.0, 2.0 and 3.0 with descr '<f4', '<f8', '<i4', '|b1'
// (also '<b1', and '=' for little-endian on this little-endian host), C order,
// any rank including 0. Every error names the file first. Writes version 1.0
// (2.0 if the header would not fit) with the header padded so the data starts
// at a multiple of 64 bytes; bf16 is widened exactly to '<f4'. Whole files
// are written through spmdrt/output_file.h, so readers never see a partial
// file. Reads are bounded: the header (at most 1 MiB), then exactly the bytes
// its shape promises (sizes through spmdrt/checked.h), so a hostile header or
// a device such as /dev/zero cannot make a read run without end.
//
// Block I/O for distributed runs: read_npy_header checks a file from its header
// and size alone, read_npy_block reads one box of the array with one pread per
// contiguous run, and create_npy_file / write_npy_block let several processes
// fill one file, each writing only its own box (docs/runtime.md, "I/O layout").
#include "spmdrt/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

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
  if (descr == "<u8" || descr == "=u8") return DType::Key;  // a random key's two words
  if (!descr.empty() && descr[0] == '>') {
    npy_fail(path, "big-endian dtype '" + descr + "' is not supported (use little-endian)");
  }
  npy_fail(path, "unsupported dtype '" + descr + "' (supported: <f4, <f8, <i4, |b1; <u8 for keys)");
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
    case DType::Key:
      return "<u8";
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

/// A header as read: where the data starts, the descr as written (for
/// messages), and the data's byte size (checked arithmetic).
struct ParsedHeader {
  NpyHeader header;
  std::string descr;
  size_t data_bytes = 0;
};

/// Reads magic, version, length and header dictionary with `read(out, n)`,
/// which returns fewer than `n` bytes only at end of file; never asks for more
/// than the header (at most kMaxHeaderBytes).
template <typename Read>
ParsedHeader read_header(const std::string &path, Read &&read) {
  char prefix[12];
  const size_t got = read(prefix, 10);
  if (got < 10) npy_fail(path, "too short to be a .npy file (" + std::to_string(got) + " bytes)");
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0) npy_fail(path, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(prefix[6]);
  const int minor = static_cast<unsigned char>(prefix[7]);
  if (major < 1 || major > 3 || minor != 0) {
    npy_fail(path, "unsupported .npy format version " + std::to_string(major) + "." +
                       std::to_string(minor));
  }
  const size_t length_width = major == 1 ? 2 : 4;
  if (length_width == 4 && read(prefix + 10, 2) < 2) npy_fail(path, "truncated header");
  const size_t header_length = read_le(prefix + 8, length_width);
  if (header_length > kMaxHeaderBytes)
    npy_fail(path, "the header claims " + std::to_string(header_length) +
                       " bytes, more than the 1 MiB limit");
  std::string header_bytes(header_length, '\0');
  if (read(header_bytes.data(), header_length) < header_length) npy_fail(path, "truncated header");
  std::string_view text(header_bytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\0')) {
    text.remove_suffix(1);
  }
  ParsedHeader out;
  bool fortran_order = false;
  HeaderParser(path, text).parse(out.descr, fortran_order, out.header.shape);
  out.header.dtype = parse_descr(path, out.descr);
  if (fortran_order) {
    npy_fail(path, "Fortran-order arrays are not supported (save with C order)");
  }
  out.header.data_offset = 8 + length_width + header_length;
  const std::optional<int64_t> bytes =
      checked_array_bytes(out.header.shape, static_cast<int64_t>(dtype_size(out.header.dtype)));
  if (!bytes)
    npy_fail(path, "shape " + shape_str(out.header.shape) + " of " + out.descr + " is too large");
  out.data_bytes = static_cast<size_t>(*bytes);
  return out;
}

[[noreturn]] void truncated_data(const std::string &path, const ParsedHeader &h, size_t available) {
  npy_fail(path, "truncated data: shape " + shape_str(h.header.shape) + " of " + h.descr +
                     " needs " + std::to_string(h.data_bytes) + " bytes but the file has " +
                     std::to_string(available));
}

/// Checks that a regular file of `file_size` bytes holds exactly the data its
/// header promises.
void check_file_size(const std::string &path, const ParsedHeader &h, size_t file_size) {
  const size_t available = file_size - std::min(h.header.data_offset, file_size);
  if (available < h.data_bytes) truncated_data(path, h, available);
  if (available > h.data_bytes) {
    npy_fail(path, std::to_string(available - h.data_bytes) + " unexpected bytes after the data");
  }
}

/// Bool elements are normalised to 0/1.
void normalise_bools(Tensor &tensor) {
  if (tensor.dtype() != DType::Bool) return;
  auto *p = tensor.data<uint8_t>();
  for (int64_t i = 0; i < tensor.numel(); ++i) p[i] = p[i] != 0;
}

/// An open file descriptor, closed on destruction.
class Fd {
 public:
  Fd(const std::string &path, int flags) : fd_(::open(path.c_str(), flags | O_CLOEXEC, 0666)) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return fd_; }
  /// Closes now; false when close reports an error (a delayed write error).
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return fd < 0 || ::close(fd) == 0;
  }

 private:
  int fd_;
};

/// Opens `path` for reading; a directory or an unopenable file is an error.
/// `st` receives its status.
Fd open_for_reading(const std::string &path, struct stat &st) {
  Fd fd(path, O_RDONLY);
  if (fd.get() < 0)
    npy_fail(path, std::string("cannot open file for reading: ") + std::strerror(errno));
  if (::fstat(fd.get(), &st) != 0)
    npy_fail(path, std::string("read error: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) npy_fail(path, "is a directory, not a .npy file");
  return fd;
}

/// Reads up to `n` bytes at the file position (fewer only at end of file).
size_t read_some(int fd, const std::string &path, char *out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd, out + done, std::min<size_t>(n - done, size_t{1} << 30));
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      npy_fail(path, std::string("read error: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(got);
  }
  return done;
}

/// Reads exactly `size` bytes at `offset`; false on error or end of file.
bool pread_all(int fd, std::byte *out, size_t size, size_t offset) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    offset += static_cast<size_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Writes exactly `size` bytes at `offset`; false on error.
bool pwrite_all(int fd, const std::byte *data, size_t size, size_t offset) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    offset += static_cast<size_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Tensor read_npy(const std::string &path, const NpyHeaderCheck &check_header) {
  struct stat st {};
  Fd fd = open_for_reading(path, st);
  auto read = [&](char *out, size_t n) { return read_some(fd.get(), path, out, n); };
  const ParsedHeader h = read_header(path, read);
  if (check_header) check_header(h.header.dtype, h.header.shape);
  // A regular file's size tells everything before any data is read; a pipe or
  // a device is read up to what the header promises, plus one byte to see
  // whether more follows.
  if (S_ISREG(st.st_mode)) check_file_size(path, h, static_cast<size_t>(st.st_size));
  Tensor tensor = Tensor::empty(h.header.dtype, h.header.shape);
  const size_t got = read(reinterpret_cast<char *>(tensor.raw()), h.data_bytes);
  if (got < h.data_bytes) truncated_data(path, h, got);
  char extra = 0;
  if (read(&extra, 1) != 0) npy_fail(path, "unexpected bytes after the data");
  normalise_bools(tensor);
  return tensor;
}

NpyHeader read_npy_header(const std::string &path) {
  struct stat st {};
  Fd fd = open_for_reading(path, st);
  if (!S_ISREG(st.st_mode)) {  // a pipe or device: read it whole (single process only)
    fd.close();
    const Tensor whole = read_npy(path);
    return NpyHeader{whole.dtype(), whole.shape(), 0};
  }
  size_t offset = 0;
  const ParsedHeader h = read_header(path, [&](char *out, size_t n) {
    const size_t want =
        std::min(n, static_cast<size_t>(st.st_size) - std::min<size_t>(offset, st.st_size));
    if (!pread_all(fd.get(), reinterpret_cast<std::byte *>(out), want, offset))
      npy_fail(path, "read error");
    offset += want;
    return want;
  });
  check_file_size(path, h, static_cast<size_t>(st.st_size));
  return h.header;
}

namespace {

std::atomic<int64_t> bytes_read{0};

/// pread_all for block reads: counted, and traced with SPMDRT_TRACE_READS=1.
bool counted_pread(int fd, const std::string &path, std::byte *out, size_t size, size_t offset) {
  static const bool trace = [] {
    const char *v = std::getenv("SPMDRT_TRACE_READS");
    return v != nullptr && std::string_view(v) == "1";
  }();
  if (trace)
    std::fprintf(stderr, "spmdrt: process %ld read %zu bytes at %zu of %s\n",
                 static_cast<long>(::getpid()), size, offset, path.c_str());
  bytes_read += static_cast<int64_t>(size);
  return pread_all(fd, out, size, offset);
}

}  // namespace

int64_t input_bytes_read() { return bytes_read.load(); }

Tensor read_npy_block(const std::string &path, const NpyHeader &header, const Shape &start,
                      const Shape &extent) {
  if (header.token_width != 0)
    return read_input_block({path, header.token_width}, header, start, extent);
  if (header.data_offset == 0) {  // not a regular file: read_npy_header read it whole
    const Tensor whole = read_npy(path);
    std::vector<int64_t> limit(start.size()), stride(start.size(), 1);
    for (size_t d = 0; d < limit.size(); ++d) limit[d] = start[d] + extent[d];
    return slice(whole, start, limit, stride);
  }
  Fd fd(path, O_RDONLY);
  if (fd.get() < 0) npy_fail(path, "cannot open file for reading");
  Tensor tensor = Tensor::empty(header.dtype, extent);
  const size_t esize = dtype_size(header.dtype);
  detail::for_each_block_run(
      header.shape, Block{start, extent}, [&](int64_t global, int64_t local, int64_t count) {
        if (!counted_pread(fd.get(), path, tensor.raw() + local * esize, count * esize,
                           header.data_offset + global * esize))
          npy_fail(path, "read error (the file changed while reading?)");
      });
  normalise_bools(tensor);
  return tensor;
}

InputFile parse_input_file(const std::string &spec) {
  const auto colon = spec.rfind(':');
  if (colon != std::string::npos && colon > 0) {
    const std::string_view format = std::string_view(spec).substr(colon + 1);
    if (format == "u16") return {spec.substr(0, colon), 2};
    if (format == "u32") return {spec.substr(0, colon), 4};
  }
  return {spec, 0};
}

NpyHeader read_input_header(const InputFile &file) {
  if (file.token_width == 0) return read_npy_header(file.path);
  const std::string kind = file.token_width == 2 ? "u16" : "u32";
  struct stat st {};
  Fd fd = open_for_reading(file.path, st);
  if (!S_ISREG(st.st_mode))
    npy_fail(file.path, "a :" + kind + " token file must be a regular file (it is read in blocks)");
  const auto size = static_cast<size_t>(st.st_size);
  if (size % static_cast<size_t>(file.token_width) != 0)
    npy_fail(file.path, std::to_string(size) + " bytes is not a whole number of " + kind +
                            " tokens (" + std::to_string(file.token_width) +
                            " bytes each): is it the right file, or :" +
                            (kind == "u16" ? "u32" : "u16") + "?");
  NpyHeader h;
  h.dtype = DType::I32;
  h.shape = {static_cast<int64_t>(size / static_cast<size_t>(file.token_width))};
  h.data_offset = 0;
  h.token_width = file.token_width;
  return h;
}

Tensor read_input_block(const InputFile &file, const NpyHeader &header, const Shape &start,
                        const Shape &extent) {
  if (header.token_width == 0) return read_npy_block(file.path, header, start, extent);
  const std::string &path = file.path;
  if (start.size() != 1 || extent.size() != 1)
    npy_fail(path, "a token file holds a one-dimensional array");
  Fd fd(path, O_RDONLY);
  if (fd.get() < 0)
    npy_fail(path, std::string("cannot open file for reading: ") + std::strerror(errno));
  const auto width = static_cast<size_t>(header.token_width);
  const auto count = static_cast<size_t>(extent[0]);
  std::vector<std::byte> bytes(count * width);
  if (count > 0 && !counted_pread(fd.get(), path, bytes.data(), bytes.size(),
                                  static_cast<size_t>(start[0]) * width))
    npy_fail(path, "read error (the file changed while reading?)");
  Tensor tensor = Tensor::empty(DType::I32, extent);
  int32_t *out = tensor.data<int32_t>();
  for (size_t i = 0; i < count; ++i) {
    const uint32_t v = read_le(reinterpret_cast<const char *>(bytes.data()) + i * width, width);
    if (v > static_cast<uint32_t>(INT32_MAX))
      npy_fail(path, "token " + std::to_string(static_cast<size_t>(start[0]) + i) + " is " +
                         std::to_string(v) + ", which does not fit i32 (at most 2147483647)");
    out[i] = static_cast<int32_t>(v);
  }
  return tensor;
}

Tensor read_input(const InputFile &file, const NpyHeaderCheck &check_header) {
  if (file.token_width == 0) return read_npy(file.path, check_header);
  const NpyHeader h = read_input_header(file);
  if (check_header) check_header(h.dtype, h.shape);
  return read_input_block(file, h, Shape{0}, h.shape);
}

std::string npy_header_bytes(DType dtype, const Shape &shape) {
  std::string dims = "(";
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  dims += shape.size() == 1 ? ",)" : ")";  // Python's one-element tuple
  std::string header =
      "{'descr': '" + descr_of(dtype) + "', 'fortran_order': False, 'shape': " + dims + ", }";
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
  return preamble + header;
}

void create_npy_file(const std::string &path, DType dtype, const Shape &shape) {
  const std::string header = npy_header_bytes(dtype, shape);
  Fd fd(path, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd.get() < 0) npy_fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
  const std::optional<int64_t> bytes = checked_array_bytes(
      shape, static_cast<int64_t>(dtype_size(dtype == DType::BF16 ? DType::F32 : dtype)));
  if (!bytes) npy_fail(path, "shape " + shape_str(shape) + " is too large to write");
  const size_t size = header.size() + static_cast<size_t>(*bytes);
  if (!pwrite_all(fd.get(), reinterpret_cast<const std::byte *>(header.data()), header.size(), 0) ||
      ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0 || !fd.close())
    npy_fail(path, std::string("write error: ") + std::strerror(errno));
}

void write_npy_block(const std::string &path, const Shape &global, const Shape &start,
                     const Tensor &block) {
  const Tensor data = block.dtype() == DType::BF16 ? cast(block, DType::F32) : block;
  const size_t offset = npy_header_bytes(data.dtype(), global).size();
  const size_t esize = dtype_size(data.dtype());
  Fd fd(path, O_WRONLY);
  if (fd.get() < 0) npy_fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
  detail::for_each_block_run(
      global, Block{start, data.shape()}, [&](int64_t g, int64_t local, int64_t count) {
        if (!pwrite_all(fd.get(), data.raw() + local * esize, count * esize, offset + g * esize))
          npy_fail(path, std::string("write error: ") + std::strerror(errno));
      });
  if (!fd.close()) npy_fail(path, std::string("write error: ") + std::strerror(errno));
}

void write_npy(const std::string &path, const Tensor &tensor) {
  if (!tensor.defined()) npy_fail(path, "cannot write an undefined tensor");
  OutputFiles out;
  const std::string temp = out.add_external(path);
  create_npy_file(temp, tensor.dtype(), tensor.shape());
  write_npy_block(temp, tensor.shape(), Shape(tensor.shape().size(), 0), tensor);
  out.commit();
}

}  // namespace spmd::rt

// support/source.cpp — source files, spans and byte-offset to line:column mapping.
//
// A SourceFile records the byte offset at which each line starts, so that
// line_column is a binary search. Lines end at '\n'; a '\r' before it is not
// part of the line text. Offsets past the end of the text are clamped, so a
// span at end of file (e.g. for "unexpected end of file") still has a location.
#include "support/source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "support/limits.h"

namespace spmd {

SourceSpan SourceSpan::cover(SourceSpan a, SourceSpan b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  SourceSpan out = a;
  out.begin = std::min(a.begin, b.begin);
  out.end = std::max(a.end, b.end);
  return out;
}

SourceFile::SourceFile(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
  }
}

std::pair<uint32_t, uint32_t> SourceFile::line_column(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  // The last line start <= offset.
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t index = static_cast<size_t>(it - line_starts_.begin()) - 1;
  return {static_cast<uint32_t>(index + 1), offset - line_starts_[index] + 1};
}

std::string_view SourceFile::line_text(uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  size_t begin = line_starts_[line - 1];
  size_t end = line < line_starts_.size() ? line_starts_[line] - 1 : text_.size();
  if (end > begin && text_[end - 1] == '\r') --end;
  return std::string_view(text_).substr(begin, end - begin);
}

FileId SourceManager::add(std::string path, std::string text) {
  files_.push_back(std::make_unique<SourceFile>(std::move(path), std::move(text)));
  return static_cast<FileId>(files_.size() - 1);
}

size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

bool is_c1_control(std::string_view s, size_t i, size_t n) {
  return n == 2 && static_cast<unsigned char>(s[i]) == 0xC2 &&
         static_cast<unsigned char>(s[i + 1]) < 0xA0;
}

bool read_source(const std::string &path, std::string &text, std::string &error,
                 bool regular_only) {
  const bool stdin_ = path == "-";
  // O_NONBLOCK: opening a FIFO without a writer must not wait for one.
  const int fd =
      stdin_ ? 0 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (regular_only ? O_NONBLOCK : 0));
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  struct FdGuard {
    int fd;
    bool owned;
    ~FdGuard() {
      if (owned) ::close(fd);
    }
  } guard{fd, !stdin_};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    error = "it is a directory";
    return false;
  }
  if (regular_only && !stdin_) {
    if (!S_ISREG(st.st_mode)) {
      error = S_ISFIFO(st.st_mode) ? "it is a FIFO (named pipe), not a regular file"
                                   : "it is not a regular file";
      return false;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  }
  const auto limit = static_cast<size_t>(kMaxSourceBytes);
  auto too_large = [&] {
    error = "it is larger than the " + std::to_string(kMaxSourceBytes >> 20) +
            " MiB a source file may have";
    return false;
  };
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > limit) return too_large();
  // Read at most one byte past the limit, whatever the file is (a pipe, a device).
  text.clear();
  std::string buffer(size_t{1} << 16, '\0');
  while (text.size() <= limit) {
    const ssize_t n = ::read(fd, buffer.data(), std::min(buffer.size(), limit + 1 - text.size()));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      error = std::strerror(errno);
      return false;
    }
    text.append(buffer.data(), static_cast<size_t>(n));
  }
  if (text.size() > limit) return too_large();
  return true;
}

FileId SourceManager::load(const std::string &path, std::string &error, bool regular_only) {
  std::string text;
  if (!read_source(path, text, error, regular_only)) {
    error = "cannot read `" + path + "`: " + error;
    return kNoFile;
  }
  error.clear();
  return add(path, std::move(text));
}

std::vector<std::string> SourceManager::paths() const {
  std::vector<std::string> out;
  for (const auto &f : files_) out.push_back(f->path());
  return out;
}

SourceLocation SourceManager::location(SourceSpan span) const {
  if (!span.valid() || span.file < 0 || static_cast<size_t>(span.file) >= files_.size()) return {};
  const SourceFile &f = file(span.file);
  auto [line, column] = f.line_column(span.begin);
  return {f.display_path(), line, column};
}

bool SourceManager::in_library(SourceSpan span) const {
  return span.valid() && static_cast<size_t>(span.file) < files_.size() &&
         file(span.file).is_library();
}

}  // namespace spmd

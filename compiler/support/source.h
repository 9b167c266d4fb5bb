// support/source.h — source files and spans.
//
// Every AST node and IR instruction carries a SourceSpan: a file id plus a
// half-open byte range. Line and column numbers (1-based) are computed from the
// byte offset in exactly one place, SourceManager::location.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spmd {

using FileId = int32_t;
inline constexpr FileId kNoFile = -1;

struct SourceSpan {
  FileId file = kNoFile;
  uint32_t begin = 0;  // byte offset of the first character
  uint32_t end = 0;    // byte offset one past the last character
  bool valid() const { return file != kNoFile; }
  /// The smallest span covering both (same file assumed; an invalid side is ignored).
  static SourceSpan cover(SourceSpan a, SourceSpan b);
  bool operator==(const SourceSpan &) const = default;
};

struct SourceLocation {
  std::string_view path;
  uint32_t line = 0;    // 1-based
  uint32_t column = 0;  // 1-based, in bytes
};

class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  /// The path the file was read from (what imports and editors open).
  const std::string &path() const { return path_; }
  /// The name diagnostics, pictures and printed locations use: the path,
  /// except for a module of the standard library, named relative to the
  /// library (`std/nn.spmd`) wherever spmdc is installed.
  const std::string &display_path() const { return display_.empty() ? path_ : display_; }
  /// A module of the standard library (its own warnings are not the user's).
  bool is_library() const { return !display_.empty(); }
  void set_library_name(std::string name) { display_ = std::move(name); }
  const std::string &text() const { return text_; }
  /// 1-based line and column of a byte offset.
  std::pair<uint32_t, uint32_t> line_column(uint32_t offset) const;
  /// The text of 1-based line `line`, without its newline.
  std::string_view line_text(uint32_t line) const;

 private:
  std::string path_;
  std::string display_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

/// Length of the valid UTF-8 sequence of two or more bytes at s[i], or 0
/// (ASCII, a stray or truncated byte).
size_t utf8_sequence_length(std::string_view s, size_t i);
/// True when the valid UTF-8 sequence of `n` bytes at s[i] is a C1 control
/// character (U+0080 to U+009F): terminals act on some (U+009B starts an
/// escape sequence, like ESC [), so it is never echoed raw.
bool is_c1_control(std::string_view s, size_t i, size_t n);

/// Reads a source file ("-": standard input) into `text`, at most
/// kMaxSourceBytes (support/limits.h) whatever the file is (a pipe, a device
/// that never ends); false with the reason in `error` otherwise. With
/// `regular_only` (imported modules) anything but a regular file is refused
/// at once: a FIFO without a writer would otherwise block the open forever.
bool read_source(const std::string &path, std::string &text, std::string &error,
                 bool regular_only = false);

/// Owns every file read during a compilation (main file and imports).
class SourceManager {
 public:
  FileId add(std::string path, std::string text);
  /// Reads a file from disk; returns kNoFile (and leaves `error` set) on failure.
  FileId load(const std::string &path, std::string &error, bool regular_only = false);
  const SourceFile &file(FileId id) const { return *files_.at(static_cast<size_t>(id)); }
  SourceFile &file(FileId id) { return *files_.at(static_cast<size_t>(id)); }
  /// Whether `span` lies in a module of the standard library.
  bool in_library(SourceSpan span) const;
  /// The path of every file read, in order.
  std::vector<std::string> paths() const;
  SourceLocation location(SourceSpan span) const;

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

}  // namespace spmd

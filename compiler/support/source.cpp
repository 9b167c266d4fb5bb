// support/source.cpp — source files, spans and byte-offset to line:column mapping.
//
// A SourceFile records the byte offset at which each line starts, so that
// line_column is a binary search. Lines end at '\n'; a '\r' before it is not
// part of the line text. Offsets past the end of the text are clamped, so a
// span at end of file (e.g. for "unexpected end of file") still has a location.
#include "support/source.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

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

FileId SourceManager::load(const std::string &path, std::string &error) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    error = "cannot read `" + path + "`: it is a directory";
    return kNoFile;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open `" + path + "`: " + std::strerror(errno);
    return kNoFile;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    error = "cannot read `" + path + "`";
    return kNoFile;
  }
  error.clear();
  return add(path, std::move(buffer).str());
}

SourceLocation SourceManager::location(SourceSpan span) const {
  if (!span.valid() || span.file < 0 || static_cast<size_t>(span.file) >= files_.size()) return {};
  const SourceFile &f = file(span.file);
  auto [line, column] = f.line_column(span.begin);
  return {f.path(), line, column};
}

}  // namespace spmd

// sharding/source_quote.h — the source text of a global op, for the comments
// of emitted programs and for --explain.
#pragma once

#include <filesystem>
#include <string>

#include "support/source.h"

namespace spmd::sharding {

struct SourceQuote {
  std::string text;   // the span on one line, cut to the length asked for
  std::string where;  // "line 7" in the main file; "nn.spmd:57" in an imported one
};

/// Quotes `span` (which must be valid). The main file is the first one a
/// compilation reads (FileId 0); ops inlined from a def of an imported module
/// name that module's file, so a line number never points into the wrong file.
inline SourceQuote quote_source(const SourceManager &sources, SourceSpan span, size_t max_chars) {
  const SourceFile &file = sources.file(span.file);
  std::string text = file.text().substr(span.begin, span.end - span.begin);
  for (char &c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (text.size() > max_chars) text = text.substr(0, max_chars - 3) + "...";
  auto [line, col] = file.line_column(span.begin);
  std::string where = span.file == 0 ? "line " + std::to_string(line)
                                     : std::filesystem::path(file.path()).filename().string() +
                                           ":" + std::to_string(line);
  return {std::move(text), std::move(where)};
}

}  // namespace spmd::sharding

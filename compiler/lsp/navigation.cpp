// lsp/navigation.cpp — go-to-definition and whole-document formatting.
#include "lsp/navigation.h"

#include "frontend/format.h"
#include "frontend/parser.h"
#include "lsp/uri.h"

namespace spmd::lsp {

Json definition_locations(const Analysis &analysis, uint32_t offset) {
  const Compilation &c = analysis.compilation;
  Json out = Json::array();
  const Symbol *s = analysis.symbols.find(c.main_file, offset);
  if (!s) return out;
  for (const SourceSpan &span : s->definitions) {
    if (!span.valid()) continue;
    const SourceFile &file = c.sources.file(span.file);
    out.push_back({{"uri", span.file == c.main_file ? analysis.uri : uri_from_path(file.path())},
                   {"range", range_json(file.text(), span.begin, span.end)}});
  }
  return out;
}

Json formatting_edits(const Analysis &analysis) {
  // Only the document itself is parsed: `spmdc fmt` does not need its imports.
  SourceManager sources;
  FileId file = sources.add(analysis.path, analysis.text());
  DiagnosticEngine diags;
  ast::Module module = parse(sources, file, diags);
  if (diags.has_errors() || diags.has_internal_errors()) return Json::array();
  std::string formatted = format_module(module);
  const std::string &text = analysis.text();
  if (formatted == text) return Json::array();
  return Json::array({{{"range", range_json(text, 0, static_cast<uint32_t>(text.size()))},
                       {"newText", formatted}}});
}

}  // namespace spmd::lsp

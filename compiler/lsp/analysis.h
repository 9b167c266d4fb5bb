// lsp/analysis.h — one open document, checked as `spmdc check` checks a file.
//
// analyze() compiles the editor's text (not the file on disk; imports are
// read from disk beside it) through the same pipeline as `spmdc check`
// (pipeline/compile.h, then the sharded functions' spec check) and indexes
// its identifiers (lsp/symbols.h). lsp_diagnostics() turns the diagnostics
// into LSP `Diagnostic` objects by way of their JSON form (support/
// diagnostics.h, docs/diagnostics.md), so the editor shows exactly what
// `spmdc check --diagnostics-format=json` prints.
#pragma once

#include <memory>
#include <string>

#include "lsp/positions.h"
#include "lsp/symbols.h"
#include "pipeline/compile.h"

namespace spmd::lsp {

struct Analysis {
  std::string uri;
  std::string path;  // what the compiler calls the document
  Compilation compilation;
  SymbolIndex symbols;  // of the main file; empty when it did not parse
  const std::string &text() const { return compilation.sources.file(compilation.main_file).text(); }
};

std::unique_ptr<Analysis> analyze(const std::string &uri, std::string text,
                                  const CompileOptions &options);

/// The LSP `Diagnostic`s of the document: those located in it with their
/// ranges; those located in an imported file (or nowhere) at the start of
/// the document, their message prefixed with `path:line:col:`. Notes become
/// `relatedInformation`, the help text a `help:` line of the message.
Json lsp_diagnostics(const Analysis &analysis);

}  // namespace spmd::lsp

// support/diagnostics.h — diagnostics as data.
//
// Passes report problems into a DiagnosticEngine instead of throwing. Each
// diagnostic has a severity, a stable code (e.g. "E0301" / "variance-mismatch"),
// a primary span, optional labelled secondary spans and an optional suggested
// fix. The driver sorts them by position and renders them as
//
//   file:line:col: error: message [code]
//     12 |   return w
//        |          ^
//   file:line:col: note: `w` varies along `i` because of this argument
//
// Internal errors (compiler bugs) are a separate severity and make spmdc exit
// with status 2; user errors exit with 1.
#pragma once

#include <string>
#include <vector>

#include "support/source.h"

namespace spmd {

enum class Severity { Note, Warning, Error, Internal };

struct DiagnosticLabel {
  SourceSpan span;
  std::string message;
};

/// A machine-applicable edit: replace the text of `span` by `replacement`
/// (an empty span inserts). Editors offer these as quick fixes.
struct FixIt {
  SourceSpan span;
  std::string replacement;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string code;  // kebab-case name, e.g. "unmapped-output-varies"
  SourceSpan span;
  std::string message;
  std::vector<DiagnosticLabel> notes;  // secondary spans
  std::string fix;                     // "help: ..." text; empty if none
  std::vector<FixIt> fixits;           // edits that carry out `fix`, when it is mechanical

  Diagnostic &note(SourceSpan at, std::string text) {
    notes.push_back({at, std::move(text)});
    return *this;
  }
  Diagnostic &help(std::string text) {
    fix = std::move(text);
    return *this;
  }
  Diagnostic &fixit(SourceSpan at, std::string replacement) {
    fixits.push_back({at, std::move(replacement)});
    return *this;
  }
};

class DiagnosticEngine {
 public:
  Diagnostic &error(std::string code, SourceSpan span, std::string message);
  Diagnostic &warning(std::string code, SourceSpan span, std::string message);
  /// A compiler bug: an invariant of the compiler itself did not hold.
  Diagnostic &internal(SourceSpan span, std::string message);

  bool has_errors() const { return num_errors_ > 0; }
  bool has_internal_errors() const { return num_internal_ > 0; }
  int num_errors() const { return num_errors_; }
  const std::vector<Diagnostic> &all() const { return diags_; }
  /// Number of diagnostics so far; with at(), lets a pass add context notes to
  /// the diagnostics reported while it was working (e.g. "in the call from here").
  size_t count() const { return diags_.size(); }
  Diagnostic &at(size_t index) { return diags_.at(index); }
  /// Stable sort by (file, offset); diagnostics without a span go last.
  void sort_by_position();
  /// Stop collecting after this many errors (the driver's --max-errors).
  void set_limit(int max_errors) { limit_ = max_errors; }
  bool at_limit() const { return num_errors_ >= limit_; }

 private:
  std::vector<Diagnostic> diags_;
  int num_errors_ = 0;
  int num_internal_ = 0;
  int limit_ = 100;
  Diagnostic overflow_;  // sink for diagnostics past the limit
};

/// Renders all diagnostics, sorted, to text (with source excerpts and carets).
std::string render_diagnostics(const DiagnosticEngine &engine, const SourceManager &sources,
                               bool color = false);

/// Renders all diagnostics, sorted, as JSON Lines: one object per diagnostic
/// (the contract is docs/diagnostics.md).
std::string render_diagnostics_json(const DiagnosticEngine &engine, const SourceManager &sources);

/// How the driver prints diagnostics (`--diagnostics-format`).
enum class DiagnosticsFormat { Text, Json };

/// render_diagnostics or render_diagnostics_json.
std::string render_diagnostics(const DiagnosticEngine &engine, const SourceManager &sources,
                               DiagnosticsFormat format, bool color);

}  // namespace spmd

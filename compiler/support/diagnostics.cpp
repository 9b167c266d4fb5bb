// support/diagnostics.cpp — collecting and rendering diagnostics.
//
// Rendering follows the usual compiler layout: a `path:line:col: severity:
// message [code]` header, the source line with a line-number gutter, a caret
// line (`^~~~`) under the primary span (clamped to that line), then each
// secondary label as a note with its own excerpt, and finally `help: ...` when
// a fix is suggested. Diagnostics without a file render as `spmdc: ...`.
// The JSON form (docs/diagnostics.md) carries the same data, one object per
// line, with byte offsets and exclusive end positions for editors.
#include "support/diagnostics.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

namespace spmd {

Diagnostic &DiagnosticEngine::error(std::string code, SourceSpan span, std::string message) {
  ++num_errors_;
  if (num_errors_ > limit_) {
    overflow_ = Diagnostic{};
    return overflow_;
  }
  diags_.push_back(
      Diagnostic{Severity::Error, std::move(code), span, std::move(message), {}, {}, {}});
  return diags_.back();
}

Diagnostic &DiagnosticEngine::warning(std::string code, SourceSpan span, std::string message) {
  diags_.push_back(
      Diagnostic{Severity::Warning, std::move(code), span, std::move(message), {}, {}, {}});
  return diags_.back();
}

Diagnostic &DiagnosticEngine::internal(SourceSpan span, std::string message) {
  ++num_internal_;
  diags_.push_back(Diagnostic{Severity::Internal, "", span, std::move(message), {}, {}, {}});
  return diags_.back();
}

namespace {

bool position_less(const Diagnostic &a, const Diagnostic &b) {
  bool av = a.span.valid(), bv = b.span.valid();
  if (av != bv) return av;  // spanless ones go last
  if (!av) return false;
  return std::tie(a.span.file, a.span.begin) < std::tie(b.span.file, b.span.begin);
}

struct Style {
  bool color;
  std::string bold(const std::string &s) const { return color ? "\033[1m" + s + "\033[0m" : s; }
  std::string paint(const char *code, const std::string &s) const {
    return color ? std::string("\033[1;") + code + "m" + s + "\033[0m" : s;
  }
};

const char *severity_name(Severity s) {
  switch (s) {
    case Severity::Note:
      return "note";
    case Severity::Warning:
      return "warning";
    case Severity::Error:
      return "error";
    case Severity::Internal:
      return "internal compiler error";
  }
  return "error";
}

const char *severity_color(Severity s) {
  switch (s) {
    case Severity::Note:
      return "36";  // cyan
    case Severity::Warning:
      return "35";  // magenta
    default:
      return "31";  // red
  }
}

/// `path:line:col: ` for a span in a known file, else `spmdc: `.
std::string header_prefix(SourceSpan span, const SourceManager &sources) {
  SourceLocation loc = sources.location(span);
  if (loc.line == 0) return "spmdc: ";
  return std::string(loc.path) + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) +
         ": ";
}

/// The source line of `span` with a gutter and a caret line under the span.
void render_excerpt(std::string &out, SourceSpan span, const SourceManager &sources,
                    const Style &style, const char *caret_color) {
  SourceLocation loc = sources.location(span);
  if (loc.line == 0) return;
  const SourceFile &file = sources.file(span.file);
  std::string_view full_line = file.line_text(loc.line);
  // Very long lines (minified or binary input) show a window around the span.
  constexpr size_t kMaxWidth = 160;
  size_t column = std::min<size_t>(loc.column - 1, full_line.size());
  size_t window_begin = column > kMaxWidth / 2 && full_line.size() > kMaxWidth
                            ? std::min(column - kMaxWidth / 2, full_line.size() - kMaxWidth)
                            : 0;
  std::string line(full_line.substr(window_begin, kMaxWidth));
  // Control characters would garble the terminal: show them as '?'.
  for (char &c : line)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) c = '?';
  std::string number = std::to_string(loc.line);
  std::string gutter(number.size(), ' ');
  out += "  " + style.paint("34", number + " |") + (line.empty() ? "" : " ");
  out += line;
  out += "\n";
  // Caret line: keep tabs so the caret lines up with the excerpt.
  size_t start = std::min<size_t>(column - window_begin, line.size());
  size_t end_offset = std::max(span.end, span.begin);
  size_t length = end_offset - span.begin;
  size_t width = std::max<size_t>(1, std::min(length, line.size() - start));
  if (start == line.size()) width = 1;
  std::string pad;
  for (size_t i = 0; i < start; ++i) pad += line[i] == '\t' ? '\t' : ' ';
  std::string carets = "^" + std::string(width - 1, '~');
  out +=
      "  " + style.paint("34", gutter + " |") + " " + pad + style.paint(caret_color, carets) + "\n";
}

void render_one(std::string &out, const Diagnostic &d, const SourceManager &sources,
                const Style &style) {
  std::string header = header_prefix(d.span, sources);
  out += style.bold(header);
  out += style.paint(severity_color(d.severity), std::string(severity_name(d.severity)) + ":");
  out += " " + style.bold(d.message);
  if (!d.code.empty()) out += " [" + d.code + "]";
  out += "\n";
  render_excerpt(out, d.span, sources, style, severity_color(d.severity));
  for (const DiagnosticLabel &note : d.notes) {
    out += style.bold(header_prefix(note.span, sources));
    out += style.paint(severity_color(Severity::Note), "note:") + " " + note.message + "\n";
    render_excerpt(out, note.span, sources, style, severity_color(Severity::Note));
  }
  if (!d.fix.empty()) out += style.paint("32", "help:") + " " + d.fix + "\n";
  if (d.severity == Severity::Internal) {
    out += style.paint(severity_color(Severity::Note), "note:") +
           " this is a bug in spmdc, not in your program; please report it together with the "
           "input that triggers it\n";
  }
}

}  // namespace

void DiagnosticEngine::sort_by_position() {
  std::stable_sort(diags_.begin(), diags_.end(), position_less);
}

namespace {

std::vector<const Diagnostic *> sorted_diagnostics(const DiagnosticEngine &engine) {
  std::vector<const Diagnostic *> sorted;
  for (const Diagnostic &d : engine.all()) sorted.push_back(&d);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Diagnostic *a, const Diagnostic *b) { return position_less(*a, *b); });
  return sorted;
}

using Json = nlohmann::ordered_json;

Json json_position(const SourceFile &file, uint32_t offset) {
  auto [line, column] = file.line_column(offset);
  return Json{{"line", line}, {"column", column}, {"offset", offset}};
}

/// Adds "file", "line", "column" and "range" for `span` (nulls without a file).
void add_json_location(Json &out, SourceSpan span, const SourceManager &sources) {
  SourceLocation loc = sources.location(span);
  if (loc.line == 0) {
    out["file"] = nullptr;
    out["line"] = nullptr;
    out["column"] = nullptr;
    out["range"] = nullptr;
    return;
  }
  const SourceFile &file = sources.file(span.file);
  uint32_t end = std::max(span.end, span.begin);
  out["file"] = std::string(loc.path);
  out["line"] = loc.line;
  out["column"] = loc.column;
  out["range"] =
      Json{{"start", json_position(file, span.begin)}, {"end", json_position(file, end)}};
}

const char *json_severity(Severity s) {
  return s == Severity::Internal ? "internal" : severity_name(s);
}

}  // namespace

std::string render_diagnostics(const DiagnosticEngine &engine, const SourceManager &sources,
                               bool color) {
  Style style{color};
  std::string out;
  for (const Diagnostic *d : sorted_diagnostics(engine)) render_one(out, *d, sources, style);
  return out;
}

std::string render_diagnostics_json(const DiagnosticEngine &engine, const SourceManager &sources) {
  std::string out;
  for (const Diagnostic *d : sorted_diagnostics(engine)) {
    Json j;
    j["severity"] = json_severity(d->severity);
    j["code"] = d->code.empty() ? Json(nullptr) : Json(d->code);
    j["message"] = d->message;
    add_json_location(j, d->span, sources);
    Json notes = Json::array();
    for (const DiagnosticLabel &label : d->notes) {
      Json n;
      n["message"] = label.message;
      add_json_location(n, label.span, sources);
      notes.push_back(std::move(n));
    }
    j["notes"] = std::move(notes);
    j["help"] = d->fix.empty() ? Json(nullptr) : Json(d->fix);
    Json fixits = Json::array();
    for (const FixIt &f : d->fixits) {
      Json fj;
      add_json_location(fj, f.span, sources);
      fj["replacement"] = f.replacement;
      if (!fj["file"].is_null()) fixits.push_back(std::move(fj));
    }
    j["fixits"] = std::move(fixits);
    out += j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  }
  return out;
}

std::string render_diagnostics(const DiagnosticEngine &engine, const SourceManager &sources,
                               DiagnosticsFormat format, bool color) {
  return format == DiagnosticsFormat::Json ? render_diagnostics_json(engine, sources)
                                           : render_diagnostics(engine, sources, color);
}

}  // namespace spmd

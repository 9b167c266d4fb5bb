// driver/report.cpp — how the driver prints diagnostics: the text layout of
// support/diagnostics.h or JSON Lines (--diagnostics-format=json), for
// diagnostics with a source location and for the driver's own errors alike,
// so that everything spmdc writes to stderr has one shape per format.
#include <iostream>

#include "driver/commands.h"

namespace spmd::driver {

void print_diagnostics(const DiagnosticEngine &diags, const SourceManager &sources,
                       const CommonOptions &common) {
  if (diags.all().empty()) return;
  std::cerr << render_diagnostics(diags, sources, common.diagnostics_format, common.color);
}

namespace {

void report(const CommonOptions &common, Severity severity, const std::string &code,
            const std::string &message, const std::string &help) {
  std::cout.flush();  // keep stdout and stderr in order on a terminal
  if (common.diagnostics_format == DiagnosticsFormat::Text) {
    // Like other drivers' own errors: no code in text form (JSON has it).
    std::cerr << "spmdc: "
              << (severity == Severity::Error  ? "error: "
                  : severity == Severity::Note ? "note: "
                                               : "")
              << message << "\n";
    if (!help.empty()) std::cerr << "help: " << help << "\n";
    return;
  }
  DiagnosticEngine diags;
  Diagnostic &d = severity == Severity::Error ? diags.error(code, {}, message)
                                              : diags.warning(code, {}, message);
  d.severity = severity;
  d.fix = help;
  print_diagnostics(diags, SourceManager{}, common);
}

}  // namespace

int report_error(const CommonOptions &common, const std::string &code, const std::string &message,
                 const std::string &help) {
  report(common, Severity::Error, code, message, help);
  return kExitUserError;
}

int report_transform_error(const TransformError &e, const Compilation &c,
                           const CommonOptions &common) {
  DiagnosticEngine diags;
  diags.error(e.code, e.span, e.what());
  print_diagnostics(diags, c.sources, common);
  return kExitUserError;
}

void report_note(const CommonOptions &common, const std::string &code, const std::string &message) {
  report(common, Severity::Note, code, message, "");
}

}  // namespace spmd::driver

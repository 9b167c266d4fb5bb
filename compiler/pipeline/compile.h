// pipeline/compile.h — the check script: the phases every command starts from.
//
//   parse               (frontend/imports.h)      path      -> Program (ASTs)
//   lower               (middle/lower.h)          Program   -> ir::Module (shapes, dtypes)
//   infer_variance      (middle/infer_variance.h) variance, pbroadcasts; calls of
//                       derivatives typed from their signatures
//   derived_functions   (pipeline/derived_functions.h) those derivatives built
//                       with the derive script
//   explicit_pbroadcast (transforms/explicit_pbroadcast.h) constants typed
//                       varying read through pbroadcasts where the text needs them
//   unroll_loops        (transforms/unroll_loops.h) loops marked [[unroll]] (or
//                       with at most `unroll_max_trip_count` iterations) ->
//                       straight-line code; every other loop stays a loop
//   then verify_module  (ir/verifier.h): a failure here is a compiler bug.
//
// Each step runs through pipeline::Script (pipeline/step.h: timed, logged
// under -v, verified after it in tests and debug builds). compile_source
// stops after the phase named by `stop_after` or the step named by
// `stop_after_step`, or at the first phase that reported errors. The driver,
// the tests and the fuzzer all call it, so they see exactly the same
// pipeline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontend/imports.h"
#include "ir/ir.h"
#include "middle/lower.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace spmd {

enum class Phase { Parse, Lower, Variance };

struct CompileOptions {
  bool auto_pbroadcast = true;
  std::vector<std::string> library_paths;  // searched before the default stdlib paths
  Phase stop_after = Phase::Variance;
  int max_errors = 100;
  /// Loops with at most this many iterations are unrolled after checking
  /// (`--unroll N`); loops marked [[unroll]] always are.
  int64_t unroll_max_trip_count = 0;
  /// Mesh axis sizes and signature sizes from the command line (--mesh, --set).
  SizeOverrides overrides;
  /// Stop after this step of the check script (check_steps(); `spmdc print
  /// --emit STEP`); empty: run them all.
  std::string stop_after_step;
  /// Antlr: parse only with the ANTLR parser (`SPMDC_PARSER=antlr`; see
  /// frontend/parser.h), to compare it with the hand-written one.
  ParserChoice parser = ParserChoice::Auto;
};

struct Compilation {
  SourceManager sources;
  DiagnosticEngine diags;
  FileId main_file = kNoFile;
  Program program;
  /// The checked program, the loops chosen for unrolling unrolled: what the
  /// transforms, the interpreter and the backends take. Set when lowering ran.
  std::optional<ir::Module> module;
  /// The checked program as written, every loop kept (what `spmdc print`
  /// shows); set only when some loop was unrolled.
  std::optional<ir::Module> structured;
  const ir::Module &printable() const { return structured ? *structured : *module; }
  Phase reached = Phase::Parse;  // the last phase that ran
  bool ok() const { return !diags.has_errors() && !diags.has_internal_errors(); }
};

/// The steps of the check script, in order (for `--emit`).
const std::vector<std::string> &check_steps();

/// Compiles `text` (named `path` in diagnostics).
void compile_source(Compilation &c, const std::string &path, std::string text,
                    const CompileOptions &options);
/// Reads `path` ("-" = standard input) and compiles it; an unreadable file is
/// an error diagnostic.
void compile_file(Compilation &c, const std::string &path, const CompileOptions &options);

}  // namespace spmd

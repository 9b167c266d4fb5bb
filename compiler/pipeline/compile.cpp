// pipeline/compile.cpp — the check script (see compile.h).
#include "pipeline/compile.h"

#include <exception>

#include "ir/verifier.h"
#include "middle/infer_variance.h"
#include "middle/lower.h"
#include "pipeline/derived_functions.h"
#include "pipeline/step.h"
#include "support/limits.h"
#include "transforms/explicit_pbroadcast.h"
#include "transforms/unroll_loops.h"

namespace spmd {
namespace {

void run_phases(Compilation &c, const CompileOptions &options) {
  c.diags.set_limit(options.max_errors);
  pipeline::Script script("check", options.stop_after_step, &c.diags);
  std::vector<std::string> paths = options.library_paths;
  for (auto &p : default_library_paths()) paths.push_back(p);
  script.run_unverified("parse", [&] {
    c.program = load_program(c.sources, c.main_file, paths, c.diags, options.parser);
  });
  c.reached = Phase::Parse;
  if (!c.ok() || options.stop_after == Phase::Parse || script.stopped()) return;

  LowerOptions lower_options;
  lower_options.auto_pbroadcast = options.auto_pbroadcast;
  lower_options.overrides = options.overrides;
  script.run_unverified(
      "lower", [&] { c.module = lower_program(c.program, c.sources, lower_options, c.diags); });
  c.reached = Phase::Lower;
  if (c.diags.has_internal_errors() || options.stop_after == Phase::Lower || script.stopped())
    return;

  // Functions with lowering errors are left out of the module, so variance
  // inference still checks (and reports on) the others. Calls of derivatives
  // are typed from their signatures; the next step builds the functions.
  DerivedCalls derived;
  script.run_unverified("infer_variance", [&] { derived = infer_variance(*c.module, c.diags); });
  c.reached = Phase::Variance;
  if (!c.ok() || script.stopped()) return;
  script.run("derived_functions", *c.module,
             [&] { build_derived_functions(*c.module, derived, c.diags); });
  if (!c.ok() || script.stopped()) return;
  // Constants typed varying read through a pbroadcast where the printed
  // program could not re-derive their variance.
  script.run(
      "explicit_pbroadcast", *c.module,
      [&] { make_pbroadcasts_explicit(*c.module, ir::Origin::AutoPbroadcast); },
      pipeline::Check::Printable);
  if (script.stopped()) return;
  // Loops stay loops; those marked [[unroll]] (or short enough for
  // --unroll) are unrolled here, an optimisation.
  UnrollPolicy unroll;
  unroll.max_trip_count = options.unroll_max_trip_count;
  if (unrolls_any(*c.module, unroll)) {
    // [[unroll]] loops were bounded when lowered; --unroll N can multiply.
    for (const ir::Function &f : c.module->functions)
      if (const int64_t size = unrolled_size(f, unroll); size > kMaxUnrolledInstructions)
        c.diags
            .error("program-too-large", f.span,
                   "`" + f.name + "`, with its loops of at most " +
                       std::to_string(unroll.max_trip_count) + " iterations unrolled, " +
                       too_many_instructions(size))
            .fix = "use a smaller --unroll";
    if (!c.ok()) return;
    c.structured = *c.module;
    script.run(
        "unroll_loops", *c.module,
        [&] {
          unroll_loops(*c.module, unroll);
          make_pbroadcasts_explicit(*c.module, ir::Origin::AutoPbroadcast);
        },
        pipeline::Check::Printable);
    if (script.stopped()) return;
  }
  for (const std::string &problem : ir::verify_module(*c.module))
    c.diags.internal({}, "IR verification failed after the check script: " + problem);
}

}  // namespace

const std::vector<std::string> &check_steps() {
  static const std::vector<std::string> steps{
      "parse",       "lower", "infer_variance", "derived_functions", "explicit_pbroadcast",
      "unroll_loops"};
  return steps;
}

void compile_source(Compilation &c, const std::string &path, std::string text,
                    const CompileOptions &options) {
  c.main_file = c.sources.add(path, std::move(text));
  try {
    run_phases(c, options);
  } catch (const std::exception &e) {
    c.diags.internal({}, std::string("unexpected exception: ") + e.what());
  }
}

void compile_file(Compilation &c, const std::string &path, const CompileOptions &options) {
  if (path == "-") {  // standard input, e.g. `spmdc grad f.spmd | spmdc print --stats -`
    std::string text, error;
    if (!read_source(path, text, error)) {
      c.diags.error("io-error", {}, "cannot read standard input: " + error);
      return;
    }
    compile_source(c, "<stdin>", std::move(text), options);
    return;
  }
  std::string error;
  FileId id = c.sources.load(path, error);
  if (id == kNoFile) {
    c.diags.error("io-error", {}, error);
    return;
  }
  c.main_file = id;
  try {
    run_phases(c, options);
  } catch (const std::exception &e) {
    c.diags.internal({}, std::string("unexpected exception: ") + e.what());
  }
}

}  // namespace spmd

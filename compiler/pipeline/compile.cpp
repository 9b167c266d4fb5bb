// pipeline/compile.cpp — runs the phases (see compile.h).
#include "pipeline/compile.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>

#include "ir/verifier.h"
#include "middle/infer_variance.h"
#include "middle/lower.h"
#include "support/limits.h"
#include "transforms/explicit_pbroadcast.h"
#include "transforms/unroll_loops.h"

namespace spmd {
namespace {

void run_phases(Compilation &c, const CompileOptions &options) {
  using Clock = std::chrono::steady_clock;
  auto timed = [](const char *name, auto &&fn) {
    auto start = Clock::now();
    fn();
    spdlog::debug("phase {}: {:.3f} ms", name,
                  std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  };
  c.diags.set_limit(options.max_errors);
  std::vector<std::string> paths = options.library_paths;
  for (auto &p : default_library_paths()) paths.push_back(p);
  timed("parse",
        [&] { c.program = load_program(c.sources, c.main_file, paths, c.diags, options.parser); });
  c.reached = Phase::Parse;
  if (!c.ok() || options.stop_after == Phase::Parse) return;

  LowerOptions lower_options;
  lower_options.auto_pbroadcast = options.auto_pbroadcast;
  lower_options.overrides = options.overrides;
  timed("lower", [&] { c.module = lower_program(c.program, c.sources, lower_options, c.diags); });
  c.reached = Phase::Lower;
  if (c.diags.has_internal_errors() || options.stop_after == Phase::Lower) return;

  // Functions with lowering errors are left out of the module, so variance
  // inference still checks (and reports on) the others.
  timed("infer_variance", [&] { infer_variance(*c.module, c.diags); });
  c.reached = Phase::Variance;
  if (!c.ok()) return;
  // Constants typed varying read through a pbroadcast where the printed
  // program could not re-derive their variance.
  timed("explicit_pbroadcast",
        [&] { make_pbroadcasts_explicit(*c.module, ir::Origin::AutoPbroadcast); });
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
    timed("unroll_loops", [&] {
      unroll_loops(*c.module, unroll);
      make_pbroadcasts_explicit(*c.module, ir::Origin::AutoPbroadcast);
    });
  }
  for (const std::string &problem : ir::verify_module(*c.module))
    c.diags.internal({}, "IR verification failed after variance inference: " + problem);
}

}  // namespace

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

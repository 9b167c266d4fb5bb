// driver/cmd_build.cpp — `spmdc build`: compile shmaps into an executable.
//
//   spmdc build FILE [--fn NAME] [-o EXE] [--target cpu|cuda] [--emit-source PATH] [-q]
//
// Compiles and checks the file, emits C++ (CPU) or CUDA C++ for every shmap
// of it (backend/backend.h) with --fn as the executable's default function
// (none without --fn when the file has several: the executable then needs
// --fn), and compiles that with the C++ compiler that built spmdc or with
// nvcc, linked against the runtime (backend/toolchain.h). --emit-source writes
// the source (alone, or in addition to -o). Both are written with
// rt::OutputFiles (all or none; a failed or interrupted build leaves nothing
// behind). The compiler runs in its own process group, stopped with spmdc on
// SIGINT/SIGTERM. A default executable name never replaces an input file.
// Default target: `cuda` when spmdc was configured with the CUDA toolkit and
// NCCL *and* a GPU is visible now (backend::gpu_visible), else `cpu`; a
// one-line note on stderr says which and why (-q silences it). Exit status:
// 0 ok, 1 user error (including a missing CUDA toolkit for --target cuda, or
// a failed compiler run), 2 internal error.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <stop_token>
#include <thread>

#include "backend/backend.h"
#include "backend/toolchain.h"
#include "driver/commands.h"
#include "driver/kept_until_exit.h"
#include "driver/version.h"
#include "ir/printer.h"
#include "pipeline/prepare.h"
#include "spmdrt/output_file.h"
#include "support/timed.h"
#include "transforms/derived_signature.h"

namespace spmd::driver {
namespace {

struct BuildOptions {
  std::string fn;
  std::string output;
  std::string target;
  std::string emit_source;
  std::string emit;  // a step of prepare-for-codegen: stop there, print its raw IR
  std::vector<std::string> cxxflags;
  bool keep_source = false;
  bool check_nan = false;
  bool show_command = false;
  bool quiet = false;
};

/// The target --target names (cpu, cuda), or without it the one this machine
/// can run; `note` then says which and why.
backend::Target choose_target(const BuildOptions &o, std::string &note) {
  if (o.target == "cpu") return backend::Target::Cpu;
  if (o.target == "cuda") return backend::Target::Cuda;
  std::string why = "spmdc was configured without the CUDA toolkit and NCCL";
  const bool cuda = backend::cuda_configured() && backend::gpu_visible(why);
  note = std::string("building for target ") + (cuda ? "cuda" : "cpu") + " (" + why +
         (cuda ? "; --target cpu for the simulated mesh)" : "; --target cuda to build for GPUs)");
  return cuda ? backend::Target::Cuda : backend::Target::Cpu;
}

/// Progress of a build on stderr, when it is a terminal and -q was not given:
/// one line per phase, the emitted source's size, and while the host compiler
/// runs a line that counts the seconds (rewritten in place), then its time.
class Progress {
 public:
  explicit Progress(bool on) : on_(on) {}
  ~Progress() { stop_ticking(); }
  void phase(const std::string &text) {
    if (!on_) return;
    std::cout.flush();
    std::cerr << "spmdc: " << text << "\n";
  }
  /// Starts the counting line for the host compiler (`what`).
  void start_compiler(const std::string &what) {
    start_ = Clock::now();
    if (!on_) return;
    ticker_ = std::jthread([this, what](std::stop_token stop) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      while (true) {
        std::cerr << "\rspmdc: [3/3] " << what << " ... " << seconds() << " s" << std::flush;
        cv.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
        if (stop.stop_requested()) break;
      }
    });
  }
  /// Ends the counting line with the host compiler's time (`ok`: it succeeded).
  void end_compiler(const std::string &what, bool ok) {
    stop_ticking();
    if (!on_) return;
    std::cerr << "\rspmdc: [3/3] " << what << ": " << (ok ? "done" : "failed") << " in "
              << seconds() << " s\n";
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string seconds() const {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f",
                  std::chrono::duration<double>(Clock::now() - start_).count());
    return text;
  }
  void stop_ticking() {
    if (ticker_.joinable()) {
      ticker_.request_stop();
      ticker_.join();
    }
  }
  bool on_;
  Clock::time_point start_;
  std::jthread ticker_;
};

std::string default_output(const std::string &input) {
  std::string base = input.substr(input.rfind('/') == std::string::npos ? 0 : input.rfind('/') + 1);
  if (base.size() > 5 && base.substr(base.size() - 5) == ".spmd") base.resize(base.size() - 5);
  return base.empty() || base == "-" ? "a.out" : base;
}

/// A private directory for the source given to the compiler, removed at the
/// end and on SIGINT/SIGTERM (with the file in it) unless --keep-source.
class BuildDirectory {
 public:
  BuildDirectory() = default;
  ~BuildDirectory() {
    if (!keep_) remove();
    rt::unregister_temporary(file_id_);
    rt::unregister_temporary(dir_id_);
  }
  BuildDirectory(const BuildDirectory &) = delete;
  BuildDirectory &operator=(const BuildDirectory &) = delete;

  /// Creates the directory and writes `text` to NAME in it; "" on failure.
  std::string create(const std::string &name, const std::string &text, std::string &error) {
    const char *tmpdir = std::getenv("TMPDIR");
    std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/spmdc-build-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) {
      error = "cannot create a temporary directory `" + pattern + "`: " + std::strerror(errno);
      return "";
    }
    dir_ = buf.data();
    dir_id_ = rt::register_temporary(dir_, /*directory=*/true);
    file_ = dir_ + "/" + name;
    file_id_ = rt::register_temporary(file_);
    try {
      rt::write_output_file(file_, {text});
    } catch (const rt::OutputError &e) {
      error = e.what();
      return "";
    }
    return file_;
  }
  void keep() { keep_ = true; }

 private:
  void remove() {
    if (!file_.empty()) ::unlink(file_.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  std::string dir_, file_;
  int dir_id_ = -1, file_id_ = -1;
  bool keep_ = false;
};

int run_build(const CommonOptions &common, const BuildOptions &o) {
  auto fail_build = [&](const std::string &message) {
    return report_error(common, "build-error", message);
  };
  if (o.target != "" && o.target != "cpu" && o.target != "cuda")
    return fail_build("unknown --target `" + o.target + "` (expected `cpu` or `cuda`)");
  std::string target_note;
  const backend::Target target = choose_target(o, target_note);
  const bool build_exe = !o.output.empty() || o.emit_source.empty();
  // A default name is derived from the input's and may never replace it
  // (`spmdc build prog` would otherwise overwrite the source `prog`).
  const auto naming = o.output.empty() ? rt::OutputNaming::Derived : rt::OutputNaming::Explicit;
  const std::string output = o.output.empty() ? default_output(common.input) : o.output;
  std::vector<std::string> cxxflags;
  try {
    if (build_exe) rt::check_output_path(output);
    if (!o.emit_source.empty()) rt::check_output_path(o.emit_source);
    cxxflags = backend::host_compiler_flags(o.cxxflags);
  } catch (const rt::OutputError &e) {
    return fail_build(e.what());
  } catch (const backend::FlagsError &e) {
    return fail_build(e.what());
  }
  if (build_exe && target == backend::Target::Cuda && !backend::cuda_configured())
    return fail_build(
        "--target cuda needs the CUDA toolkit (nvcc) and NCCL, which were not found when spmdc "
        "was configured (or it was configured with -DSPMDC_ENABLE_CUDA=OFF); use --target cpu, "
        "or --emit-source FILE.cu to only write the CUDA source");

  Progress progress(!o.quiet && ::isatty(2));
  progress.phase("[1/3] checking " + common.input);
  Compilation &c = keep_until_exit<Compilation>();
  int status = compile_and_report(c, common, Phase::Variance);
  if (status != kExitOk) return status;
  const ir::Module &module = *c.module;
  if (!o.emit.empty()) {  // the shmaps as that step of prepare-for-codegen left them
    ir::Module prepared;
    prepared.meshes = module.meshes;
    prepared.functions = prepare_for_codegen(module, o.emit);
    std::cout << ir::dump_ir(prepared);
    return kExitOk;
  }
  backend::EmitOptions eo;
  eo.check_nan = o.check_nan;
  size_t shmaps = 0;
  for (const ir::Function &f : module.functions) shmaps += f.kind == ir::FunctionKind::Shmap;
  try {
    // Every shmap is built; without --fn the only entry (a shmap of the file
    // that no body calls) is the default.
    size_t entries = 0;
    for (const ir::Function &f : module.functions)
      entries += f.kind == ir::FunctionKind::Shmap && f.entry;
    if (!o.fn.empty() || entries <= 1)
      eo.entry = module.functions[static_cast<size_t>(find_shmap(module, o.fn))].name;
  } catch (const TransformError &e) {
    return fail_build(e.what());
  }
  if (!target_note.empty() && !o.quiet) report_note(common, "build-target", target_note);
  eo.target = target;
  eo.source_path = common.input;
  eo.built_by = version_line();
  const std::string source =
      timed("emit", [&] { return backend::emit_program(module, &c.sources, eo); });
  const char *language = target == backend::Target::Cuda ? "CUDA C++" : "C++";
  progress.phase("[2/3] emitted " + std::to_string(std::count(source.begin(), source.end(), '\n')) +
                 " lines of " + language + " for " + std::to_string(shmaps) + " shmap" +
                 (shmaps == 1 ? "" : "s"));

  // The source and the executable are written together, all or none.
  rt::OutputFiles outputs;
  try {
    for (const std::string &path : c.sources.paths()) outputs.protect_input(path);
    if (!o.emit_source.empty()) outputs.add(o.emit_source, {source});
    if (!build_exe) {
      outputs.commit();
      return kExitOk;
    }
  } catch (const rt::OutputError &e) {
    return fail_build(e.what());
  }

  std::string error;
  auto tc = backend::find_toolchain(error);
  if (!tc) return fail_build(error);
  // The compiler reads a private copy (nvcc needs a .cu name; the C++
  // compiler is told the language with -x c++) and writes a temporary beside
  // the executable, which commit() moves into place.
  BuildDirectory dir;
  const std::string src_path =
      dir.create(target == backend::Target::Cuda ? "program.cu" : "program.cpp", source, error);
  if (src_path.empty()) return fail_build(error);
  std::string exe_temp;
  try {
    exe_temp = outputs.add_external(output, naming, rt::ExternalMode::FromWriter);
  } catch (const rt::OutputError &e) {
    return fail_build(e.what());
  }
  std::vector<std::string> cmd =
      backend::compile_command(*tc, target, src_path, exe_temp, cxxflags);
  if (o.show_command) {
    // A command the user can run again: it names the kept source and the
    // executable's final path (the build itself writes a temporary beside it).
    dir.keep();
    std::cerr << "spmdc: runtime from " << tc->where << "\nspmdc: "
              << backend::shell_quote(
                     backend::compile_command(*tc, target, src_path, output, cxxflags))
              << "\nspmdc: source kept in " << src_path << "\n";
  }
  const std::string compiling = "compiling with " + cmd.front();
  progress.start_compiler(compiling);
  const int rc = backend::run_process(cmd, error);
  progress.end_compiler(compiling, rc == 0);
  if (rc != 0) {
    std::string msg = rc < 0
                          ? error
                          : "the " + std::string(target == backend::Target::Cuda ? "CUDA" : "C++") +
                                " compiler failed (exit status " + std::to_string(rc) +
                                ") on the emitted source `" + src_path + "`";
    // Keep the source of a failed build for the bug report.
    if (rc > 0) {
      dir.keep();
      msg += " (kept for inspection)";
    }
    report_error(common, "build-error", msg);
    return rc > 0 ? kExitInternalError : kExitUserError;
  }
  try {
    outputs.commit();
  } catch (const rt::OutputError &e) {
    return fail_build(e.what());
  }
  if (o.keep_source && !o.show_command) {  // (--show-command said so already)
    dir.keep();
    std::cerr << "spmdc: source kept in " << src_path << "\n";
  }
  return kExitOk;
}

}  // namespace

void register_build_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  static BuildOptions options;
  CLI::App *cmd = app.add_subcommand(
      "build",
      "Compile the shmaps of a file into one executable (CUDA + NCCL, or the simulated CPU "
      "mesh) with the command line of `spmdc run`");
  add_common_options(*cmd, common);
  cmd->add_option("--fn", options.fn,
                  "The executable's default shmap (every shmap is built; without --fn the "
                  "default is the file's only shmap that no body calls, and with several the "
                  "executable needs --fn)");
  cmd->add_option("-o,--output", options.output,
                  "The executable to write (default: the input's name without .spmd)")
      ->type_name("FILE");
  cmd->add_option("--target", options.target,
                  backend::cuda_configured()
                      ? "cpu or cuda (default: cuda when a GPU is visible when building, else "
                        "cpu; a note on stderr says which)"
                      : "cpu or cuda (default: cpu: spmdc was configured without CUDA)");
  cmd->add_option("--emit-source", options.emit_source,
                  "Write the emitted C++/CUDA source here (without -o: only write the source)")
      ->type_name("FILE");
  cmd->add_option("--emit", options.emit,
                  "Stop after this step of the prepare-for-codegen script and print the "
                  "shmaps' raw instructions: inline_calls, simplify, combine_collectives")
      ->check(CLI::IsMember(prepare_for_codegen_steps()))
      ->type_name("STEP");
  cmd->add_option("--cxxflags", options.cxxflags,
                  "Extra flags for the host compiler, split like a shell splits words (no "
                  "expansion), e.g. --cxxflags='-march=native -fsanitize=address'; added after "
                  "those in $SPMDC_CXXFLAGS (repeatable)")
      ->type_name("FLAGS");
  cmd->add_flag("--keep-source", options.keep_source, "Keep the temporary source file");
  cmd->add_flag("--check-nan", options.check_nan,
                "Build an executable that stops at the first op whose floating result holds a "
                "NaN or an infinity, naming the op, its source location and the device (ops "
                "run unfused; without the flag nothing is checked and nothing costs)");
  cmd->add_flag("--show-command", options.show_command,
                "Print the compiler command line (quoted for a POSIX shell); the emitted "
                "source it names is kept");
  cmd->add_flag("-q,--quiet", options.quiet,
                "Print no notes (the chosen target) and no progress (shown when stderr is a "
                "terminal: phase, emitted lines, host-compiler time)");
  out.push_back({cmd, [&common] { return run_build(common, options); }});
}

}  // namespace spmd::driver

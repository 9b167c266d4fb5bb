// frontend/imports.cpp — loading the main file and, transitively, every module it imports.
//
// Modules are loaded breadth-first in the order their imports appear; each
// file is parsed once (by module name and by canonical path), so import cycles
// are harmless. `import a.b` resolves to `a/b.spmd` in the importing file's
// directory or else the first library directory that has it; `import "f.spmd"`
// names a file relative to the importing file. A module that cannot be found
// is an `unknown-module` error at the import declaration.
#include "frontend/imports.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "frontend/parser.h"

namespace spmd {
namespace fs = std::filesystem;

namespace {

std::string module_name(const ast::ImportDecl &imp) {
  std::string name;
  for (const ast::Ident &part : imp.path) {
    if (!name.empty()) name += '.';
    name += part.name;
  }
  return name;
}

/// `import "grads/loss_grad.spmd"` is the module `loss_grad` (its functions
/// may be qualified as `loss_grad.f`) when the file's stem is an identifier.
std::string file_module_name(const fs::path &file) {
  std::string stem = file.stem().string();
  bool ident = !stem.empty() && !std::isdigit(static_cast<unsigned char>(stem[0]));
  for (char ch : stem) ident = ident && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
  return ident ? stem : "";
}

std::string canonical_or_same(const std::string &path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

/// The executable's directory, or empty when unknown.
fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

/// The directory of the shared object this code was loaded from (the Python
/// module spmdc/_core.so), or empty when it is linked into the executable.
fs::path shared_object_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&shared_object_dir), &info) == 0 || !info.dli_fname)
    return {};
  fs::path so(info.dli_fname);
  if (so.extension() != ".so" && so.string().find(".so.") == std::string::npos) return {};
  std::error_code ec;
  fs::path absolute = fs::weakly_canonical(so, ec);
  return ec ? fs::path() : absolute.parent_path();
}

void add_if_dir(std::vector<std::string> &paths, const fs::path &dir) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return;
  std::string s = canonical_or_same(dir.string());
  for (const std::string &p : paths)
    if (p == s) return;
  paths.push_back(s);
}

}  // namespace

std::vector<std::string> default_library_paths() {
  std::vector<std::string> paths;
  // An installed spmdc (bin/spmdc next to share/spmdc/stdlib) uses its own
  // library, even if the source tree it was built from still exists.
  fs::path exe = executable_dir();
  if (!exe.empty()) add_if_dir(paths, exe.parent_path() / "share" / "spmdc" / "stdlib");
  // The Python package is an install tree too: spmdc/_core.so beside spmdc/share/.
  if (fs::path so = shared_object_dir(); !so.empty())
    add_if_dir(paths, so / "share" / "spmdc" / "stdlib");
#ifdef SPMDC_SOURCE_STDLIB_DIR
  add_if_dir(paths, SPMDC_SOURCE_STDLIB_DIR);
#endif
#ifdef SPMDC_INSTALL_STDLIB_DIR
  add_if_dir(paths, SPMDC_INSTALL_STDLIB_DIR);
#endif
  return paths;
}

std::optional<std::string> library_module_defining(const std::string &name,
                                                   const std::vector<std::string> &library_paths) {
  // Small and bounded: library folders hold a handful of modules.
  constexpr int kMaxFiles = 200;
  int seen = 0;
  for (const std::string &dir : library_paths) {
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, ec), end;
    for (; !ec && it != end && seen < kMaxFiles; it.increment(ec)) {
      if (it.depth() > 3) it.disable_recursion_pending();
      if (!it->is_regular_file(ec) || it->path().extension() != ".spmd") continue;
      ++seen;
      SourceManager scratch;
      DiagnosticEngine ignored;
      std::string error;
      FileId file = scratch.load(it->path().string(), error, /*regular_only=*/true);
      if (file == kNoFile) continue;
      ast::Module module = parse(scratch, file, ignored);
      for (const ast::Decl &d : module.decls) {
        auto *fn = std::get_if<ast::FuncDecl>(&d.node);
        if (!fn || fn->name.name != name || fn->kind != ast::FuncKind::Def) continue;
        fs::path relative = fs::relative(it->path(), dir, ec);
        relative.replace_extension();
        std::string module_name;
        for (const fs::path &part : relative)
          module_name += (module_name.empty() ? "" : ".") + part.string();
        return module_name;
      }
    }
  }
  return std::nullopt;
}

Program load_program(SourceManager &sources, FileId main_file,
                     const std::vector<std::string> &library_paths, DiagnosticEngine &diags,
                     ParserChoice parser) {
  Program program;
  program.library_paths = library_paths;
  program.modules.push_back({"", parse(sources, main_file, diags, parser)});
  std::set<std::string> loaded_names;
  std::set<std::string> loaded_paths{canonical_or_same(sources.file(main_file).path())};

  // modules grows while we walk it: breadth-first, in import order.
  for (size_t m = 0; m < program.modules.size(); ++m) {
    struct Import {
      std::string name;
      fs::path relative;  // a/b.spmd, or the file named by `import "file"`
      bool is_file;
      SourceSpan span;  // the whole declaration
    };
    // The importing file's directory is searched first (for `import "file"`,
    // only it); "<stdin>" has none.
    fs::path here;
    if (FileId id = program.modules[m].ast.file;
        id != kNoFile && sources.file(id).path() != "<stdin>")
      here = fs::path(sources.file(id).path()).parent_path();
    std::vector<Import> imports;
    for (const ast::Decl &d : program.modules[m].ast.decls) {
      if (auto *imp = std::get_if<ast::ImportDecl>(&d.node)) {
        if (imp->file) {
          fs::path file(*imp->file);
          imports.push_back({file_module_name(file), file, true, d.span});
          continue;
        }
        // A malformed path (`import ../../etc/passwd`) was reported by the parser.
        if (std::any_of(imp->path.begin(), imp->path.end(),
                        [](const ast::Ident &part) { return part.name == "<error>"; }))
          continue;
        fs::path relative;
        for (const ast::Ident &part : imp->path) relative /= part.name;
        relative += ".spmd";
        imports.push_back({module_name(*imp), relative, false, d.span});
      }
    }
    for (const auto &[name, relative, is_file, at] : imports) {
      if (!is_file && !loaded_names.insert(name).second) continue;
      std::vector<fs::path> dirs;
      if (is_file && relative.is_absolute()) {
        dirs.push_back(fs::path());
      } else {
        dirs.push_back(here.empty() ? fs::path(".") : here);
        if (!is_file)
          for (const std::string &dir : library_paths) dirs.push_back(dir);
      }
      std::string found, directory;
      bool from_stdlib = false;
      const std::vector<std::string> stdlib_dirs = default_library_paths();
      for (const fs::path &dir : dirs) {
        std::error_code ec;
        fs::path candidate = dir.empty() ? relative : dir / relative;
        if (fs::is_directory(candidate, ec)) {
          if (directory.empty()) directory = candidate.string();
          continue;
        }
        if (fs::exists(candidate, ec)) {  // a file, a FIFO, a device: loading it says what is wrong
          found = candidate.string();
          from_stdlib =
              !is_file && &dir != &dirs.front() &&
              std::find(stdlib_dirs.begin(), stdlib_dirs.end(), dir.string()) != stdlib_dirs.end();
          break;
        }
      }
      if (found.empty() && !directory.empty()) {
        diags.error("unknown-module", at,
                    "cannot load module `" + name + "`: `" + directory +
                        "` is a directory, not a module file");
        continue;
      }
      if (found.empty()) {
        std::string what = is_file ? "file `" + relative.string() + "`" : "module `" + name + "`";
        Diagnostic &d = diags.error("unknown-module", at, "cannot find " + what);
        std::string searched;
        for (const fs::path &dir : dirs)
          searched +=
              (searched.empty() ? "" : ", ") + (dir.empty() ? relative : dir / relative).string();
        d.fix = "looked for " + searched;
        if (!is_file && library_paths.empty()) d.fix += "; pass --lib-path DIR to search more";
        continue;
      }
      if (!loaded_paths.insert(canonical_or_same(found)).second) continue;
      std::string error;
      FileId file = sources.load(found, error, /*regular_only=*/true);
      if (file == kNoFile) {
        diags.error("unknown-module", at, "cannot load module `" + name + "`: " + error);
        continue;
      }
      // The standard library's modules are named relative to it in diagnostics
      // (`std/nn.spmd:40:3`), the same for every install prefix.
      if (from_stdlib) sources.file(file).set_library_name(relative.generic_string());
      program.modules.push_back({name, parse(sources, file, diags, parser)});
    }
  }
  return program;
}

}  // namespace spmd

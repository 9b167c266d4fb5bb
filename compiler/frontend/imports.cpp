// frontend/imports.cpp — loading the main file and, transitively, every module it imports.
//
// Modules are loaded breadth-first in the order their imports appear; each
// file is parsed once (by module name and by canonical path), so import cycles
// are harmless. `import a.b` resolves to `a/b.spmd` in the first library
// directory that has it; a module that cannot be found is an `unknown-module`
// error at the import declaration.
#include "frontend/imports.h"

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
      FileId file = scratch.load(it->path().string(), error);
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
                     const std::vector<std::string> &library_paths, DiagnosticEngine &diags) {
  Program program;
  program.library_paths = library_paths;
  program.modules.push_back({"", parse(sources, main_file, diags)});
  std::set<std::string> loaded_names;
  std::set<std::string> loaded_paths{canonical_or_same(sources.file(main_file).path())};

  // modules grows while we walk it: breadth-first, in import order.
  for (size_t m = 0; m < program.modules.size(); ++m) {
    struct Import {
      std::string name;
      fs::path relative;  // a/b.spmd
      SourceSpan span;    // the whole declaration
    };
    std::vector<Import> imports;
    for (const ast::Decl &d : program.modules[m].ast.decls) {
      if (auto *imp = std::get_if<ast::ImportDecl>(&d.node)) {
        fs::path relative;
        for (const ast::Ident &part : imp->path) relative /= part.name;
        imports.push_back({module_name(*imp), relative, d.span});
      }
    }
    for (const auto &[name, module_path, at] : imports) {
      if (!loaded_names.insert(name).second) continue;
      fs::path relative = module_path;
      relative += ".spmd";
      std::string found;
      for (const std::string &dir : library_paths) {
        std::error_code ec;
        fs::path candidate = fs::path(dir) / relative;
        if (fs::is_regular_file(candidate, ec)) {
          found = candidate.string();
          break;
        }
      }
      if (found.empty()) {
        Diagnostic &d = diags.error("unknown-module", at, "cannot find module `" + name + "`");
        if (library_paths.empty()) {
          d.fix = "no library directories are configured; pass --lib-path DIR";
        } else {
          std::string searched;
          for (const std::string &dir : library_paths)
            searched += (searched.empty() ? "" : ", ") + (fs::path(dir) / relative).string();
          d.fix = "looked for " + searched;
        }
        continue;
      }
      if (!loaded_paths.insert(canonical_or_same(found)).second) continue;
      std::string error;
      FileId file = sources.load(found, error);
      if (file == kNoFile) {
        diags.error("unknown-module", at, "cannot load module `" + name + "`: " + error);
        continue;
      }
      program.modules.push_back({name, parse(sources, file, diags)});
    }
  }
  return program;
}

}  // namespace spmd

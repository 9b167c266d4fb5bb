// frontend/imports.h — loading a program: the main file and the modules it imports.
//
// `import std.nn` names the file `std/nn.spmd` in the importing file's
// directory or under a library search path (the source tree's stdlib/ when
// run from the build tree, the installed share/spmdc/stdlib otherwise, plus
// any --lib-path directories, searched first). `import "grads/f_grad.spmd"`
// names a file by its path relative to the importing file (the module is
// called after the file's stem, `f_grad`).
// Imports are loaded transitively, each file once; cycles are allowed and
// harmless (a module is parsed once). A missing module is a diagnostic at the
// import ("unknown-module").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/parser.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace spmd {

struct ParsedModule {
  std::string name;  // "std.nn"; the main file is ""
  ast::Module ast;
};

struct Program {
  /// modules[0] is the main file; imported modules follow in load order.
  std::vector<ParsedModule> modules;
  /// The directories imports were searched in (for "add `import std.nn`" hints).
  std::vector<std::string> library_paths;
};

/// The default library search path (see the file comment).
std::vector<std::string> default_library_paths();

/// The name of a library module (`std.nn`) under `library_paths` that defines
/// a function `name`, if any: what an unknown-function error suggests importing.
std::optional<std::string> library_module_defining(const std::string &name,
                                                   const std::vector<std::string> &library_paths);

/// Parses `main_file` and everything it imports (with `parser`, see parse()).
Program load_program(SourceManager &sources, FileId main_file,
                     const std::vector<std::string> &library_paths, DiagnosticEngine &diags,
                     ParserChoice parser = ParserChoice::Auto);

}  // namespace spmd

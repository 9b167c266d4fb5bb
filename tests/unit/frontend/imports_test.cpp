// tests/unit/frontend/imports_test.cpp — loading a program and its imports from library paths.
//
// Uses a fresh temporary directory as the library: found modules are loaded
// (transitively, breadth-first, each once), cycles are harmless, and a
// missing module is an `unknown-module` error at its import declaration.
#include "frontend/imports.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "frontend_test_util.h"

using namespace spmd;
using namespace spmd::test;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("spmdc_imports_test_" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string &relative, const std::string &text) const {
    fs::path p = path / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
};

}  // namespace

TEST_CASE("imports: modules are found, loaded once, cycles are fine", "[frontend][imports]") {
  TempDir lib;
  lib.write("std/nn.spmd", "import std.core\ndef relu(x: f32[]) -> f32[] { return x }\n");
  lib.write("std/core.spmd", "import std.nn  # a cycle\ndef id(x: f32[]) -> f32[] { return x }\n");
  lib.write("other.spmd", "import std.core\n");

  SourceManager sm;
  FileId main = sm.add("main.spmd", "import std.nn\nimport other\nimport std.nn\n");
  DiagnosticEngine diags;
  Program program = load_program(sm, main, {lib.path.string()}, diags);
  INFO(render_diagnostics(diags, sm));
  CHECK_FALSE(diags.has_errors());
  REQUIRE(program.modules.size() == 4);
  CHECK(program.modules[0].name.empty());
  CHECK(program.modules[1].name == "std.nn");
  CHECK(program.modules[2].name == "other");
  CHECK(program.modules[3].name == "std.core");
  CHECK(program.modules[1].ast.decls.size() == 2);
  CHECK(sm.file(program.modules[1].ast.file).path() == (lib.path / "std/nn.spmd").string());
}

TEST_CASE("imports: earlier library paths win", "[frontend][imports]") {
  TempDir first, second;
  first.write("m.spmd", "def a() -> f32[] { return 1.0 }\n");
  second.write("m.spmd", "def b() -> f32[] { return 2.0 }\n");
  SourceManager sm;
  FileId main = sm.add("main.spmd", "import m\n");
  DiagnosticEngine diags;
  Program program = load_program(sm, main, {first.path.string(), second.path.string()}, diags);
  REQUIRE(program.modules.size() == 2);
  CHECK(std::get<ast::FuncDecl>(program.modules[1].ast.decls[0].node).name.name == "a");
}

TEST_CASE("imports: a missing module is reported at its import", "[frontend][imports]") {
  TempDir lib;
  SourceManager sm;
  FileId main = sm.add("main.spmd", "mesh M = (i: 2)\nimport missing.mod.here\n");
  DiagnosticEngine diags;
  Program program = load_program(sm, main, {lib.path.string()}, diags);
  REQUIRE(diags.num_errors() == 1);
  const Diagnostic &d = diags.all()[0];
  CHECK(d.code == "unknown-module");
  CHECK(d.message == "cannot find module `missing.mod.here`");
  SourceLocation loc = sm.location(d.span);
  CHECK(loc.line == 2);
  CHECK(loc.column == 1);
  CHECK(d.span.end - d.span.begin == std::string("import missing.mod.here").size());
  CHECK(d.fix.find("missing/mod/here.spmd") != std::string::npos);
  CHECK(program.modules.size() == 1);
}

TEST_CASE("imports: syntax errors in an imported module are reported in that file",
          "[frontend][imports]") {
  TempDir lib;
  lib.write("broken.spmd", "def f( -> {\n");
  SourceManager sm;
  FileId main = sm.add("main.spmd", "import broken\n");
  DiagnosticEngine diags;
  Program program = load_program(sm, main, {lib.path.string()}, diags);
  REQUIRE(diags.has_errors());
  CHECK(diags.all()[0].span.file == program.modules[1].ast.file);
  CHECK(render_diagnostics(diags, sm).find("broken.spmd:1:") != std::string::npos);
}

TEST_CASE("imports: default library paths exist", "[frontend][imports]") {
  for (const std::string &dir : default_library_paths()) CHECK(fs::is_directory(dir));
}

// sample_util.h — reading the programs of samples/ in tests, in f32 as written
// or in f64 (every `f32` spelled `f64`, std.nn from an f64 copy), for
// derivative checks by finite differences.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "pipeline/compile.h"

namespace spmd::test {

inline std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string to_f64(std::string text) {
  for (size_t p = 0; (p = text.find("f32", p)) != std::string::npos; p += 3)
    text.replace(p, 3, "f64");
  return text;
}

/// samples/NAME, in f64 when asked.
inline std::string sample_text(const std::string &name, bool f64 = false) {
  std::string text = slurp(std::string(SPMDC_SOURCE_DIR) + "/samples/" + name);
  INFO(name);
  REQUIRE(!text.empty());
  return f64 ? to_f64(text) : text;
}

/// std.nn is written for f32 only (a def's dtype is not generic); the f64
/// variants of the samples import an f64 copy of it from a library path.
inline std::string f64_stdlib_dir() {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(SPMDC_BINARY_DIR) / "test_samples_f64_stdlib";
  fs::create_directories(dir / "std");
  std::ofstream(dir / "std" / "nn.spmd")
      << to_f64(slurp(std::string(SPMDC_SOURCE_DIR) + "/stdlib/std/nn.spmd"));
  return dir.string();
}

/// Compiles samples/NAME (f64: with the f64 std.nn); fails the test on any error.
inline std::unique_ptr<Compilation> compile_sample(const std::string &name, bool f64 = false) {
  auto c = std::make_unique<Compilation>();
  CompileOptions o;
  if (f64) o.library_paths.push_back(f64_stdlib_dir());
  compile_source(*c, name, sample_text(name, f64), o);
  INFO(render_diagnostics(c->diags, c->sources));
  REQUIRE(c->ok());
  return c;
}

}  // namespace spmd::test

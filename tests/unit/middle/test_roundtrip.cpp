// test_roundtrip.cpp — `spmdc print` output is a program: for every sample,
// printing, re-checking and printing again gives the same text (typed and
// untyped), and the printed program with its explicit pbroadcasts checks with
// automatic insertion off. Also: the verifier accepts every checked sample.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "pipeline/compile.h"

namespace spmd {
namespace {

std::unique_ptr<Compilation> compile_text(const std::string &path, const std::string &text,
                                          bool auto_pb = true, const SizeOverrides &sizes = {}) {
  auto c = std::make_unique<Compilation>();
  CompileOptions o;
  o.auto_pbroadcast = auto_pb;
  o.overrides = sizes;
  compile_source(*c, path, text, o);
  INFO(render_diagnostics(c->diags, c->sources));
  REQUIRE(c->ok());
  return c;
}

TEST_CASE("printed samples re-parse to the same program", "[roundtrip]") {
  namespace fs = std::filesystem;
  int count = 0;
  for (const auto &entry :
       fs::recursive_directory_iterator(std::string(SPMDC_SOURCE_DIR) + "/samples")) {
    if (entry.path().extension() != ".spmd") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    INFO(entry.path().string());
    // A sample whose loop length is a `--set` size (samples/gpt: `range(steps)`)
    // is checked with a small one, as its header's commands give it.
    SizeOverrides sizes;
    if (ss.str().find("range(steps)") != std::string::npos) sizes.sizes["steps"] = 4;
    auto c = compile_text(entry.path().string(), ss.str(), true, sizes);
    CHECK(ir::verify_module(*c->module).empty());
    for (bool typed : {false, true}) {
      ir::PrintOptions po;
      po.types = typed;
      po.mark_inserted = false;  // re-parsed pbroadcasts are written, not inserted
      std::string once = ir::print_module(c->printable(), po);
      auto again = compile_text("printed.spmd", once);  // sizes are numbers in print
      CHECK(ir::print_module(again->printable(), po) == once);
    }
    // The untyped print makes every pbroadcast explicit.
    std::string explicit_form = ir::print_module(c->printable());
    compile_text("explicit.spmd", explicit_form, /*auto_pb=*/false);
    ++count;
  }
  CHECK(count >= 9);
}

}  // namespace
}  // namespace spmd

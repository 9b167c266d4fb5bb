// tests/numeric/soundness_test.cpp — run-time evidence that device variance typing is sound.
//
// The random program generator (tests/support/program_generator.h) writes
// well-typed .spmd programs: 1-D and 2-D meshes with axes of size 1..8, random
// in_specs, elementwise ops, reductions, layout ops, matmul/einsum, calls of
// defs, loops whose carries permute and every collective. It tracks each
// value's variance itself to choose out_specs the type checker accepts (a
// program the compiler rejects is a generator or compiler bug and fails the
// test). Every program runs on random
// inputs with check_replication on: no value the type system calls invariant
// may differ between devices. Negative controls then lie about the variance of
// a sharded input of generated programs and require the checker to object.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "pipeline/compile.h"
#include "program_generator.h"

using namespace spmd;

namespace {

using testgen::GeneratedProgram;

struct Compiled {
  std::unique_ptr<Compilation> c;
  int index = -1;
};

Compiled compile_program(const GeneratedProgram &p) {
  Compiled out;
  out.c = std::make_unique<Compilation>();
  compile_source(*out.c, "generated.spmd", p.source, CompileOptions{});
  if (!out.c->ok() || !out.c->module) {
    INFO(p.source);
    FAIL("the generated program does not compile:\n"
         << render_diagnostics(out.c->diags, out.c->sources));
  }
  out.index = out.c->module->find_function("f");
  REQUIRE(out.index >= 0);
  return out;
}

}  // namespace

TEST_CASE("random well-typed programs never trip the replication check", "[numeric]") {
  constexpr int kPrograms = 600;
  for (int i = 0; i < kPrograms; ++i) {
    GeneratedProgram p = testgen::generate_program(0x5eed0000 + static_cast<uint64_t>(i));
    INFO("program " << i << ":\n" << p.source);
    Compiled c = compile_program(p);
    interp::InterpOptions o;
    o.check_replication = true;
    try {
      auto out = interp::run_shmap(*c.c->module, c.index, testgen::random_inputs(p, i), o);
      REQUIRE(!out.empty());
    } catch (const interp::ReplicationError &e) {
      FAIL("replication check failed: " << e.what());
    }
  }
}

TEST_CASE("negative controls: lying about a sharded input is always caught", "[numeric]") {
  int caught = 0;
  for (int i = 0; caught < 25 && i < 400; ++i) {
    GeneratedProgram p = testgen::generate_program(0xbad0000 + static_cast<uint64_t>(i));
    Compiled c = compile_program(p);
    ir::Function &f = c.c->module->functions[c.index];
    // A parameter sharded over an axis of size > 1 holds different random blocks.
    int victim = -1;
    for (size_t k = 0; k < f.params.size() && victim < 0; ++k)
      for (int ax : f.type(f.params[k].value).variance.axes())
        if (p.mesh_sizes[ax] > 1) victim = static_cast<int>(k);
    if (victim < 0) continue;
    f.type(f.params[victim].value).variance = AxisSet();
    interp::InterpOptions o;
    o.check_replication = true;
    INFO("program " << i << ":\n" << p.source);
    CHECK_THROWS_AS(interp::run_shmap(*c.c->module, c.index, testgen::random_inputs(p, i), o),
                    interp::ReplicationError);
    ++caught;
  }
  CHECK(caught == 25);
}

// tests/support/program_generator.h — random well-typed .spmd programs for property tests.
//
// generate_program(seed, options) writes one program: a 1-D or 2-D mesh with
// axes of size 1..8 (at most `max_devices` devices), a shmap `f` over
// [L, L] local blocks, a random chain of statements — elementwise ops,
// reductions, matmul/einsum, layout ops (transpose, reshape, broadcast_to,
// slice, strided slice + pad, concat, dynamic_slice, dynamic_update_slice),
// every collective (psum, pmean, pmax, pmin, all_gather,
// all_gather_invariant, psum_scatter, pscatter, all_to_all, ppermute over one
// axis or several, axis_index, pbroadcast), calls of defs, and `for` loops
// whose carried values permute (a swap or rotation, each carry transformed on
// the way). The generator tracks every value's variance itself (loop carries
// by the same fixpoint as the checker) to choose out_specs the checker
// accepts, so a program it writes that does not check is a bug.
//
// NumPy-style ops (erf, log1p, flip, negative steps, `[:, None]`, `.T`,
// astype, stack, squeeze, expand_dims, var, zeros_like; and in the General
// flavor also `%`, `//`, clip, argmax, stop_gradient) appear too.
// Flavors restrict the ops: Differentiable leaves out pmax/pmin and the
// kinked NumPy ops (derivatives that finite differences cannot check) and
// makes result 0 a scalar loss; Linear keeps the program
// linear in the parameters listed in `linear_params` (for transposition).
// `features` counts what the program exercises ("loop", "ppermute_axes2",
// ...), so tests can report coverage.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spmdrt/tensor.h"

namespace spmd::testgen {

using rt::DType;
using rt::Shape;

enum class Flavor { General, Differentiable, Linear };

struct GeneratorOptions {
  Flavor flavor = Flavor::General;
  bool f64 = false;       // parameters and arithmetic in f64 (finite differences)
  int max_axis_size = 8;  // axes have sizes 1..max_axis_size
  int max_devices = 16;   // product of the axis sizes
  int min_statements = 3;
  int max_statements = 12;
};

struct GeneratedProgram {
  std::string source;
  std::vector<Shape> param_shapes;  // global
  std::vector<int64_t> mesh_sizes;
  DType dtype = DType::F32;                // of every parameter
  std::vector<std::string> linear_params;  // Linear flavor
  std::map<std::string, int> features;
};

GeneratedProgram generate_program(uint64_t seed, const GeneratorOptions &options = {});

/// Random global inputs for the program's parameters.
std::vector<rt::Tensor> random_inputs(const GeneratedProgram &program, uint64_t seed);

}  // namespace spmd::testgen

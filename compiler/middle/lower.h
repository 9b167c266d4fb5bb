// middle/lower.h — AST to IR: name resolution, shapes and dtypes.
//
// lower_program turns the parsed program into an ir::Module:
//   1. collects meshes and functions from every module (main file first);
//   2. lowers each shmap: checks its signature (dtypes, partition specs against
//      the mesh and the global shapes) and computes the local parameter shapes;
//   3. lowers each body statement by statement into instructions whose dtypes
//      and local shapes come from the op shape rules (ops/shape_rules.h);
//      literals take the dtype of the value they meet (weak typing);
//   4. instantiates each called `def` for the concrete argument types (binding
//      its symbolic dimensions) as a separate IR function, once per distinct
//      signature and mesh; a called shmap (from any module) is lowered once,
//      on first use, and its arguments must have the local types its in_specs
//      give, on a mesh with the same axes.
// Sizes from the command line (SizeOverrides: --mesh, --set) replace those of
// the source as the meshes and signatures are read, so everything after sees
// one consistent program. Variance is not computed here: every value is left invariant and
// infer_variance (middle/infer_variance.h) fills it in. Problems become
// diagnostics; functions with errors are still returned but must not be used.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontend/imports.h"
#include "ir/ir.h"
#include "support/diagnostics.h"

namespace spmd {

/// `--mesh [NAME=](axis: SIZE, ...)`: new sizes for some axes of a mesh.
struct MeshOverride {
  std::string mesh;  // empty: the program's only mesh
  std::vector<std::pair<std::string, int64_t>> axes;
  std::string text;  // as written, for messages
};

/// Sizes given on the command line instead of in the source.
struct SizeOverrides {
  std::vector<MeshOverride> meshes;
  /// `--set NAME=SIZE`: the size of every dimension named NAME in a shmap (or
  /// sharded) signature, which otherwise must be a number.
  std::map<std::string, int64_t> sizes;
  bool empty() const { return meshes.empty() && sizes.empty(); }
};

struct LowerOptions {
  /// Default for shmaps without [[no_auto_pbroadcast]] (the CLI's --no-auto-pbroadcast).
  bool auto_pbroadcast = true;
  SizeOverrides overrides;
};

ir::Module lower_program(const Program &program, const SourceManager &sources,
                         const LowerOptions &options, DiagnosticEngine &diags);

namespace lowering {
/// `(data: 2, model: 4)`: a mesh's axes as written.
std::string mesh_text(const rt::Mesh &mesh);
}  // namespace lowering

}  // namespace spmd

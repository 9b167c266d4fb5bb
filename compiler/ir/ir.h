// ir/ir.h — the flat, typed intermediate representation of the middle end.
//
// A Module holds meshes and functions. A Function is a list of instructions in
// SSA form: every instruction reads operand values and defines fresh result
// values; every value has a Type (dtype, local shape, variance) and a name
// hint used when printing. A shmap function has a mesh and partition specs for
// its parameters and results; a def function is an instantiation of a `def`
// for concrete argument types (its mesh is the caller's, so axis names in its
// body resolve). The verifier (ir/verifier.h) re-checks every rule.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ops/op_info.h"
#include "ops/types.h"
#include "spmdrt/mesh.h"
#include "support/small_vector.h"
#include "support/source.h"

namespace spmd::ir {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;
/// An instruction's operands or results: up to 4 inline (no allocation; most
/// ops have one or two operands and one result), as large as a std::vector.
using ValueList = SmallVector<ValueId, 4>;

/// Why an instruction exists: written by the user, or inserted by a pass.
/// Who made an instruction. Backward: transposition's backward sweep (the
/// backward pass of a vjp or grad, or a transposed program) — the memory
/// model tells gradients and saved activations apart by it (sharding/memory_kinds.h).
enum class Origin : uint8_t { User, AutoPbroadcast, Lowering, Transform, Backward };

struct Value {
  Type type;
  std::string name;  // hint for printing; unique names are chosen by the printer
  SourceSpan span;   // where it was defined
  /// A variance the user wrote (`w: f32[]{i} = ...`), checked by infer_variance.
  std::optional<AxisSet> declared_variance;
  SourceSpan annotation_span;
};

struct Instr;

/// A nested block of a control-flow instruction (the body of a `for`).
struct Region {
  std::vector<ValueId> params;  // defined on entry
  std::vector<Instr> body;
  std::vector<ValueId> yields;  // passed to the next iteration / out
};

struct Instr {
  OpCode op = OpCode::Constant;
  ValueList operands;
  ValueList results;
  Attrs attrs;
  SourceSpan span;
  Origin origin = Origin::User;
  std::vector<Region> regions;  // only for control flow (OpKind::Control)
  /// Printed after the instruction as `# comment` (e.g. which global op a
  /// collective emitted by `spmdc shard` serves). Not part of its meaning.
  std::string comment;
};

/// Shmap: a per-device body over local shapes. Def: an instance of a `def`.
/// Sharded: a global-view body (`sharded f(...) on M`): global shapes, no
/// collectives, every value invariant; its specs say how the compiler should
/// split it (sharding/shard.h) and `auto` ones are chosen by the compiler.
enum class FunctionKind : uint8_t { Shmap, Def, Sharded };

struct MeshDef {
  std::string name;
  rt::Mesh mesh;
  SourceSpan span;
};

struct Param {
  ValueId value = kNoValue;
  Shape global_shape;      // shmap: as written; def and sharded: = the value's shape
  rt::PartitionSpec spec;  // shmap and sharded (empty dims when auto_spec)
  bool auto_spec = false;  // sharded only: written `@ auto`
  SourceSpan span;
  SourceSpan spec_span;  // the written spec (shmap and sharded)
  /// shmap and sharded: per dimension, the --set name the signature wrote
  /// (`f32[n, 8]`: {"n", ""}), for messages about input files; may be empty.
  std::vector<std::string> size_names;
};

struct Result {
  std::string name;  // as written in the signature (`-> (loss: f32[] @ P())`), or empty
  Shape global_shape;
  rt::PartitionSpec spec;
  bool auto_spec = false;  // sharded only: written `@ auto` (or `like(w)` of an `auto` w)
  int like_param = -1;     // written `@ like(w)`: w's index in params (its layout, kept)
  SourceSpan span;         // the result type in the signature
  SourceSpan spec_span;    // the written spec
};

/// A name the source binds (a parameter, an assignment target, a loop
/// variable) and the value it names: the source map editors use (lsp/ hover).
struct NameBinding {
  SourceSpan name;  // the identifier where the name is bound
  ValueId value = kNoValue;
};

struct Function {
  std::string name;
  FunctionKind kind = FunctionKind::Shmap;
  int mesh = -1;  // index into Module::meshes
  bool auto_pbroadcast = true;
  /// A shmap (or sharded function) of the main file that no body calls: what
  /// `--fn` chooses from by default. Shmaps a body calls (or takes a
  /// derivative of), those of imported modules and those derived by a call
  /// like `grad(loss)(...)` are not entries; `--fn NAME` still picks them.
  bool entry = true;
  /// The `[[no_auto_pbroadcast]]` attribute that turned insertion off, if one did.
  SourceSpan no_auto_pbroadcast_span;
  std::vector<Param> params;
  std::vector<Result> results;  // types of the returned values
  std::vector<ValueId> returns;
  SourceSpan return_span;  // the return statement
  std::vector<Value> values;
  std::vector<Instr> body;
  SourceSpan span;
  /// Free text printed as a comment above the function (e.g. "transpose of f1").
  std::string comment;
  /// For def instances: the source def's name and span.
  std::string source_name;
  /// Set by lowering, valid for the checked module only: passes that rebuild
  /// a function (without_body) drop it, since they renumber values.
  std::vector<NameBinding> bindings;

  ValueId add_value(Type type, std::string name, SourceSpan span);
  /// A copy of every field but `values`, `body` and `bindings` (passes that rebuild a
  /// function start from it, so a large body is not copied only to be
  /// cleared). A new field of Function must be added there too (ir.cpp).
  Function without_body() const;
  const Type &type(ValueId v) const { return values.at(static_cast<size_t>(v)).type; }
  Type &type(ValueId v) { return values.at(static_cast<size_t>(v)).type; }
};

/// The derivatives a program can name: `spmdc transpose|jvp|vjp|grad`, and
/// `transpose(f)`, `jvp(f)`, `vjp(f)`, `grad(f)` called in a body.
enum class DeriveKind : uint8_t { Transpose, Jvp, Vjp, Grad };

/// One derivative of a function: the kind, the parameters it is taken with
/// respect to (`wrt`, one flag per parameter) and, for vjp and grad, the
/// results that receive a cotangent (`of`, one flag per result).
struct DeriveStep {
  DeriveKind kind = DeriveKind::Grad;
  std::vector<bool> wrt;
  std::vector<bool> of;
  bool operator==(const DeriveStep &) const = default;
};

/// A function a call like `grad(loss, wrt=w)(w, x)` names: `steps` applied
/// in order to function `base` (a shmap, or a def instance typed for the
/// call). Lowering records it; infer_variance builds the function and
/// rewrites the call.
struct DerivedCallee {
  int base = -1;
  std::vector<DeriveStep> steps;
  std::string text;  // as written, for messages: `grad(loss, wrt=w)`
  bool operator==(const DerivedCallee &) const = default;
};

/// Shmap and sharded functions are declared in source with a mesh and specs;
/// def instances are not.
inline bool is_top_level(const Function &f) { return f.kind != FunctionKind::Def; }
/// `shmap`, `def` or `sharded`.
const char *function_keyword(FunctionKind kind);

/// The user-facing name of parameter k: its name in the source, else "arg<k>"
/// (`spmdc run`'s inputs, its error messages, `spmdc show`).
std::string param_name(const Function &f, size_t k);
/// The user-facing name of result k: its written name, else the function's
/// name for a single result, else "out<k>". `spmdc run --out NAME=file` uses it.
std::string result_name(const Function &f, size_t k);
/// How diagnostics refer to result k: "the result of `f`" or "result `loss` of
/// `f`" (results are named, never numbered, so prose matches the CLI).
std::string describe_result(const Function &f, size_t k);
/// The same for result `result` of `function`, which has `num_results`.
std::string describe_result(const std::string &function, size_t num_results,
                            const std::string &result);

struct Module {
  std::vector<MeshDef> meshes;
  std::vector<Function> functions;
  /// Derived functions still to build (between lowering and infer_variance):
  /// a call with `attrs.call().derived = k` calls derived_callees[k].
  std::vector<DerivedCallee> derived_callees;

  const rt::Mesh &mesh_of(const Function &f) const;
  /// Index of the function named `name` or -1.
  int find_function(std::string_view name) const;
};

}  // namespace spmd::ir

// middle/lower_internal.h — shared state of the lowering pass (lower.cpp,
// lower_builtins.cpp). Not part of the pass's interface.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "ir/builder.h"
#include "middle/lower.h"
#include "transforms/derived_signature.h"

namespace spmd::lowering {

/// A lowered expression: a value, several values (a call returning a tuple),
/// or a literal that has not met a value yet (weak typing: `2.0 * x` takes x's dtype).
struct LExpr {
  enum class Kind { Invalid, Value, Tuple, Literal } kind = Kind::Invalid;
  ir::ValueId value = ir::kNoValue;
  std::vector<ir::ValueId> tuple;
  double literal = 0;
  bool literal_is_int = false;
  bool literal_is_bool = false;
  SourceSpan span;

  /// A value; kNoValue (an error already reported) gives an invalid LExpr.
  static LExpr of(ir::ValueId v, SourceSpan s) {
    LExpr e;
    if (v == ir::kNoValue) return e;
    e.kind = Kind::Value;
    e.value = v;
    e.span = s;
    return e;
  }
  bool ok() const { return kind != Kind::Invalid; }
};

class ProgramLowerer;

/// How a signature type's written dimensions (at most one `...`) line up
/// with a shape of `rank` dimensions: written dimension d (not `...`) is shape
/// dimension index(d), and `...` covers [at, at + spread).
struct DimLayout {
  size_t at;      // the position of `...` (dims.size() when there is none)
  size_t spread;  // how many dimensions `...` stands for
  size_t index(size_t d) const { return d < at ? d : d - 1 + spread; }
};
/// nullopt when `rank` does not fit (too small; different without `...`).
std::optional<DimLayout> layout_dims(const std::vector<ast::DimExpr> &dims, size_t rank);

/// One derivative as written: `grad(f, wrt=(a, b), of=0)` (lower_derivatives.cpp).
struct DerivativeStepSyntax {
  DeriveKind kind = DeriveKind::Grad;
  std::vector<std::string> wrt, of;  // names or indices, as written
  SourceSpan span;
};

/// What `env` binds a name to when the statement that bound it failed: every
/// later use of the name is silently invalid, so one mistake gives one error
/// (no "unknown name" for each use of a value that could not be computed).
inline constexpr ir::ValueId kPoisoned = -2;

/// Lowers one function body.
class BodyLowerer {
 public:
  BodyLowerer(ProgramLowerer &program, ir::Function &function, int module_index);

  void lower_block(const ast::Block &block);
  LExpr lower_expr(const ast::Expr &expr);
  /// The expression as a single value (materialising a literal with `dtype_hint`,
  /// or its natural dtype); kNoValue after reporting an error.
  ir::ValueId lower_value(const ast::Expr &expr, std::optional<DType> dtype_hint = std::nullopt);
  ir::ValueId materialize(const LExpr &e, std::optional<DType> dtype_hint);

  /// Appends an op, reporting a shape-rule failure at `span`.
  ir::ValueId emit(OpCode op, std::vector<ir::ValueId> operands, Attrs attrs, SourceSpan span,
                   ir::Origin origin = ir::Origin::User);
  /// Appends an op with several results (a combined `psum((a, b), axes)`); empty on error.
  std::vector<ir::ValueId> emit_all(OpCode op, std::vector<ir::ValueId> operands, Attrs attrs,
                                    SourceSpan span, ir::Origin origin = ir::Origin::User);
  /// A binary elementwise op with weak-literal handling (OpCode::Einsum: a
  /// matrix product, named `matmul_spelling` in errors).
  LExpr binary(OpCode op, const LExpr &a, const LExpr &b, SourceSpan span,
               const char *matmul_spelling = "@");
  /// `a @ b` with NumPy's rules (vectors, batch broadcasting), as einsum.
  LExpr matmul(ir::ValueId a, ir::ValueId b, SourceSpan span, const char *spelling);
  /// emit(); on a shape-rule failure `explain` may add to the reported diagnostic.
  ir::ValueId emit_checked(OpCode op, std::vector<ir::ValueId> operands, Attrs attrs,
                           SourceSpan span, const std::function<void(Diagnostic &)> &explain);
  /// "`x` is the local block of f32[8, 16] (global): ..." for a sharded shmap
  /// parameter whose local shape differs from its global one.
  std::optional<DiagnosticLabel> local_block_note(ir::ValueId v) const;
  /// Adds local_block_note for each of `values` and says that shapes are local.
  void add_local_shape_notes(Diagnostic &d, const std::vector<ir::ValueId> &values);

  /// Compile-time integer expression: literals, dimension symbols, + - * and
  /// exact /, axis_size(...). Reports an error and returns nullopt otherwise.
  std::optional<int64_t> eval_int(const ast::Expr &expr, const char *what);
  /// Axis names: `i` or `(i, j)`; reports unknown or repeated axes.
  std::optional<std::vector<int>> eval_axes(const ast::Expr &expr);

  DiagnosticEngine &diags();
  const rt::Mesh &mesh() const { return builder_.mesh(); }
  ir::Function &function() { return function_; }
  ProgramLowerer &program() { return program_; }
  int module_index() const { return module_index_; }

  std::map<std::string, ir::ValueId> env;      // local names (kPoisoned after a failed binding)
  std::map<std::string, int64_t> dim_symbols;  // def dimension symbols; in a shmap or
                                               // sharded body, the --set sizes
  bool set_sizes = false;  // dim_symbols are the --set sizes (a use counts as using them)
  std::map<std::string, DType> dtype_symbols;  // def dtype variables (`def f[T]`)
  std::optional<Shape> ellipsis;               // what `...` stands for in the def
  /// Names no longer visible and why (bound in one branch of an `if` only, or
  /// inside a loop): a later use says so in a note.
  std::map<std::string, DiagnosticLabel> out_of_scope;
  bool returned = false;
  /// The return statement named a value whose statement failed (already
  /// reported): the function's results are unknown, not missing.
  bool return_failed = false;
  /// Product of the iteration counts of the loops around the statement being
  /// lowered: how many copies of it unrolling makes.
  int64_t enclosing_iterations = 1;

  /// Binds `name` to `v` (kNoValue poisons it).
  void bind(const std::string &name, ir::ValueId v);
  /// Names every later statement may use, for "did you mean" suggestions.
  std::vector<std::string> visible_names() const;

 private:
  void lower_stmt(const ast::Stmt &stmt);
  void lower_assign(const ast::AssignStmt &assign, SourceSpan span);
  void lower_return(const ast::ReturnStmt &ret, SourceSpan span);
  void lower_for(const ast::ForStmt &loop, SourceSpan span);
  void lower_if(const ast::IfStmt &branch, SourceSpan span);
  /// `print("step {} loss {}", k, loss)`: a DebugPrint of the values (the
  /// only call allowed as a statement).
  void lower_call_stmt(const ast::CallStmt &stmt, SourceSpan span);
  LExpr lower_call(const ast::CallExpr &call, SourceSpan span);
  /// The dtype a number written as argument `k` of a call of `decl` takes:
  /// its parameter's dtype, or the dtype bound to its type parameter by the
  /// other arguments (none when only numbers bind it).
  std::optional<DType> literal_argument_dtype(const ast::FuncDecl &decl,
                                              const std::vector<LExpr> &args, size_t k);
  /// A call of shmap `decl` from this body: local values in, local values out.
  LExpr call_shmap(const ast::FuncDecl &decl, int decl_module, std::vector<ir::ValueId> args,
                   SourceSpan callee_span, SourceSpan span);
  /// The call instruction of function `callee` (its results typed invariant;
  /// infer_variance types them); a tuple when it returns several values.
  LExpr emit_call(int callee, std::vector<ir::ValueId> args, SourceSpan span);
  LExpr tuple_or_value(const std::vector<ir::ValueId> &values, SourceSpan span);
  /// False (after an error at `at`) when shmap `callee` runs on a mesh with
  /// other axes than this body's.
  bool check_callee_mesh(int callee, const ast::FuncDecl &decl, SourceSpan at);
  /// `grad(f, wrt=w)(args)` and the other derivatives (lower_derivatives.cpp).
  LExpr lower_derived_call(const ast::CallExpr &call, SourceSpan span);
  /// The parameter types of def `decl` when the derivative `steps` of it is
  /// called with arguments of types `args`; nullopt after an error (or,
  /// silently, when the argument count is wrong).
  std::optional<std::vector<Type>> derivative_param_types(
      const ast::FuncDecl &decl, const std::vector<DerivativeStepSyntax> &steps,
      const std::vector<Type> &args, SourceSpan span);
  /// select_step, its TransformError reported at `at`.
  ir::DeriveStep select_derive_step(const FunctionSignature &sig, DeriveKind kind,
                                    const std::vector<std::string> &wrt,
                                    const std::vector<std::string> &of, SourceSpan at, bool &ok);
  LExpr lower_index(const ast::IndexExpr &index, SourceSpan span);
  /// The values an integer index expression can take, when its form shows
  /// them: literals, dimension symbols, loop indices, axis_index/axis_size and
  /// + - * of those. `loop` is set to the loop whose index it reads, if any.
  std::optional<std::pair<int64_t, int64_t>> index_bounds(const ast::Expr &expr, SourceSpan &loop);
  /// Checks a run-time index of dimension `dim` (of `size`) against the range
  /// its form shows, lowers it and appends (dim, value) to `out`.
  bool lower_dynamic_index(const ast::Expr &expr, int64_t dim, int64_t size,
                           std::vector<std::pair<int64_t, ir::ValueId>> &out);
  /// True when `expr` is a compile-time integer (eval_int would succeed).
  bool is_static_int(const ast::Expr &expr) const;
  LExpr lower_name(const std::string &name, SourceSpan span);
  /// `x.T` -> {"x", "T"} when `x` is a local name (a value's attributes), else nullopt
  /// (a module-qualified name such as `nn.relu`).
  std::optional<std::vector<std::string>> member_path(const std::string &name) const;
  /// The attribute `member` of a value: `.T`; anything else is an error.
  LExpr lower_member(const LExpr &base, const std::string &member, SourceSpan span);
  /// A method call on `self` (method name: `method`, or the call's callee).
  LExpr lower_method(const LExpr &self, const ast::CallExpr &call, SourceSpan span,
                     const std::string &method = "");
  /// A slice of dimension `dim` (size `size`) of `base` that selects nothing.
  void report_empty_slice(ir::ValueId base, int64_t dim, int64_t size, SourceSpan subscript_span);
  /// `return` inside `where` ("`if`" or "a loop"): an error at the return.
  void report_nested_return(const char *where, SourceSpan stmt_span);

  ProgramLowerer &program_;
  ir::Function &function_;
  ir::Builder builder_;
  int module_index_;
  std::string builtin_name_;  // the builtin being lowered, as written (for messages)
  /// The range of each loop index (lowest and highest value) and its loop.
  struct LoopIndex {
    int64_t lo, hi;
    SourceSpan loop;
  };
  std::map<ir::ValueId, LoopIndex> loop_indices_;
};

/// Reports an unknown dtype `name` at `span`, suggesting the closest one.
void report_unknown_dtype(DiagnosticEngine &diags, SourceSpan span, const std::string &name);
/// Reports `name`, which is not an axis of `mesh`, listing the axes and
/// suggesting the closest one.
void report_unknown_axis(DiagnosticEngine &diags, SourceSpan span, const std::string &name,
                         const rt::Mesh &mesh);

/// Builtin functions of the language (lower_builtins.cpp).
using BuiltinHandler = std::function<LExpr(BodyLowerer &, const ast::CallExpr &, SourceSpan)>;
/// The handler for builtin `name`, or null.
const BuiltinHandler *find_builtin(const std::string &name);
bool is_builtin(const std::string &name);
/// When the `n` arguments of a call fit its parameters in an order other than
/// the written one (`fits(order)`, order[k] = the argument for parameter k),
/// the first such order; at most 6 arguments are tried.
std::optional<std::vector<size_t>> argument_order_that_fits(
    size_t n, const std::function<bool(const std::vector<size_t> &)> &fits);
/// "wrong order? the arguments fit the parameters in another order (...)".
std::string wrong_order_help(const std::vector<std::string> &param_names,
                             const std::vector<size_t> &order);

/// Every builtin's name (for suggestions).
std::vector<std::string> builtin_names();

/// Whole-program state: symbol tables, the module being built, def instances.
class ProgramLowerer {
 public:
  /// A --set size was used (by a signature or a body): not a `bad-override`.
  void note_size_used(const std::string &name) { sizes_used_.insert(name); }
  ProgramLowerer(const Program &program, const SourceManager &sources, const LowerOptions &options,
                 DiagnosticEngine &diags);
  ir::Module run();

  /// The def reachable as `name` from module `from_module`, or null (after
  /// reporting ambiguity at `span` when two imports define it).
  const ast::FuncDecl *find_def(const std::string &name, int from_module, SourceSpan span,
                                int &def_module);
  /// Index of the lowered shmap `decl` (lowered on first use), or -1 after
  /// errors; a shmap that (indirectly) calls itself is reported at `call_span`.
  /// A valid `call_span` means a body calls it (or a derivative of it), so it
  /// is no default entry.
  int shmap_function(const ast::FuncDecl &decl, int module_index, SourceSpan call_span);
  /// Index of the instance of `decl` for these argument types on `mesh`, or -1.
  int instantiate(const ast::FuncDecl &decl, int decl_module, const std::vector<Type> &arg_types,
                  int mesh, SourceSpan call_span);

  /// Instructions `body` becomes once its loops are unrolled and its calls
  /// inlined (saturating at INT64_MAX).
  int64_t unrolled_size(const std::vector<ir::Instr> &body) const;
  /// unrolled_size of the body of module.functions[index].
  int64_t function_size(int index) const { return function_sizes_.at(static_cast<size_t>(index)); }
  /// Appends `f` to the module unless its unrolled size is too large (then
  /// reports it and returns -1); returns its index.
  int add_function(ir::Function f);
  /// Reports `program-too-large` at `span` when `size` copies of something
  /// pass kMaxUnrolledInstructions; `what` says what ("unrolling this loop").
  bool check_unrolled_size(int64_t size, SourceSpan span, const std::string &what);
  /// Checks `spec` against the mesh and the global shape; reports problems.
  std::optional<rt::PartitionSpec> resolve_spec(const ast::SpecExpr &spec, const rt::Mesh &mesh,
                                                const Shape &global, SourceSpan type_span);

  ir::Module module;
  DiagnosticEngine &diags;
  const SourceManager &sources;

 private:
  struct FuncSym {
    const ast::FuncDecl *decl;
    int module_index;
  };
  void collect();
  /// Applies the --mesh overrides naming mesh `decl` (or naming none) to its `axes`.
  void override_mesh(const ast::MeshDecl &decl, std::vector<rt::MeshAxis> &axes);
  /// Reports overrides that named nothing (after lowering).
  void check_overrides_used();
  /// Notes on `d` where the source sized those of `axes` (of `mesh`) that --mesh resized.
  void note_overridden_axes(Diagnostic &d, const rt::Mesh &mesh,
                            const std::vector<ast::Ident> &axes) const;
  std::optional<ir::Function> lower_shmap(const ast::FuncDecl &decl, int module_index);
  /// What a def's arguments bound in its signature: dimension symbols (`n`),
  /// dtype variables (`T` of `def f[T]`) and the dimensions `...` stands for.
  struct DefBindings {
    std::map<std::string, int64_t> dims;
    std::map<std::string, DType> dtypes;
    std::optional<Shape> ellipsis;
  };
  /// The type `type` names: a shmap's (allow_symbols false: concrete sizes,
  /// or sizes given by --set) or a def result's under `def`'s bindings.
  std::optional<Type> resolve_type(const ast::TypeExpr &type, const DefBindings *def,
                                   bool allow_symbols);
  /// Matches a call's argument types against `decl`'s parameters, binding
  /// its dimension symbols, dtype variables and `...`; reports mismatches.
  std::optional<DefBindings> bind_signature(const ast::FuncDecl &decl,
                                            const std::vector<Type> &arg_types,
                                            SourceSpan call_span);
  std::optional<DefBindings> bind_signature_in_order(const ast::FuncDecl &decl,
                                                     const std::vector<Type> &arg_types,
                                                     SourceSpan call_span);
  /// A sharded function's callees must not communicate: reports every
  /// collective in the def instances it reaches. True when there is none.
  bool check_global_view(const ir::Function &f);

  const Program &program_;
  LowerOptions options_;
  std::map<std::string, int> meshes_;
  std::map<std::string, SourceSpan> mesh_spans_;  // where each mesh name was first defined
  /// Per mesh, the axes --mesh resized (axis -> where the source gave its size).
  std::map<std::string, std::map<std::string, SourceSpan>> overridden_axes_;
  std::set<std::string> sizes_used_;                    // the --set names some signature used
  std::map<std::string, std::string> declared_meshes_;  // mesh -> its axes as the source says
  std::map<std::string, std::vector<FuncSym>> funcs_;   // name (plain and qualified) -> decls
  struct InstanceKey {
    const ast::FuncDecl *decl;
    int mesh;
    std::vector<std::pair<DType, Shape>> args;
    auto operator<=>(const InstanceKey &) const = default;
  };
  std::map<InstanceKey, int> instances_;         // -2 while in progress, -1 after failure
  std::map<const ast::FuncDecl *, int> shmaps_;  // likewise
  /// The def instantiations under way, outermost first: (callee, call site).
  std::vector<std::pair<const ast::FuncDecl *, SourceSpan>> call_stack_;
  /// unrolled_size of every function of `module`, by index.
  std::vector<int64_t> function_sizes_;
  std::set<const ast::FuncDecl *> called_shmaps_;
};

}  // namespace spmd::lowering

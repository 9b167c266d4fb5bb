// frontend/ast.h — the abstract syntax tree produced by the parser.
//
// The AST mirrors the surface syntax one to one (it is what `spmdc fmt` prints
// and `spmdc print --emit=ast` dumps). It carries no types: lowering to the IR
// (middle/lower.h) resolves names, shapes and dtypes. Every node has a
// SourceSpan. Nodes own their children through std::unique_ptr; a node's kind
// is a std::variant alternative.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "support/result_names.h"
#include "support/source.h"

namespace spmd::ast {

/// An identifier with its span.
struct Ident {
  std::string name;
  SourceSpan span;
};

// ---------------------------------------------------------------- types/specs

/// One dimension of a type expression: a literal size, a symbol (`n`) or
/// `...` (kEllipsis: any number of dimensions, def signatures only).
struct DimExpr {
  static constexpr const char *kEllipsis = "...";
  bool is_ellipsis() const {
    const auto *s = std::get_if<std::string>(&value);
    return s != nullptr && *s == kEllipsis;
  }
  std::variant<int64_t, std::string> value;
  SourceSpan span;
};

/// `f32[n, 3]` or `f32[8, 4]{i, j}` (the variance set only inside bodies).
struct TypeExpr {
  Ident dtype;  // "f32", "f64", "bf16", "i32", "bool" (checked later)
  std::vector<DimExpr> dims;
  std::optional<std::vector<Ident>> variance;  // present iff written
  SourceSpan span;
};

/// One dimension of a partition spec: `None` (empty), `i`, or `(i, j)`.
struct SpecDim {
  std::vector<Ident> axes;
  SourceSpan span;
};

/// `P(i, None)`, `P((data, model))`, `P()`, `auto` (in a `sharded` signature: the
/// compiler chooses), or `like(w)` (a `sharded` result: parameter w's layout).
struct SpecExpr {
  std::vector<SpecDim> dims;
  bool is_auto = false;
  std::optional<Ident> like;  // `like(w)`: the parameter named
  SourceSpan span;
};

// ---------------------------------------------------------------- expressions

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class UnaryOpKind { Neg, Not };
enum class BinaryOpKind {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  MatMul,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or
};

struct NameExpr {
  std::string name;  // may be dotted for module-qualified names: "nn.relu"
};
struct IntLit {
  int64_t value;
};
struct FloatLit {
  double value;
  std::string spelling;  // as written, for faithful printing
};
struct BoolLit {
  bool value;
};
struct StringLit {
  std::string value;  // unescaped
};
/// `None`: an unsplit dimension in a partition spec written as an argument
/// (`constrain(x, P(i, None))`); lowering rejects it anywhere else.
struct NoneLit {};
struct UnaryExpr {
  UnaryOpKind op;
  ExprPtr operand;
};
struct BinaryExpr {
  BinaryOpKind op;
  ExprPtr lhs, rhs;
};
/// A positional (keyword empty) or keyword argument.
struct Argument {
  std::string keyword;
  ExprPtr value;
  SourceSpan span;
};
struct CallExpr {
  Ident callee;  // possibly dotted; empty when `function` is set
  std::vector<Argument> args;
  /// A method call on an expression, `(a + b).astype(f32)`: the receiver (the
  /// callee is then the method's name). Null for ordinary calls; `x.astype(f32)`
  /// on a name is a dotted callee, resolved by lowering.
  ExprPtr receiver;
  /// `grad(loss, wrt=w)(w, x)`: the call that names the function called here
  /// (a CallExpr of a named function); null when `callee` names it.
  ExprPtr function;
};
/// `e.name` for an expression that is not a plain name: `(a @ b).T`.
struct MemberExpr {
  ExprPtr base;
  Ident member;
};
/// One subscript: a single index, a slice `start:stop:step` (each optional),
/// or `None` (a new axis of size 1, as in NumPy).
struct Subscript {
  bool is_new_axis = false;
  bool is_slice = false;
  ExprPtr index;              // when !is_slice
  ExprPtr start, stop, step;  // when is_slice; null = omitted
  SourceSpan span;
};
struct IndexExpr {
  ExprPtr base;
  std::vector<Subscript> subscripts;
};
/// `(a, b)` — also used for axis lists `(i, j)` and shapes `(4, 8)`.
struct TupleExpr {
  std::vector<ExprPtr> elements;
};
/// `[a, b]` — used for permutations `[(0, 1), (1, 2)]`.
struct ListExpr {
  std::vector<ExprPtr> elements;
};

struct Expr {
  std::variant<NameExpr, IntLit, FloatLit, BoolLit, StringLit, NoneLit, UnaryExpr, BinaryExpr,
               CallExpr, IndexExpr, MemberExpr, TupleExpr, ListExpr>
      node;
  SourceSpan span;
  /// True when the source wrapped this expression in parentheses (for printing).
  bool parenthesized = false;
};

// ---------------------------------------------------------------- statements

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

/// One assignment target: `w` or `w: f32[]{i}`.
struct AssignTarget {
  Ident name;
  std::optional<TypeExpr> annotation;
};
/// `a = e`, `a: T = e`, `a, b = e` (e returns a tuple).
struct AssignStmt {
  std::vector<AssignTarget> targets;
  ExprPtr value;
};
/// `return e` or `return e1, e2`.
struct ReturnStmt {
  std::vector<ExprPtr> values;
};
/// `[[unroll]] for k in range(start, stop, step) { ... }` — bounds are
/// compile-time integers. Names assigned in the body that were bound before
/// the loop are loop-carried.
struct ForStmt {
  std::vector<Ident> attributes;  // `[[unroll, remat]]`
  Ident var;
  ExprPtr start;  // may be null (= 0)
  ExprPtr stop;
  ExprPtr step;  // may be null (= 1)
  Block body;
};
/// `if cond { ... } else { ... }`; names assigned in both branches (or bound
/// before) are joined after it.
struct IfStmt {
  ExprPtr cond;
  Block then_body;
  Block else_body;  // empty when no else
  bool has_else = false;
};

/// A call whose value is not used, kept for its effect: `print("{}", x)`.
/// `call` is an Expr holding a CallExpr of a named function.
struct CallStmt {
  ExprPtr call;
};

struct Stmt {
  std::variant<AssignStmt, ReturnStmt, ForStmt, IfStmt, CallStmt> node;
  SourceSpan span;
  std::vector<std::string> leading_comments;  // full-line comments above, without '#'
  std::string trailing_comment;               // comment after the statement on its line
};

// ---------------------------------------------------------------- declarations

struct ImportDecl {
  std::vector<Ident> path;  // import std.nn -> {std, nn}; empty for a file import
  /// `import "grads/loss_grad.spmd"`: a file, relative to the importing file.
  std::optional<std::string> file;
  SourceSpan file_span;
};

struct MeshAxisDecl {
  Ident name;
  int64_t size;
  SourceSpan size_span;
};
/// `mesh M = (data: 2, model: 4)`
struct MeshDecl {
  Ident name;
  std::vector<MeshAxisDecl> axes;
};

struct Param {
  Ident name;
  TypeExpr type;
  std::optional<SpecExpr> spec;  // shmap and sharded parameters only
  SourceSpan span;
};
struct Result {
  std::optional<Ident> name;  // `-> (loss: f32[] @ P(), ...)`
  TypeExpr type;
  std::optional<SpecExpr> spec;  // shmap and sharded results only
  SourceSpan span;
};


/// `def`, `shmap` (per-device body), or `sharded` (a global-view body: global
/// shapes, no collectives; the compiler chooses how to split it).
enum class FuncKind { Def, Shmap, Sharded };

/// `def g(x: f32[n, 3]) -> f32[] { ... }`,
/// `[[no_auto_pbroadcast]] shmap f(x: f32[32] @ P(i)) -> f32[] @ P() on M { ... }` or
/// `sharded f(x: f32[32, 8] @ P(i), w: f32[8, 8] @ auto) -> f32[32, 8] @ P(i) on M { ... }`.
struct FuncDecl {
  FuncKind kind = FuncKind::Def;
  Ident name;
  std::vector<Ident> attributes;
  std::vector<Ident> type_params;  // `def f[T](...)`: dtype variables
  std::vector<Param> params;
  std::vector<Result> results;  // several = tuple result, written `-> (A, B)`
  bool results_parenthesized = false;
  std::optional<Ident> mesh;  // shmap and sharded only
  Block body;
};

struct Decl {
  std::variant<ImportDecl, MeshDecl, FuncDecl> node;
  SourceSpan span;
  std::vector<std::string> leading_comments;
  std::string trailing_comment;
};

struct Module {
  FileId file = kNoFile;
  std::vector<Decl> decls;
  std::vector<std::string> trailing_comments;  // comments after the last declaration
};

}  // namespace spmd::ast

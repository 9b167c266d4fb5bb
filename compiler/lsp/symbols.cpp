// lsp/symbols.cpp — resolving the identifiers of a document (see symbols.h).
//
// 1. Collect the declarations every module of the program makes: functions
//    under their plain, module-qualified and alias-qualified names (as
//    lowering does: `std.nn.relu`, `nn.relu`, `relu`), meshes by name.
// 2. For each function of the main file, bind its parameters, then walk its
//    body in order with a scope (name -> the spans that may have bound it),
//    recording each identifier with what it names.
#include "lsp/symbols.h"

#include <algorithm>
#include <map>

namespace spmd::lsp {
namespace {

using Scope = std::map<std::string, std::vector<SourceSpan>>;

/// `a.b.c` -> `c`.
std::string last_component(const std::string &name) {
  auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::vector<SourceSpan> merged(std::vector<SourceSpan> a, const std::vector<SourceSpan> &b) {
  for (const SourceSpan &s : b)
    if (std::find(a.begin(), a.end(), s) == a.end()) a.push_back(s);
  return a;
}

class Indexer {
 public:
  explicit Indexer(const Program &program) : program_(program) { collect_declarations(); }

  SymbolIndex run() {
    const ast::Module &main = program_.modules.at(0).ast;
    for (const ast::Decl &decl : main.decls) {
      if (const auto *mesh = std::get_if<ast::MeshDecl>(&decl.node)) {
        add(SymbolKind::Mesh, mesh->name, {mesh->name.span}).mesh = mesh;
        for (size_t a = 0; a < mesh->axes.size(); ++a) {
          Symbol &s = add(SymbolKind::Axis, mesh->axes[a].name, {mesh->axes[a].name.span});
          s.mesh = mesh;
          s.index = a;
        }
      } else if (const auto *fn = std::get_if<ast::FuncDecl>(&decl.node)) {
        index_function(*fn);
      }
    }
    return std::move(index_);
  }

 private:
  void collect_declarations() {
    for (size_t m = 0; m < program_.modules.size(); ++m) {
      const ParsedModule &pm = program_.modules[m];
      for (const ast::Decl &decl : pm.ast.decls) {
        if (const auto *fn = std::get_if<ast::FuncDecl>(&decl.node)) {
          functions_.try_emplace(fn->name.name, fn);  // the main file's first
          if (!pm.name.empty()) {
            functions_.try_emplace(pm.name + "." + fn->name.name, fn);
            functions_.try_emplace(last_component(pm.name) + "." + fn->name.name, fn);
          }
        } else if (const auto *mesh = std::get_if<ast::MeshDecl>(&decl.node)) {
          meshes_.try_emplace(mesh->name.name, mesh);
        }
      }
    }
  }

  Symbol &add(SymbolKind kind, const ast::Ident &ident, std::vector<SourceSpan> definitions) {
    Symbol s;
    s.kind = kind;
    s.name = ident.name;
    s.span = ident.span;
    s.definitions = std::move(definitions);
    s.function = function_;
    index_.symbols.push_back(std::move(s));
    return index_.symbols.back();
  }

  /// An axis of the current function's mesh named by `ident`, recorded; false if none.
  bool add_axis(const ast::Ident &ident) {
    if (!mesh_) return false;
    for (size_t a = 0; a < mesh_->axes.size(); ++a)
      if (mesh_->axes[a].name.name == ident.name) {
        Symbol &s = add(SymbolKind::Axis, ident, {mesh_->axes[a].name.span});
        s.mesh = mesh_;
        s.index = a;
        return true;
      }
    return false;
  }

  bool add_function(const ast::Ident &ident) {
    auto it = functions_.find(ident.name);
    if (it == functions_.end()) return false;
    add(SymbolKind::Function, ident, {it->second->name.span}).named_function = it->second;
    return true;
  }

  void add_spec(const std::optional<ast::SpecExpr> &spec) {
    if (!spec) return;
    for (const ast::SpecDim &dim : spec->dims)
      for (const ast::Ident &axis : dim.axes) add_axis(axis);
  }

  void index_function(const ast::FuncDecl &fn) {
    function_ = &fn;
    mesh_ = nullptr;
    if (fn.mesh) {
      auto it = meshes_.find(fn.mesh->name);
      if (it != meshes_.end()) {
        mesh_ = it->second;
        add(SymbolKind::Mesh, *fn.mesh, {mesh_->name.span}).mesh = mesh_;
      }
    }
    add(SymbolKind::Function, fn.name, {fn.name.span}).named_function = &fn;
    Scope scope;
    for (size_t k = 0; k < fn.params.size(); ++k) {
      const ast::Param &p = fn.params[k];
      Symbol &whole = add(SymbolKind::Parameter, p.name, {p.name.span});
      whole.span = p.span;
      whole.index = k;
      add(SymbolKind::Value, p.name, {p.name.span});
      add_spec(p.spec);
      scope[p.name.name] = {p.name.span};
    }
    for (size_t k = 0; k < fn.results.size(); ++k) {
      const ast::Result &r = fn.results[k];
      ast::Ident name = r.name ? *r.name : ast::Ident{fn.name.name, r.span};
      Symbol &whole = add(SymbolKind::Result, name, {r.span});
      whole.span = r.span;
      whole.index = k;
      add_spec(r.spec);
    }
    block(fn.body, scope);
    function_ = nullptr;
  }

  void block(const ast::Block &body, Scope &scope) {
    for (const ast::StmtPtr &stmt : body) statement(*stmt, scope);
  }

  void statement(const ast::Stmt &stmt, Scope &scope) {
    if (const auto *assign = std::get_if<ast::AssignStmt>(&stmt.node)) {
      expr(*assign->value, scope);
      for (const ast::AssignTarget &t : assign->targets) {
        if (t.annotation && t.annotation->variance)
          for (const ast::Ident &axis : *t.annotation->variance) add_axis(axis);
        add(SymbolKind::Value, t.name, {t.name.span});
        scope[t.name.name] = {t.name.span};
      }
    } else if (const auto *ret = std::get_if<ast::ReturnStmt>(&stmt.node)) {
      for (const ast::ExprPtr &e : ret->values) expr(*e, scope);
    } else if (const auto *loop = std::get_if<ast::ForStmt>(&stmt.node)) {
      for (const ast::ExprPtr *e : {&loop->start, &loop->stop, &loop->step})
        if (*e) expr(**e, scope);
      Scope inner = scope;
      add(SymbolKind::Value, loop->var, {loop->var.span});
      inner[loop->var.name] = {loop->var.span};
      block(loop->body, inner);
      join(scope, {&inner});
    } else if (const auto *branch = std::get_if<ast::IfStmt>(&stmt.node)) {
      expr(*branch->cond, scope);
      Scope then_scope = scope, else_scope = scope;
      block(branch->then_body, then_scope);
      block(branch->else_body, else_scope);
      join(scope, {&then_scope, &else_scope});
    } else if (const auto *call = std::get_if<ast::CallStmt>(&stmt.node)) {
      if (call->call) expr(*call->call, scope);
    }
  }

  /// After a loop or an if: a name bound before may now come from any branch
  /// (or, for a loop that did not rebind it, from before); a name bound only
  /// inside stays visible with its bindings, as editors would rather jump
  /// somewhere than nowhere (lowering reports its use if it is an error).
  static void join(Scope &scope, std::initializer_list<const Scope *> branches) {
    Scope out;
    bool loop = branches.size() == 1;
    for (const Scope *b : branches)
      for (const auto &[name, spans] : *b) out[name] = merged(out[name], spans);
    if (loop)
      for (const auto &[name, spans] : scope) out[name] = merged(spans, out[name]);
    scope = std::move(out);
  }

  void expr(const ast::Expr &e, Scope &scope) {
    std::visit([&](const auto &node) { expr_node(node, e.span, scope); }, e.node);
  }

  void name_use(const ast::Ident &ident, Scope &scope) {
    if (auto it = scope.find(ident.name); it != scope.end()) {
      add(SymbolKind::Value, ident, it->second);
      return;
    }
    if (add_axis(ident)) return;
    add_function(ident);
  }

  void expr_node(const ast::NameExpr &n, SourceSpan span, Scope &scope) {
    name_use(ast::Ident{n.name, span}, scope);
  }
  void expr_node(const ast::UnaryExpr &u, SourceSpan, Scope &scope) { expr(*u.operand, scope); }
  void expr_node(const ast::BinaryExpr &b, SourceSpan, Scope &scope) {
    expr(*b.lhs, scope);
    expr(*b.rhs, scope);
  }
  void expr_node(const ast::CallExpr &call, SourceSpan, Scope &scope) {
    if (call.function) expr(*call.function, scope);
    if (call.receiver) expr(*call.receiver, scope);
    if (!call.function && !call.receiver && !call.callee.name.empty()) {
      const ast::Ident &callee = call.callee;
      if (!add_function(callee)) {
        // `x.astype(f32)`: a method of a local value.
        auto dot = callee.name.find('.');
        std::string head = callee.name.substr(0, dot);
        if (dot != std::string::npos && scope.count(head)) {
          SourceSpan span = callee.span;
          span.end = span.begin + static_cast<uint32_t>(head.size());
          name_use(ast::Ident{head, span}, scope);
        }
      }
    }
    for (const ast::Argument &a : call.args) expr(*a.value, scope);
  }
  void expr_node(const ast::IndexExpr &ix, SourceSpan, Scope &scope) {
    expr(*ix.base, scope);
    for (const ast::Subscript &s : ix.subscripts)
      for (const ast::ExprPtr *e : {&s.index, &s.start, &s.stop, &s.step})
        if (*e) expr(**e, scope);
  }
  void expr_node(const ast::MemberExpr &m, SourceSpan, Scope &scope) { expr(*m.base, scope); }
  void expr_node(const ast::TupleExpr &t, SourceSpan, Scope &scope) {
    for (const ast::ExprPtr &e : t.elements) expr(*e, scope);
  }
  void expr_node(const ast::ListExpr &l, SourceSpan, Scope &scope) {
    for (const ast::ExprPtr &e : l.elements) expr(*e, scope);
  }
  template <typename Literal>
  void expr_node(const Literal &, SourceSpan, Scope &) {}

  const Program &program_;
  std::map<std::string, const ast::FuncDecl *> functions_;
  std::map<std::string, const ast::MeshDecl *> meshes_;
  const ast::FuncDecl *function_ = nullptr;
  const ast::MeshDecl *mesh_ = nullptr;
  SymbolIndex index_;
};

}  // namespace

const Symbol *SymbolIndex::find(FileId file, uint32_t offset) const {
  const Symbol *best = nullptr;
  for (const Symbol &s : symbols) {
    if (s.span.file != file || offset < s.span.begin || offset > s.span.end) continue;
    if (!best || s.span.end - s.span.begin < best->span.end - best->span.begin) best = &s;
  }
  return best;
}

SymbolIndex index_symbols(const Program &program) {
  if (program.modules.empty()) return {};
  return Indexer(program).run();
}

}  // namespace spmd::lsp

// frontend/format.cpp — canonical source printing and the AST dump.
//
// format_module prints the canonical form of a module: two-space indentation,
// one statement per line, one space around binary operators, `k=v` keyword
// arguments, and the fewest parentheses that re-parse to the same tree
// (parentheses written in the source are not kept). Comments are printed
// where parser.cpp attached them. Declarations are separated by a blank line,
// except runs of imports and runs of meshes. The output is a fixed point:
// formatting it again gives the same text. dump_ast prints one node per line
// with its source position for `spmdc print --emit=ast`.
#include "frontend/format.h"

#include <string>
#include <type_traits>
#include <vector>

namespace spmd {
namespace {

using namespace ast;

// ------------------------------------------------------------- expressions

// Precedence levels, lowest first; must agree with grammar/Spmd.g4.
enum Prec : int {
  kOr = 1,
  kAnd,
  kNot,
  kCmp,
  kAdd,
  kMul,
  kNeg,
  kPow,
  kPostfix,
  kAtom,
};

const char *binary_spelling(BinaryOpKind op) {
  switch (op) {
    case BinaryOpKind::Add:
      return "+";
    case BinaryOpKind::Sub:
      return "-";
    case BinaryOpKind::Mul:
      return "*";
    case BinaryOpKind::Div:
      return "/";
    case BinaryOpKind::FloorDiv:
      return "//";
    case BinaryOpKind::Mod:
      return "%";
    case BinaryOpKind::Pow:
      return "**";
    case BinaryOpKind::MatMul:
      return "@";
    case BinaryOpKind::Lt:
      return "<";
    case BinaryOpKind::Le:
      return "<=";
    case BinaryOpKind::Gt:
      return ">";
    case BinaryOpKind::Ge:
      return ">=";
    case BinaryOpKind::Eq:
      return "==";
    case BinaryOpKind::Ne:
      return "!=";
    case BinaryOpKind::And:
      return "and";
    case BinaryOpKind::Or:
      return "or";
  }
  return "?";
}

int binary_prec(BinaryOpKind op) {
  switch (op) {
    case BinaryOpKind::Or:
      return kOr;
    case BinaryOpKind::And:
      return kAnd;
    case BinaryOpKind::Lt:
    case BinaryOpKind::Le:
    case BinaryOpKind::Gt:
    case BinaryOpKind::Ge:
    case BinaryOpKind::Eq:
    case BinaryOpKind::Ne:
      return kCmp;
    case BinaryOpKind::Add:
    case BinaryOpKind::Sub:
      return kAdd;
    case BinaryOpKind::Mul:
    case BinaryOpKind::Div:
    case BinaryOpKind::FloorDiv:
    case BinaryOpKind::Mod:
    case BinaryOpKind::MatMul:
      return kMul;
    case BinaryOpKind::Pow:
      return kPow;
  }
  return kAtom;
}

int prec_of(const Expr &e) {
  if (auto *b = std::get_if<BinaryExpr>(&e.node)) return binary_prec(b->op);
  if (auto *u = std::get_if<UnaryExpr>(&e.node)) return u->op == UnaryOpKind::Neg ? kNeg : kNot;
  if (std::holds_alternative<IndexExpr>(e.node) || std::holds_alternative<MemberExpr>(e.node))
    return kPostfix;
  if (auto *c = std::get_if<CallExpr>(&e.node); c && c->receiver) return kPostfix;
  return kAtom;
}

std::string quote_string(const std::string &value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void print_expr(std::string &out, const Expr *e, int min_prec);

void print_list(std::string &out, const std::vector<ExprPtr> &elements) {
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i > 0) out += ", ";
    print_expr(out, elements[i].get(), 0);
  }
}

void print_subscript(std::string &out, const Subscript &s) {
  if (s.is_new_axis) {
    out += "None";
    return;
  }
  if (!s.is_slice) {
    print_expr(out, s.index.get(), 0);
    return;
  }
  if (s.start) print_expr(out, s.start.get(), 0);
  out += ':';
  if (s.stop) print_expr(out, s.stop.get(), 0);
  if (s.step) {
    out += ':';
    print_expr(out, s.step.get(), 0);
  }
}

struct ExprPrinter {
  std::string &out;
  void operator()(const NameExpr &n) { out += n.name; }
  void operator()(const IntLit &i) { out += std::to_string(i.value); }
  void operator()(const FloatLit &f) { out += f.spelling; }
  void operator()(const BoolLit &b) { out += b.value ? "true" : "false"; }
  void operator()(const StringLit &s) { out += quote_string(s.value); }
  void operator()(const NoneLit &) { out += "None"; }
  void operator()(const UnaryExpr &u) {
    if (u.op == UnaryOpKind::Not) {
      out += "not ";
      print_expr(out, u.operand.get(), kNot);
      return;
    }
    // `- -x` rather than `-(-x)`: parentheses would count towards the nesting
    // limit, and a long chain of negations must still re-parse once formatted.
    bool nested_neg = u.operand && std::holds_alternative<UnaryExpr>(u.operand->node) &&
                      std::get<UnaryExpr>(u.operand->node).op == UnaryOpKind::Neg;
    out += nested_neg ? "- " : "-";
    print_expr(out, u.operand.get(), kNeg);
  }
  void operator()(const BinaryExpr &b) {
    int p = binary_prec(b.op);
    int lhs_min = p, rhs_min = p + 1;  // left-associative
    if (p == kCmp) lhs_min = p + 1;    // non-associative
    if (b.op == BinaryOpKind::Pow) {   // right-associative; `a ** -b` needs no parentheses
      lhs_min = p + 1;
      rhs_min = p;
      if (b.rhs && std::holds_alternative<UnaryExpr>(b.rhs->node) &&
          std::get<UnaryExpr>(b.rhs->node).op == UnaryOpKind::Neg)
        rhs_min = kNeg;
    }
    print_expr(out, b.lhs.get(), lhs_min);
    out += ' ';
    out += binary_spelling(b.op);
    out += ' ';
    print_expr(out, b.rhs.get(), rhs_min);
  }
  void operator()(const CallExpr &c) {
    if (c.function) {
      print_expr(out, c.function.get(), kPostfix);
    } else {
      if (c.receiver) print_receiver(*c.receiver);
      out += c.callee.name;
    }
    out += '(';
    for (size_t i = 0; i < c.args.size(); ++i) {
      if (i > 0) out += ", ";
      if (!c.args[i].keyword.empty()) out += c.args[i].keyword + "=";
      print_expr(out, c.args[i].value.get(), 0);
    }
    out += ')';
  }
  void operator()(const IndexExpr &x) {
    print_expr(out, x.base.get(), kPostfix);
    out += '[';
    for (size_t i = 0; i < x.subscripts.size(); ++i) {
      if (i > 0) out += ", ";
      print_subscript(out, x.subscripts[i]);
    }
    out += ']';
  }
  void operator()(const MemberExpr &m) {
    print_receiver(*m.base);
    out += m.member.name;
  }
  /// `e.` before a member or method: a number is parenthesized, since `2.astype`
  /// would read back as the float `2.` followed by a name.
  void print_receiver(const Expr &e) {
    const bool number =
        std::holds_alternative<IntLit>(e.node) || std::holds_alternative<FloatLit>(e.node);
    if (number) out += '(';
    print_expr(out, &e, kPostfix);
    out += number ? ")." : ".";
  }
  void operator()(const TupleExpr &t) {
    out += '(';
    print_list(out, t.elements);
    if (t.elements.size() == 1) out += ',';
    out += ')';
  }
  void operator()(const ListExpr &l) {
    out += '[';
    print_list(out, l.elements);
    out += ']';
  }
};

void print_expr(std::string &out, const Expr *e, int min_prec) {
  if (e == nullptr) {
    out += "<missing>";
    return;
  }
  bool parens = prec_of(*e) < min_prec;
  if (parens) out += '(';
  std::visit(ExprPrinter{out}, e->node);
  if (parens) out += ')';
}

// ------------------------------------------------------- types, specs, decls

std::string join_idents(const std::vector<Ident> &ids, const char *sep) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += sep;
    out += ids[i].name;
  }
  return out;
}

/// `std.nn` or `"grads/loss_grad.spmd"`.
std::string import_target(const ImportDecl &imp) {
  return imp.file ? quote_string(*imp.file) : join_idents(imp.path, ".");
}

const char *func_keyword(FuncKind kind) {
  switch (kind) {
    case FuncKind::Def:
      return "def";
    case FuncKind::Shmap:
      return "shmap";
    case FuncKind::Sharded:
      return "sharded";
  }
  return "def";
}

std::string format_spec(const SpecExpr &spec) {
  if (spec.is_auto) return "auto";
  if (spec.like) return "like(" + spec.like->name + ")";
  std::string out = "P(";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    if (i > 0) out += ", ";
    const auto &axes = spec.dims[i].axes;
    if (axes.empty())
      out += "None";
    else if (axes.size() == 1)
      out += axes[0].name;
    else
      out += "(" + join_idents(axes, ", ") + ")";
  }
  return out + ")";
}

std::string format_result(const Result &r) {
  std::string out = r.name ? r.name->name + ": " + format_type(r.type) : format_type(r.type);
  if (r.spec) out += " @ " + format_spec(*r.spec);
  return out;
}

class ModulePrinter {
 public:
  std::string print(const Module &m) {
    for (size_t i = 0; i < m.decls.size(); ++i) {
      if (i > 0 && !same_group(m.decls[i - 1], m.decls[i])) out_ += '\n';
      print_decl(m.decls[i]);
    }
    if (!m.trailing_comments.empty() && !m.decls.empty()) out_ += '\n';
    for (const std::string &c : m.trailing_comments) out_ += "#" + c + "\n";
    return std::move(out_);
  }

 private:
  static bool same_group(const Decl &a, const Decl &b) {
    if (!b.leading_comments.empty()) return false;
    return a.node.index() == b.node.index() && !std::holds_alternative<FuncDecl>(a.node);
  }

  void line(int indent, const std::string &text) {
    out_.append(size_t(indent) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  void comments(int indent, const std::vector<std::string> &leading) {
    for (const std::string &c : leading) line(indent, "#" + c);
  }

  /// Appends ` #comment` to the line just printed.
  /// (An empty trailing_comment means none, so a bare trailing `#` is dropped.)
  void trailing(const std::string &comment) {
    if (comment.empty()) return;
    out_.pop_back();  // '\n'
    out_ += "  #" + comment + "\n";
  }

  void print_decl(const Decl &d) {
    comments(0, d.leading_comments);
    if (auto *imp = std::get_if<ImportDecl>(&d.node)) {
      line(0, "import " + import_target(*imp));
    } else if (auto *mesh = std::get_if<MeshDecl>(&d.node)) {
      std::string text = "mesh " + mesh->name.name + " = (";
      for (size_t i = 0; i < mesh->axes.size(); ++i) {
        if (i > 0) text += ", ";
        text += mesh->axes[i].name.name + ": " + std::to_string(mesh->axes[i].size);
      }
      line(0, text + ")");
    } else if (auto *f = std::get_if<FuncDecl>(&d.node)) {
      print_func(*f);
    }
    trailing(d.trailing_comment);
  }

  /// Signatures longer than this wrap: parameters continue under the first
  /// one, and `-> ...` moves to its own line when it does not fit.
  static constexpr size_t kMaxLine = 100;

  void print_func(const FuncDecl &f) {
    if (!f.attributes.empty()) line(0, "[[" + join_idents(f.attributes, ", ") + "]]");
    std::string prefix = std::string(func_keyword(f.kind)) + " " + f.name.name;
    if (!f.type_params.empty()) prefix += "[" + join_idents(f.type_params, ", ") + "]";
    prefix += "(";
    std::vector<std::string> params;
    for (const Param &p : f.params)
      params.push_back(p.name.name + ": " + format_type(p.type) +
                       (p.spec ? " @ " + format_spec(*p.spec) : ""));
    std::string tail;
    if (!f.results.empty()) {
      tail += " -> ";
      bool parens = f.results_parenthesized || f.results.size() != 1;
      if (parens) tail += "(";
      for (size_t i = 0; i < f.results.size(); ++i) {
        if (i > 0) tail += ", ";
        tail += format_result(f.results[i]);
      }
      if (parens) tail += ")";
    }
    if (f.mesh) tail += " on " + f.mesh->name;
    tail += " {";
    std::string one_line = prefix;
    for (size_t i = 0; i < params.size(); ++i) one_line += (i ? ", " : "") + params[i];
    one_line += ")" + tail;
    if (one_line.size() <= kMaxLine) {
      print_block(0, one_line, f.body);
      return;
    }
    std::vector<std::string> lines;
    std::string current = prefix;
    const std::string align(prefix.size(), ' ');
    for (size_t i = 0; i < params.size(); ++i) {
      std::string piece = params[i] + (i + 1 < params.size() ? "," : ")");
      if (current.size() > prefix.size() && current.size() + 1 + piece.size() > kMaxLine) {
        lines.push_back(current);
        current = align + piece;
      } else {
        current += (current.size() > prefix.size() ? " " : "") + piece;
      }
    }
    if (params.empty()) current += ")";
    if (current.size() + tail.size() > kMaxLine) {
      lines.push_back(current);
      current = "    " + tail.substr(1);
    } else {
      current += tail;
    }
    for (const std::string &l : lines) line(0, l);
    print_block(0, current, f.body);
  }

  /// `head {` + body + `}`, or `head {}` when the body is empty (head ends with `{`).
  void print_block(int indent, const std::string &head, const Block &body) {
    if (body.empty()) {
      line(indent, head + "}");
      return;
    }
    line(indent, head);
    print_body(indent + 1, body);
    line(indent, "}");
  }

  void print_body(int indent, const Block &body) {
    for (const StmtPtr &s : body) {
      if (s) print_stmt(indent, *s);
    }
  }

  /// `else if` is printed for an else branch that is a lone `if`, when no
  /// comment is attached to it or to the outer `if`'s end (a comment there
  /// would re-attach elsewhere and break idempotence).
  static const Stmt *else_if(const IfStmt &s, bool outer_has_trailing) {
    if (outer_has_trailing || s.else_body.size() != 1 || !s.else_body[0]) return nullptr;
    const Stmt &only = *s.else_body[0];
    if (!std::holds_alternative<IfStmt>(only.node) || !only.leading_comments.empty() ||
        !only.trailing_comment.empty())
      return nullptr;
    return &only;
  }

  void print_if(int indent, const std::string &prefix, const IfStmt &s, bool has_trailing) {
    // `pending` is the last line, still open so that ` else ...` can follow it.
    std::string pending = prefix + "if " + format_expr_or_missing(s.cond) + " {";
    if (s.then_body.empty()) {
      pending += "}";
    } else {
      line(indent, pending);
      print_body(indent + 1, s.then_body);
      pending = "}";
    }
    if (!s.has_else) {
      line(indent, pending);
      return;
    }
    if (const Stmt *nested = else_if(s, has_trailing)) {
      print_if(indent, pending + " else ", std::get<IfStmt>(nested->node), false);
      return;
    }
    print_block(indent, pending + " else {", s.else_body);
  }

  static std::string format_expr_or_missing(const ExprPtr &e) {
    return e ? format_expr(*e) : std::string("<missing>");
  }

  void print_stmt(int indent, const Stmt &s) {
    comments(indent, s.leading_comments);
    if (auto *a = std::get_if<AssignStmt>(&s.node)) {
      std::string text;
      for (size_t i = 0; i < a->targets.size(); ++i) {
        if (i > 0) text += ", ";
        text += a->targets[i].name.name;
        if (a->targets[i].annotation) text += ": " + format_type(*a->targets[i].annotation);
      }
      line(indent, text + " = " + format_expr_or_missing(a->value));
    } else if (auto *r = std::get_if<ReturnStmt>(&s.node)) {
      std::string text = "return";
      for (size_t i = 0; i < r->values.size(); ++i) {
        text += i > 0 ? ", " : " ";
        text += format_expr_or_missing(r->values[i]);
      }
      line(indent, text);
    } else if (auto *f = std::get_if<ForStmt>(&s.node)) {
      if (!f->attributes.empty()) line(indent, "[[" + join_idents(f->attributes, ", ") + "]]");
      std::string head = "for " + f->var.name + " in range(";
      if (f->start) head += format_expr(*f->start) + ", ";
      head += format_expr_or_missing(f->stop);
      if (f->step) head += ", " + format_expr(*f->step);
      head += ") {";
      print_block(indent, head, f->body);
    } else if (auto *i = std::get_if<IfStmt>(&s.node)) {
      print_if(indent, "", *i, !s.trailing_comment.empty());
    } else if (auto *c = std::get_if<CallStmt>(&s.node)) {
      line(indent, format_expr_or_missing(c->call));
    }
    trailing(s.trailing_comment);
  }

  std::string out_;
};

// ------------------------------------------------------------------ AST dump

class AstDumper {
 public:
  explicit AstDumper(const SourceManager &sources) : sources_(sources) {}

  std::string dump(const Module &m) {
    node(0, "Module", {});
    for (const Decl &d : m.decls) decl(1, d);
    for (const std::string &c : m.trailing_comments) node(1, "Comment #" + c, {});
    return std::move(out_);
  }

 private:
  void node(int depth, const std::string &text, SourceSpan span) {
    out_.append(size_t(depth) * 2, ' ');
    out_ += text;
    SourceLocation loc = sources_.location(span);
    if (loc.line > 0)
      out_ += " <" + std::to_string(loc.line) + ":" + std::to_string(loc.column) + ">";
    out_ += '\n';
  }

  void comments(int depth, const std::vector<std::string> &leading, const std::string &trailing) {
    for (const std::string &c : leading) node(depth, "Comment #" + c, {});
    if (!trailing.empty()) node(depth, "TrailingComment #" + trailing, {});
  }

  void decl(int depth, const Decl &d) {
    comments(depth, d.leading_comments, d.trailing_comment);
    if (auto *imp = std::get_if<ImportDecl>(&d.node)) {
      node(depth, "ImportDecl " + import_target(*imp), d.span);
    } else if (auto *mesh = std::get_if<MeshDecl>(&d.node)) {
      node(depth, "MeshDecl " + mesh->name.name, d.span);
      for (const MeshAxisDecl &a : mesh->axes)
        node(depth + 1, "Axis " + a.name.name + " = " + std::to_string(a.size), a.name.span);
    } else if (auto *f = std::get_if<FuncDecl>(&d.node)) {
      std::string head = "FuncDecl " + std::string(func_keyword(f->kind)) + " ";
      head += f->name.name;
      if (f->mesh) head += " on " + f->mesh->name;
      node(depth, head, d.span);
      for (const Ident &a : f->attributes) node(depth + 1, "Attribute " + a.name, a.span);
      for (const Ident &t : f->type_params) node(depth + 1, "TypeParam " + t.name, t.span);
      for (const Param &p : f->params) {
        std::string text = "Param " + p.name.name + ": " + format_type(p.type);
        if (p.spec) text += " @ " + format_spec(*p.spec);
        node(depth + 1, text, p.span);
      }
      for (const Result &r : f->results) node(depth + 1, "Result " + format_result(r), r.span);
      block(depth + 1, f->body);
    }
  }

  void block(int depth, const Block &b) {
    for (const StmtPtr &s : b) {
      if (s) stmt(depth, *s);
    }
  }

  void stmt(int depth, const Stmt &s) {
    comments(depth, s.leading_comments, s.trailing_comment);
    if (auto *a = std::get_if<AssignStmt>(&s.node)) {
      std::string text = "Assign";
      for (size_t i = 0; i < a->targets.size(); ++i) {
        text += i > 0 ? ", " : " ";
        text += a->targets[i].name.name;
        if (a->targets[i].annotation) text += ": " + format_type(*a->targets[i].annotation);
      }
      node(depth, text, s.span);
      expr(depth + 1, a->value.get());
    } else if (auto *r = std::get_if<ReturnStmt>(&s.node)) {
      node(depth, "Return", s.span);
      for (const ExprPtr &v : r->values) expr(depth + 1, v.get());
    } else if (auto *f = std::get_if<ForStmt>(&s.node)) {
      node(depth, "For " + f->var.name, s.span);
      for (const Ident &a : f->attributes) node(depth + 1, "Attribute " + a.name, a.span);
      if (f->start) expr(depth + 1, f->start.get());
      expr(depth + 1, f->stop.get());
      if (f->step) expr(depth + 1, f->step.get());
      node(depth + 1, "Body", {});
      block(depth + 2, f->body);
    } else if (auto *i = std::get_if<IfStmt>(&s.node)) {
      node(depth, "If", s.span);
      expr(depth + 1, i->cond.get());
      node(depth + 1, "Then", {});
      block(depth + 2, i->then_body);
      if (i->has_else) {
        node(depth + 1, "Else", {});
        block(depth + 2, i->else_body);
      }
    } else if (auto *c = std::get_if<CallStmt>(&s.node)) {
      node(depth, "CallStmt", s.span);
      expr(depth + 1, c->call.get());
    }
  }

  void expr(int depth, const Expr *e) {
    if (e == nullptr) {
      node(depth, "<missing>", {});
      return;
    }
    std::string paren = e->parenthesized ? " (parenthesized)" : "";
    std::visit(
        [&](const auto &n) {
          using T = std::decay_t<decltype(n)>;
          if constexpr (std::is_same_v<T, NameExpr>) {
            node(depth, "Name " + n.name + paren, e->span);
          } else if constexpr (std::is_same_v<T, IntLit>) {
            node(depth, "Int " + std::to_string(n.value) + paren, e->span);
          } else if constexpr (std::is_same_v<T, FloatLit>) {
            node(depth, "Float " + n.spelling + paren, e->span);
          } else if constexpr (std::is_same_v<T, BoolLit>) {
            node(depth, std::string("Bool ") + (n.value ? "true" : "false") + paren, e->span);
          } else if constexpr (std::is_same_v<T, StringLit>) {
            node(depth, "String " + quote_string(n.value) + paren, e->span);
          } else if constexpr (std::is_same_v<T, NoneLit>) {
            node(depth, "None" + paren, e->span);
          } else if constexpr (std::is_same_v<T, UnaryExpr>) {
            node(depth, std::string("Unary ") + (n.op == UnaryOpKind::Neg ? "-" : "not") + paren,
                 e->span);
            expr(depth + 1, n.operand.get());
          } else if constexpr (std::is_same_v<T, BinaryExpr>) {
            node(depth, std::string("Binary ") + binary_spelling(n.op) + paren, e->span);
            expr(depth + 1, n.lhs.get());
            expr(depth + 1, n.rhs.get());
          } else if constexpr (std::is_same_v<T, CallExpr>) {
            node(depth, std::string(n.receiver ? "Method " : "Call ") + n.callee.name + paren,
                 e->span);
            if (n.receiver) expr(depth + 1, n.receiver.get());
            if (n.function) expr(depth + 1, n.function.get());
            for (const Argument &a : n.args) {
              if (a.keyword.empty()) {
                expr(depth + 1, a.value.get());
              } else {
                node(depth + 1, "Keyword " + a.keyword, a.span);
                expr(depth + 2, a.value.get());
              }
            }
          } else if constexpr (std::is_same_v<T, IndexExpr>) {
            node(depth, "Index" + paren, e->span);
            expr(depth + 1, n.base.get());
            for (const Subscript &s : n.subscripts) {
              if (s.is_new_axis) {
                node(depth + 1, "NewAxis", s.span);
                continue;
              }
              if (!s.is_slice) {
                expr(depth + 1, s.index.get());
                continue;
              }
              node(depth + 1, "Slice", s.span);
              for (const auto *part : {&s.start, &s.stop, &s.step}) {
                if (*part)
                  expr(depth + 2, part->get());
                else
                  node(depth + 2, "<omitted>", {});
              }
            }
          } else if constexpr (std::is_same_v<T, MemberExpr>) {
            node(depth, "Member ." + n.member.name + paren, e->span);
            expr(depth + 1, n.base.get());
          } else if constexpr (std::is_same_v<T, TupleExpr>) {
            node(depth, "Tuple" + paren, e->span);
            for (const ExprPtr &x : n.elements) expr(depth + 1, x.get());
          } else if constexpr (std::is_same_v<T, ListExpr>) {
            node(depth, "List" + paren, e->span);
            for (const ExprPtr &x : n.elements) expr(depth + 1, x.get());
          }
        },
        e->node);
  }

  const SourceManager &sources_;
  std::string out_;
};

}  // namespace

std::string format_expr(const Expr &expr) {
  std::string out;
  print_expr(out, &expr, 0);
  return out;
}

std::string format_type(const TypeExpr &type) {
  std::string out = type.dtype.name + "[";
  for (size_t i = 0; i < type.dims.size(); ++i) {
    if (i > 0) out += ", ";
    const auto &v = type.dims[i].value;
    out += std::holds_alternative<int64_t>(v) ? std::to_string(std::get<int64_t>(v))
                                              : std::get<std::string>(v);
  }
  out += "]";
  if (type.variance) out += "{" + join_idents(*type.variance, ", ") + "}";
  return out;
}

std::string format_module(const Module &module) { return ModulePrinter().print(module); }

std::string dump_ast(const Module &module, const SourceManager &sources) {
  return AstDumper(sources).dump(module);
}

}  // namespace spmd

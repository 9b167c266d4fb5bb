// tests/fuzz/parser_diff.cpp — the hand-written parser against the ANTLR path.
//
// spmdc parses with a hand-written recursive-descent parser
// (compiler/frontend/fast_parser.cpp) and falls back to the ANTLR-generated
// parser of grammar/Spmd.g4 plus the parse-tree walk (build_ast), the
// reference, on anything it does not take on. For every input:
//   * if the hand-written parser accepts it, the ANTLR path must report
//     nothing and build the same AST — every node, field, span and flag — and
//     the same comments (text, offsets, whether they follow code);
//   * if the ANTLR path reports nothing, the hand-written parser must accept
//     it (so correct programs never pay for ANTLR).
// Inputs: every .spmd file under samples/, stdlib/, tests/ and exercises/;
// then --count generated inputs from --seed: programs of the random program
// generator (tests/support/program_generator.h, all flavors), random programs
// drawn from the grammar itself (every rule, optional `;`, trailing commas,
// comments and line breaks anywhere, the ambiguous corners: `return` before
// an assignment, `[[` after an expression, `x[None]`, `else if ... ;`,
// prefix operators inside binary ones, chained comparisons), and corpus files
// and grammar programs mutated (tokens inserted, deleted, swapped; bytes
// flipped). A mismatch prints the input and both dumps; replay with --file.
//
// Usage: parser_diff [--count N] [--seed S] [--file PATH]
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "diff_driver.h"
#include "frontend/ast_builder.h"
#include "frontend/fast_parser.h"
#include "program_generator.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace {

using spmd::fuzz::corpus_files;
using spmd::fuzz::escaped;
using spmd::fuzz::read_file;

namespace fs = std::filesystem;
using spmd::frontend_detail::CommentToken;
using spmd::frontend_detail::RawParse;
namespace ast = spmd::ast;

// ------------------------------------------------------------------ AST dump

/// Every field of the AST, one node per line, spans as byte offsets.
class Dumper {
 public:
  std::string dump(const RawParse &raw) {
    line(0, "Module file=" + std::to_string(raw.module.file));
    for (const ast::Decl &d : raw.module.decls) decl(1, d);
    for (const std::string &c : raw.module.trailing_comments) line(1, "TrailingComment " + c);
    for (const CommentToken &c : raw.comments)
      line(0, "Comment [" + std::to_string(c.begin) + "," + std::to_string(c.end) + ") " +
                  (c.follows_code ? "after code ending " + std::to_string(c.previous_code_end)
                                  : "alone") +
                  " #" + c.text);
    return out_;
  }

 private:
  static std::string at(spmd::SourceSpan s) {
    return " @" + std::to_string(s.file) + ":" + std::to_string(s.begin) + "-" +
           std::to_string(s.end);
  }
  void line(int depth, const std::string &text) {
    out_.append(size_t(depth) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }
  void ident(int depth, const char *what, const ast::Ident &i) {
    line(depth, std::string(what) + " " + i.name + at(i.span));
  }
  void comments(int depth, const std::vector<std::string> &leading, const std::string &trailing) {
    for (const std::string &c : leading) line(depth, "LeadingComment " + c);
    if (!trailing.empty()) line(depth, "TrailingComment " + trailing);
  }

  void decl(int depth, const ast::Decl &d) {
    line(depth, "Decl" + at(d.span));
    comments(depth + 1, d.leading_comments, d.trailing_comment);
    if (const auto *i = std::get_if<ast::ImportDecl>(&d.node)) {
      line(depth + 1, "Import");
      for (const ast::Ident &p : i->path) ident(depth + 2, "Path", p);
      if (i->file) line(depth + 2, "File " + *i->file + at(i->file_span));
    } else if (const auto *m = std::get_if<ast::MeshDecl>(&d.node)) {
      ident(depth + 1, "Mesh", m->name);
      for (const ast::MeshAxisDecl &a : m->axes) {
        ident(depth + 2, "Axis", a.name);
        line(depth + 3, "Size " + std::to_string(a.size) + at(a.size_span));
      }
    } else if (const auto *f = std::get_if<ast::FuncDecl>(&d.node)) {
      line(depth + 1, "Function kind=" + std::to_string(int(f->kind)) +
                          " results_parenthesized=" + std::to_string(f->results_parenthesized));
      ident(depth + 2, "Name", f->name);
      for (const ast::Ident &a : f->attributes) ident(depth + 2, "Attribute", a);
      for (const ast::Ident &t : f->type_params) ident(depth + 2, "TypeParam", t);
      for (const ast::Param &p : f->params) {
        line(depth + 2, "Param" + at(p.span));
        ident(depth + 3, "Name", p.name);
        type(depth + 3, p.type);
        if (p.spec) spec(depth + 3, *p.spec);
      }
      for (const ast::Result &r : f->results) {
        line(depth + 2, "Result" + at(r.span));
        if (r.name) ident(depth + 3, "Name", *r.name);
        type(depth + 3, r.type);
        if (r.spec) spec(depth + 3, *r.spec);
      }
      if (f->mesh) ident(depth + 2, "On", *f->mesh);
      block(depth + 2, f->body);
    }
  }

  void type(int depth, const ast::TypeExpr &t) {
    line(depth, "Type" + at(t.span));
    ident(depth + 1, "DType", t.dtype);
    for (const ast::DimExpr &d : t.dims) {
      if (const auto *n = std::get_if<int64_t>(&d.value))
        line(depth + 1, "Dim " + std::to_string(*n) + at(d.span));
      else
        line(depth + 1, "Dim '" + std::get<std::string>(d.value) + "'" + at(d.span));
    }
    if (t.variance) {
      line(depth + 1, "Variance");
      for (const ast::Ident &a : *t.variance) ident(depth + 2, "Axis", a);
    }
  }

  void spec(int depth, const ast::SpecExpr &s) {
    line(depth, std::string("Spec") + (s.is_auto ? " auto" : "") + at(s.span));
    for (const ast::SpecDim &d : s.dims) {
      line(depth + 1, "SpecDim" + at(d.span));
      for (const ast::Ident &a : d.axes) ident(depth + 2, "Axis", a);
    }
  }

  void block(int depth, const ast::Block &b) {
    line(depth, "Block " + std::to_string(b.size()));
    for (const ast::StmtPtr &s : b) stmt(depth + 1, s.get());
  }

  void stmt(int depth, const ast::Stmt *s) {
    if (s == nullptr) {
      line(depth, "<null statement>");
      return;
    }
    line(depth, "Stmt" + at(s->span));
    comments(depth + 1, s->leading_comments, s->trailing_comment);
    if (const auto *a = std::get_if<ast::AssignStmt>(&s->node)) {
      line(depth + 1, "Assign");
      for (const ast::AssignTarget &t : a->targets) {
        ident(depth + 2, "Target", t.name);
        if (t.annotation) type(depth + 3, *t.annotation);
      }
      expr(depth + 2, a->value.get());
    } else if (const auto *r = std::get_if<ast::ReturnStmt>(&s->node)) {
      line(depth + 1, "Return " + std::to_string(r->values.size()));
      for (const ast::ExprPtr &v : r->values) expr(depth + 2, v.get());
    } else if (const auto *f = std::get_if<ast::ForStmt>(&s->node)) {
      line(depth + 1, "For");
      for (const ast::Ident &a : f->attributes) ident(depth + 2, "Attribute", a);
      ident(depth + 2, "Var", f->var);
      for (const ast::ExprPtr *e : {&f->start, &f->stop, &f->step}) expr(depth + 2, e->get());
      block(depth + 2, f->body);
    } else if (const auto *i = std::get_if<ast::IfStmt>(&s->node)) {
      line(depth + 1, "If has_else=" + std::to_string(i->has_else));
      expr(depth + 2, i->cond.get());
      block(depth + 2, i->then_body);
      block(depth + 2, i->else_body);
    } else if (const auto *c = std::get_if<ast::CallStmt>(&s->node)) {
      line(depth + 1, "CallStmt");
      expr(depth + 2, c->call.get());
    }
  }

  void expr(int depth, const ast::Expr *e) {
    if (e == nullptr) {
      line(depth, "<null>");
      return;
    }
    const std::string tail = (e->parenthesized ? " (parenthesized)" : "") + at(e->span);
    std::visit(
        [&](const auto &n) {
          using T = std::decay_t<decltype(n)>;
          if constexpr (std::is_same_v<T, ast::NameExpr>) {
            line(depth, "Name " + n.name + tail);
          } else if constexpr (std::is_same_v<T, ast::IntLit>) {
            line(depth, "Int " + std::to_string(n.value) + tail);
          } else if constexpr (std::is_same_v<T, ast::FloatLit>) {
            std::ostringstream v;
            v.precision(17);
            v << n.value;
            line(depth, "Float " + v.str() + " '" + n.spelling + "'" + tail);
          } else if constexpr (std::is_same_v<T, ast::BoolLit>) {
            line(depth, std::string("Bool ") + (n.value ? "true" : "false") + tail);
          } else if constexpr (std::is_same_v<T, ast::StringLit>) {
            line(depth, "String '" + n.value + "'" + tail);
          } else if constexpr (std::is_same_v<T, ast::NoneLit>) {
            line(depth, "None" + tail);
          } else if constexpr (std::is_same_v<T, ast::UnaryExpr>) {
            line(depth, "Unary " + std::to_string(int(n.op)) + tail);
            expr(depth + 1, n.operand.get());
          } else if constexpr (std::is_same_v<T, ast::BinaryExpr>) {
            line(depth, "Binary " + std::to_string(int(n.op)) + tail);
            expr(depth + 1, n.lhs.get());
            expr(depth + 1, n.rhs.get());
          } else if constexpr (std::is_same_v<T, ast::CallExpr>) {
            line(depth, "Call" + tail);
            ident(depth + 1, "Callee", n.callee);
            line(depth + 1, "Receiver");
            expr(depth + 2, n.receiver.get());
            line(depth + 1, "Function");
            expr(depth + 2, n.function.get());
            for (const ast::Argument &a : n.args) {
              line(depth + 1, "Argument '" + a.keyword + "'" + at(a.span));
              expr(depth + 2, a.value.get());
            }
          } else if constexpr (std::is_same_v<T, ast::IndexExpr>) {
            line(depth, "Index" + tail);
            expr(depth + 1, n.base.get());
            for (const ast::Subscript &s : n.subscripts) {
              line(depth + 1, "Subscript new_axis=" + std::to_string(s.is_new_axis) +
                                  " slice=" + std::to_string(s.is_slice) + at(s.span));
              for (const ast::ExprPtr *p : {&s.index, &s.start, &s.stop, &s.step})
                expr(depth + 2, p->get());
            }
          } else if constexpr (std::is_same_v<T, ast::MemberExpr>) {
            line(depth, "Member" + tail);
            ident(depth + 1, "Member", n.member);
            expr(depth + 1, n.base.get());
          } else if constexpr (std::is_same_v<T, ast::TupleExpr>) {
            line(depth, "Tuple " + std::to_string(n.elements.size()) + tail);
            for (const ast::ExprPtr &x : n.elements) expr(depth + 1, x.get());
          } else if constexpr (std::is_same_v<T, ast::ListExpr>) {
            line(depth, "List " + std::to_string(n.elements.size()) + tail);
            for (const ast::ExprPtr &x : n.elements) expr(depth + 1, x.get());
          }
        },
        e->node);
  }

  std::string out_;
};

/// The first line where two dumps differ, with a little context.
std::string first_difference(const std::string &a, const std::string &b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int n = 1;; ++n) {
    bool ga = bool(std::getline(sa, la)), gb = bool(std::getline(sb, lb));
    if (!ga && !gb) return "(none)";
    if (!ga || !gb || la != lb)
      return "line " + std::to_string(n) + ":\n    ANTLR path:   " + (ga ? la : "(end)") +
             "\n    hand-written: " + (gb ? lb : "(end)");
  }
}

struct Tally {
  size_t inputs = 0, accepted = 0, rejected = 0;
};

/// Checks one input (see the file comment); prints the problem and returns false on a mismatch.
bool agree(const std::string &input, const std::string &what, Tally &tally) {
  ++tally.inputs;
  spmd::SourceManager sources;
  spmd::FileId id = sources.add(what, input);
  const spmd::SourceFile &file = sources.file(id);
  std::optional<RawParse> fast = spmd::frontend_detail::parse_fast(file, id);
  spmd::DiagnosticEngine diags;
  RawParse reference = spmd::frontend_detail::build_ast(file, id, diags);
  const bool clean = diags.all().empty();
  if (fast && !clean) {
    std::cerr << "parser_diff: the hand-written parser accepted " << what
              << ", on which the ANTLR path reports `" << diags.all().front().message << "` ["
              << diags.all().front().code << "]\n  input: " << escaped(input) << "\n";
    return false;
  }
  if (!fast && clean) {
    std::cerr << "parser_diff: the hand-written parser gave up on " << what
              << ", which the ANTLR path accepts\n  input: " << escaped(input) << "\n";
    return false;
  }
  if (!fast) {
    ++tally.rejected;
    return true;
  }
  ++tally.accepted;
  std::string want = Dumper().dump(reference), got = Dumper().dump(*fast);
  if (want != got) {
    std::cerr << "parser_diff: the ASTs differ on " << what << " at " << first_difference(want, got)
              << "\n  input: " << escaped(input) << "\n--- ANTLR path\n"
              << want << "--- hand-written\n"
              << got;
    return false;
  }
  return true;
}

// ------------------------------------------------------- programs from the grammar

/// Random programs drawn from Spmd.g4's rules, as token lists; mostly correct
/// (the AST builder's rules respected), sometimes not (chained comparisons,
/// `[[` after an expression), which is a check of the giving-up too.
class GrammarProgram {
 public:
  explicit GrammarProgram(std::mt19937_64 &rng) : rng_(rng) {}

  std::vector<std::string> module() {
    size_t n = below(4);
    for (size_t i = 0; i < n; ++i) declaration();
    return std::move(tokens_);
  }

 private:
  size_t below(size_t n) { return n == 0 ? 0 : size_t(rng_() % n); }
  bool one_in(size_t n) { return below(n) == 0; }
  void emit(std::string t) { tokens_.push_back(std::move(t)); }
  void name() {
    static const char *kNames[] = {"x",   "y",  "w",    "i",    "j",    "P",   "auto",  "T",
                                   "f32", "nn", "relu", "psum", "grad", "_a1", "Nonex", "returns"};
    emit(kNames[below(std::size(kNames))]);
  }
  void maybe_semi() {
    if (one_in(4)) emit(";");
  }
  /// `item (, item)* ,?` between `open` and `close`.
  template <typename Item>
  void list(const char *open, const char *close, size_t min, size_t max, Item &&item) {
    emit(open);
    size_t n = min + below(max - min + 1);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) emit(",");
      item();
    }
    if (n > 0 && one_in(4)) emit(",");
    emit(close);
  }

  void declaration() {
    switch (below(6)) {
      case 0:
        emit("import");
        if (one_in(3)) {
          emit("\"lib/f.spmd\"");
        } else {
          name();
          for (size_t k = below(3); k > 0; --k) {
            emit(".");
            name();
          }
        }
        maybe_semi();
        break;
      case 1:
        emit("mesh");
        name();
        emit("=");
        list("(", ")", 0, 3, [&] {
          name();
          emit(":");
          emit(std::to_string(below(9)));
        });
        maybe_semi();
        break;
      default:
        function();
    }
  }

  void attributes() {
    emit("[");
    list("[", "]", 1, 2, [&] { name(); });
    emit("]");
  }

  void type(bool variance) {
    name();
    list("[", "]", 0, 3, [&] {
      switch (below(3)) {
        case 0:
          emit(std::to_string(below(100)));
          break;
        case 1:
          name();
          break;
        default:
          emit("...");
      }
    });
    if (variance && one_in(3)) list("{", "}", 0, 2, [&] { name(); });
  }

  void spec(int kind) {
    if (kind == 2 && one_in(3)) {
      emit("auto");
      return;
    }
    emit("P");
    list("(", ")", 0, 3, [&] {
      switch (below(3)) {
        case 0:
          emit("None");
          break;
        case 1:
          name();
          break;
        default:
          list("(", ")", 1, 2, [&] { name(); });
      }
    });
  }

  void function() {
    for (size_t k = below(3) == 0 ? 1 : 0; k > 0; --k) attributes();
    int kind = int(below(3));  // def, shmap, sharded
    emit(kind == 0 ? "def" : kind == 1 ? "shmap" : "sharded");
    name();
    if (kind == 0 && one_in(3)) list("[", "]", 1, 2, [&] { name(); });
    list("(", ")", 0, 3, [&] {
      name();
      emit(":");
      type(false);
      if (kind != 0) {
        emit("@");
        spec(kind);
      }
    });
    emit("->");
    auto result = [&] {
      if (one_in(3)) {
        name();
        emit(":");
      }
      type(false);
      if (kind != 0) {
        emit("@");
        spec(kind);
      }
    };
    if (one_in(3))
      list("(", ")", 1, 3, result);
    else
      result();
    if (kind != 0) {
      emit("on");
      name();
    }
    block(0);
  }

  void block(int depth) {
    emit("{");
    size_t n = depth > 2 ? below(2) : below(5);
    for (size_t i = 0; i < n; ++i) statement(depth + 1);
    emit("}");
  }

  void statement(int depth) {
    switch (below(depth > 2 ? 2 : 5)) {
      case 0: {  // assignment
        size_t n = 1 + (one_in(4) ? below(3) : 0);
        for (size_t i = 0; i < n; ++i) {
          if (i > 0) emit(",");
          name();
          if (one_in(4)) {
            emit(":");
            type(true);
          }
        }
        emit("=");
        expr(0);
        maybe_semi();
        break;
      }
      case 1:  // return, maybe without values before an assignment
        emit("return");
        if (!one_in(3)) {
          size_t n = 1 + below(2);
          for (size_t i = 0; i < n; ++i) {
            if (i > 0) emit(",");
            expr(0);
          }
        }
        maybe_semi();
        break;
      case 2:
      case 3:
        if (one_in(2)) attributes();
        emit("for");
        name();
        emit("in");
        emit("range");
        emit("(");
        expr(1);
        for (size_t k = below(3); k > 0; --k) {
          emit(",");
          expr(1);
        }
        emit(")");
        block(depth);
        maybe_semi();
        break;
      default:
        if_statement(depth);
    }
  }

  void if_statement(int depth) {
    emit("if");
    expr(1);
    block(depth);
    if (one_in(2)) {
      emit("else");
      if (one_in(2))
        if_statement(depth + 1);
      else
        block(depth);
    }
    maybe_semi();
  }

  void arguments(int depth) {
    list("(", ")", 0, 3, [&] {
      if (one_in(4)) {
        name();
        emit("=");
      }
      expr(depth + 1);
    });
  }

  void expr(int depth) {
    static const char *kBinary[] = {"**", "*",  "/", "//", "%",  "@",  "+",   "-",
                                    "<",  "<=", ">", ">=", "==", "!=", "and", "or"};
    switch (below(depth > 3 ? 2 : 14)) {
      case 0:
        name();
        for (size_t k = one_in(3) ? 1 + below(2) : 0; k > 0; --k) {
          emit(".");
          name();
        }
        break;
      case 1: {
        static const char *kLiterals[] = {"0",  "7",         "12",   "1.5",   ".5",   "1e3",
                                          "2.", "\"s\\\"\"", "true", "false", "None", "1e-400"};
        emit(kLiterals[below(std::size(kLiterals))]);
        break;
      }
      case 2:  // a call
        name();
        arguments(depth);
        break;
      case 3:
      case 4:
        expr(depth + 1);
        emit(kBinary[below(std::size(kBinary))]);
        expr(depth + 1);
        break;
      case 5: {  // a chain of operators over small operands: precedence and associativity
        static const char *kChain[] = {"**", "*", "+", "-", "<", "and", "or", "@", "//"};
        const size_t ops =
            std::size(kChain) - below(3) * 3;  // sometimes only ** * + or ** * + - < and
        for (size_t k = 2 + below(3); k > 0; --k) {
          if (one_in(4)) emit(one_in(2) ? "-" : "not");
          if (one_in(3))
            expr(depth + 2);
          else
            name();
          if (k > 1) emit(kChain[below(ops)]);
        }
        break;
      }
      case 6:
        emit(one_in(2) ? "-" : "not");
        expr(depth + 1);
        break;
      case 7:
        emit("(");
        expr(depth + 1);
        emit(")");
        break;
      case 8:
        list("(", ")", 0, 3, [&] { expr(depth + 1); });
        break;
      case 9:
        list("[", "]", 0, 3, [&] { expr(depth + 1); });
        break;
      case 10:  // an index
        expr(depth + 1);
        list("[", "]", 1, 3, [&] { subscript(depth + 1); });
        break;
      case 11:  // a member, maybe called
        expr(depth + 1);
        emit(".");
        name();
        if (one_in(2)) arguments(depth);
        break;
      case 12:  // a derivative's call called
        name();
        arguments(depth);
        arguments(depth);
        break;
      default:  // a call of something else (an error), or of a parenthesized call
        emit("(");
        expr(depth + 1);
        emit(")");
        arguments(depth);
    }
  }

  void subscript(int depth) {
    switch (below(4)) {
      case 0:
        emit("None");
        break;
      case 1:
        expr(depth);
        break;
      default:
        if (one_in(2)) expr(depth);
        emit(":");
        if (one_in(2)) expr(depth);
        if (one_in(2)) {
          emit(":");
          if (one_in(2)) expr(depth);
        }
    }
  }

  std::mt19937_64 &rng_;
  std::vector<std::string> tokens_;
};

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '"';
}

/// Joins tokens with random separators: a space, a line break, a comment, or
/// nothing where the two tokens cannot run together.
std::string join(const std::vector<std::string> &tokens, std::mt19937_64 &rng) {
  std::string out;
  for (const std::string &t : tokens) {
    if (!out.empty()) {
      const char last = out.back(), first = t.front();
      const bool may_touch = std::string_view("()[]{},;:").find(last) != std::string_view::npos ||
                             std::string_view("()[]{},;:").find(first) != std::string_view::npos;
      switch (rng() % 8) {
        case 0:
          out += "\n";
          break;
        case 1:
          out += "  # note\n  ";
          break;
        case 2:
          if (may_touch && !(is_word_char(last) && is_word_char(first))) break;
          [[fallthrough]];
        default:
          out += " ";
      }
    }
    out += t;
  }
  if (rng() % 4 == 0) out += "  # the end";
  return out + "\n";
}

/// Token-level edits of a token list (inserting, deleting, swapping, duplicating).
std::vector<std::string> mutate_tokens(std::vector<std::string> tokens, std::mt19937_64 &rng) {
  static const char *kPieces[] = {"(", ")",  "[", "]", "[[",  "{",      "}",    ",", ";", ":",
                                  "=", "->", "@", "-", "not", "return", "None", "x", "1", "."};
  size_t edits = 1 + rng() % 3;
  for (size_t e = 0; e < edits; ++e) {
    size_t at = tokens.empty() ? 0 : rng() % (tokens.size() + 1);
    switch (rng() % 4) {
      case 0:
        tokens.insert(tokens.begin() + at, kPieces[rng() % std::size(kPieces)]);
        break;
      case 1:
        if (at < tokens.size()) tokens.erase(tokens.begin() + at);
        break;
      case 2:
        if (at + 1 < tokens.size()) std::swap(tokens[at], tokens[at + 1]);
        break;
      default:
        if (at < tokens.size()) tokens.insert(tokens.begin() + at, tokens[at]);
    }
  }
  return tokens;
}

/// A corpus file with a few bytes edited.
std::string mutate_bytes(std::string text, std::mt19937_64 &rng) {
  static const char *kPieces[] = {"(", ")", "[[", "]",  "{",     "}",       ",",
                                  ";", ":", "=",  "-",  "not ",  "return ", "None",
                                  "x", "1", ".",  "\n", "# c\n", "1e999"};
  size_t edits = 1 + rng() % 3;
  for (size_t e = 0; e < edits && !text.empty(); ++e) {
    size_t at = rng() % text.size();
    switch (rng() % 3) {
      case 0:
        text.insert(at, kPieces[rng() % std::size(kPieces)]);
        break;
      case 1:
        text.erase(at, 1 + rng() % 4);
        break;
      default:
        text[at] = "()[]{},;:=x1 \n-"[rng() % 16];
    }
  }
  return text;
}

}  // namespace

int main(int argc, char **argv) {
  spmd::fuzz::DiffArgs args;
  args.count = 2000;
  if (auto stop = spmd::fuzz::parse_diff_args(argc, argv, "parser_diff", args)) return *stop;
  const size_t count = args.count;
  const uint64_t seed = args.seed;
  const std::string &file = args.file;
  Tally tally;
  if (!file.empty()) {
    bool ok = agree(read_file(file), file, tally);
    std::cout << "parser_diff: " << file << (ok ? " agrees" : " differs")
              << (tally.accepted ? " (parsed by hand)\n" : " (left to ANTLR)\n");
    return ok ? 0 : 1;
  }
  std::vector<std::string> corpus;
  for (const std::string &path : corpus_files()) {
    corpus.push_back(read_file(path));
    if (!agree(corpus.back(), path, tally)) return 1;
  }
  if (!spmd::fuzz::corpus_found("parser_diff", corpus.size())) return 1;
  const size_t corpus_accepted = tally.accepted;
  std::mt19937_64 rng(seed);
  using spmd::testgen::Flavor;
  for (size_t i = 0; i < count; ++i) {
    const std::string what =
        "generated input " + std::to_string(i) + " (seed " + std::to_string(seed) + ")";
    std::string input;
    switch (i % 5) {
      case 0: {  // the random program generator
        spmd::testgen::GeneratorOptions options;
        options.flavor =
            std::array{Flavor::General, Flavor::Differentiable, Flavor::Linear}[rng() % 3];
        input = spmd::testgen::generate_program(rng(), options).source;
        break;
      }
      case 1:
      case 2:
        input = join(GrammarProgram(rng).module(), rng);
        break;
      case 3:
        input = join(mutate_tokens(GrammarProgram(rng).module(), rng), rng);
        break;
      default:
        input = mutate_bytes(corpus[rng() % corpus.size()], rng);
    }
    if (!agree(input, what, tally)) return 1;
  }
  std::cout << "parser_diff: " << corpus.size() << " files (" << corpus_accepted
            << " parsed by hand) and " << count << " generated inputs (seed " << seed
            << "): the ASTs agree on all " << tally.accepted
            << " inputs parsed by hand; ANTLR reports on the other " << tally.rejected << "\n";
  return 0;
}

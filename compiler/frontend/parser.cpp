// frontend/parser.cpp — parse(): text to AST, plus comment attachment.
//
// The parsing happens in fast_parser.cpp (correct programs) or, when that
// gives up, in ast_builder*.cpp (ANTLR; every diagnostic); this file chooses
// and attaches the comments either collected to the AST so that `spmdc fmt`
// keeps them:
//   * a comment after code on the same line is the trailing_comment of the
//     innermost statement or declaration ending with that code;
//   * a comment after other code (e.g. after a block's `{`) is a leading
//     comment of the innermost statement or declaration containing that code;
//   * any other comment is a leading comment of the next statement or
//     declaration in source order (which may move a comment written before a
//     closing `}` below that block), or, at the end of the file, one of the
//     module's trailing_comments.
#include "frontend/parser.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "frontend/ast_builder.h"
#include "frontend/fast_parser.h"

namespace spmd {
namespace {

using frontend_detail::CommentToken;

/// A statement or declaration, flattened in source (pre-)order.
struct Attachable {
  SourceSpan span;
  int depth;
  std::vector<std::string> *leading;
  std::string *trailing;
};

void collect_block(ast::Block &block, int depth, std::vector<Attachable> &out);

void collect_stmt(ast::Stmt &stmt, int depth, std::vector<Attachable> &out) {
  out.push_back({stmt.span, depth, &stmt.leading_comments, &stmt.trailing_comment});
  if (auto *f = std::get_if<ast::ForStmt>(&stmt.node)) collect_block(f->body, depth + 1, out);
  if (auto *i = std::get_if<ast::IfStmt>(&stmt.node)) {
    collect_block(i->then_body, depth + 1, out);
    collect_block(i->else_body, depth + 1, out);
  }
}

void collect_block(ast::Block &block, int depth, std::vector<Attachable> &out) {
  for (ast::StmtPtr &s : block) {
    if (s) collect_stmt(*s, depth, out);
  }
}

void attach_comments(ast::Module &module, std::vector<CommentToken> comments) {
  if (comments.empty()) return;
  std::vector<Attachable> nodes;
  for (ast::Decl &d : module.decls) {
    nodes.push_back({d.span, 0, &d.leading_comments, &d.trailing_comment});
    if (auto *f = std::get_if<ast::FuncDecl>(&d.node)) collect_block(f->body, 1, nodes);
  }
  // Pre-order of non-overlapping siblings is sorted by begin offset; be safe
  // about partial trees anyway.
  std::stable_sort(nodes.begin(), nodes.end(), [](const Attachable &a, const Attachable &b) {
    return a.span.begin < b.span.begin;
  });
  // The innermost node ending at each offset.
  std::unordered_map<uint32_t, Attachable *> by_end;
  for (Attachable &n : nodes) {
    Attachable *&slot = by_end[n.span.end];
    if (slot == nullptr || n.depth > slot->depth) slot = &n;
  }
  // Sweep in source order keeping the stack of nodes that contain the current
  // position (nodes nest properly), to find the innermost one containing code.
  std::vector<Attachable *> open;
  size_t next_to_open = 0;
  auto innermost_containing = [&](uint32_t offset) -> Attachable * {
    while (next_to_open < nodes.size() && nodes[next_to_open].span.begin < offset) {
      Attachable *n = &nodes[next_to_open++];
      while (!open.empty() && open.back()->span.end <= n->span.begin) open.pop_back();
      open.push_back(n);
    }
    while (!open.empty() && open.back()->span.end < offset) open.pop_back();
    return open.empty() ? nullptr : open.back();
  };
  for (CommentToken &c : comments) {
    if (c.follows_code) {
      auto it = by_end.find(c.previous_code_end);
      if (it != by_end.end() && it->second->trailing->empty()) {
        *it->second->trailing = std::move(c.text);
        continue;
      }
      // After code in the middle of a statement or declaration (e.g. after a
      // block's `{`): print it above that statement or declaration.
      if (Attachable *n = innermost_containing(c.previous_code_end)) {
        n->leading->push_back(std::move(c.text));
        continue;
      }
    }
    auto next =
        std::lower_bound(nodes.begin(), nodes.end(), c.end,
                         [](const Attachable &n, uint32_t at) { return n.span.begin < at; });
    if (next != nodes.end())
      next->leading->push_back(std::move(c.text));
    else
      module.trailing_comments.push_back(std::move(c.text));
  }
}

}  // namespace

ast::Module parse(const SourceManager &sources, FileId file, DiagnosticEngine &diags,
                  ParserChoice choice) {
  const SourceFile &source = sources.file(file);
  std::optional<frontend_detail::RawParse> raw;
  if (choice == ParserChoice::Auto) raw = frontend_detail::parse_fast(source, file);
  if (!raw) raw = frontend_detail::build_ast(source, file, diags);
  attach_comments(raw->module, std::move(raw->comments));
  return std::move(raw->module);
}

}  // namespace spmd

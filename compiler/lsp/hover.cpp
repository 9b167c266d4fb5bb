// lsp/hover.cpp — hover text from the symbol index and the checked IR.
#include "lsp/hover.h"

#include <algorithm>

#include "ops/types.h"
#include "middle/lower.h"

namespace spmd::lsp {
namespace {

/// The IR functions lowered from `decl`: the shmap (or sharded function) of
/// that name, or every instance of a def.
std::vector<const ir::Function *> lowered(const Compilation &c, const ast::FuncDecl &decl) {
  std::vector<const ir::Function *> out;
  if (!c.module) return out;
  for (const ir::Function &f : c.printable().functions)
    if (f.span == decl.name.span && (f.kind == ir::FunctionKind::Def || f.name == decl.name.name))
      out.push_back(&f);
  return out;
}

void add_unique(std::vector<std::string> &lines, std::string line) {
  if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(std::move(line));
}

std::string code_block(const std::vector<std::string> &lines) {
  std::string out = "```spmd\n";
  for (const std::string &l : lines) out += l + "\n";
  return out + "```";
}

/// The source line holding `span`, without leading blanks and a trailing `{`.
std::string declaration_line(const Compilation &c, SourceSpan span) {
  SourceLocation loc = c.sources.location(span);
  std::string line(c.sources.file(span.file).line_text(loc.line));
  line.erase(0, line.find_first_not_of(" \t"));
  while (!line.empty() && (line.back() == '{' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string untyped(const ast::FuncDecl &decl) {
  return "no type: `" + decl.name.name + "` " +
         (decl.kind == ast::FuncKind::Def ? "is not called by a checked function"
                                          : "did not type-check");
}

/// `global f32[32, 3] @ P(i)` for a shmap parameter or result.
std::string global_text(const ir::Function &f, const Shape &global, const rt::PartitionSpec &spec,
                        DType dtype, const ir::Module &m) {
  return "global `" + shape_type_str(dtype, global) + " @ " + spec_str(spec, m.mesh_of(f)) + "`";
}

std::string value_hover(const Compilation &c, const Symbol &s) {
  if (!s.function) return "";
  std::vector<std::string> lines, notes;
  const ir::Module *m = c.module ? &c.printable() : nullptr;
  for (const ir::Function *f : lowered(c, *s.function))
    for (const ir::NameBinding &b : f->bindings) {
      if (std::find(s.definitions.begin(), s.definitions.end(), b.name) == s.definitions.end())
        continue;
      const Type &t = f->type(b.value);
      add_unique(lines, s.name + ": " + type_str(t, m->mesh_of(*f)));
      for (const ir::Param &p : f->params)
        if (p.value == b.value && f->kind != ir::FunctionKind::Def)
          add_unique(notes, "parameter of `" + f->name +
                                "`: " + global_text(*f, p.global_shape, p.spec, t.dtype, *m));
    }
  if (lines.empty()) return code_block({s.name}) + "\n\n" + untyped(*s.function);
  std::string out = code_block(lines);
  for (const std::string &n : notes) out += "\n\n" + n;
  if (lines.size() > 1) out += "\n\none type per instance of `" + s.function->name.name + "`";
  return out;
}

std::string parameter_hover(const Compilation &c, const Symbol &s) {
  Symbol value = s;
  value.kind = SymbolKind::Value;
  return value_hover(c, value);
}

std::string result_hover(const Compilation &c, const Symbol &s) {
  std::vector<std::string> lines, notes;
  for (const ir::Function *f : lowered(c, *s.function)) {
    if (s.index >= f->results.size() || s.index >= f->returns.size()) continue;
    const ir::Result &r = f->results[s.index];
    const Type &t = f->type(f->returns[s.index]);
    add_unique(lines, ir::result_name(*f, s.index) + ": " + type_str(t, c.printable().mesh_of(*f)));
    if (f->kind != ir::FunctionKind::Def)
      add_unique(notes, "result of `" + f->name + "`: " +
                            global_text(*f, r.global_shape, r.spec, t.dtype, c.printable()));
  }
  if (lines.empty()) return code_block({s.name}) + "\n\n" + untyped(*s.function);
  std::string out = code_block(lines);
  for (const std::string &n : notes) out += "\n\n" + n;
  return out;
}

/// `(x: f32[8, 4]{batch}) -> f32[8, 4]{batch}`: a function's local signature.
std::string local_signature(const ir::Function &f, const rt::Mesh &mesh) {
  std::string sig = "(";
  for (size_t k = 0; k < f.params.size(); ++k)
    sig += (k ? ", " : "") + f.values[static_cast<size_t>(f.params[k].value)].name + ": " +
           type_str(f.type(f.params[k].value), mesh);
  sig += ") -> ";
  if (f.returns.size() != 1) sig += "(";
  for (size_t k = 0; k < f.returns.size(); ++k)
    sig += (k ? ", " : "") + type_str(f.type(f.returns[k]), mesh);
  if (f.returns.size() != 1) sig += ")";
  return sig;
}

std::string function_hover(const Compilation &c, const Symbol &s) {
  const ast::FuncDecl *decl = s.named_function;
  if (!decl) return "";
  std::vector<const ir::Function *> fns = lowered(c, *decl);
  std::vector<std::string> lines;
  if (fns.size() == 1 && fns[0]->kind != ir::FunctionKind::Def) {
    // A shmap or sharded function: its global signature, then the local one.
    const ir::Function &f = *fns[0];
    const ir::Module &m = c.printable();
    const rt::Mesh &mesh = m.mesh_of(f);
    lines.push_back(std::string(ir::function_keyword(f.kind)) + " " + f.name + " on " +
                    m.meshes.at(static_cast<size_t>(f.mesh)).name + " " +
                    lowering::mesh_text(mesh));
    for (const ir::Param &p : f.params) {
      const Type &t = f.type(p.value);
      lines.push_back("  " + f.values[static_cast<size_t>(p.value)].name + ": " +
                      shape_type_str(t.dtype, p.global_shape) + " @ " + spec_str(p.spec, mesh));
    }
    for (size_t k = 0; k < f.results.size() && k < f.returns.size(); ++k) {
      const Type &t = f.type(f.returns[k]);
      lines.push_back("  -> " + ir::result_name(f, k) + ": " +
                      shape_type_str(t.dtype, f.results[k].global_shape) + " @ " +
                      spec_str(f.results[k].spec, mesh));
    }
    lines.push_back("local: " + local_signature(f, mesh));
    return code_block(lines);
  }
  lines.push_back(declaration_line(c, decl->name.span));
  for (const ir::Function *f : fns)
    add_unique(lines, "local: " + local_signature(*f, c.printable().mesh_of(*f)));
  std::string out = code_block(lines);
  if (fns.empty()) out += "\n\n" + untyped(*decl);
  return out;
}

std::string mesh_hover(const Symbol &s) {
  const ast::MeshDecl &mesh = *s.mesh;
  std::vector<rt::MeshAxis> axes;
  int64_t devices = 1;
  for (const ast::MeshAxisDecl &a : mesh.axes) {
    axes.push_back({a.name.name, a.size});
    devices *= a.size;
  }
  if (s.kind == SymbolKind::Mesh)
    return code_block({"mesh " + mesh.name.name + " = " + lowering::mesh_text(rt::Mesh(axes))}) +
           "\n\n" + std::to_string(devices) + " device" + (devices == 1 ? "" : "s");
  const ast::MeshAxisDecl &axis = mesh.axes.at(s.index);
  return code_block({"axis " + axis.name.name + ": " + std::to_string(axis.size)}) +
         "\n\naxis of mesh `" + mesh.name.name + "` " + lowering::mesh_text(rt::Mesh(axes));
}

}  // namespace

std::optional<std::string> hover_markdown(const Analysis &analysis, uint32_t offset) {
  const Compilation &c = analysis.compilation;
  const Symbol *s = analysis.symbols.find(c.main_file, offset);
  if (!s) return std::nullopt;
  std::string text;
  switch (s->kind) {
    case SymbolKind::Value:
      text = value_hover(c, *s);
      break;
    case SymbolKind::Parameter:
      text = parameter_hover(c, *s);
      break;
    case SymbolKind::Result:
      text = result_hover(c, *s);
      break;
    case SymbolKind::Function:
      text = function_hover(c, *s);
      break;
    case SymbolKind::Mesh:
    case SymbolKind::Axis:
      text = mesh_hover(*s);
      break;
  }
  if (text.empty()) return std::nullopt;
  return text;
}

}  // namespace spmd::lsp

// ir/ir.cpp — small helpers of the IR data structures.
#include "ir/ir.h"

#include "support/result_names.h"

namespace spmd::ir {

ValueId Function::add_value(Type type, std::string name, SourceSpan span) {
  Value v;
  v.type = std::move(type);
  v.name = std::move(name);
  v.span = span;
  values.push_back(std::move(v));
  return static_cast<ValueId>(values.size() - 1);
}

const char *function_keyword(FunctionKind kind) {
  switch (kind) {
    case FunctionKind::Shmap:
      return "shmap";
    case FunctionKind::Def:
      return "def";
    case FunctionKind::Sharded:
      return "sharded";
  }
  return "def";
}

Function Function::without_body() const {
  Function f;
  f.name = name;
  f.kind = kind;
  f.mesh = mesh;
  f.auto_pbroadcast = auto_pbroadcast;
  f.entry = entry;
  f.no_auto_pbroadcast_span = no_auto_pbroadcast_span;
  f.params = params;
  f.results = results;
  f.returns = returns;
  f.return_span = return_span;
  f.span = span;
  f.comment = comment;
  f.source_name = source_name;
  return f;
}

std::string param_name(const Function &f, size_t k) {
  const Param &p = f.params.at(k);
  const std::string &name = f.values.at(static_cast<size_t>(p.value)).name;
  return name.empty() ? "arg" + std::to_string(k) : name;
}

std::string result_name(const Function &f, size_t k) {
  if (k < f.results.size() && !f.results[k].name.empty()) return f.results[k].name;
  if (f.results.size() == 1) return f.name;
  return unnamed_result_name(k);
}

std::string describe_result(const Function &f, size_t k) {
  return describe_result(f.name, f.results.size(), result_name(f, k));
}

std::string describe_result(const std::string &function, size_t num_results,
                            const std::string &result) {
  if (num_results == 1) return "the result of `" + function + "`";
  return "result `" + result + "` of `" + function + "`";
}

const rt::Mesh &Module::mesh_of(const Function &f) const {
  static const rt::Mesh kNoMesh;
  if (f.mesh < 0) return kNoMesh;
  return meshes.at(static_cast<size_t>(f.mesh)).mesh;
}

int Module::find_function(std::string_view name) const {
  for (size_t i = 0; i < functions.size(); ++i)
    if (functions[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace spmd::ir

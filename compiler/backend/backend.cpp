// backend/backend.cpp — preparing the module for code generation and dispatching by target.
//
// Every shmap is flattened (inline_calls) and simplified exactly as the
// transforms do, so the emitted code computes what `spmdc run` computes on
// the same op sequence; independent all-reduces (all-gathers, reduce-scatters)
// over the same axes are then combined into one collective
// (transforms/combine_collectives.h: the same bits, one launch).
#include "backend/backend.h"

#include "transforms/combine_collectives.h"
#include "transforms/inline_calls.h"
#include "transforms/simplify.h"

namespace spmd::backend {
namespace detail {

Prepared prepare(const ir::Module &module) {
  Prepared p;
  p.module = &module;
  for (const ir::Function &f : module.functions)
    if (f.kind == ir::FunctionKind::Shmap) {
      p.functions.push_back(simplify(module, inline_calls(module, f)));
      combine_collectives(p.functions.back());
    }
  return p;
}

}  // namespace detail

std::string emit_program(const ir::Module &module, const SourceManager *sources,
                         const EmitOptions &options) {
  detail::Prepared p = detail::prepare(module);
  switch (options.target) {
    case Target::Cpu:
      return detail::emit_cpu(p, sources, options);
    case Target::Cuda:
      return detail::emit_cuda(p, sources, options);
  }
  return {};
}

}  // namespace spmd::backend

// backend/backend.cpp — preparing the module for code generation and dispatching by target.
//
// Every shmap goes through the prepare-for-codegen script
// (pipeline/prepare.h): flattened, simplified exactly as the derive script
// does, so the emitted code computes what `spmdc run` computes on the same op
// sequence, and its independent all-reduces (all-gathers, reduce-scatters)
// combined (the same bits, one launch).
#include "backend/backend.h"

#include "pipeline/prepare.h"

namespace spmd::backend {
namespace detail {

Prepared prepare(const ir::Module &module) {
  Prepared p;
  p.module = &module;
  p.functions = prepare_for_codegen(module);
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

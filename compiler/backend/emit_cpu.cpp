// backend/emit_cpu.cpp — C++ for the simulated CPU mesh (`spmdc build --target cpu`).
//
// One C++ function per shmap: the per-device body, run by the runtime on one
// thread per mesh position. Fused elementwise groups become static functions
// holding one loop nest (trip counts and strides are compile-time constants,
// contiguous dimensions merged) over the runtime's scalar ops, their outermost
// loop over [lo, hi) so that rt::parallel_for splits it over the runtime's pool
// of threads (spmdrt/parallel.h); every other op
// is one call of the host kernel the interpreter uses (spmdrt/kernels.h) or of
// the simulated collectives (spmdrt/collectives.h). The fused loops reproduce
// the kernels' per-element arithmetic exactly (spmdrt/scalar_ops.h), so the
// executable's results are bit-identical to `spmdc run`.
//
// What the two targets share (the body, loops, the switch over OpCode) is in
// function_emitter.cpp; this file says how the CPU differs.
#include <algorithm>
#include <sstream>

#include "backend/backend.h"
#include "backend/emit_common.h"
#include "backend/function_emitter.h"

namespace spmd::backend::detail {
namespace {

/// The CPU target: kernels are static functions with one `for` per dimension
/// of the nest; dynamic slices take a start vector.
class CpuFunctionEmitter final : public FunctionEmitter {
 public:
  using FunctionEmitter::FunctionEmitter;

 private:
  std::string kernel_namespace() const override { return "rt"; }
  std::string context_type() const override { return "rt::DeviceContext"; }
  // A loop over spmdrt's exp/log/tanh/logistic is compute-bound: built for
  // AVX2 too, chosen when the CPU has it (SPMDRT_FUSED_LOOP, spmdrt/hot_code.h).
  // Other loops are bound by memory and stay baseline (and quicker to build).
  std::string kernel_declaration(bool vector_math) const override {
    return vector_math ? "SPMDRT_FUSED_LOOP " : "static void ";
  }
  bool release_dead_values() const override { return true; }

  /// The outermost loop runs [lo, hi), the chunk of the runtime's pool the call
  /// gives it (spmdrt/parallel.h); a nest without loops ignores them.
  std::string kernel_leading_params() const override { return "int64_t lo, int64_t hi, "; }

  void open_kernel_loops(const LoopNest &nest, std::vector<std::string> &idx, std::string &indent,
                         std::ostringstream &kernels) override {
    indent = "  ";
    if (nest.extent.empty()) kernels << indent << "(void)lo;\n" << indent << "(void)hi;\n";
    for (size_t d = 0; d < nest.extent.size(); ++d) {
      idx.push_back("i" + std::to_string(d));
      kernels << indent << "for (int64_t " << idx[d] << " = " << (d == 0 ? "lo" : "0") << "; "
              << idx[d] << " < " << (d == 0 ? std::string("hi") : std::to_string(nest.extent[d]))
              << "; ++" << idx[d] << ") {\n";
      indent += "  ";
    }
  }

  void close_kernel_loops(const LoopNest &nest, std::string &indent,
                          std::ostringstream &kernels) override {
    for (size_t d = nest.extent.size(); d-- > 0;) {
      indent.resize(indent.size() - 2);
      kernels << indent << "}\n";
    }
    kernels << "}\n\n";
  }

  /// The outermost dimension split over the pool in chunks of at least
  /// rt::kMinChunkElements elements: each element is computed by one chunk, so the
  /// split does not change a bit.
  std::string kernel_call(const std::string &kname, const LoopNest &nest) const override {
    if (nest.extent.empty())
      return "rt::parallel_for(1, 1, [&](int64_t lo, int64_t hi) { " + kname + "(lo, hi, ";
    const int64_t outer = nest.extent[0], inner = nest.numel / std::max<int64_t>(1, outer);
    return "rt::parallel_for(" + std::to_string(outer) + ", rt::elementwise_grain(" +
           std::to_string(outer) + ", " + std::to_string(inner) +
           "), [&](int64_t lo, int64_t hi) { " + kname + "(lo, hi, ";
  }
  std::string kernel_call_end() const override { return "); });\n"; }

  /// `I64s start{0, .., index * block, .., 0};` for a dynamic start along `dim`.
  std::string start_vector(size_t rank, int64_t dim, const std::string &index, int64_t block,
                           std::string &pre) {
    const std::string start = names().fresh("start");
    pre = "  I64s " + start + int_list(std::vector<int64_t>(rank, 0)) + ";\n  " + start + "[" +
          std::to_string(dim) + "] = static_cast<int64_t>(" + index + ".get(0)) * " +
          std::to_string(block) + ";\n";
    return start;
  }

  std::string dynamic_slice(const ir::Instr &in, std::string &pre) override {
    const Attrs &a = in.attrs;
    const std::string start =
        start_vector(a.layout().shape.size(), a.layout().dim, name(in.operands[1]),
                     a.layout().shape[a.layout().dim], pre);
    return "rt::dynamic_slice(" + name(in.operands[0]) + ", " + start + ", I64s" +
           int_list(a.layout().shape) + ")";
  }

  std::string dynamic_update_slice(const ir::Instr &in, const std::string &target,
                                   std::string &pre) override {
    const ir::Function &f = function();
    const int64_t dim = in.attrs.layout().dim;
    const std::string start =
        start_vector(f.type(in.operands[0]).shape.size(), dim, name(in.operands[2]),
                     f.type(in.operands[1]).shape[dim], pre);
    return "rt::dynamic_update_slice(" + target + ", " + name(in.operands[1]) + ", " + start + ")";
  }
};

}  // namespace

std::string emit_cpu(const Prepared &p, const SourceManager *sources, const EmitOptions &options) {
  std::ostringstream kernels, bodies, out;
  std::vector<std::string> fn_names;
  for (const ir::Function &f : p.functions) {
    CpuFunctionEmitter e(*p.module, f, sources);
    e.set_check_nan(options.check_nan);
    e.set_checkpoints(true);
    e.emit(kernels, bodies);
    fn_names.push_back(e.fn_name());
  }
  out << cpp_comment(std::string("Generated by spmdc ") + SPMDC_VERSION + " from " +
                     options.source_path + " (spmdc build --target cpu). Do not edit.")
      << "//\n"
         "// Runs on the CPU: one thread per mesh position in one process (collectives in\n"
         "// host memory with a fixed reduction order), or under mpirun/srun one process\n"
         "// per mesh position (collectives over MPI; --deterministic for the fixed order).\n"
         "// Fused elementwise chains are the static *_k<N>_* functions (one loop nest\n"
         "// each); every other op calls the same host kernel `spmdc run` uses, so results\n"
         "// are bit-identical to it.\n"
         "#include \"spmdrt/cpu_program.h\"  // the runtime's API, in one (precompiled) header\n\n"
         "namespace {\n\n"
         "namespace rt = spmd::rt;\nnamespace sc = spmd::rt::sc;\n"
         "using rt::Tensor;\nusing I64s = std::vector<int64_t>;  // dims, starts, ...\n"
         "using Axes = std::vector<int>;      // mesh axes of a collective\n\n";
  // With GCC the glue is compiled at -Og and the fused loops at -O3 (spmdrt/hot_code.h).
  out << "// ======== fused elementwise kernels (compiled at -O3) ========\n\n"
         "SPMDRT_HOT_BEGIN\n\n"
      << kernels.str() << "SPMDRT_HOT_END\n\n";
  out << "// ======== per-device functions, one per shmap ========\n\n" << bodies.str();
  out << "// ======== the shmaps: meshes, parameters and results (global shapes, specs) ========\n"
         "const std::vector<rt::ProgramFunction> &functions() {\n"
         "  static const std::vector<rt::ProgramFunction> table = {\n";
  for (size_t k = 0; k < p.functions.size(); ++k)
    out << "    "
        << program_function_init(*p.module, p.functions[k], options.source_path, sources,
                                 /*checkpoints=*/true)
        << ",\n";
  out << "  };\n  return table;\n}\n\n}  // namespace\n\n"
         "int main(int argc, char **argv) {\n"
         "  static const std::vector<rt::CpuBody> bodies = {";
  for (size_t k = 0; k < fn_names.size(); ++k) out << (k ? ", " : "") << fn_names[k];
  out << "};\n" << program_main_call(options, "cpu", "rt::cpu_executor", "rt::mpi_cpu_executor");
  return out.str();
}

}  // namespace spmd::backend::detail

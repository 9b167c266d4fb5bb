// backend/emit_cuda.cpp — CUDA C++ for one GPU per mesh position (`spmdc build --target cuda`).
//
// The same structure as emit_cpu.cpp: one host function per shmap (the
// per-device body, run by one host thread per GPU), but fused elementwise
// groups become __global__ kernels (a grid-stride loop; each thread decomposes
// its flat index with compile-time extents and reads every operand through
// compile-time strides) launched on the device's stream, and every other op
// calls spmdrt_cuda (spmdrt/cuda.h): reduction kernels, cuBLAS contractions,
// strided-copy layout kernels, and NCCL collectives with explicit pack/unpack
// kernels around gathers/scatters along a non-leading dimension. Each
// statement first records its .spmd line (ctx.at) so a failing collective is
// reported with its source location.
//
// The switch in emit_instr is the CUDA target's one exhaustive switch over
// OpCode: adding an op to ops.def fails to compile here until it is handled.
#include <set>
#include <sstream>
#include <stdexcept>

#include "backend/backend.h"
#include "backend/emit_common.h"
#include "ir/loops.h"
#include "ops/shape_rules.h"

// A missing case is an error for this file whatever the build flags.
#pragma GCC diagnostic error "-Wswitch"

namespace spmd::backend::detail {
namespace {

class CudaFunctionEmitter {
 public:
  CudaFunctionEmitter(const ir::Module &module, const ir::Function &f, const SourceManager *sources)
      : module_(module), f_(f), sources_(sources), names_(f) {}

  /// Appends the kernels and the body function to `kernels` / `body`.
  void emit(std::ostringstream &kernels, std::ostringstream &body) {
    const rt::Mesh &mesh = module_.mesh_of(f_);
    body << "// ---- shmap `" << f_.name << "` ";
    if (std::string where = source_line(sources_, f_.span); !where.empty())
      body << "(" << where.substr(0, where.find(": ")) << ") ";
    body << "on mesh (";
    for (size_t a = 0; a < mesh.axes().size(); ++a)
      body << (a ? ", " : "") << mesh.axes()[a].name << ": " << mesh.axes()[a].size;
    body << ") ----\n// The per-device body: `args` are this device's blocks of the inputs;\n"
            "// returns this device's blocks of the outputs.\n";
    body << "std::vector<Tensor> " << fn_name() << "(cu::DeviceContext &ctx, "
         << "const std::vector<Tensor> &args) {\n";
    body << "  (void)ctx;\n";
    for (size_t k = 0; k < f_.params.size(); ++k) {
      const ir::Param &p = f_.params[k];
      body << "  const Tensor &" << names_[p.value] << " = args[" << k << "];  // "
           << type_str(f_.type(p.value), mesh) << "\n";
    }
    std::vector<ir::ValueId> params;
    for (const ir::Param &p : f_.params) params.push_back(p.value);
    emit_block(f_.body, params, f_.returns, kernels, body);
    body << "  return {";
    for (size_t k = 0; k < f_.returns.size(); ++k) body << (k ? ", " : "") << names_[f_.returns[k]];
    body << "};\n}\n\n";
  }

  std::string fn_name() const { return sanitize(f_.name); }

 private:
  void comment(SourceSpan span, std::ostringstream &out) {
    std::string line = source_line(sources_, span);
    if (line.empty() || line == last_comment_) return;
    last_comment_ = line;
    out << "  // " << line << "\n";
    std::string quoted;
    for (char ch : line.substr(0, line.find(": ")))
      quoted += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
    out << "  ctx.at(\"" << quoted << "\");\n";
  }

  std::string ty(ir::ValueId v) const { return type_str(f_.type(v), module_.mesh_of(f_)); }

  /// A block (the body or a loop body) with parameters `params` and results
  /// `live_out`: its fused kernels and runtime calls, in plan order.
  void emit_block(const std::vector<ir::Instr> &block, const std::vector<ir::ValueId> &params,
                  const std::vector<ir::ValueId> &live_out, std::ostringstream &kernels,
                  std::ostringstream &body) {
    const FusionPlan plan = plan_fusion(f_, block, live_out);
    const ir::BlockUses uses = ir::block_uses(block, params, live_out);
    for (const Step &s : plan.steps) {
      if (s.is_group)
        emit_group(plan, s.index, kernels, body);
      else if (block[s.index].op == OpCode::For)
        emit_loop(block[s.index], kernels, body);
      else
        emit_instr(plan, uses, s.index, body);
    }
  }

  /// A host loop around the body's kernel launches and runtime calls, as on
  /// the CPU (emit_common.h, loop_code); the index tensor lives on the GPU.
  void emit_loop(const ir::Instr &loop, std::ostringstream &kernels, std::ostringstream &body) {
    comment(loop.span, body);
    const ir::Region &r = loop.regions.at(0);
    const LoopCode code = loop_code(
        f_, loop, names_, "Tensor::scalar(rt::DType::I32, static_cast<double>(%s))", "  ");
    for (ir::ValueId v : loop.results) mutable_.insert(v);
    for (size_t k = 1; k < r.params.size(); ++k) mutable_.insert(r.params[k]);
    body << code.before << code.index;
    std::ostringstream inner;
    last_comment_.clear();
    emit_block(r.body, r.params, r.yields, kernels, inner);
    body << indent_lines(inner.str(), "  ") << code.next << code.after;
    last_comment_.clear();
  }

  void emit_group(const FusionPlan &plan, size_t g, std::ostringstream &kernels,
                  std::ostringstream &body) {
    const std::vector<ir::Instr> &block = *plan.body;
    const FusedGroup &group = plan.groups[g];
    const std::string kname =
        fn_name() + "_k" + std::to_string(next_kernel_++) + "_" + group_title(plan, group);
    // Source lines of the members.
    std::vector<std::string> lines;
    for (size_t i : group.members) {
      std::string l = source_line(sources_, block[i].span);
      if (!l.empty() && (lines.empty() || lines.back() != l)) lines.push_back(l);
    }
    std::vector<Shape> in_shapes;
    for (ir::ValueId v : group.inputs) in_shapes.push_back(f_.type(v).shape);
    LoopNest nest = make_loop_nest(group.shape, in_shapes);

    // ---- the kernel
    kernels << "// Fused kernel: " << group.members.size() << " elementwise op"
            << (group.members.size() == 1 ? "" : "s") << " of `" << f_.name << "` over "
            << shape_type_str(f_.type(group.outputs.empty() ? block[group.members[0]].results[0]
                                                            : group.outputs[0])
                                  .dtype,
                              group.shape)
            << " (" << nest.numel << " elements), one pass, intermediates in registers.\n";
    for (const std::string &l : lines) kernels << "//   " << l << "\n";
    kernels << "__global__ void " << kname << "(";
    std::string sep;
    for (ir::ValueId v : group.inputs) {
      kernels << sep << "const " << storage_type(f_.type(v).dtype) << " *__restrict " << names_[v];
      sep = ", ";
    }
    for (ir::ValueId v : group.outputs) {
      kernels << sep << storage_type(f_.type(v).dtype) << " *__restrict out_" << names_[v];
      sep = ", ";
    }
    kernels << ") {\n";
    std::vector<std::string> idx;
    std::string indent = "    ";
    kernels << "  for (int64_t flat = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; flat < "
            << nest.numel << "; flat += int64_t(gridDim.x) * blockDim.x) {\n";
    {
      std::string rest = "flat";
      for (size_t d = nest.extent.size(); d-- > 0;) {
        idx.insert(idx.begin(), "i" + std::to_string(d));
      }
      int64_t inner = 1;
      for (size_t d = nest.extent.size(); d-- > 0;) {
        kernels << indent << "const int64_t " << idx[d] << " = (flat / " << inner << ") % "
                << nest.extent[d] << ";\n";
        inner *= nest.extent[d];
      }
    }
    std::map<ir::ValueId, std::string> input_expr;
    for (size_t k = 0; k < group.inputs.size(); ++k) {
      ir::ValueId v = group.inputs[k];
      const std::string elem = names_[v] + "_e";
      kernels << indent << "const " << compute_type(f_.type(v).dtype) << " " << elem << " = "
              << load_expr(f_.type(v).dtype, names_[v] + "[" + offset_expr(nest, k + 1, idx) + "]")
              << ";\n";
      input_expr[v] = elem;
    }
    for (const std::string &st : element_statements(f_, plan, group, names_, input_expr, "_e"))
      kernels << indent << st << "\n";
    const std::string out_off = offset_expr(nest, 0, idx);
    for (ir::ValueId v : group.outputs)
      kernels << indent << "out_" << names_[v] << "[" << out_off
              << "] = " << store_expr(f_.type(v).dtype, names_[v] + "_e") << ";\n";
    kernels << "  }\n}\n\n";

    // ---- the call
    for (size_t i : group.members) comment(block[i].span, body);
    for (ir::ValueId v : group.outputs)
      body << "  Tensor " << names_[v] << " = Tensor::empty(" << dtype_enum(f_.type(v).dtype)
           << ", " << shape_init(f_.type(v).shape) << ");  // " << ty(v) << "\n";
    body << "  " << kname << "<<<cu::grid_for(" << nest.numel
         << "), cu::kBlock, 0, cu::current_stream()>>>(";
    sep.clear();
    for (ir::ValueId v : group.inputs) {
      body << sep << names_[v] << ".data<" << storage_type(f_.type(v).dtype) << ">()";
      sep = ", ";
    }
    for (ir::ValueId v : group.outputs) {
      body << sep << names_[v] << ".data<" << storage_type(f_.type(v).dtype) << ">()";
      sep = ", ";
    }
    body << ");\n  cu::check_cuda(cudaGetLastError(), \"" << kname << " launch\");\n";
  }

  void emit_instr(const FusionPlan &plan, const ir::BlockUses &uses, size_t i,
                  std::ostringstream &out) {
    const ir::Instr &in = (*plan.body)[i];
    if (in.op == OpCode::Constant && plan.folded_constant[i]) return;  // a literal in a kernel
    comment(in.span, out);
    const Attrs &a = in.attrs;
    auto x = [&](size_t k) { return names_[in.operands.at(k)]; };
    auto reduce = [&](const char *op) {
      return std::string("cu::reduce(rt::ReduceOp::") + op + ", " + x(0) + ", I64s" +
             int_list(a.dims) + ")";
    };
    auto axes = "Axes" + int_list(a.axes);
    std::string expr;
    std::string pre;  // statements before the definition
    switch (in.op) {
      case OpCode::Constant:
        expr = "Tensor::scalar(" + dtype_enum(a.dtype) + ", " + double_literal(a.value) + ")";
        break;
      case OpCode::Full:
        expr = "Tensor::full(" + dtype_enum(a.dtype) + ", " + shape_init(a.shape) + ", " +
               double_literal(a.value) + ")";
        break;
      case OpCode::Iota:
        expr = "cu::iota(" + dtype_enum(a.dtype) + ", " + shape_init(a.shape) + ", " +
               std::to_string(a.dim) + ")";
        break;
      case OpCode::Neg:
      case OpCode::Exp:
      case OpCode::Log:
      case OpCode::Sin:
      case OpCode::Cos:
      case OpCode::Tanh:
      case OpCode::Sqrt:
      case OpCode::Rsqrt:
      case OpCode::Abs:
      case OpCode::Sign:
      case OpCode::Logistic:
      case OpCode::Erf:
      case OpCode::Log1p:
      case OpCode::Not:
      case OpCode::Cast:
      case OpCode::StopGradient:
      case OpCode::Add:
      case OpCode::Sub:
      case OpCode::Mul:
      case OpCode::Div:
      case OpCode::FloorDiv:
      case OpCode::Rem:
      case OpCode::Pow:
      case OpCode::Max:
      case OpCode::Min:
      case OpCode::Lt:
      case OpCode::Le:
      case OpCode::Gt:
      case OpCode::Ge:
      case OpCode::Eq:
      case OpCode::Ne:
      case OpCode::And:
      case OpCode::Or:
      case OpCode::Select:
        throw std::logic_error("backend: elementwise op outside a fused group");
      case OpCode::ReduceSum:
        expr = reduce("Sum");
        break;
      case OpCode::ReduceMax:
        expr = reduce("Max");
        break;
      case OpCode::ReduceMin:
        expr = reduce("Min");
        break;
      case OpCode::ArgMax:
      case OpCode::ArgMin:
        expr = std::string("cu::arg_reduce(rt::ReduceOp::") +
               (in.op == OpCode::ArgMax ? "Max" : "Min") + ", " + x(0) + ", I64s" +
               int_list(a.dims) + ")";
        break;
      case OpCode::Einsum: {
        expr = "cu::einsum(\"" + a.spec + "\", std::vector<Tensor>{";
        for (size_t k = 0; k < in.operands.size(); ++k) expr += (k ? ", " : "") + x(k);
        expr += "})";
        break;
      }
      case OpCode::Reshape:
        expr = "cu::reshape(" + x(0) + ", " + shape_init(a.shape) + ")";
        break;
      case OpCode::Constrain:  // a sharding hint (sharded functions are not built): the identity
        expr = x(0);
        break;
      case OpCode::Transpose:
        expr = "cu::transpose(" + x(0) + ", I64s" + int_list(a.dims) + ")";
        break;
      case OpCode::Reverse:
        expr = "cu::reverse(" + x(0) + ", I64s" + int_list(a.dims) + ")";
        break;
      case OpCode::BroadcastTo:
        expr = "cu::broadcast_to(" + x(0) + ", " + shape_init(a.shape) + ")";
        break;
      case OpCode::Slice:
        expr = "cu::slice(" + x(0) + ", I64s" + int_list(a.start) + ", I64s" + int_list(a.limit) +
               ", I64s" + int_list(a.stride) + ")";
        break;
      case OpCode::Pad:
        expr = "cu::pad_into(" + x(0) + ", " + shape_init(a.shape) + ", I64s" + int_list(a.start) +
               ", I64s" + int_list(a.stride) + ")";
        break;
      case OpCode::Concat: {
        expr = "cu::concat(std::vector<Tensor>{";
        for (size_t k = 0; k < in.operands.size(); ++k) expr += (k ? ", " : "") + x(k);
        expr += "}, " + std::to_string(a.dim) + ")";
        break;
      }
      case OpCode::DynamicSlice:
        expr = "cu::dynamic_slice(" + x(0) + ", " + x(1) + ", " + std::to_string(a.dim) + ", " +
               std::to_string(a.shape[a.dim]) + ")";
        break;
      case OpCode::DynamicUpdateSlice: {
        // The last use of a carried variable: updated in place when unshared.
        const bool in_place = uses.takes_over[i][0] && mutable_.count(in.operands[0]);
        expr = "cu::dynamic_update_slice(" + (in_place ? "std::move(" + x(0) + ")" : x(0)) + ", " +
               x(1) + ", " + x(2) + ", " + std::to_string(a.dim) + ")";
        break;
      }
      case OpCode::Psum:
      case OpCode::Pmax:
      case OpCode::Pmin:
        expr = all_reduce_expr(f_, in, names_, pre);
        break;
      case OpCode::Pbroadcast:
        expr = x(0) + "  /* pbroadcast: invariant -> varying, no data moves */";
        break;
      case OpCode::AllGather:
      case OpCode::AllGatherInvariant:
        expr = "ctx.all_gather(" + x(0) + ", " + axes + ", " + std::to_string(a.dim) + ", " +
               (a.tiled ? "true" : "false") + ")";
        break;
      case OpCode::PsumScatter:
        expr = "ctx.reduce_scatter(" + x(0) + ", " + axes + ", " + std::to_string(a.dim) + ", " +
               (a.tiled ? "true" : "false") + ")";
        break;
      case OpCode::Pscatter: {
        // This device's block of an invariant value: a local slice, no communication.
        const Type &t = f_.type(in.operands[0]);
        const int64_t n = axes_size(module_.mesh_of(f_), a.axes);
        const int64_t block = a.tiled ? t.shape[a.dim] / n : 1;
        const std::string r = names_.fresh("rank");
        std::vector<int64_t> zeros(t.shape.size(), 0), ones(t.shape.size(), 1);
        const std::string start = names_.fresh("start"), limit = names_.fresh("limit");
        pre = "  const int64_t " + r + " = ctx.axis_index(" + axes +
              ");  // pscatter: no communication\n" + "  I64s " + start + int_list(zeros) + ", " +
              limit + int_list(t.shape) + ";\n  " + start + "[" + std::to_string(a.dim) +
              "] = " + r + " * " + std::to_string(block) + ";\n  " + limit + "[" +
              std::to_string(a.dim) + "] = (" + r + " + 1) * " + std::to_string(block) + ";\n";
        expr = "cu::slice(" + x(0) + ", " + start + ", " + limit + ", I64s" + int_list(ones) + ")";
        if (!a.tiled)
          expr = "cu::reshape(" + expr + ", " + shape_init(f_.type(in.results[0]).shape) + ")";
        break;
      }
      case OpCode::AllToAll:
        expr = "ctx.all_to_all(" + x(0) + ", " + axes + ", " + std::to_string(a.dim) + ", " +
               std::to_string(a.dim2) + ")";
        break;
      case OpCode::Ppermute:
        expr = "ctx.ppermute(" + x(0) + ", " + axes + ", " + pair_list(a.perm) + ")";
        break;
      case OpCode::AxisIndex:
        expr = "Tensor::scalar(rt::DType::I32, static_cast<double>(ctx.axis_index(" + axes + ")))";
        break;
      case OpCode::For:
        throw std::logic_error("backend: `for` is emitted by emit_loop");
      case OpCode::Call:
        throw std::logic_error("backend: call left after inlining");
    }
    out << pre;
    out << "  const Tensor " << names_[in.results.at(0)] << " = " << expr << ";  // "
        << ty(in.results[0]) << "\n";
  }

  const ir::Module &module_;
  const ir::Function &f_;
  const SourceManager *sources_;
  Names names_;
  std::string last_comment_;
  int next_kernel_ = 0;
  std::set<ir::ValueId> mutable_;  // carried variables (non-const Tensors)
};

}  // namespace

std::string emit_cuda(const Prepared &p, const SourceManager *sources, const EmitOptions &options) {
  std::ostringstream kernels, bodies, out;
  std::vector<std::string> fn_names;
  for (const ir::Function &f : p.functions) {
    CudaFunctionEmitter e(*p.module, f, sources);
    e.emit(kernels, bodies);
    fn_names.push_back(e.fn_name());
  }
  out << "// Generated by spmdc " << SPMDC_VERSION << " from " << options.source_path
      << " (spmdc build --target cuda). Do not edit.\n"
         "//\n"
         "// One GPU per mesh position, driven by one host thread each (one process), or\n"
         "// under mpirun/srun by one process each (NCCL bootstrapped over MPI). Fused "
         "elementwise\n"
         "// chains are the __global__ *_k<N>_* kernels; reductions, contractions (cuBLAS),\n"
         "// layout ops and NCCL collectives are calls into spmdrt_cuda (spmdrt/cuda.h).\n"
         "#include <bit>\n#include <cstdint>\n#include <limits>\n#include <vector>\n\n"
         "#include \"spmdrt/cuda.h\"\n#include \"spmdrt/program.h\"\n#include "
         "\"spmdrt/scalar_ops.h\"\n\n"
         "namespace {\n\n"
         "namespace rt = spmd::rt;\nnamespace cu = spmd::cu;\nnamespace sc = spmd::rt::sc;\n"
         "using cu::Tensor;\nusing I64s = std::vector<int64_t>;  // dims, starts, ...\n"
         "using Axes = std::vector<int>;      // mesh axes of a collective\n\n";
  out << "// ======== fused elementwise kernels ========\n\n" << kernels.str();
  out << "// ======== per-device functions, one per shmap ========\n\n" << bodies.str();
  out << "// ======== the shmaps: meshes, parameters and results (global shapes, specs) ========\n"
         "const std::vector<rt::ProgramFunction> &functions() {\n"
         "  static const std::vector<rt::ProgramFunction> table = {\n";
  for (size_t k = 0; k < p.functions.size(); ++k)
    out << "    " << program_function_init(*p.module, p.functions[k], options.source_path) << ",\n";
  out << "  };\n  return table;\n}\n\n}  // namespace\n\n"
         "int main(int argc, char **argv) {\n"
         "  static const std::vector<cu::CudaBody> bodies = {";
  for (size_t k = 0; k < fn_names.size(); ++k) out << (k ? ", " : "") << fn_names[k];
  out << "};\n" << program_main_call(options, "cuda", "cu::cuda_executor", "cu::cuda_mpi_executor");
  return out.str();
}

}  // namespace spmd::backend::detail

// backend/function_emitter.cpp — the per-device function of a shmap, shared by
// the CPU and CUDA targets (function_emitter.h says what a target overrides).
//
// The switch in emit_instr is the backends' one exhaustive switch over
// OpCode: adding an op to ops.def fails to compile here until it is handled.
#include "backend/function_emitter.h"

#include <algorithm>
#include <stdexcept>

#include "backend/backend.h"
#include "ir/loops.h"
#include "ops/shape_rules.h"

// A missing case is an error for this file whatever the build flags.
#pragma GCC diagnostic error "-Wswitch"

namespace spmd::backend::detail {

void FunctionEmitter::locate(const std::string &, std::ostringstream &) {}

std::string FunctionEmitter::after_kernel_call(const std::string &) const { return ""; }

void FunctionEmitter::emit(std::ostringstream &kernels, std::ostringstream &body) {
  const rt::Mesh &mesh = module_.mesh_of(f_);
  std::string title = "---- shmap `" + f_.name + "` ";
  if (std::string where = source_line(sources_, f_.span); !where.empty())
    title += "(" + where.substr(0, where.find(": ")) + ") ";
  title += "on mesh (";
  for (size_t a = 0; a < mesh.axes().size(); ++a)
    title += (a ? ", " : "") + mesh.axes()[a].name + ": " + std::to_string(mesh.axes()[a].size);
  body << cpp_comment(title + ") ----")
       << "// The per-device body: `args` are this device's blocks of the inputs;\n"
          "// returns this device's blocks of the outputs.\n";
  body << "std::vector<Tensor> " << fn_name() << "(" << context_type() << " &ctx, "
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

void FunctionEmitter::comment(SourceSpan span, std::ostringstream &out) {
  std::string line = source_line(sources_, span);
  if (line.empty() || line == last_comment_) return;
  last_comment_ = line;
  out << cpp_comment(line, "  ");
  locate(line.substr(0, line.find(": ")), out);
}

std::string FunctionEmitter::ty(ir::ValueId v) const {
  return type_str(f_.type(v), module_.mesh_of(f_));
}

void FunctionEmitter::emit_block(const std::vector<ir::Instr> &block,
                                 const std::vector<ir::ValueId> &params,
                                 const std::vector<ir::ValueId> &live_out,
                                 std::ostringstream &kernels, std::ostringstream &body) {
  const FusionPlan plan = plan_fusion(f_, block, live_out, /*fuse=*/!check_nan_);
  const ir::BlockUses uses = ir::block_uses(block, params, live_out);
  // With release_dead_values: per step, the values whose last read it is
  // (results nothing reads: their own step).
  std::vector<std::vector<ir::ValueId>> dies(plan.steps.size());
  if (release_dead_values()) {
    const std::vector<int> at = step_positions(plan);
    const ir::BlockUses last = ir::block_uses(block, params, live_out, at);
    for (ir::ValueId v : params)
      if (last.last.at(v) >= 0) dies[static_cast<size_t>(last.last.at(v))].push_back(v);
    for (size_t i = 0; i < block.size(); ++i)
      for (ir::ValueId r : block[i].results) {
        const int l = last.last.at(r);
        if (l != ir::BlockUses::kKept) dies[static_cast<size_t>(l >= 0 ? l : at[i])].push_back(r);
      }
  }
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const Step &s = plan.steps[k];
    if (s.is_group) {
      emit_group(plan, s.index, kernels, body);
      if (check_nan_)  // one op per group
        for (ir::ValueId v : plan.groups[s.index].outputs)
          emit_check(block[plan.groups[s.index].members.at(0)], v, body);
    } else if (block[s.index].op == OpCode::For) {
      emit_loop(block[s.index], kernels, body);
    } else {
      emit_instr(plan, uses, s.index, body);
      if (check_nan_ && !(block[s.index].op == OpCode::Constant && plan.folded_constant[s.index]))
        for (ir::ValueId v : block[s.index].results) emit_check(block[s.index], v, body);
    }
    // Only variables declared non-const (not parameters, the loop index,
    // constants folded into kernels or values kept in registers).
    for (ir::ValueId v : dies[k])
      if (releasable_.count(v)) body << "  " << names_[v] << " = Tensor();  // last use\n";
  }
}

void FunctionEmitter::emit_check(const ir::Instr &in, ir::ValueId v, std::ostringstream &out) {
  // Constants and pbroadcast make no new numbers: nothing to check there.
  if (!rt::is_float(f_.type(v).dtype) || op_kind(in.op) == OpKind::Creation ||
      in.op == OpCode::Pbroadcast)
    return;
  std::string where;
  if (sources_ && in.span.valid()) {
    const SourceLocation loc = sources_->location(in.span);
    std::string file(loc.path);
    if (auto slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
    where = file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
  }
  out << "  " << call("check_finite") << "ctx, " << names_[v] << ", "
      << cpp_string_literal(std::string(op_display_name(in.op))) << ", "
      << cpp_string_literal(where) << ", "
      << (f_.type(v).variance.empty() ? "true" : "false") << ");  // --check-nan\n";
}

void FunctionEmitter::emit_loop(const ir::Instr &loop, std::ostringstream &kernels,
                                std::ostringstream &body) {
  comment(loop.span, body);
  const ir::Region &r = loop.regions.at(0);
  // --checkpoint-dir / --resume (spmdrt/checkpoint.h): a top-level loop of a
  // shmap, numbered in program order as analysis/checkpoint_loops.h lists them.
  std::string site;
  if (checkpoints_ && loop_depth_ == 0 && ir::is_top_level(f_) && is_body_instr(loop)) {
    site = names_.fresh("checkpoint");
    body << "  rt::CheckpointSite " << site << "(ctx.device(), " << top_level_loops_++ << ");\n";
  }
  const LoopCode code = loop_code(
      f_, loop, names_, "Tensor::scalar(rt::DType::I32, static_cast<double>(%s))", "  ", site);
  for (ir::ValueId v : loop.results) mutable_.insert(v);
  for (size_t k = 1; k < r.params.size(); ++k) mutable_.insert(r.params[k]);
  if (release_dead_values()) {
    for (ir::ValueId v : loop.results) releasable_.insert(v);
    for (size_t k = 1; k < r.params.size(); ++k) releasable_.insert(r.params[k]);
  }
  // A top-level loop shows a progress line on a terminal (spmdrt/program.h).
  const bool progress = loop_depth_ == 0 && ir::trip_count(loop.attrs) > 1;
  const std::string counter = progress ? names_.fresh("progress") : "";
  if (progress) {
    std::string where = source_line(sources_, loop.span);
    where = where.substr(0, where.find(": "));
    body << "  rt::Progress " << counter << "(ctx.device(), " << ir::trip_count(loop.attrs)
         << ", " << cpp_string_literal(where) << ");\n";
  }
  body << code.before << code.index;
  std::ostringstream inner;
  last_comment_.clear();
  ++loop_depth_;
  emit_block(r.body, r.params, r.yields, kernels, inner);
  --loop_depth_;
  body << indent_lines(inner.str(), "  ") << code.next;
  if (progress) body << "    " << counter << ".step();\n";
  body << code.after;
  if (progress) body << "  " << counter << ".finish();\n";
  last_comment_.clear();
}

void FunctionEmitter::emit_group(const FusionPlan &plan, size_t g, std::ostringstream &kernels,
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
  for (const std::string &l : lines) kernels << cpp_comment("  " + l);
  const bool vector_math = std::any_of(group.members.begin(), group.members.end(), [&](size_t i) {
    const OpCode op = block[i].op;
    return op == OpCode::Exp || op == OpCode::Log || op == OpCode::Tanh || op == OpCode::Logistic;
  });
  kernels << kernel_declaration(vector_math) << kname << "(" << kernel_leading_params();
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
  std::string indent;
  open_kernel_loops(nest, idx, indent, kernels);
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
  close_kernel_loops(nest, indent, kernels);

  // ---- the call
  for (size_t i : group.members) comment(block[i].span, body);
  for (ir::ValueId v : group.outputs) {
    if (release_dead_values()) releasable_.insert(v);
    body << "  Tensor " << names_[v] << " = Tensor::empty(" << dtype_enum(f_.type(v).dtype) << ", "
         << shape_init(f_.type(v).shape) << ");  // " << ty(v) << "\n";
  }
  body << "  " << kernel_call(kname, nest);
  sep.clear();
  for (ir::ValueId v : group.inputs) {
    body << sep << names_[v] << ".data<" << storage_type(f_.type(v).dtype) << ">()";
    sep = ", ";
  }
  for (ir::ValueId v : group.outputs) {
    body << sep << names_[v] << ".data<" << storage_type(f_.type(v).dtype) << ">()";
    sep = ", ";
  }
  body << kernel_call_end() << after_kernel_call(kname);
}

void FunctionEmitter::emit_instr(const FusionPlan &plan, const ir::BlockUses &uses, size_t i,
                                 std::ostringstream &out) {
  const ir::Instr &in = (*plan.body)[i];
  if (in.op == OpCode::Constant && plan.folded_constant[i]) return;  // a literal in a kernel
  comment(in.span, out);
  const Attrs &a = in.attrs;
  auto x = [&](size_t k) { return names_[in.operands.at(k)]; };
  auto reduce = [&](const char *op) {
    return call("reduce") + "rt::ReduceOp::" + op + ", " + x(0) + ", I64s" +
           int_list(a.reduce().dims) + ")";
  };
  auto axes = "Axes" + int_list(collective_axes(in.op, a));
  std::string expr;
  std::string pre;  // statements before the definition
  switch (in.op) {
    case OpCode::Constant:
      expr = "Tensor::scalar(" + dtype_enum(a.creation().dtype) + ", " +
             double_literal(a.creation().value) + ")";
      break;
    case OpCode::Full:
      expr = "Tensor::full(" + dtype_enum(a.creation().dtype) + ", " +
             shape_init(a.creation().shape) + ", " + double_literal(a.creation().value) + ")";
      break;
    case OpCode::Iota:
      expr = call("iota") + dtype_enum(a.creation().dtype) + ", " + shape_init(a.creation().shape) +
             ", " + std::to_string(a.creation().dim) + ")";
      break;
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) case OpCode::Name:
#include "spmdrt/unary_math.def"
    case OpCode::Cast:
    case OpCode::StopGradient:
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case OpCode::Name:
#include "spmdrt/binary_math.def"
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
      expr = call("arg_reduce") + "rt::ReduceOp::" + (in.op == OpCode::ArgMax ? "Max" : "Min") +
             ", " + x(0) + ", I64s" + int_list(a.reduce().dims) + ")";
      break;
    case OpCode::Einsum: {
      expr = call("einsum") + cpp_string_literal(a.einsum().spec) + ", std::vector<Tensor>{";
      for (size_t k = 0; k < in.operands.size(); ++k) expr += (k ? ", " : "") + x(k);
      expr += "})";
      break;
    }
    case OpCode::Reshape:
      expr = call("reshape") + x(0) + ", " + shape_init(a.layout().shape) + ")";
      break;
    case OpCode::Constrain:  // a sharding hint (sharded functions are not built): the identity
      expr = x(0);
      break;
    case OpCode::Transpose:
      expr = call("transpose") + x(0) + ", I64s" + int_list(a.layout().dims) + ")";
      break;
    case OpCode::Reverse:
      expr = call("reverse") + x(0) + ", I64s" + int_list(a.layout().dims) + ")";
      break;
    case OpCode::BroadcastTo:
      expr = call("broadcast_to") + x(0) + ", " + shape_init(a.layout().shape) + ")";
      break;
    case OpCode::Slice:
      expr = call("slice") + x(0) + ", I64s" + int_list(a.layout().start) + ", I64s" +
             int_list(a.layout().limit) + ", I64s" + int_list(a.layout().stride) + ")";
      break;
    case OpCode::Pad:
      expr = call("pad_into") + x(0) + ", " + shape_init(a.layout().shape) + ", I64s" +
             int_list(a.layout().start) + ", I64s" + int_list(a.layout().stride) + ")";
      break;
    case OpCode::Concat: {
      expr = call("concat") + "std::vector<Tensor>{";
      for (size_t k = 0; k < in.operands.size(); ++k) expr += (k ? ", " : "") + x(k);
      expr += "}, " + std::to_string(a.layout().dim) + ")";
      break;
    }
    case OpCode::DynamicSlice:
      expr = dynamic_slice(in, pre);
      break;
    case OpCode::DynamicUpdateSlice: {
      // The last use of a carried variable: updated in place when unshared.
      const bool in_place = uses.takes_over[i][0] && mutable_.count(in.operands[0]);
      expr = dynamic_update_slice(in, in_place ? "std::move(" + x(0) + ")" : x(0), pre);
      break;
    }
    case OpCode::Take:
    case OpCode::ScatterAdd: {
      expr = call(in.op == OpCode::Take ? "take" : "scatter_add");
      for (size_t k = 0; k < in.operands.size(); ++k) expr += x(k) + ", ";
      expr += std::to_string(a.gather().axis) +
              ", rt::IndexMode::" + (a.gather().mode == rt::IndexMode::Fill ? "Fill" : "Check") +
              ")";
      break;
    }
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
    case OpCode::PsumScatter:
      expr = collective_expr(f_, in, names_, release_dead_values(), pre);
      break;
    case OpCode::Pbroadcast:
      expr = x(0) + "  /* pbroadcast: invariant -> varying, no data moves */";
      break;
    case OpCode::Pscatter: {
      // This device's block of an invariant value: a local slice, no communication.
      const Type &t = f_.type(in.operands[0]);
      const int64_t n = axes_size(module_.mesh_of(f_), a.collective().axes);
      const int64_t block = a.collective().tiled ? t.shape[a.collective().dim] / n : 1;
      const std::string r = names_.fresh("rank");
      std::vector<int64_t> zeros(t.shape.size(), 0), ones(t.shape.size(), 1);
      const std::string start = names_.fresh("start"), limit = names_.fresh("limit");
      pre = "  const int64_t " + r + " = ctx.axis_index(" + axes +
            ");  // pscatter: no communication\n" + "  I64s " + start + int_list(zeros) + ", " +
            limit + int_list(t.shape) + ";\n  " + start + "[" + std::to_string(a.collective().dim) +
            "] = " + r + " * " + std::to_string(block) + ";\n  " + limit + "[" +
            std::to_string(a.collective().dim) + "] = (" + r + " + 1) * " + std::to_string(block) +
            ";\n";
      expr = call("slice") + x(0) + ", " + start + ", " + limit + ", I64s" + int_list(ones) + ")";
      if (!a.collective().tiled)
        expr = call("reshape") + expr + ", " + shape_init(f_.type(in.results[0]).shape) + ")";
      break;
    }
    case OpCode::AllToAll:
      expr = "ctx.all_to_all(" + x(0) + ", " + axes + ", " + std::to_string(a.collective().dim) +
             ", " + std::to_string(a.collective().concat_dim) + ")";
      break;
    case OpCode::Ppermute:
      expr = "ctx.ppermute(" + x(0) + ", " + axes + ", " + pair_list(a.collective().perm) + ")";
      break;
    case OpCode::AxisIndex:
      expr = "Tensor::scalar(rt::DType::I32, static_cast<double>(ctx.axis_index(" + axes + ")))";
      break;
    case OpCode::RandomKey:
      expr = call("random_key") + x(0) + ")";
      break;
    case OpCode::RandomFoldIn:
      expr = call("random_fold_in") + x(0) + ", " + x(1) + ")";
      break;
    case OpCode::KeyData:
      expr = call("key_data") + x(0) + ")";
      break;
    case OpCode::RandomSplit:
    case OpCode::RandomBits:
    case OpCode::RandomUniform:
    case OpCode::RandomNormal:
    case OpCode::RandomInt: {
      // Every element through spmdrt/random.h: the same bits as `spmdc run`.
      const char *kind = in.op == OpCode::RandomSplit     ? "Split"
                         : in.op == OpCode::RandomBits    ? "Bits"
                         : in.op == OpCode::RandomUniform ? "Uniform"
                         : in.op == OpCode::RandomNormal  ? "Normal"
                                                          : "Int";
      expr = call("random_draw") + "rt::RandomOp::" + kind + ", std::vector<Tensor>{";
      for (size_t k = 0; k < in.operands.size(); ++k) expr += (k ? ", " : "") + x(k);
      expr += "}, " + dtype_enum(a.random().dtype) + ", " + shape_init(a.random().shape) + ", " +
              shape_init(a.random().global) + ")";
      break;
    }
    case OpCode::For:
      throw std::logic_error("backend: `for` is emitted by emit_loop");
    case OpCode::Call:
      throw std::logic_error("backend: call left after inlining");
    case OpCode::DebugPrint: {
      // Every device calls it; device 0 prints (spmdrt/debug_print.h), once
      // per position along the axes its values vary on.
      AxisSet vary;
      for (ir::ValueId o : in.operands) vary = vary | f_.type(o).variance;
      out << "  " << call("debug_print") << "ctx, " << cpp_string_literal(a.print().format)
          << ", std::vector<Tensor>{";
      for (size_t k = 0; k < in.operands.size(); ++k) out << (k ? ", " : "") << x(k);
      out << "}, Axes" << int_list(vary.axes()) << ");\n";
      return;
    }
  }
  out << pre;
  if (release_dead_values())
    for (ir::ValueId r : in.results) releasable_.insert(r);
  out << (release_dead_values() ? "  Tensor " : "  const Tensor ") << names_[in.results.at(0)]
      << " = " << expr << ";  // " << ty(in.results[0]) << "\n";
}

}  // namespace spmd::backend::detail

// interp/interpreter.cpp — running a shmap on one simulated device per mesh position.
//
// run_shmap validates the inputs, then starts the mesh (rt::run_on_mesh). Each
// device shards the global inputs by the in_specs, evaluates the body with a
// DeviceEvaluator (values in a vector indexed by ValueId, each freed after its
// last use, calls of def instances evaluated recursively, loops run as loops
// with their bodies planned like blocks; chains of elementwise ops grouped by
// the backend's fusion plan and run a tile at a time, interp/fused_group.h)
// and leaves its local
// results in a per-device slot. The global results are assembled with
// rt::unshard by the out_specs. With check_replication, every value's hash is
// recorded and compared across devices afterwards (interp/replication.h).
#include "interp/interpreter.h"

#include <map>
#include <mutex>

#include "analysis/fusion.h"
#include "interp/eval_op.h"
#include "spmdrt/debug_print.h"
#include "interp/fused_group.h"
#include "interp/replication.h"
#include "ir/loops.h"
#include "spmdrt/collectives.h"

namespace spmd::interp {
namespace {

using rt::Tensor;

/// How one block (a function body or a loop body) runs: the backend's fusion
/// plan of the block (elementwise chains run as tiled groups,
/// interp/fused_group.h), when each value can be dropped, which operands
/// each instruction may take over, and the plan of every loop in it.
struct BlockPlan {
  fusion::FusionPlan fusion;
  std::vector<ir::ValueId> dead_params;              // block parameters never read
  std::vector<std::vector<ir::ValueId>> free_after;  // per step of fusion.steps
  std::vector<std::vector<bool>> takes_over;         // per instruction, per operand
  std::map<size_t, BlockPlan> loops;                 // by the loop's instruction index
};

/// Every instruction its own step (no fusion).
fusion::FusionPlan unfused_plan(const std::vector<ir::Instr> &body) {
  fusion::FusionPlan plan;
  plan.body = &body;
  plan.group_of_instr.assign(body.size(), -1);
  plan.folded_constant.assign(body.size(), false);
  for (size_t i = 0; i < body.size(); ++i) plan.steps.push_back({false, i});
  return plan;
}

/// The plan of `body`, whose parameters are `params` and whose results
/// (`returns` or a loop's next values) are `kept` to its end. A value defined
/// outside the block is read by the whole loop that holds it: the enclosing
/// block frees it after that loop. Without `fuse` every value is computed
/// (the replication check hashes each one).
BlockPlan plan_block(const ir::Function &f, const std::vector<ir::Instr> &body,
                     const std::vector<ir::ValueId> &params, const std::vector<ir::ValueId> &kept,
                     bool fuse) {
  BlockPlan p;
  p.fusion = fuse ? fusion::plan_fusion(f, body, kept) : unfused_plan(body);
  // A one-op group runs its tensor kernel directly.
  for (fusion::Step &s : p.fusion.steps)
    if (s.is_group && p.fusion.groups[s.index].members.size() == 1)
      s = {false, p.fusion.groups[s.index].members[0]};
  const std::vector<int> at = fusion::step_positions(p.fusion);
  ir::BlockUses uses = ir::block_uses(body, params, kept, at);
  p.free_after.resize(p.fusion.steps.size());
  for (ir::ValueId v : params)
    if (uses.last.at(v) == ir::BlockUses::kUnused) p.dead_params.push_back(v);
  for (size_t i = 0; i < body.size(); ++i)
    for (ir::ValueId r : body[i].results) {
      const int last = uses.last.at(r);
      if (last != ir::BlockUses::kKept)  // unused results go right after their step
        p.free_after[static_cast<size_t>(last >= 0 ? last : at[i])].push_back(r);
    }
  for (ir::ValueId v : params)
    if (uses.last.at(v) >= 0) p.free_after[static_cast<size_t>(uses.last.at(v))].push_back(v);
  p.takes_over = std::move(uses.takes_over);
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i].op != OpCode::For) continue;
    const ir::Region &r = body[i].regions.at(0);
    p.loops[i] = plan_block(f, r.body, r.params, r.yields, fuse);
  }
  return p;
}

/// The plans of every function of the module, computed once per run and
/// shared read-only by all devices.
std::vector<BlockPlan> plan_module(const ir::Module &module, bool fuse) {
  std::vector<BlockPlan> plans;
  for (const ir::Function &f : module.functions) {
    std::vector<ir::ValueId> params;
    for (const ir::Param &p : f.params) params.push_back(p.value);
    plans.push_back(plan_block(f, f.body, params, f.returns, fuse));
  }
  return plans;
}

/// Evaluates functions on one device.
class DeviceEvaluator {
 public:
  DeviceEvaluator(const ir::Module &module, const std::vector<BlockPlan> &plans,
                  rt::DeviceContext &ctx, std::vector<detail::Record> *records, bool check_nan,
                  const ir::Function *entry = nullptr, rt::Checkpointer *checkpoint = nullptr)
      : module_(module),
        plans_(plans),
        ctx_(ctx),
        records_(records),
        check_nan_(check_nan),
        entry_(entry),
        checkpoint_(checkpoint) {}

  std::vector<Tensor> call(int index, std::vector<Tensor> args) {
    const ir::Function &f = module_.functions.at(static_cast<size_t>(index));
    const BlockPlan &plan = plans_[static_cast<size_t>(index)];
    if (args.size() != f.params.size())
      throw std::logic_error("interpreter: `" + f.name + "` called with the wrong arity");
    std::vector<Tensor> env(f.values.size());
    for (size_t k = 0; k < args.size(); ++k) env[f.params[k].value] = std::move(args[k]);
    for (ir::ValueId v : plan.dead_params) env[v] = Tensor();
    run_block(f, f.body, plan, env);
    std::vector<Tensor> results;
    results.reserve(f.returns.size());
    for (ir::ValueId v : f.returns) results.push_back(env[v]);
    return results;
  }

 private:
  void run_block(const ir::Function &f, const std::vector<ir::Instr> &body, const BlockPlan &plan,
                 std::vector<Tensor> &env) {
    const detail::CallFn call_fn = [this](int callee, std::vector<Tensor> a) {
      return call(callee, std::move(a));
    };
    std::vector<Tensor> operands;
    for (size_t s = 0; s < plan.fusion.steps.size(); ++s) {
      const fusion::Step &step = plan.fusion.steps[s];
      if (step.is_group) {
        const fusion::FusedGroup &group = plan.fusion.groups[step.index];
        std::vector<Tensor> out;
        try {
          out = detail::eval_fused_group(f, body, group, env);
        } catch (const RunError &) {
          throw;
        } catch (const rt::RuntimeError &e) {
          // The member that can fail (integer division), else the first.
          size_t at = group.members.front();
          for (size_t m : group.members)
            if (body[m].op == OpCode::Div || body[m].op == OpCode::FloorDiv ||
                body[m].op == OpCode::Rem) {
              at = m;
              break;
            }
          throw RunError(body[at].span, ctx_.device(), e.what());
        }
        for (size_t k = 0; k < out.size(); ++k) env[group.outputs[k]] = std::move(out[k]);
      } else if (body[step.index].op == OpCode::For) {
        run_loop(f, body[step.index], plan.loops.at(step.index), plan.takes_over[step.index], env);
      } else {
        const ir::Instr &instr = body[step.index];
        const std::vector<bool> &takes_over = plan.takes_over[step.index];
        operands.clear();
        for (size_t k = 0; k < instr.operands.size(); ++k) {
          Tensor &slot = env[instr.operands[k]];
          operands.push_back(takes_over[k] ? std::move(slot) : slot);
        }
        std::vector<Tensor> out;
        try {
          if (instr.op == OpCode::DebugPrint)
            rt::debug_print(ctx_, instr.attrs.print().format, operands, print_axes(f, instr));
          else
            out = detail::eval_op(instr, operands, ctx_, call_fn);
        } catch (const RunError &) {
          throw;  // located in the callee already
        } catch (const rt::RuntimeError &e) {
          throw RunError(instr.span, ctx_.device(), e.what());
        }
        operands.clear();
        if (out.size() != instr.results.size())
          throw std::logic_error("interpreter: `" + std::string(op_spelling(instr.op)) +
                                 "` produced the wrong number of results");
        if (check_nan_) check_finite(f, instr, out);
        for (size_t k = 0; k < out.size(); ++k) {
          if (records_)
            records_->push_back({&f, instr.results[k], &instr, detail::hash_tensor(out[k])});
          env[instr.results[k]] = std::move(out[k]);
        }
      }
      for (ir::ValueId v : plan.free_after[s]) env[v] = Tensor();
    }
  }

  /// --check-nan: a RunError at `instr` when a floating result holds a NaN or
  /// an infinity (an invariant one is checked on device 0 only: every device
  /// holds the same bits).
  void check_finite(const ir::Function &f, const ir::Instr &instr, const std::vector<Tensor> &out) {
    if (op_kind(instr.op) == OpKind::Creation || instr.op == OpCode::Pbroadcast) return;
    for (size_t k = 0; k < out.size(); ++k) {
      if (f.type(instr.results[k]).variance.empty() && ctx_.device() != 0) continue;
      const std::string what = rt::first_non_finite(out[k]);
      if (!what.empty())
        throw RunError(instr.span, ctx_.device(),
                       "`" + std::string(op_display_name(instr.op)) + "` made " + what +
                           " (--check-nan)");
    }
  }

  /// The mesh axes a print's values vary along (it prints once per position along them).
  static std::vector<int> print_axes(const ir::Function &f, const ir::Instr &print) {
    AxisSet axes;
    for (ir::ValueId o : print.operands) axes = axes | f.type(o).variance;
    return axes.axes();
  }

  /// `for k in range(...)`: the body once per iteration; the carried values
  /// move from the next values into the parameters, so a carried array the
  /// body updates in place is never shared.
  void run_loop(const ir::Function &f, const ir::Instr &loop, const BlockPlan &plan,
                const std::vector<bool> &takes_over, std::vector<Tensor> &env) {
    const ir::Region &r = loop.regions.at(0);
    std::vector<Tensor> carried;
    carried.reserve(loop.operands.size());
    for (size_t k = 0; k < loop.operands.size(); ++k) {
      Tensor &slot = env[loop.operands[k]];
      carried.push_back(takes_over[k] ? std::move(slot) : slot);
    }
    // A next value may be defined outside the loop (`b = d` in the body): it
    // is read again next iteration, so it is copied, never cleared or shared.
    std::vector<bool> inner(r.yields.size(), false);
    for (size_t k = 0; k < r.yields.size(); ++k) {
      for (ir::ValueId p : r.params) inner[k] = inner[k] || p == r.yields[k];
      for (const ir::Instr &in : r.body)
        for (ir::ValueId v : in.results) inner[k] = inner[k] || v == r.yields[k];
    }
    const int64_t trips = ir::trip_count(loop.attrs);
    // --checkpoint-dir / --resume: the entry function's watched top-level loop.
    rt::Checkpointer *checkpoint = nullptr;
    if (checkpoint_ && &f == entry_ && &loop >= f.body.data() &&
        &loop < f.body.data() + f.body.size()) {
      size_t index = 0;
      for (const ir::Instr *in = f.body.data(); in != &loop; ++in) index += in->op == OpCode::For;
      if (checkpoint_->watches(index)) checkpoint = checkpoint_;
    }
    int64_t first = 0;
    if (checkpoint) {
      std::vector<Tensor *> slots;
      for (Tensor &c : carried) slots.push_back(&c);
      first = checkpoint->begin(ctx_.device(), slots);
    }
    for (int64_t n = first; n < trips; ++n) {
      env[r.params[0]] =
          Tensor::scalar(DType::I32, static_cast<double>(ir::loop_index_at(loop.attrs, n)));
      for (size_t k = 0; k < carried.size(); ++k) env[r.params[k + 1]] = std::move(carried[k]);
      for (ir::ValueId v : plan.dead_params) env[v] = Tensor();
      run_block(f, r.body, plan, env);
      for (size_t k = 0; k < carried.size(); ++k)
        carried[k] = inner[k] ? env[r.yields[k]] : env[r.yields[k]].clone();
      for (size_t k = 0; k < r.yields.size(); ++k)
        if (inner[k]) env[r.yields[k]] = Tensor();
      for (ir::ValueId v : r.params) env[v] = Tensor();
      if (checkpoint) {
        std::vector<const Tensor *> values;
        for (const Tensor &c : carried) values.push_back(&c);
        checkpoint->after(ctx_.device(), n + 1, values);
      }
    }
    for (size_t k = 0; k < carried.size(); ++k) {
      if (records_)
        records_->push_back({&f, loop.results[k], &loop, detail::hash_tensor(carried[k])});
      env[loop.results[k]] = std::move(carried[k]);
    }
  }

  const ir::Module &module_;
  const std::vector<BlockPlan> &plans_;
  rt::DeviceContext &ctx_;
  std::vector<detail::Record> *records_;
  bool check_nan_;
  const ir::Function *entry_;
  rt::Checkpointer *checkpoint_;
};

std::string function_desc(const ir::Function &f) { return "`" + f.name + "`"; }

}  // namespace

std::string check_input(const ir::Module &module, const ir::Function &function, size_t k,
                        rt::DType dtype, const rt::Shape &shape, const std::string &found_in) {
  const ir::Param &p = function.params.at(k);
  const Type &local = function.type(p.value);
  if (dtype == local.dtype && shape == p.global_shape) return {};
  const rt::Mesh &mesh = module.mesh_of(function);
  std::string expected =
      shape_type_str(local.dtype, p.global_shape) + " @ " + spec_str(p.spec, mesh);
  std::string detail = "the global shape";
  if (local.shape != p.global_shape)
    detail += ", split into " + shape_type_str(local.dtype, local.shape) + " per device";
  if (local.dtype == DType::BF16) detail += "; bf16 is stored as f32 in .npy files";
  return "input `" + ir::param_name(function, k) + "` of " + function_desc(function) + " must be " +
         expected + " (" + detail + "), but " + found_in + " holds " + shape_type_str(dtype, shape);
}

std::vector<Tensor> run_shmap(const ir::Module &module, int function_index,
                              const std::vector<Tensor> &inputs, const InterpOptions &options) {
  if (function_index < 0 || static_cast<size_t>(function_index) >= module.functions.size())
    throw std::invalid_argument("run_shmap: no function with index " +
                                std::to_string(function_index));
  const ir::Function &f = module.functions[static_cast<size_t>(function_index)];
  if (f.kind == ir::FunctionKind::Def)
    throw std::invalid_argument("run_shmap: `" + f.name + "` is a def, not a shmap");
  if (inputs.size() != f.params.size())
    throw InputError(function_desc(f) + " takes " + std::to_string(f.params.size()) + " input" +
                     (f.params.size() == 1 ? "" : "s") + " but " + std::to_string(inputs.size()) +
                     " were given");
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].defined()) throw InputError("input `" + ir::param_name(f, k) + "` is missing");
    std::string problem = check_input(module, f, k, inputs[k].dtype(), inputs[k].shape());
    if (!problem.empty()) throw InputError(problem);
  }

  // A sharded function is the unsharded reference: its body runs once, on
  // one device, over the global arrays (its specs only guide `spmdc shard`).
  const bool global_view = f.kind == ir::FunctionKind::Sharded;
  const rt::Mesh one_device({{"device", 1}});
  const rt::Mesh &mesh = global_view ? one_device : module.mesh_of(f);
  auto spec_of = [&](const rt::PartitionSpec &spec, size_t rank) {
    return global_view ? rt::PartitionSpec(rank) : spec;
  };
  const auto devices = static_cast<size_t>(mesh.num_devices());
  const std::vector<BlockPlan> plans =
      plan_module(module, !options.check_replication && !options.check_nan);
  std::vector<std::vector<Tensor>> locals(f.results.size(), std::vector<Tensor>(devices));
  std::vector<std::vector<detail::Record>> records(options.check_replication ? devices : 0);

  std::vector<double> times;
  rt::StepClock clock(devices);
  rt::run_on_mesh(mesh, [&](rt::DeviceContext &ctx) {
    const auto d = static_cast<size_t>(ctx.device());
    // The input blocks are cut on the device's thread: the meter counts them.
    rt::MeteredDevice metered(options.timing, ctx.device(), {});
    std::vector<detail::Record> *rec = options.check_replication ? &records[d] : nullptr;
    std::vector<Tensor> args;
    args.reserve(inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
      args.push_back(rt::shard(mesh, inputs[k],
                               spec_of(f.params[k].spec, f.params[k].global_shape.size()),
                               ctx.device()));
      if (rec) rec->push_back({&f, f.params[k].value, nullptr, detail::hash_tensor(args.back())});
    }
    rt::run_steps(ctx, options.timing, clock, times, [&](int it) {
      DeviceEvaluator eval(module, plans, ctx, it == 0 ? rec : nullptr, options.check_nan, &f,
                           it == 0 ? options.checkpoint : nullptr);
      std::vector<Tensor> out = eval.call(function_index, args);
      if (it == 0)
        for (size_t k = 0; k < out.size(); ++k) locals[k][d] = std::move(out[k]);
    });
  });
  if (options.seconds) *options.seconds = std::move(times);

  if (options.check_replication) detail::check_replication(mesh, records);
  std::vector<Tensor> results;
  results.reserve(f.results.size());
  for (size_t k = 0; k < f.results.size(); ++k)
    results.push_back(
        rt::unshard(mesh, locals[k], spec_of(f.results[k].spec, f.results[k].global_shape.size())));
  return results;
}

}  // namespace spmd::interp

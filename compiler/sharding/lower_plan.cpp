// sharding/lower_plan.cpp — see lower_plan.h.
#include "sharding/lower_plan.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "ir/builder.h"
#include "ops/shape_rules.h"
#include "sharding/emit_reshard.h"
#include "sharding/source_quote.h"

namespace spmd::sharding {
namespace {

class PlanLowerer {
 public:
  PlanLowerer(Problem &p, const Plan &plan, const LowerPlanOptions &options)
      : p_(p), plan_(plan), options_(options), mesh_(p.mesh) {
    out_.meshes.push_back(p.module->meshes.at(static_cast<size_t>(p.flat.mesh)));
    f_.name = options.name.empty() ? p.flat.name : options.name;
    f_.kind = ir::FunctionKind::Shmap;
    f_.mesh = 0;
    f_.span = p.flat.span;
    f_.comment = options.comment;
    f_.auto_pbroadcast = true;  // infer_variance places the pbroadcasts, then they are explicit
  }

  ir::Module run() {
    ir::Builder b(out_, f_);
    builder_ = &b;
    const ir::Function &g = p_.flat;
    for (size_t k = 0; k < g.params.size(); ++k) {
      const ir::Param &gp = g.params[k];
      const Type &t = g.type(gp.value);
      ir::Param param;
      param.global_shape = gp.global_shape;
      param.spec = plan_.params[k].dims;
      param.span = gp.span;
      AxisSet v = plan_.params[k].split_axes();
      param.value = f_.add_value({t.dtype, local_shape(mesh_, t.shape, plan_.params[k]), v},
                                 g.values[static_cast<size_t>(gp.value)].name,
                                 g.values[static_cast<size_t>(gp.value)].span);
      f_.params.push_back(param);
      produced_[gp.value] = {param.value, plan_.params[k]};
    }
    for (size_t i = 0; i < g.body.size(); ++i) {
      const int l = p_.loop_of[i];
      if (l < 0) {
        lower_instr(i);
        continue;
      }
      const ProblemLoop &loop = p_.loops[static_cast<size_t>(l)];
      lower_loop(loop);
      i = static_cast<size_t>(loop.body_end) - 1;
    }
    for (size_t k = 0; k < g.returns.size(); ++k) {
      const ir::Result &gr = g.results[k];
      ir::Result r;
      r.name = gr.name;
      r.global_shape = gr.global_shape;
      r.spec = plan_.results[k].dims;
      r.span = gr.span;
      f_.results.push_back(r);
      std::string what =
          "result " + (gr.name.empty() ? std::to_string(k + 1) : "`" + gr.name + "`");
      f_.returns.push_back(get(g.returns[k], plan_.results[k], plan_.results[k].split_axes(),
                               "for " + what, g.return_span));
    }
    f_.return_span = g.return_span;
    builder_ = nullptr;
    out_.functions.push_back(std::move(f_));

    finish_emitted_module(out_, "shard");
    return std::move(out_);
  }

 private:
  /// `h @ w2` (line 7) — the source text of a global op, for comments.
  std::string quote(SourceSpan span) const {
    if (options_.sources == nullptr || !span.valid()) return "";
    SourceQuote q = quote_source(*options_.sources, span, 40);
    return "`" + q.text + "` (" + q.where + ")";
  }

  std::string describe(size_t instr) const {
    std::string q = quote(p_.flat.body[instr].span);
    return q.empty() ? "`" + std::string(op_display_name(p_.flat.body[instr].op)) + "`" : q;
  }

  ir::ValueId emit(OpCode op, std::vector<ir::ValueId> operands, Attrs attrs, SourceSpan span,
                   std::string comment = {}) {
    ir::BuildError error;
    auto results = builder_->add(op, std::move(operands), std::move(attrs), span, error);
    if (results.size() != 1)
      throw std::logic_error("shard: cannot emit `" + std::string(op_spelling(op)) +
                             "`: " + error.message);
    builder_->body().back().comment = std::move(comment);
    return results[0];
  }

  ir::ValueId constant_i32(int64_t v, SourceSpan span) {
    Attrs a;
    a.creation().dtype = DType::I32;
    a.creation().value = static_cast<double>(v);
    return emit(OpCode::Constant, {}, a, span);
  }

  /// `x` (local type `t`) on the devices with index 0 along `axes`, zeros on
  /// the others: a value counted once in a partial sum over `axes`.
  ir::ValueId keep_on_first(ir::ValueId x, const Type &t, const std::vector<int> &axes,
                            SourceSpan span, std::string comment) {
    Attrs ia;
    ia.collective().axes = axes;
    ir::ValueId index = emit(OpCode::AxisIndex, {}, ia, span);
    ir::ValueId first = emit(OpCode::Eq, {index, constant_i32(0, span)}, {}, span);
    Attrs za;
    za.creation().dtype = t.dtype;
    za.creation().shape = t.shape;
    ir::ValueId zeros = emit(t.shape.empty() ? OpCode::Constant : OpCode::Full, {}, za, span);
    return emit(OpCode::Select, {first, x, zeros}, {}, span, std::move(comment));
  }

  /// A constant (creation op `instr`) made locally in sharding `target`.
  ir::ValueId make_constant(size_t instr, const Sharding &target) {
    const ir::Instr &in = p_.flat.body[instr];
    const Type &t = p_.flat.type(in.results[0]);
    Shape local = local_shape(mesh_, t.shape, target);
    Attrs a = in.attrs;
    if (in.op != OpCode::Constant) a.creation().shape = local;
    ir::ValueId x = emit(in.op, {}, a, in.span);
    const std::string &name = p_.flat.values[static_cast<size_t>(in.results[0])].name;
    if (in.op == OpCode::Iota &&
        !target.dims[static_cast<size_t>(in.attrs.creation().dim)].empty()) {
      // This device's block starts at block_index * local size along the dim.
      const std::vector<int> &axes = target.dims[static_cast<size_t>(in.attrs.creation().dim)];
      Attrs ia;
      ia.collective().axes = axes;
      ir::ValueId index = emit(OpCode::AxisIndex, {}, ia, in.span);
      ir::ValueId offset =
          emit(OpCode::Mul,
               {index, constant_i32(local[static_cast<size_t>(in.attrs.creation().dim)], in.span)},
               {}, in.span);
      if (t.dtype != DType::I32) {
        Attrs ca;
        ca.cast().dtype = t.dtype;
        offset = emit(OpCode::Cast, {offset}, ca, in.span);
      }
      x = emit(OpCode::Add, {x, offset}, {}, in.span,
               "iota's block starts at its index along " + axis_list_str(axes, mesh_));
    }
    if (!target.partial.empty()) {  // a partial sum of c over A
      const std::vector<int> axes = target.partial.axes();
      x = keep_on_first(x, {t.dtype, local, {}}, axes, in.span,
                        "a constant as a partial sum over " + axis_list_str(axes, mesh_));
    }
    f_.values[static_cast<size_t>(x)].name = name;
    return x;
  }

  /// Value `v` of the global function, laid out as `target`, for a consumer
  /// whose result varies along `consumer_varying`.
  ir::ValueId get(ir::ValueId v, const Sharding &target, AxisSet consumer_varying,
                  const std::string &context, SourceSpan span) {
    int prod = p_.producer[static_cast<size_t>(v)];
    if (prod >= 0 && p_.is_creation(prod)) {
      auto key = std::make_tuple(v, target, uint64_t{0});
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
      return cache_[key] = make_constant(static_cast<size_t>(prod), target);
    }
    auto [local, have] = produced_.at(v);
    if (have == target) return local;
    auto key = std::make_tuple(v, target, consumer_varying.bits());
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    const Type &t = p_.flat.type(v);
    ReshardPlan plan = p_.connector->connect(t.shape, t.dtype, have, target);
    if (!plan.possible)
      throw std::logic_error("shard: no reshard from " + to_string(have, mesh_) + " to " +
                             to_string(target, mesh_));
    const std::string &name = p_.flat.values[static_cast<size_t>(v)].name;
    std::string what = (!name.empty() ? "`" + name + "`"
                        : prod >= 0   ? describe(static_cast<size_t>(prod))
                                      : std::string("the value")) +
                       " " + to_string(have, mesh_) + " -> " + to_string(target, mesh_) + " " +
                       context;
    ir::ValueId x = emit_reshard(*builder_, local, plan, consumer_varying, what, name, span);
    cache_[key] = x;
    return x;
  }

  Attrs local_attrs(const ir::Instr &in, const std::vector<Type> &local_operands,
                    const Shape &local_result) const {
    Attrs a = in.attrs;
    switch (in.op) {
      case OpCode::Reshape:
      case OpCode::BroadcastTo:
      case OpCode::DynamicSlice:
      case OpCode::Pad:
        a.layout().shape = local_result;
        break;
      case OpCode::Slice: {
        const Shape &global = p_.flat.type(in.operands[0]).shape;
        for (size_t d = 0; d < global.size(); ++d)
          if (a.layout().start[d] == 0 && a.layout().stride[d] == 1 &&
              a.layout().limit[d] == global[d])
            a.layout().limit[d] = local_operands[0].shape[d];
        break;
      }
      default:
        break;
    }
    return a;
  }

  /// A split random draw draws only this device's block of the global draw:
  /// its attrs get the global shape, its operands the block's offsets
  /// (axis_index along the dimension's axes times the block size; 0 where
  /// the dimension is not split), so every element keeps its global index.
  void add_block_offsets(const ir::Instr &in, const Sharding &layout, const Shape &local,
                         Attrs &attrs, std::vector<ir::ValueId> &operands) {
    attrs.random().shape = local;
    attrs.random().global = p_.flat.type(in.results[0]).shape;
    for (size_t d = 0; d < local.size(); ++d) {
      if (layout.dims[d].empty()) {
        operands.push_back(constant_i32(0, in.span));
        continue;
      }
      Attrs ia;
      ia.collective().axes = layout.dims[d];
      ir::ValueId index = emit(OpCode::AxisIndex, {}, ia, in.span);
      operands.push_back(emit(
          OpCode::Mul, {index, constant_i32(local[d], in.span)}, {}, in.span,
          "the random block starts at its index along " + axis_list_str(layout.dims[d], mesh_)));
    }
  }

  const Strategy &chosen(size_t i) const {
    int choice = plan_.choice.at(i);
    if (choice < 0) throw std::logic_error("shard: an op without a strategy");
    return p_.strategies[i][static_cast<size_t>(choice)];
  }

  /// Operand `k` of instruction `i` as its strategy needs it.
  ir::ValueId get_operand(size_t i, size_t k) {
    const ir::Instr &in = p_.flat.body[i];
    const Strategy &s = chosen(i);
    AxisSet varying;
    for (const Sharding &o : s.operands) varying = varying | o.used();
    return get(in.operands[k], s.operands[k], varying, "for " + describe(i), in.span);
  }

  /// A `for` loop of the sharded function, kept a loop: the values from
  /// before it resharded once, before it; its carried values in the layouts
  /// their carry instructions chose, in and out of every iteration.
  void lower_loop(const ProblemLoop &loop) {
    const ir::Function &g = p_.flat;
    const int id = p_.loop_of[static_cast<size_t>(loop.index)];
    auto from_outside = [&](ir::ValueId v) {
      const int prod = p_.producer[static_cast<size_t>(v)];
      return prod < 0 || (p_.loop_of[static_cast<size_t>(prod)] != id && !p_.is_creation(prod));
    };
    for (int i = loop.body_begin; i < loop.body_end; ++i) {
      if (p_.is_creation(i)) continue;
      const ir::Instr &in = g.body[static_cast<size_t>(i)];
      for (size_t k = 0; k < in.operands.size(); ++k)
        if (from_outside(in.operands[k])) get_operand(static_cast<size_t>(i), k);
    }
    ir::Instr instr = loop.loop;
    instr.operands.clear();
    instr.results.clear();
    instr.regions.assign(1, ir::Region{});
    ir::Region &region = instr.regions[0];
    const ir::Region &global_region = loop.loop.regions.at(0);
    auto new_value = [&](ir::ValueId global, const Sharding &layout) {
      const Type &t = g.type(global);
      const ir::Value &gv = g.values[static_cast<size_t>(global)];
      return f_.add_value({t.dtype, local_shape(mesh_, t.shape, layout), layout.split_axes()},
                          gv.name, gv.span);
    };
    const ir::ValueId k = new_value(global_region.params[0], replicated(0));
    region.params.push_back(k);
    produced_[global_region.params[0]] = {k, replicated(0)};
    // `w` (carried by the loop at line 7)
    auto carried = [&](const ir::Instr &carry) {
      std::string q = quote(carry.span);
      const std::string &name = g.values[static_cast<size_t>(carry.results[0])].name;
      return (name.empty() ? std::string("a value") : "`" + name + "`") + " carried by the loop" +
             (q.empty() ? "" : " " + q);
    };
    std::vector<Sharding> layouts;
    for (int c = loop.first_carry; c < loop.body_begin; ++c) {
      const ir::Instr &carry = g.body[static_cast<size_t>(c)];
      const Sharding &layout = chosen(static_cast<size_t>(c)).results[0];
      layouts.push_back(layout);
      instr.operands.push_back(get(carry.operands[0], layout, layout.split_axes(),
                                   "into " + carried(carry), carry.span));
      if (from_outside(carry.operands[1]))
        get(carry.operands[1], layout, layout.split_axes(), "as the next " + carried(carry),
            carry.span);
      const ir::ValueId param = new_value(carry.results[0], layout);
      region.params.push_back(param);
      produced_[carry.results[0]] = {param, layout};
    }
    // Reshards and constants made inside the body stay inside it.
    auto outer_cache = cache_;
    std::vector<ir::Instr> *outer = builder_->set_body(&region.body);
    for (int i = loop.body_begin; i < loop.body_end; ++i) lower_instr(static_cast<size_t>(i));
    for (int c = loop.first_carry; c < loop.body_begin; ++c) {
      const ir::Instr &carry = g.body[static_cast<size_t>(c)];
      const Sharding &layout = layouts[static_cast<size_t>(c - loop.first_carry)];
      region.yields.push_back(get(carry.operands[1], layout, layout.split_axes(),
                                  "as the next " + carried(carry), carry.span));
    }
    builder_->set_body(outer);
    cache_ = std::move(outer_cache);
    for (int c = loop.first_carry; c < loop.body_begin; ++c) {
      const ir::Instr &carry = g.body[static_cast<size_t>(c)];
      const Sharding &layout = layouts[static_cast<size_t>(c - loop.first_carry)];
      const ir::ValueId result = new_value(carry.results[1], layout);
      instr.results.push_back(result);
      produced_[carry.results[1]] = {result, layout};
    }
    builder_->append(std::move(instr));
  }

  /// take/scatter_add with the indexed axis of x split over axes A (the
  /// vocabulary-parallel embedding): this device holds rows [o, o + n) of the
  /// axis, o = axis_index(A) * n, so it looks up ids - o, reading zeros for the
  /// ids of other blocks (take's partial sum) or dropping their updates.
  void shift_ids_to_block(const ir::Instr &in, const Strategy &s, const Type &local_x,
                          std::vector<ir::ValueId> &locals, Attrs &attrs) {
    const int64_t axis = attrs.gather().axis;
    const std::vector<int> &axes = s.operands[0].dims.at(static_cast<size_t>(axis));
    if (axes.empty()) return;
    Attrs ia;
    ia.collective().axes = axes;
    ir::ValueId index = emit(OpCode::AxisIndex, {}, ia, in.span);
    ir::ValueId offset =
        emit(OpCode::Mul, {index, constant_i32(local_x.shape[static_cast<size_t>(axis)], in.span)},
             {}, in.span);
    ir::ValueId &ids = locals.back();
    ids = emit(
        OpCode::Sub, {ids, offset}, {}, in.span,
        "this device's rows of the table start at its index along " + axis_list_str(axes, mesh_));
    attrs.gather().mode = rt::IndexMode::Fill;
  }

  /// scatter_add with its ids split over axes A (a Sum factor): each device
  /// adds its share of the updates, so the result is a partial sum over A,
  /// and x must count once in it: x on the devices with index 0 along A,
  /// zeros on the others.
  void count_array_once(size_t i, const Strategy &s, const Type &local_x,
                        std::vector<ir::ValueId> &locals) {
    const ir::Instr &in = p_.flat.body[i];
    const ShardingRule &rule = p_.ops[i].rule;
    const std::vector<int> &ids_factors = rule.operand_factors.at(2);
    std::vector<int> axes;
    for (int f : ids_factors) {
      if (f == kNoFactor) continue;
      const std::vector<int> &fa = s.factor_axes[static_cast<size_t>(f)];
      axes.insert(axes.end(), fa.begin(), fa.end());
    }
    if (axes.empty()) return;
    std::sort(axes.begin(), axes.end());
    locals[0] = keep_on_first(locals[0], local_x, axes, in.span,
                              "the updates are split over " + axis_list_str(axes, mesh_) +
                                  ": the array counts once in their partial sums");
  }

  void lower_instr(size_t i) {
    const ir::Instr &in = p_.flat.body[i];
    if (p_.is_creation(static_cast<int>(i))) return;  // made where it is used
    const Strategy &s = chosen(i);
    std::vector<ir::ValueId> locals;
    std::vector<Type> local_types;
    for (size_t k = 0; k < in.operands.size(); ++k) {
      locals.push_back(get_operand(i, k));
      local_types.push_back(f_.type(locals.back()));
    }
    if (in.results.empty()) {  // print: its operands arrive whole (RuleFamily::Print)
      builder_->add_typed(in.op, ir::ValueList(locals.begin(), locals.end()), in.attrs, {},
                          in.span, in.origin);
      return;
    }
    const ir::Value &gv = p_.flat.values[static_cast<size_t>(in.results[0])];
    if (in.op == OpCode::Constrain) {  // the identity: its operand now has the required layout
      produced_[in.results[0]] = {locals[0], s.results[0]};
      return;
    }
    const Type &gt = p_.flat.type(in.results[0]);
    Shape local = local_shape(mesh_, gt.shape, s.results[0]);
    Attrs attrs = local_attrs(in, local_types, local);
    if (in.op == OpCode::Take || in.op == OpCode::ScatterAdd)
      shift_ids_to_block(in, s, local_types[0], locals, attrs);
    if (in.op == OpCode::ScatterAdd) count_array_once(i, s, local_types[0], locals);
    if (op_attr_family(in.op) == AttrFamily::Random && local != gt.shape)
      add_block_offsets(in, s.results[0], local, attrs, locals);
    ir::ValueId x = emit(in.op, locals, std::move(attrs), in.span);
    builder_->body().back().origin = in.origin;
    for (const FinishStep &fs : s.finish) {
      Attrs a;
      a.collective().axes = fs.axes;
      f_.values[static_cast<size_t>(x)].name = gv.name;
      x = emit(fs.op, {x}, a, in.span,
               std::string("completes the ") + (fs.op == OpCode::Pmax ? "max" : "min") + " of " +
                   describe(i) + " over the split reduced dimension");
    }
    f_.values[static_cast<size_t>(x)].name = gv.name;
    produced_[in.results[0]] = {x, s.results[0]};
  }

  Problem &p_;
  const Plan &plan_;
  const LowerPlanOptions &options_;
  const rt::Mesh &mesh_;
  ir::Module out_;
  ir::Function f_;
  ir::Builder *builder_ = nullptr;
  std::map<ir::ValueId, std::pair<ir::ValueId, Sharding>> produced_;
  std::map<std::tuple<ir::ValueId, Sharding, uint64_t>, ir::ValueId> cache_;
};

}  // namespace

ir::Module lower_plan(Problem &p, const Plan &plan, const LowerPlanOptions &options) {
  return PlanLowerer(p, plan, options).run();
}

}  // namespace spmd::sharding

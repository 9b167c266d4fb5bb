// sharding/problem.cpp — see problem.h.
#include "sharding/problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analysis/fusion.h"
#include "ir/loops.h"
#include "pipeline/prepare.h"
#include "sharding/memory_kinds.h"
#include "spmdrt/checked.h"
#include "spmdrt/kernels.h"
#include "support/limits.h"
#include "transforms/unroll_loops.h"

namespace spmd::sharding {

bool Problem::is_creation(int instr) const {
  return op_kind(flat.body.at(static_cast<size_t>(instr)).op) == OpKind::Creation;
}

const ProblemLoop *Problem::carry_loop(int instr) const {
  const int l = loop_of.at(static_cast<size_t>(instr));
  if (l < 0) return nullptr;
  const ProblemLoop &loop = loops[static_cast<size_t>(l)];
  return instr < loop.body_begin ? &loop : nullptr;
}

double Problem::weight(int instr) const {
  const int l = loop_of.at(static_cast<size_t>(instr));
  return l < 0 ? 1.0 : static_cast<double>(loops[static_cast<size_t>(l)].trips);
}

double Problem::use_weight(ir::ValueId v, Use use) const {
  if (use.instr == Use::kReturn) return 1;
  const int l = loop_of.at(static_cast<size_t>(use.instr));
  const int prod = producer[static_cast<size_t>(v)];
  if (l < 0 || prod < 0 || loop_of[static_cast<size_t>(prod)] != l) return 1;
  return static_cast<double>(loops[static_cast<size_t>(l)].trips);
}

namespace {

/// Lists the body of each loop left in p.flat's top level in place, after
/// its index and carry instructions (problem.h).
void list_loops(Problem &p) {
  std::vector<ir::Instr> body;
  for (ir::Instr &in : p.flat.body) {
    if (in.op != OpCode::For) {
      body.push_back(std::move(in));
      p.loop_of.push_back(-1);
      continue;
    }
    const int id = static_cast<int>(p.loops.size());
    auto add = [&](ir::Instr x) {
      body.push_back(std::move(x));
      p.loop_of.push_back(id);
    };
    ir::Region &region = in.regions.at(0);
    ProblemLoop loop;
    loop.trips = ir::trip_count(in.attrs);
    loop.index = static_cast<int>(body.size());
    ir::Instr index;
    index.op = OpCode::For;
    index.span = in.span;
    index.results = {region.params[0]};
    add(std::move(index));
    loop.first_carry = static_cast<int>(body.size());
    for (size_t j = 0; j < in.operands.size(); ++j) {
      ir::Instr carry;
      carry.op = OpCode::For;
      carry.span = in.span;
      carry.operands = {in.operands[j], region.yields[j]};
      carry.results = {region.params[j + 1], in.results[j]};
      add(std::move(carry));
    }
    loop.body_begin = static_cast<int>(body.size());
    for (ir::Instr &b : region.body) add(std::move(b));
    loop.body_end = static_cast<int>(body.size());
    region.body.clear();
    loop.loop = std::move(in);
    p.loops.push_back(std::move(loop));
  }
  p.flat.body = std::move(body);
}

/// The rule of a carry (or index) instruction: the identity on the carried
/// value, as for constrain, for both operands and both results; never a
/// partial sum (a carried value is complete between iterations).
ShardingRule carry_rule(const OpSignature &sig) {
  const Type &t = sig.results.at(0);
  ShardingRule r = sharding_rule(OpCode::Constrain, std::span<const Type>(&t, 1),
                                 std::span<const Type>(&t, 1), Attrs{});
  std::vector<int> dims = r.result_factors.at(0);
  r.operand_factors.assign(sig.operands.size(), dims);
  r.result_factors.assign(sig.results.size(), dims);
  r.linear_operands.assign(sig.operands.size(), false);
  return r;
}

/// Instructions of `body` flattened for sharding, calls inlined (saturating):
/// at the `top` level a loop kept_at_top_level counts its body once, every
/// other loop is unrolled. `sizes` memoises the module's functions (per level).
int64_t flat_size(const ir::Module &module, const std::vector<ir::Instr> &body, bool top,
                  std::map<std::pair<int, bool>, int64_t> &sizes) {
  auto call_size = [&](int callee, bool at_top) -> int64_t {
    if (callee < 0 || static_cast<size_t>(callee) >= module.functions.size()) return 1;
    auto key = std::make_pair(callee, at_top);
    auto it = sizes.find(key);
    if (it != sizes.end()) return it->second;
    sizes[key] = 1;  // (recursion was rejected when lowering)
    int64_t n =
        flat_size(module, module.functions[static_cast<size_t>(callee)].body, at_top, sizes);
    sizes[key] = n;
    return n;
  };
  if (!top)
    return ir::unrolled_size(
        body, [](const ir::Instr &) { return true; },
        [&](int callee) { return call_size(callee, false); });
  int64_t size = 0;
  for (const ir::Instr &in : body) {
    int64_t n = 1;
    if (in.op == OpCode::For && kept_at_top_level(in)) {
      n = rt::saturating_add(1, flat_size(module, in.regions.at(0).body, false, sizes));
    } else if (in.op == OpCode::For) {  // unrolled: its loops land at the top level
      n = rt::saturating_mul(
          ir::trip_count(in.attrs),
          rt::saturating_add(1, flat_size(module, in.regions.at(0).body, true, sizes)));
    } else if (in.op == OpCode::Call) {
      n = call_size(in.attrs.call().callee, true);
    }
    size = rt::saturating_add(size, n);
  }
  return size;
}

std::vector<int> fused_group_ends(const Problem &p, const Plan *plan);

}  // namespace

bool check_problem_size(const ir::Module &module, const ir::Function &function,
                        DiagnosticEngine &diags) {
  std::map<std::pair<int, bool>, int64_t> sizes;
  const int64_t size = flat_size(module, function.body, true, sizes);
  if (size <= kMaxShardedInstructions) return true;
  // Point at the largest top-level loop or call, or inside a loop kept a
  // loop, at the largest loop or call of its body: the one to shrink.
  SourceSpan at = function.span;
  const std::vector<ir::Instr> *body = &function.body;
  for (bool top = true; body != nullptr; top = false) {
    const ir::Instr *largest = nullptr;
    int64_t most = 0;
    for (const ir::Instr &in : *body) {
      const int64_t n = flat_size(module, {in}, top, sizes);
      if ((in.op == OpCode::For || in.op == OpCode::Call) && n > most && in.span.valid()) {
        most = n;
        largest = &in;
      }
    }
    body = nullptr;
    if (largest == nullptr) break;
    at = largest->span;
    if (top && largest->op == OpCode::For && kept_at_top_level(*largest))
      body = &largest->regions.at(0).body;
  }
  diags
      .error("program-too-large", at,
             "sharding `" + function.name +
                 "` inlines its calls and unrolls the loops inside its loops, which " +
                 too_many_instructions(size, kMaxShardedInstructions))
      .fix =
      "shorten the inner loop, or move it into a shmap (shmaps keep every loop as a loop; a "
      "sharded function keeps only its top-level loops)";
  return false;
}

Problem make_problem(const ir::Module &module, const ir::Function &function,
                     const HardwareProfile &profile, const StrategyOptions &options) {
  Problem p;
  p.module = &module;
  // One flat body (the flatten-for-sharding script): calls inlined, loops
  // unrolled but the top-level ones, simplified; those loops' bodies listed
  // after their index and carry instructions.
  p.flat = flatten_for_sharding(module, function);
  list_loops(p);
  p.mesh = module.mesh_of(function);
  p.profile = profile;
  p.connector = std::make_unique<Connector>(p.mesh, profile);
  p.connector->set_deadline(options.deadline);
  const ir::Function &f = p.flat;
  p.producer.assign(f.values.size(), 0);
  p.producer_result.assign(f.values.size(), 0);
  p.uses.assign(f.values.size(), {});
  for (size_t k = 0; k < f.params.size(); ++k)
    p.producer[static_cast<size_t>(f.params[k].value)] = -static_cast<int>(k) - 1;
  // The elementwise ops' fused groups on the global shapes (each op's group,
  // by its last member, or -1), as the memory rows see them: a value made and
  // read only inside its group never goes to memory, so it costs no bytes
  // (OpSignature::fused_operands). -2 marks a value read outside any group or
  // returned.
  // (Only in the cache-aware model: profiles with memory_rates.)
  std::vector<int> group_end(f.body.size(), -1);
  if (!profile.memory_rates.empty()) group_end = fused_group_ends(p, nullptr);
  std::vector<int> made_in(f.values.size(), -1), read_in(f.values.size(), -3);
  for (size_t i = 0; i < f.body.size(); ++i) {
    const int g = group_end[i];
    for (ir::ValueId v : f.body[i].results) made_in[static_cast<size_t>(v)] = g;
    for (ir::ValueId v : f.body[i].operands) {
      int &r = read_in[static_cast<size_t>(v)];
      r = (r == -3 || r == g) && g >= 0 ? g : -2;
    }
  }
  for (ir::ValueId v : f.returns) read_in[static_cast<size_t>(v)] = -2;
  for (const ProblemLoop &l : p.loops)  // the next values of a loop's carries
    for (const ir::Region &r : l.loop.regions)
      for (ir::ValueId v : r.yields) read_in[static_cast<size_t>(v)] = -2;
  for (size_t i = 0; i < f.body.size(); ++i) {
    const ir::Instr &in = f.body[i];
    OpSignature sig;
    sig.op = in.op;
    sig.attrs = in.attrs;
    for (ir::ValueId v : in.operands) sig.operands.push_back(f.type(v));
    for (ir::ValueId v : in.results) sig.results.push_back(f.type(v));
    if (const int g = group_end[i]; g >= 0) {
      for (ir::ValueId v : in.operands)
        sig.fused_operands.push_back(made_in[static_cast<size_t>(v)] == g);
      for (ir::ValueId v : in.results)
        sig.fused_results.push_back(read_in[static_cast<size_t>(v)] == g);
    }
    sig.rule = p.carry_loop(static_cast<int>(i)) != nullptr
                   ? carry_rule(sig)
                   : sharding_rule(in.op, sig.operands, sig.results, in.attrs);
    for (size_t k = 0; k < in.operands.size(); ++k)
      p.uses[static_cast<size_t>(in.operands[k])].push_back(
          {static_cast<int>(i), static_cast<int>(k)});
    for (size_t r = 0; r < in.results.size(); ++r) {
      p.producer[static_cast<size_t>(in.results[r])] = static_cast<int>(i);
      p.producer_result[static_cast<size_t>(in.results[r])] = static_cast<int>(r);
    }
    std::vector<Strategy> strategies;
    if (in.op == OpCode::Constrain) {
      // One strategy: exactly the written spec (its factors are the dimensions).
      Sharding spec = from_spec(in.attrs.constrain().sharding, sig.operands[0].shape.size());
      if (auto s = make_strategy(sig, p.mesh, profile, spec.dims, {}, {false}))
        strategies.push_back(*s);
    } else if (op_kind(in.op) != OpKind::Creation) {
      strategies = enumerate_strategies(sig, p.mesh, profile, options);
      if (strategies.size() >= options.max_candidates)
        p.candidates_capped_at = options.max_candidates;
    }
    options.deadline.check();
    p.ops.push_back(std::move(sig));
    p.strategies.push_back(std::move(strategies));
  }
  for (size_t k = 0; k < f.returns.size(); ++k)
    p.uses[static_cast<size_t>(f.returns[k])].push_back({Use::kReturn, static_cast<int>(k)});
  for (const ir::Param &param : f.params)
    p.param_candidates.push_back(
        param.auto_spec ? all_layouts(p.mesh, param.global_shape, options.all_axis_orders,
                                      options.max_candidates)
                        : std::vector<Sharding>{from_spec(param.spec, param.global_shape.size())});
  for (const auto &layouts : p.param_candidates)
    if (layouts.size() >= options.max_candidates) p.candidates_capped_at = options.max_candidates;
  for (const ir::Result &result : f.results)
    p.result_candidates.push_back(
        result.auto_spec && result.like_param >= 0
            ? p.param_candidates[static_cast<size_t>(result.like_param)]  // position for position
        : result.auto_spec
            ? all_layouts(p.mesh, result.global_shape, options.all_axis_orders,
                          options.max_candidates)
            : std::vector<Sharding>{from_spec(result.spec, result.global_shape.size())});
  for (const auto &layouts : p.result_candidates)
    if (layouts.size() >= options.max_candidates) p.candidates_capped_at = options.max_candidates;
  return p;
}

std::optional<Sharding> value_sharding(const Problem &p, const Plan &plan, ir::ValueId v) {
  int prod = p.producer[static_cast<size_t>(v)];
  if (prod < 0) return plan.params.at(static_cast<size_t>(-prod - 1));
  int choice = plan.choice.at(static_cast<size_t>(prod));
  if (choice < 0) return std::nullopt;
  return p.strategies[static_cast<size_t>(prod)][static_cast<size_t>(choice)].results.at(
      static_cast<size_t>(p.producer_result[static_cast<size_t>(v)]));
}

Sharding requirement(const Problem &p, const Plan &plan, Use use) {
  if (use.instr == Use::kReturn) return plan.results.at(static_cast<size_t>(use.operand));
  int choice = plan.choice.at(static_cast<size_t>(use.instr));
  return p.strategies[static_cast<size_t>(use.instr)][static_cast<size_t>(choice)].operands.at(
      static_cast<size_t>(use.operand));
}

ir::ValueId used_value(const Problem &p, Use use) {
  if (use.instr == Use::kReturn) return p.flat.returns.at(static_cast<size_t>(use.operand));
  return p.flat.body.at(static_cast<size_t>(use.instr))
      .operands.at(static_cast<size_t>(use.operand));
}

AxisSet consumer_varying(const Problem &p, int instr, int strategy) {
  const Strategy &s = p.strategies.at(static_cast<size_t>(instr)).at(static_cast<size_t>(strategy));
  if (p.carry_loop(instr) != nullptr) return s.results.at(0).split_axes();
  AxisSet varying;
  for (const Sharding &o : s.operands) varying = varying | o.used();
  return varying;
}

ReshardKey reshard_key(const Problem &p, const Plan &plan, Use use) {
  Sharding need = requirement(p, plan, use);
  const AxisSet varying =
      use.instr == Use::kReturn
          ? need.split_axes()
          : consumer_varying(p, use.instr, plan.choice.at(static_cast<size_t>(use.instr)));
  return {std::move(need), varying.bits()};
}

void fill_varying_bits(Problem &p) {
  p.varying_bits.resize(p.strategies.size());
  for (size_t i = 0; i < p.strategies.size(); ++i)
    for (size_t s = 0; s < p.strategies[i].size(); ++s)
      p.varying_bits[i].push_back(
          consumer_varying(p, static_cast<int>(i), static_cast<int>(s)).bits());
}

double reshard_seconds(Problem &p, const Plan &plan, ir::ValueId v) {
  const Sharding *have = nullptr;
  const int prod = p.producer[static_cast<size_t>(v)];
  if (prod < 0) {
    have = &plan.params.at(static_cast<size_t>(-prod - 1));
  } else {
    const int choice = plan.choice.at(static_cast<size_t>(prod));
    if (choice < 0) return 0;  // a constant
    have = &p.strategies[static_cast<size_t>(prod)][static_cast<size_t>(choice)].results.at(
        static_cast<size_t>(p.producer_result[static_cast<size_t>(v)]));
  }
  const Type &t = p.type(v);
  double s = 0;
  for_each_reshard(p, plan, v, *have, [&](const Sharding &need, Use u) {
    s += p.use_weight(v, u) * p.connector->seconds(t.shape, t.dtype, *have, need);
  });
  return s;
}

namespace {

/// The fused groups of `p.flat` as analysis/fusion.h forms them: elementwise
/// ops of one shape (in one loop) join the open group, which closes at the
/// first other instruction that reads one of its values, or at an
/// elementwise op of another shape. The shape is the block's under `plan`
/// (what the backends fuse on is the shmap's), the global one without a
/// plan. Per instruction: the index of its group's last member (where the
/// group runs), or -1.
std::vector<int> fused_group_ends(const Problem &p, const Plan *plan) {
  const ir::Function &f = p.flat;
  const int n = static_cast<int>(f.body.size());
  auto shape_of = [&](ir::ValueId v) {
    const Shape &global = f.type(v).shape;
    if (plan == nullptr) return global;
    const std::optional<Sharding> s = value_sharding(p, *plan, v);
    return s ? local_shape(p.mesh, global, *s) : global;
  };
  std::vector<int> group(static_cast<size_t>(n), -1);  // the group's first member
  std::vector<int> end(static_cast<size_t>(n), -1);
  int open = -1;
  std::set<ir::ValueId> members;
  for (int i = 0; i < n; ++i) {
    const ir::Instr &in = f.body[static_cast<size_t>(i)];
    const bool fusable = fusion::is_fusable(in.op) && in.results.size() == 1;
    if (open >= 0) {
      const ir::Instr &first = f.body[static_cast<size_t>(open)];
      bool reads = false;
      for (ir::ValueId o : in.operands) reads = reads || members.count(o);
      const bool joins =
          fusable && p.loop_of[static_cast<size_t>(i)] == p.loop_of[static_cast<size_t>(open)] &&
          shape_of(in.results[0]) == shape_of(first.results[0]);
      if (joins) {
        group[static_cast<size_t>(i)] = open;
        end[static_cast<size_t>(open)] = i;
        members.insert(in.results[0]);
        continue;
      }
      if (reads || fusable) {
        open = -1;
        members.clear();
      }
    }
    if (fusable) {
      open = i;
      group[static_cast<size_t>(i)] = end[static_cast<size_t>(i)] = i;
      members.insert(in.results[0]);
    }
  }
  std::vector<int> at(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i)
    if (group[static_cast<size_t>(i)] >= 0)
      at[static_cast<size_t>(i)] = end[static_cast<size_t>(group[static_cast<size_t>(i)])];
  return at;
}

/// True when `use` needs its value in a layout other than the one the value
/// has under `plan` (lower_plan reshards it first); false for a constant.
bool reshard_needed(const Problem &p, const Plan &plan, Use use) {
  const std::optional<Sharding> have = value_sharding(p, plan, used_value(p, use));
  return have && *have != requirement(p, plan, use);
}

}  // namespace

namespace {

/// live_values and what evaluate() needs besides: each value's last point
/// (its buffer's, for a view) and, per instruction, the values read by the
/// reshards lower_plan makes just before it.
struct Liveness {
  std::vector<std::vector<ir::ValueId>> points;
  std::vector<int> last;
  std::vector<std::vector<ir::ValueId>> reshard_reads;
  std::vector<bool> view;  // a reshape (or hint) sharing its operand's buffer, or its copy's
};

Liveness liveness(const Problem &p, const Plan *plan) {
  const ir::Function &f = p.flat;
  const int n = static_cast<int>(f.body.size());
  // A fused group runs at its last member: its inputs live until then, its
  // outputs from then on, and a value only its own members read stays in
  // registers (never in memory).
  const std::vector<int> group_end = fused_group_ends(p, plan);
  auto runs_at = [&](int i) {
    const int e = group_end[static_cast<size_t>(i)];
    return e >= 0 ? e : i;
  };
  // Under a plan, a reshape (or sharding hint) of a value it needs in the
  // layout the value has is a view of its buffer, as the runtime makes it:
  // no bytes of its own, and its uses keep the buffer alive.
  std::vector<ir::ValueId> buffer(f.values.size());
  for (size_t v = 0; v < buffer.size(); ++v) buffer[v] = static_cast<ir::ValueId>(v);
  std::vector<bool> view(f.values.size(), false);
  if (plan != nullptr)
    for (int i = 0; i < n; ++i) {
      const ir::Instr &in = f.body[static_cast<size_t>(i)];
      if ((in.op != OpCode::Reshape && in.op != OpCode::Constrain) || in.operands.size() != 1 ||
          in.results.size() != 1 || plan->choice[static_cast<size_t>(i)] < 0)
        continue;
      const std::optional<Sharding> have = value_sharding(p, *plan, in.operands[0]);
      if (!have) continue;
      // A view of the resharded copy instead: its uses keep the copy alive
      // (evaluate() extends the copy to the view's last use).
      if (*have == requirement(p, *plan, {i, 0}))
        buffer[static_cast<size_t>(in.results[0])] = buffer[static_cast<size_t>(in.operands[0])];
      view[static_cast<size_t>(in.results[0])] = true;
    }
  std::vector<int> last(f.values.size(), -1);
  std::vector<std::vector<ir::ValueId>> reshard_reads(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    // A value from before a loop that the loop reads lives through all of it.
    const int l = p.loop_of[static_cast<size_t>(i)];
    const ir::Instr &in = f.body[static_cast<size_t>(i)];
    for (size_t k = 0; k < in.operands.size(); ++k) {
      const ir::ValueId v = buffer[static_cast<size_t>(in.operands[k])];
      const int prod = p.producer[static_cast<size_t>(v)];
      const bool outer = l >= 0 && (prod < 0 || p.loop_of[static_cast<size_t>(prod)] != l);
      int &at = last[static_cast<size_t>(v)];
      // Under a plan, an operand needed in another layout is read by its
      // reshard, just before the instruction (the instruction reads the copy).
      const bool resharded =
          plan != nullptr && !outer && reshard_needed(p, *plan, {i, static_cast<int>(k)});
      at = std::max(at, outer       ? p.loops[static_cast<size_t>(l)].body_end - 1
                        : resharded ? i - 1
                                    : runs_at(i));
      if (resharded && prod >= 0) reshard_reads[static_cast<size_t>(i)].push_back(v);
    }
  }
  // A loop's carried values: the next value lives to the end of the body,
  // the loop's result (a carry's second result) from there on.
  std::vector<std::vector<ir::ValueId>> born(static_cast<size_t>(n) + 1);
  for (const ProblemLoop &loop : p.loops)
    for (int c = loop.first_carry; c < loop.body_begin; ++c) {
      const ir::Instr &carry = f.body[static_cast<size_t>(c)];
      int &next = last[static_cast<size_t>(buffer[static_cast<size_t>(carry.operands[1])])];
      next = std::max(next, loop.body_end - 1);
      born[static_cast<size_t>(loop.body_end)].push_back(carry.results[1]);
    }
  for (ir::ValueId v : f.returns) last[static_cast<size_t>(buffer[static_cast<size_t>(v)])] = n;
  for (int i = 0; i < n; ++i) {
    // A constant is made at each use in the layout it needs (problem.h): an
    // array constant (full, iota) is a buffer from where it is made; a
    // scalar one is folded into the loops that read it.
    if (p.is_creation(i) && f.type(f.body[i].results.at(0)).shape.empty()) continue;
    const bool carry = p.carry_loop(i) != nullptr;
    const int e = group_end[static_cast<size_t>(i)];
    for (size_t k = 0; k < f.body[i].results.size(); ++k) {
      const ir::ValueId r = f.body[i].results[k];
      if ((carry && k == 1) || view[static_cast<size_t>(r)]) continue;
      if (e >= 0) {
        bool in_registers = !p.uses[static_cast<size_t>(r)].empty();
        for (const Use &u : p.uses[static_cast<size_t>(r)])
          in_registers = in_registers && u.instr != Use::kReturn &&
                         group_end[static_cast<size_t>(u.instr)] == e;
        if (in_registers) continue;
      }
      born[static_cast<size_t>(runs_at(i))].push_back(r);
    }
  }
  std::vector<std::vector<ir::ValueId>> live(static_cast<size_t>(n));
  std::vector<ir::ValueId> current;
  for (int i = 0; i < n; ++i) {
    for (ir::ValueId r : born[static_cast<size_t>(i)]) current.push_back(r);
    live[static_cast<size_t>(i)] = current;
    std::vector<ir::ValueId> next;
    for (ir::ValueId v : current)
      if (last[static_cast<size_t>(v)] > i) next.push_back(v);
    current = std::move(next);
  }
  return {std::move(live), std::move(last), std::move(reshard_reads), std::move(view)};
}

}  // namespace

std::vector<std::vector<ir::ValueId>> live_values(const Problem &p, const Plan *plan) {
  return liveness(p, plan).points;
}

PlanCost evaluate(Problem &p, const Plan &plan) {
  PlanCost c;
  const ir::Function &f = p.flat;
  for (size_t i = 0; i < f.body.size(); ++i) {
    int choice = plan.choice[i];
    if (choice < 0) continue;
    const Strategy &s = p.strategies[i][static_cast<size_t>(choice)];
    const double w = p.weight(static_cast<int>(i));
    c.compute_s += w * s.compute_s;
    c.finish_s += w * s.finish_s;
    c.collectives += static_cast<int64_t>(w) * static_cast<int64_t>(s.finish.size());
  }
  // Each distinct (value, ReshardKey) is resharded once (per iteration of
  // the loop holding both), as lower_plan emits it.
  for (size_t v = 0; v < p.uses.size(); ++v) {
    auto have = value_sharding(p, plan, static_cast<ir::ValueId>(v));
    if (!have) continue;  // constants are made where they are needed
    for_each_reshard(p, plan, static_cast<ir::ValueId>(v), *have, [&](const Sharding &need, Use u) {
      const Type &t = p.type(static_cast<ir::ValueId>(v));
      ReshardPlan r = p.connector->connect(t.shape, t.dtype, *have, need);
      if (!r.possible)
        c.reshard_s = HUGE_VAL;  // e.g. a complete value where a partial one is needed
      const double w = p.use_weight(static_cast<ir::ValueId>(v), u);
      c.reshard_s += w * r.seconds;
      c.reshard_bytes += w * r.moved_bytes;
      c.collectives += static_cast<int64_t>(w) * r.collectives();
    });
  }
  if (p.memory_kinds.empty())
    for (MemoryKind k : classify_values(p)) p.memory_kinds.push_back(static_cast<uint8_t>(k));
  for (size_t k = 0; k < f.params.size(); ++k) {
    const Type &t = f.type(f.params[k].value);
    const double b = local_bytes(p.mesh, t.shape, t.dtype, plan.params[k]);
    c.param_bytes += b;
    c.peak_by_kind[p.memory_kinds[static_cast<size_t>(f.params[k].value)]] += b;
  }
  // A resharded copy of a value (one per distinct layout needed) is made
  // just before its first use in that layout, beside the value (which dies
  // there unless read later), and lives until its last reader runs (a fused
  // group's: where the group runs); a value from before a loop is resharded
  // before it, and the copy lives through the loop. Copies count as
  // temporaries.
  const Liveness live = liveness(p, &plan);
  const auto &points = live.points;
  const std::vector<int> group_end = fused_group_ends(p, &plan);
  const int n = static_cast<int>(f.body.size());
  std::vector<double> copies(static_cast<size_t>(n) + 1, 0.0);  // [n]: the results' reshards
  for (size_t v = 0; v < p.uses.size(); ++v) {
    auto have = value_sharding(p, plan, static_cast<ir::ValueId>(v));
    if (!have) continue;
    std::map<Sharding, std::pair<int, int>> spans;  // needed layout -> first, last point
    for (const Use &u : p.uses[v]) {
      Sharding need = requirement(p, plan, u);
      if (need == *have) continue;
      int from = n, to = n;  // a result: resharded at the end, after the last instruction
      if (u.instr != Use::kReturn) {
        from = u.instr;
        const int e = group_end[static_cast<size_t>(u.instr)];
        to = e >= 0 ? e : u.instr;
        const ir::Instr &reader = f.body[static_cast<size_t>(u.instr)];
        if (reader.results.size() == 1 && live.view[static_cast<size_t>(reader.results[0])])
          to = std::max(to, live.last[static_cast<size_t>(reader.results[0])]);
        const int l = p.loop_of[static_cast<size_t>(u.instr)];
        const int prod = p.producer[v];
        if (l >= 0 && (prod < 0 || p.loop_of[static_cast<size_t>(prod)] != l)) {
          from = p.loops[static_cast<size_t>(l)].index;
          to = p.loops[static_cast<size_t>(l)].body_end - 1;
        }
      }
      auto [it, fresh] = spans.emplace(need, std::pair{from, to});
      if (!fresh) it->second = {std::min(it->second.first, from), std::max(it->second.second, to)};
    }
    const Type &t = p.type(static_cast<ir::ValueId>(v));
    for (const auto &[need, span] : spans) {
      const double b = local_bytes(p.mesh, t.shape, t.dtype, need);
      for (int i = std::max(span.first, 0); i <= span.second && i <= n; ++i)
        copies[static_cast<size_t>(i)] += b;
    }
  }
  // Each value's bytes under the plan, computed once: a value is live at many
  // points (a training step of 4,000 ops has ~4,000 points of a few hundred
  // values each). A constant (no layout of its own) in the layout its first
  // use needs, 0 if nothing reads it.
  std::vector<double> value_bytes(p.uses.size(), -1.0);
  auto bytes_of = [&](ir::ValueId v) {
    double &b = value_bytes[static_cast<size_t>(v)];
    if (b < 0) {
      std::optional<Sharding> s = value_sharding(p, plan, v);
      if (!s && !p.uses[static_cast<size_t>(v)].empty())
        s = requirement(p, plan, p.uses[static_cast<size_t>(v)].front());
      b = s ? local_bytes(p.mesh, p.type(v).shape, p.type(v).dtype, *s) : 0.0;
    }
    return b;
  };
  // What a kernel allocates beyond its result while it runs, at its point
  // (scratch_bytes). Scratch counts as temporaries.
  std::vector<double> scratch(static_cast<size_t>(n), 0.0);
  for (int i = 0; i < n; ++i)
    if (plan.choice[static_cast<size_t>(i)] >= 0)
      scratch[static_cast<size_t>(i)] =
          cached_scratch_bytes(p, i, plan.choice[static_cast<size_t>(i)]);
  // Two moments per instruction: just before it, when its operands'
  // reshards run (what lives on past the previous point, the values they
  // read, the copies), and after it (the values live at its point, the
  // copies, its scratch).
  // After the last instruction (i == n), the results' reshards: the
  // returned values and their copies.
  auto before = [&](int i) {
    std::vector<ir::ValueId> values;
    if (i > 0)
      for (ir::ValueId v : points[static_cast<size_t>(i - 1)])
        if (live.last[static_cast<size_t>(v)] >= i) values.push_back(v);
    if (i == n) return values;
    for (ir::ValueId v : live.reshard_reads[static_cast<size_t>(i)])
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    return values;
  };
  // What the search's memory rows count (problem.h): the live values fused
  // by global shapes, views as values of their own, no copies; constants
  // and scratch as here.
  double row_peak = 0;
  {
    const std::vector<std::vector<ir::ValueId>> &rows = memory_rows(p);
    for (size_t i = 0; i < rows.size(); ++i) {
      double bytes = scratch[i];
      for (ir::ValueId v : rows[i]) bytes += bytes_of(v);
      row_peak = std::max(row_peak, bytes);
    }
  }
  double peak = 0;
  int at_peak = -1;
  bool peak_before = false;
  for (int i = 0; i <= n; ++i) {
    const auto at = static_cast<size_t>(i);
    if (i == n) {
      if (copies[at] == 0) break;
      double end = copies[at];
      for (ir::ValueId v : before(n)) end += bytes_of(v);
      if (at_peak < 0 || end > peak) {
        at_peak = n;
        peak_before = true;
        peak = end;
      }
      break;
    }
    double bytes = copies[at] + scratch[at];
    for (ir::ValueId v : points[at]) bytes += bytes_of(v);
    if (at_peak < 0 || bytes > peak) {
      at_peak = i;
      peak_before = false;
      peak = bytes;
    }
    if (live.reshard_reads[at].empty()) continue;
    double pre = copies[at];
    for (ir::ValueId v : before(i)) pre += bytes_of(v);
    if (pre > peak) {
      at_peak = i;
      peak_before = true;
      peak = pre;
    }
  }
  c.row_bytes = c.param_bytes + row_peak;
  if (at_peak >= 0) {
    const auto at = static_cast<size_t>(at_peak);
    c.peak_by_kind[static_cast<size_t>(MemoryKind::Temporaries)] +=
        copies[at] + (peak_before ? 0.0 : scratch[at]);  // (no scratch at n: peak_before)
    for (ir::ValueId v : peak_before ? before(at_peak) : points[at])
      c.peak_by_kind[p.memory_kinds[static_cast<size_t>(v)]] += bytes_of(v);
  }
  c.peak_bytes = c.param_bytes + peak;
  return c;
}

double cached_scratch_bytes(Problem &p, int instr, int strategy) {
  // (Propagation appends strategies to an op's list: the cache grows with it.)
  if (p.scratch.size() < p.strategies.size()) p.scratch.resize(p.strategies.size());
  std::vector<double> &known = p.scratch.at(static_cast<size_t>(instr));
  const size_t listed = p.strategies[static_cast<size_t>(instr)].size();
  if (known.size() < listed) known.resize(listed, -1);
  double &b = known.at(static_cast<size_t>(strategy));
  if (b < 0) b = scratch_bytes(p, instr, strategy);
  return b;
}

const std::vector<std::vector<ir::ValueId>> &memory_rows(Problem &p) {
  if (!p.row_points) p.row_points = live_values(p);
  return *p.row_points;
}

double scratch_bytes(const Problem &p, int instr, int strategy) {
  const ir::Instr &in = p.flat.body.at(static_cast<size_t>(instr));
  if (in.op != OpCode::Einsum) return 0;
  const Strategy &s = p.strategies.at(static_cast<size_t>(instr)).at(static_cast<size_t>(strategy));
  std::vector<Shape> shapes;
  for (size_t k = 0; k < in.operands.size(); ++k)
    shapes.push_back(local_shape(p.mesh, p.type(in.operands[k]).shape, s.operands.at(k)));
  return static_cast<double>(
      rt::einsum_scratch_bytes(in.attrs.einsum().spec, shapes, p.type(in.operands.at(0)).dtype));
}

}  // namespace spmd::sharding

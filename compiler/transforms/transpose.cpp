// transforms/transpose.cpp — see transpose.h. Rules are in transforms/rules/
// (apply_transpose_rule, transpose_rules.h); loops are transposed here (see
// "Loops" in transpose.h).
#include "transforms/transpose.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/loops.h"
#include "ir/value_map.h"
#include "ops/op_info.h"
#include "transforms/transpose_rules.h"

namespace spmd {
namespace {

constexpr ir::ValueId kNoSeed = -2;  // seed with the constant 1 (grad)

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

using Cotangents = std::unordered_map<ir::ValueId, ir::ValueId>;  // f value -> its ct in out

/// What the forward pass prepared for the backward pass of one loop: the
/// body of the backward loop, built while its forward loop was emitted (so
/// the values it needs from the forward loop could be stacked or recomputed).
struct BackwardLoop {
  std::vector<size_t> linear_carries;   // indices of the loop's linear carried values
  std::vector<ir::ValueId> captured;    // linear values from outside the loop read in it
  std::vector<const ir::Instr *> sunk;  // before the loop, transposed in the backward body
  ir::Region region;                    // (k, ct of each linear carry, ct sum of each captured)
  Attrs attrs;                          // the range reversed
};

class Transposer {
 public:
  Transposer(const ir::Module &module, const ir::Function &f, const TransposeSpec &spec,
             ir::Function &out)
      : f_(f),
        spec_(spec),
        out_(out),
        e_(module, out),
        linear_(f.values.size(), false),
        zero_(f.values.size(), false) {
    map_.reserve(f.values.size());
  }

  // ---------------------------------------------------------------- 1. linearity

  void mark_param(ir::ValueId v, bool linear) { linear_[v] = linear; }
  bool linear(ir::ValueId v) const { return linear_[v]; }

  /// Marks the values of `body` that depend on a linear value; with `check`,
  /// throws TransformError "not-linear" at the first op that is not linear in
  /// them (a loop's fixpoint runs its body unchecked until it settles).
  void classify(const std::vector<ir::Instr> &body, bool check = true) {
    for (const ir::Instr &in : body) {
      if ((in.op == OpCode::Constant || in.op == OpCode::Full) && in.attrs.creation().value == 0.0)
        zero_[in.results[0]] = true;
      if (in.op == OpCode::For) {
        classify_loop(in, check);
        continue;
      }
      bool any = false;
      for (ir::ValueId o : in.operands) any = any || linear_[o];
      if (!any) continue;
      if (check) {
        // (Buffers reused from one instruction to the next.)
        lin_ops_.clear();
        zeros_.clear();
        for (ir::ValueId o : in.operands) {
          lin_ops_.push_back(linear_[o]);
          zeros_.push_back(zero_[o]);
        }
        if (auto problem = linearity_problem(in, lin_ops_, zeros_))
          throw TransformError("not-linear", in.span, *problem);
      }
      for (ir::ValueId r : in.results) linear_[r] = true;
    }
  }

  /// A carried value is linear when its initial value is, or (a fixpoint)
  /// when its next value is; it must then start and continue linear (or zero).
  void classify_loop(const ir::Instr &loop, bool check) {
    const ir::Region &r = loop.regions.at(0);
    const size_t n = loop.operands.size();
    std::vector<bool> lin(n);
    for (size_t k = 0; k < n; ++k) lin[k] = linear_[loop.operands[k]];
    for (;;) {  // (linear values only grow, so this ends)
      for (size_t k = 0; k < n; ++k) linear_[r.params[k + 1]] = lin[k];
      classify(r.body, false);
      bool changed = false;
      for (size_t k = 0; k < n; ++k)
        if (!lin[k] && linear_[r.yields[k]]) lin[k] = changed = true;
      if (!changed) break;
    }
    if (check) classify(r.body, true);
    for (size_t k = 0; k < n; ++k) {
      if (!lin[k]) continue;
      const std::string name = f_.values[r.params[k + 1]].name;
      const std::string what = name.empty() ? "a carried value" : "carried `" + name + "`";
      if (check && !linear_[loop.operands[k]] && !zero_[loop.operands[k]])
        throw TransformError("not-linear", loop.span,
                             "the loop's " + what +
                                 " depends on the transposed inputs, but it starts from a value "
                                 "that does not: the function is affine, not linear");
      if (check && !linear_[r.yields[k]] && !zero_[r.yields[k]])
        throw TransformError("not-linear", loop.span,
                             "the loop's " + what +
                                 " depends on the transposed inputs, but an iteration sets it to "
                                 "a value that does not: the function is affine, not linear");
      linear_[loop.results[k]] = true;
    }
  }

  // ---------------------------------------------------------------- 2. forward

  /// Copies the constant instructions of `body` (those that depend on no
  /// linear value) to the current output body: the values the backward pass
  /// reads. A loop keeps its constant carried values here, and its backward
  /// body is prepared (forward_loop).
  void forward(const std::vector<ir::Instr> &body) {
    for (size_t at = 0; at < body.size(); ++at) {
      const ir::Instr &in = body[at];
      if (in.op == OpCode::For) {
        forward_loop(body, at);
        continue;
      }
      if (!in.results.empty() && linear_[in.results[0]]) continue;
      // A print stays in the forward pass when it prints only values that do
      // not depend on the transposed inputs (a grad prints its primal values
      // once, as JAX does); a print of a linear value has no place in the
      // transposed program and is dropped.
      if (op_has_effect(in.op) &&
          std::any_of(in.operands.begin(), in.operands.end(), [&](ir::ValueId o) { return linear_[o]; }))
        continue;
      ir::Instr copy = in;
      for (auto &o : copy.operands) o = map_.at(o);
      copy.results.clear();
      for (ir::ValueId r : in.results) copy.results.push_back(map_[r] = fresh(r));
      e_.append(std::move(copy));
    }
  }

  ir::ValueId map(ir::ValueId v) const { return map_.at(v); }
  void map_param(ir::ValueId v, ir::ValueId to) { map_[v] = to; }

  // ---------------------------------------------------------------- 3. backward

  /// Walks `body` backwards, giving each linear operand of each instruction
  /// its cotangent (summed over uses) in `ct`; emits into the current body.
  void backward(const std::vector<ir::Instr> &body, Cotangents &ct) {
    for (size_t i = body.size(); i-- > 0;) {
      const ir::Instr &in = body[i];
      if (in.op == OpCode::For) {
        backward_loop(in, ct);
        continue;
      }
      if (in.results.empty() || !linear_[in.results[0]]) continue;
      auto it = ct.find(in.results[0]);
      if (it == ct.end()) continue;  // zero cotangent
      transpose_instr(in, it->second, ct);
    }
  }

  /// Gives each linear operand of `in` its share of `in`'s cotangent `c_in`.
  void transpose_instr(const ir::Instr &in, ir::ValueId c_in, Cotangents &ct) {
    // The rule's input, in buffers reused from one instruction to the next
    // (copy-assigning a Type reuses its shape's storage).
    const size_t n = in.operands.size();
    rule_constants_.resize(n);
    rule_types_.resize(n);
    rule_linear_.resize(n);
    for (size_t k = 0; k < n; ++k) {
      const ir::ValueId o = in.operands[k];
      rule_linear_[k] = linear_[o] && !zero_[o];
      rule_constants_[k] = linear_[o] ? std::nullopt : std::optional(map_.at(o));
      rule_types_[k] = f_.type(o);
    }
    TransposeRuleInput rule{in, rule_constants_, rule_types_, rule_linear_, c_in};
    const auto first_new = static_cast<ir::ValueId>(out_.values.size());
    for (auto [k, c] : apply_transpose_rule(e_, rule)) {
      if (c >= first_new) e_.set_name(c, cotangent_name(f_.values[in.operands[k]].name));
      accumulate(ct, in.operands[k], c);
    }
  }

  void accumulate(Cotangents &ct, ir::ValueId v, ir::ValueId c) {
    auto it = ct.find(v);
    if (it == ct.end()) {
      ct[v] = c;
    } else {
      it->second = e_.add(it->second, c);
      e_.set_name(it->second, cotangent_name(f_.values[v].name));
    }
  }

  Emitter &emitter() { return e_; }

 private:
  ir::ValueId fresh(ir::ValueId v, const std::string &name) {
    const ir::Value &old = f_.values[v];
    return out_.add_value(old.type, name, old.span);
  }
  ir::ValueId fresh(ir::ValueId v) { return fresh(v, f_.values[v].name); }

  /// A loop is split in two. The forward loop carries the constant values
  /// (and stacks what the backward pass needs, see residuals()); the
  /// backward loop, built here and emitted by backward_loop(), runs the range
  /// backwards carrying the cotangents of the linear carried values and the
  /// sums of the cotangents of the linear values the body reads from outside.
  void forward_loop(const std::vector<ir::Instr> &body, size_t at) {
    const ir::Instr &loop = body[at];
    const ir::Region &r = loop.regions.at(0);
    ir::Instr fwd;
    fwd.op = OpCode::For;
    fwd.attrs = loop.attrs;
    fwd.span = loop.span;
    fwd.origin = ir::Origin::Transform;
    ir::Region fr;
    fr.params.push_back(map_[r.params[0]] = fresh(r.params[0]));
    std::vector<size_t> constant_carries;
    BackwardLoop b;
    for (size_t k = 0; k < loop.operands.size(); ++k) {
      if (linear_[loop.results[k]]) {
        b.linear_carries.push_back(k);
        continue;
      }
      constant_carries.push_back(k);
      fwd.operands.push_back(map_.at(loop.operands[k]));
      fr.params.push_back(map_[r.params[k + 1]] = fresh(r.params[k + 1]));
    }
    std::vector<ir::Instr> *outer = e_.set_body(&fr.body);  // the body `fwd` will join
    forward(r.body);
    e_.set_body(outer);
    for (size_t k : constant_carries) {
      fr.yields.push_back(map_.at(r.yields[k]));
      fwd.results.push_back(map_[loop.results[k]] = fresh(loop.results[k]));
    }
    fwd.regions.push_back(std::move(fr));
    if (!b.linear_carries.empty()) {
      for (ir::ValueId v : ir::captured_values(r))
        if (linear_[v]) capture(b, v, body, at);
      b.attrs = reversed(loop.attrs);
      build_backward_body(loop, fwd, b);
      residuals(fwd, b, outer);
      backward_loops_[&loop] = std::move(b);
    }
    e_.append(std::move(fwd));
  }

  /// Adds linear value `c`, read in the loop `body[at]`, to the values whose
  /// cotangents the backward loop sums. When c = op(x) is a local linear op
  /// (reshape, sum, broadcast_to) just for this loop, and x is read again
  /// after the loop, the op is transposed in the backward body instead and
  /// the loop sums x's cotangent, starting from its cotangent so far: the
  /// transpose of a loop that adds a hoisted `sum(x)` to a carry from zeros
  /// then adds the broadcast x to a carry that starts from x's other
  /// cotangent, as the loop transposed had it (transposing twice gives the
  /// program back).
  void capture(BackwardLoop &b, ir::ValueId c, const std::vector<ir::Instr> &body, size_t at) {
    auto add = [&](ir::ValueId v) {
      if (std::find(b.captured.begin(), b.captured.end(), v) == b.captured.end())
        b.captured.push_back(v);
    };
    if (&body != &f_.body) return add(c);  // (a loop body's yields are not looked at)
    const ir::Instr *d = nullptr;
    for (size_t i = 0; i < at && !d; ++i)
      if (body[i].results.size() == 1 && body[i].results[0] == c) d = &body[i];
    if (!d ||
        (d->op != OpCode::Reshape && d->op != OpCode::ReduceSum && d->op != OpCode::BroadcastTo))
      return add(c);
    const ir::ValueId x = d->operands[0];
    bool later = false, elsewhere = false;  // x read after the loop; c read outside it
    auto reads = [](const ir::Instr &in, ir::ValueId v) {
      if (std::find(in.operands.begin(), in.operands.end(), v) != in.operands.end()) return true;
      for (const ir::Region &rr : in.regions) {
        const auto cap = ir::captured_values(rr);
        if (std::find(cap.begin(), cap.end(), v) != cap.end()) return true;
      }
      return false;
    };
    for (size_t i = 0; i < body.size(); ++i) {
      if (i == at) continue;
      elsewhere = elsewhere || reads(body[i], c);
      later = later || (i > at && reads(body[i], x));
    }
    if (&body == &f_.body)
      for (ir::ValueId r : f_.returns) {
        elsewhere = elsewhere || r == c;
        later = later || r == x;
      }
    if (!later || elsewhere || !linear_[x] || zero_[x]) return add(c);
    b.sunk.push_back(d);
    add(x);
  }

  static Attrs reversed(const Attrs &a) {
    Attrs rev = a;
    const int64_t n = ir::trip_count(a);
    rev.loop().start = ir::loop_index_at(a, n - 1);  // the last index first
    rev.loop().stop = a.loop().start - a.loop().step;
    rev.loop().step = -a.loop().step;
    return rev;
  }

  /// The backward body of `loop`, reading the forward loop's values
  /// (`fwd`'s region) directly; residuals() makes it read stacks or
  /// recomputed copies instead.
  void build_backward_body(const ir::Instr &loop, const ir::Instr &fwd, BackwardLoop &b) {
    const ir::Region &r = loop.regions.at(0);
    ir::Region &br = b.region;
    const ir::ValueId fwd_index = fwd.regions[0].params[0];
    br.params.push_back(out_.add_value(out_.type(fwd_index), out_.values[fwd_index].name,
                                       out_.values[fwd_index].span));
    Cotangents ct;  // the body's own: outside values' cotangents go to the sums
    std::vector<ir::ValueId> ct_params;
    for (size_t k : b.linear_carries) {
      const ir::ValueId p = r.params[k + 1];
      ct_params.push_back(fresh(p, cotangent_name(f_.values[p].name)));
      br.params.push_back(ct_params.back());
    }
    for (ir::ValueId c : b.captured)
      br.params.push_back(fresh(c, cotangent_name(f_.values[c].name)));
    std::vector<ir::Instr> *outer = e_.set_body(&br.body);
    // The next values' cotangents are the carried cotangents.
    for (size_t j = 0; j < b.linear_carries.size(); ++j) {
      const ir::ValueId y = r.yields[b.linear_carries[j]];
      if (linear_[y]) accumulate(ct, y, ct_params[j]);
    }
    backward(r.body, ct);
    for (size_t s = b.sunk.size(); s-- > 0;) {
      auto it = ct.find(b.sunk[s]->results[0]);
      if (it != ct.end()) transpose_instr(*b.sunk[s], it->second, ct);
    }
    for (size_t k : b.linear_carries) {
      auto it = ct.find(r.params[k + 1]);
      br.yields.push_back(it != ct.end() ? it->second : e_.zeros(f_.type(r.params[k + 1])));
    }
    for (size_t j = 0; j < b.captured.size(); ++j) {
      const ir::ValueId sum = br.params[1 + b.linear_carries.size() + j];
      auto it = ct.find(b.captured[j]);
      br.yields.push_back(it == ct.end() ? sum : e_.add(sum, it->second));
      e_.set_name(br.yields.back(), cotangent_name(f_.values[b.captured[j]].name));
    }
    e_.set_body(outer);
  }

  /// The backward body reads values of the forward loop's body. Those that do
  /// not depend on a constant carried value or on communication (the index,
  /// values read from outside, constants, what is computed locally from
  /// them) are recomputed at the head of the backward body; the others are
  /// saved once per iteration in a stack — a carried array of
  /// [iterations, ...] filled with dynamic_update_slice — and read back with
  /// dynamic_slice. With [[remat]] (or --remat) only the constant carried
  /// values are stacked and everything else is recomputed from them,
  /// collectives included.
  void residuals(ir::Instr &fwd, BackwardLoop &b, std::vector<ir::Instr> *outer_body) {
    ir::Region &fr = fwd.regions[0];
    ir::Region &br = b.region;
    const bool remat = spec_.remat || fwd.attrs.loop().remat;
    // Values of the forward region, and which depend on a constant carry.
    std::unordered_map<ir::ValueId, const ir::Instr *> def;
    std::unordered_set<ir::ValueId> carried_param(fr.params.begin() + 1, fr.params.end());
    std::unordered_set<ir::ValueId> region(fr.params.begin(), fr.params.end());
    std::unordered_set<ir::ValueId> depends(carried_param);
    for (const ir::Instr &in : fr.body) {
      bool dep = communicates(in);  // saved rather than communicated twice
      for (ir::ValueId o : in.operands) dep = dep || depends.count(o);
      for (const ir::Region &rr : in.regions)
        for (ir::ValueId v : ir::captured_values(rr)) dep = dep || depends.count(v);
      for (ir::ValueId res : in.results) {
        def[res] = &in;
        region.insert(res);
        if (dep) depends.insert(res);
      }
    }
    // What the backward body needs, and how it gets each value.
    std::unordered_set<ir::ValueId> clone, stack;
    std::vector<ir::ValueId> work;
    for (ir::ValueId v : ir::captured_values(br))
      if (region.count(v)) work.push_back(v);
    while (!work.empty()) {
      const ir::ValueId v = work.back();
      work.pop_back();
      if (v == fr.params[0] || clone.count(v) || stack.count(v)) continue;
      if (remat ? carried_param.count(v) > 0 : depends.count(v) > 0) {
        stack.insert(v);
        continue;
      }
      clone.insert(v);
      const ir::Instr &in = *def.at(v);
      for (ir::ValueId o : in.operands)
        if (region.count(o)) work.push_back(o);
      for (const ir::Region &rr : in.regions)
        for (ir::ValueId c : ir::captured_values(rr))
          if (region.count(c)) work.push_back(c);
    }
    // The head of the backward body: stack reads, then the recomputed values.
    std::vector<ir::Instr> head;
    ir::ValueMap<ir::ValueId> to_backward;
    to_backward[fr.params[0]] = br.params[0];
    std::vector<ir::Instr> *outer = e_.set_body(&head);
    if (!stack.empty()) {
      std::vector<ir::ValueId> order;  // deterministic: region order
      for (ir::ValueId p : fr.params)
        if (stack.count(p)) order.push_back(p);
      for (const ir::Instr &in : fr.body)
        for (ir::ValueId res : in.results)
          if (stack.count(res)) order.push_back(res);
      const ir::ValueId row_b = iteration(br.params[0], fwd.attrs);
      for (ir::ValueId v : order)
        to_backward[v] = read_row(add_stack(fwd, v, outer_body), row_b, v);
    }
    e_.set_body(&head);
    for (const ir::Instr &in : fr.body) {
      bool needed = false;
      for (ir::ValueId res : in.results) needed = needed || clone.count(res);
      if (needed) ir::clone_instr(out_, in, to_backward, head);
    }
    e_.set_body(outer);
    ir::remap_uses(br.body, br.yields, to_backward);
    head.insert(head.end(), std::make_move_iterator(br.body.begin()),
                std::make_move_iterator(br.body.end()));
    br.body = std::move(head);
  }

  /// True when `in` (a nested loop: any instruction of its body) communicates.
  static bool communicates(const ir::Instr &in) {
    bool any = op_communicates(in.op);
    for (const ir::Region &r : in.regions)
      ir::for_each_instr(r.body, [&](const ir::Instr &i) { any = any || op_communicates(i.op); });
    return any;
  }

  /// The iteration number of loop index `k` of a loop with `attrs`: (k - start) / step.
  ir::ValueId iteration(ir::ValueId k, const Attrs &attrs) {
    ir::ValueId n = k;
    if (attrs.loop().start != 0)
      n = e_.sub(n, e_.scalar_like(k, static_cast<double>(attrs.loop().start)));
    if (attrs.loop().step != 1)
      n = e_.div(n, e_.scalar_like(k, static_cast<double>(attrs.loop().step)));
    return n;
  }

  /// `row` (an invariant i32) typed with the variance of `like`.
  ir::ValueId index_like(ir::ValueId row, ir::ValueId like) {
    const AxisSet v = out_.type(like).variance;
    if (v.empty()) return row;
    Attrs a;
    a.collective().axes = v.axes();
    return e_.op(OpCode::Pbroadcast, {row}, a);
  }

  /// Adds to the forward loop a carried stack of `v` (one row per iteration)
  /// and returns the forward loop's result holding it; the stack's initial
  /// zeros go to `outer_body`, where the forward loop will be appended.
  ir::ValueId add_stack(ir::Instr &fwd, ir::ValueId v, std::vector<ir::Instr> *outer_body) {
    ir::Region &fr = fwd.regions[0];
    const Type t = out_.type(v);
    Type st = t;
    st.shape.insert(st.shape.begin(), ir::trip_count(fwd.attrs));
    const std::string name = (out_.values[v].name.empty() ? "r" : out_.values[v].name) + "_stack";
    std::vector<ir::Instr> *head = e_.set_body(outer_body);
    const ir::ValueId zeros = e_.zeros(st);
    e_.set_body(head);
    fwd.operands.push_back(zeros);
    const ir::ValueId param = out_.add_value(st, name, out_.values[v].span);
    fr.params.push_back(param);
    std::vector<ir::Instr> *saved = e_.set_body(&fr.body);
    Shape row_shape = t.shape;
    row_shape.insert(row_shape.begin(), 1);
    const ir::ValueId row = e_.reshape(v, row_shape);
    Attrs a;
    a.layout().dim = 0;
    const ir::ValueId next =
        e_.op(OpCode::DynamicUpdateSlice,
              {param, row, index_like(iteration(fr.params[0], fwd.attrs), v)}, a);
    e_.set_name(next, name);
    e_.set_body(saved);
    fr.yields.push_back(next);
    const ir::ValueId result = out_.add_value(st, name, out_.values[v].span);
    fwd.results.push_back(result);
    return result;
  }

  /// Row `row` of `stack`, shaped like `like`.
  ir::ValueId read_row(ir::ValueId stack, ir::ValueId row, ir::ValueId like) {
    Attrs a;
    a.layout().dim = 0;
    a.layout().shape = out_.type(stack).shape;
    a.layout().shape[0] = 1;
    const ir::ValueId slice = e_.op(OpCode::DynamicSlice, {stack, index_like(row, stack)}, a);
    const ir::ValueId v = e_.reshape(slice, out_.type(like).shape);
    e_.set_name(v, out_.values[like].name);
    return v;
  }

  /// The backward loop of `loop`: its cotangents start from those of the
  /// loop's results (zeros where none flowed) and end as those of its
  /// initial values and of the linear values it reads from outside.
  void backward_loop(const ir::Instr &loop, Cotangents &ct) {
    auto it = backward_loops_.find(&loop);
    if (it == backward_loops_.end()) return;  // no linear carried value
    const BackwardLoop &b = it->second;
    bool any = false;
    for (size_t k : b.linear_carries) any = any || ct.count(loop.results[k]);
    if (!any) return;  // nothing flows back through the loop
    ir::Instr bwd;
    bwd.op = OpCode::For;
    bwd.attrs = b.attrs;
    bwd.span = loop.span;
    bwd.origin = ir::Origin::Backward;
    for (size_t k : b.linear_carries) {
      auto c = ct.find(loop.results[k]);
      bwd.operands.push_back(c != ct.end() ? c->second : e_.zeros(f_.type(loop.results[k])));
    }
    // A captured value's sum starts from its cotangent so far (from the uses
    // after the loop): the loop adds to it, instead of adding its own sum
    // from zeros afterwards — transposing twice then gives back a loop that
    // starts from that value, as written.
    std::vector<bool> seeded;
    for (ir::ValueId c : b.captured) {
      auto so_far = ct.find(c);
      seeded.push_back(so_far != ct.end());
      bwd.operands.push_back(so_far != ct.end() ? so_far->second : e_.zeros(f_.type(c)));
    }
    bwd.regions.push_back(b.region);
    std::vector<std::pair<ir::ValueId, ir::ValueId>> flows;  // (f value, its ct out of the loop)
    for (size_t k : b.linear_carries) {
      const ir::ValueId init = loop.operands[k];
      const ir::ValueId p = loop.regions[0].params[k + 1];
      const ir::ValueId res = fresh(p, cotangent_name(f_.values[p].name));
      bwd.results.push_back(res);
      if (linear_[init]) flows.emplace_back(init, res);
    }
    for (size_t j = 0; j < b.captured.size(); ++j) {
      const ir::ValueId c = b.captured[j];
      const ir::ValueId res = fresh(c, cotangent_name(f_.values[c].name));
      bwd.results.push_back(res);
      if (seeded[j])
        ct[c] = res;
      else
        flows.emplace_back(c, res);
    }
    e_.append(std::move(bwd));
    for (auto [v, c] : flows) accumulate(ct, v, c);
  }

  const ir::Function &f_;
  const TransposeSpec &spec_;
  ir::Function &out_;
  Emitter e_;
  std::vector<bool> linear_;           // depends on a linear parameter
  std::vector<bool> zero_;             // a constant zero (linear in every sense)
  std::vector<bool> lin_ops_, zeros_;  // classify's, per operand of one instruction
  // transpose_instr's (apply_transpose_rule never comes back to it).
  std::vector<std::optional<ir::ValueId>> rule_constants_;
  std::vector<Type> rule_types_;
  std::vector<bool> rule_linear_;
  ir::ValueMap<ir::ValueId> map_;  // constant values of f -> out
  std::unordered_map<const ir::Instr *, BackwardLoop> backward_loops_;
};

}  // namespace

std::string cotangent_name(const std::string &name) {
  if (name.empty()) return "";
  std::string base = name;
  if (ends_with(base, "_dot")) base.resize(base.size() - 4);
  if (ends_with(base, "_bar")) return base.substr(0, base.size() - 4);
  return base + "_bar";
}

ir::Function transpose_function(const ir::Module &module, const ir::Function &f,
                                const TransposeSpec &spec) {
  ir::Function out;
  out.name = spec.name;
  out.kind = f.kind;
  out.mesh = f.mesh;
  out.auto_pbroadcast = false;
  out.span = f.span;
  out.return_span = f.return_span;
  // Room for the forward copies and the backward ops up front (as jvp_function).
  out.body.reserve(2 * f.body.size());
  out.values.reserve(2 * f.values.size());
  Transposer t(module, f, spec, out);
  // 1. Linearity.
  for (size_t k = 0; k < f.params.size(); ++k)
    t.mark_param(f.params[k].value, spec.linear_params[k]);
  t.classify(f.body);

  for (size_t k = 0; k < f.params.size(); ++k) {
    if (spec.linear_params[k]) continue;
    ir::Param p = f.params[k];
    const ir::Value &v = f.values[p.value];
    p.value = out.add_value(v.type, v.name, v.span);
    t.map_param(f.params[k].value, p.value);
    out.params.push_back(p);
  }
  Emitter &e = t.emitter();
  // Cotangent seeds.
  std::vector<std::pair<size_t, ir::ValueId>> seeds;
  for (size_t k = 0; k < f.results.size(); ++k) {
    if (!spec.ct_results[k]) continue;
    ir::ValueId r = f.returns[k];
    const Type &type = f.type(r);
    std::string name = !f.results[k].name.empty() ? f.results[k].name : f.values[r].name;
    if (name.empty()) name = ir::result_name(f, k);
    ir::ValueId seed;
    if (!spec.seed_ones.empty() && spec.seed_ones[k]) {
      seed = kNoSeed;
    } else {
      ir::Param p;
      p.global_shape = f.results[k].global_shape;
      p.spec = f.results[k].spec;
      p.span = f.results[k].span;
      p.value = out.add_value(type, cotangent_name(name), f.results[k].span);
      out.params.push_back(p);
      seed = p.value;
    }
    seeds.emplace_back(k, seed);
  }
  // 2. Forward: the constant instructions (loops split, their stacks filled).
  t.forward(f.body);
  // What follows is the backward pass (the seeds included).
  e.set_origin(ir::Origin::Backward);
  Cotangents ct;
  for (auto [k, seed] : seeds) {
    ir::ValueId r = f.returns[k];
    if (!t.linear(r)) continue;  // a constant output: its cotangent goes nowhere
    if (seed == kNoSeed) seed = e.full(f.type(r), 1.0);
    t.accumulate(ct, r, seed);
  }
  // 3. Backward over the linear instructions.
  t.backward(f.body, ct);
  // 4. Results.
  out.results.clear();
  for (size_t k = 0; k < f.results.size(); ++k) {
    if (spec.keep_results.empty() || !spec.keep_results[k]) continue;
    ir::ValueId r = f.returns[k];
    if (t.linear(r))
      throw TransformError("not-linear", f.return_span,
                           ir::describe_result(f, k) +
                               " depends on the differentiated inputs and cannot be kept as is");
    out.returns.push_back(t.map(r));
    out.results.push_back(f.results[k]);
  }
  for (size_t k = 0; k < f.params.size(); ++k) {
    if (!spec.linear_params[k]) continue;
    ir::ValueId pv = f.params[k].value;
    auto it = ct.find(pv);
    ir::ValueId c = it != ct.end() ? it->second : e.zeros(f.type(pv));
    out.returns.push_back(c);
    ir::Result r;
    r.name = cotangent_name(f.values[pv].name);
    r.global_shape = f.params[k].global_shape;
    r.spec = f.params[k].spec;
    r.span = f.params[k].span;
    out.results.push_back(r);
  }
  return out;
}

}  // namespace spmd

// transforms/explicit_pbroadcast.cpp — see explicit_pbroadcast.h.
#include "transforms/explicit_pbroadcast.h"

#include <algorithm>
#include <unordered_map>

#include "ir/builder.h"
#include "ir/value_map.h"
#include "ops/variance_rules.h"
#include "transforms/dce.h"

namespace spmd {
namespace {

class Explicitator {
 public:
  Explicitator(const ir::Module &module, ir::Function &f, ir::Origin origin)
      : module_(module), f_(f), origin_(origin) {}

  void run() {
    std::vector<ir::Instr> body = std::move(f_.body);
    f_.body.clear();
    constant_.assign(f_.values.size(), false);
    explicit_.reserve(f_.values.size());
    const size_t scope = open_scope();
    f_.body = rewrite_block(std::move(body));
    if (f_.kind == ir::FunctionKind::Def)  // a def's results keep their own variance
      for (auto &r : f_.returns) r = explicit_if_varying_constant(f_.body, r);
    close_scope(scope);
    eliminate_dead_code(f_);
  }

 private:
  /// A block opens: the copies made from here on are visible until it closes.
  size_t open_scope() const { return scope_log_.size(); }
  /// The block closes: its copies are forgotten (a copy made in a loop body is
  /// not visible after the loop). A value gets a copy at most once per open
  /// block, and never one while an enclosing block's copy is visible, so
  /// forgetting it uncovers no other copy.
  void close_scope(size_t scope) {
    while (scope_log_.size() > scope) {
      explicit_.erase(scope_log_.back());
      scope_log_.pop_back();
    }
  }

  bool is_constant(ir::ValueId v) const {
    return static_cast<size_t>(v) < constant_.size() && constant_[static_cast<size_t>(v)];
  }
  bool varying_constant(ir::ValueId v) const {
    return is_constant(v) && !f_.type(v).variance.empty();
  }

  /// `v` itself, or (for a constant typed varying) a pbroadcast of an
  /// invariant copy, appended to `body` once per block.
  ir::ValueId explicit_if_varying_constant(std::vector<ir::Instr> &body, ir::ValueId v) {
    if (!varying_constant(v)) return v;
    // The innermost open block's copy is the one visible here (a block's
    // copies are forgotten when it closes).
    if (const ir::ValueId *found = explicit_.find(v)) return *found;
    ir::Instr copy = varying_creations_.at(static_cast<size_t>(creation_of_.at(v)));
    const Type type = f_.type(v);
    ir::ValueId invariant = f_.add_value(type.with_variance({}), "", f_.values[v].span);
    copy.results = {invariant};
    SourceSpan span = copy.span;
    body.push_back(std::move(copy));
    ir::Builder builder(module_, f_, body);
    ir::ValueId r = builder.pbroadcast(invariant, type.variance.axes(), span, origin_);
    f_.values[r].name = f_.values[v].name;
    explicit_[v] = r;
    scope_log_.push_back(v);
    return r;
  }

  std::vector<ir::Instr> rewrite_block(std::vector<ir::Instr> old) {
    std::vector<ir::Instr> body;
    body.reserve(old.size());
    for (ir::Instr &in : old) {
      switch (op_kind(in.op)) {
        case OpKind::Creation: {
          const size_t v = static_cast<size_t>(in.results.at(0));
          if (v >= constant_.size()) constant_.resize(std::max(v + 1, f_.values.size()), false);
          constant_[v] = true;
          // Only a constant typed varying is ever copied (as an invariant one).
          if (!f_.type(in.results[0]).variance.empty() && !creation_of_.contains(in.results[0])) {
            creation_of_[in.results[0]] = static_cast<int32_t>(varying_creations_.size());
            varying_creations_.push_back(in);
          }
          break;
        }
        case OpKind::Control:
          rewrite_loop(body, in);
          break;
        case OpKind::Collective:
        case OpKind::Call:
        case OpKind::Effect:  // a print's variance says how often it prints
          for (auto &o : in.operands) o = explicit_if_varying_constant(body, o);
          break;
        case OpKind::Unary:
        case OpKind::Binary:
        case OpKind::Compare:
        case OpKind::Logical:
        case OpKind::Select:
        case OpKind::Reduce:
        case OpKind::Contraction:
        case OpKind::Layout:
        case OpKind::Random: {
          // A constant adapts to another operand's variance; with only
          // constants there is none to adapt to.
          bool all_constant = !in.operands.empty();
          for (auto o : in.operands) all_constant = all_constant && is_constant(o);
          if (all_constant) in.operands[0] = explicit_if_varying_constant(body, in.operands[0]);
          break;
        }
      }
      body.push_back(std::move(in));
    }
    return body;
  }

  void rewrite_loop(std::vector<ir::Instr> &body, ir::Instr &loop) {
    ir::Region &region = loop.regions.at(0);
    const size_t scope = open_scope();
    region.body = rewrite_block(std::move(region.body));
    close_scope(scope);
    // A constant initial value counts as invariant in the printed loop.
    std::vector<AxisSet> carried;
    for (auto o : loop.operands) carried.push_back(text_variance(o, {}));
    carried = fixpoint(loop, std::move(carried), {});
    for (size_t k = 0; k < loop.operands.size(); ++k)
      if (carried[k] != f_.type(loop.results[k]).variance)
        loop.operands[k] = explicit_if_varying_constant(body, loop.operands[k]);
  }

  // ---- how the checker types the printed text (for loops) -------------------

  using Overrides = std::unordered_map<ir::ValueId, AxisSet>;

  /// The variance the checker gives `v` in the printed program, where values
  /// defined inside a simulated loop body take `local` instead of their type.
  AxisSet text_variance(ir::ValueId v, const Overrides &local) const {
    if (is_constant(v)) return {};
    auto it = local.find(v);
    return it != local.end() ? it->second : f_.type(v).variance;
  }

  /// The carried variance of `loop` the checker derives from `carried` (its
  /// initial values' variance): the least fixpoint of one iteration.
  std::vector<AxisSet> fixpoint(const ir::Instr &loop, std::vector<AxisSet> carried,
                                Overrides local) const {
    const ir::Region &region = loop.regions.at(0);
    for (;;) {
      local[region.params[0]] = {};
      for (size_t k = 0; k < carried.size(); ++k) local[region.params[k + 1]] = carried[k];
      for (const ir::Instr &in : region.body) simulate(in, local);
      bool changed = false;
      for (size_t k = 0; k < carried.size(); ++k) {
        AxisSet joined = carried[k] | text_variance(region.yields[k], local);
        changed = changed || joined != carried[k];
        carried[k] = joined;
      }
      if (!changed) return carried;
    }
  }

  void simulate(const ir::Instr &in, Overrides &local) const {
    AxisSet uni;
    for (auto o : in.operands) uni = uni | text_variance(o, local);
    switch (op_kind(in.op)) {
      case OpKind::Creation:
        return;
      case OpKind::Call:  // re-specialised for the same argument variance
        for (auto r : in.results) local[r] = f_.type(r).variance;
        return;
      case OpKind::Control: {
        std::vector<AxisSet> init;
        for (auto o : in.operands) init.push_back(text_variance(o, local));
        auto carried = fixpoint(in, init, local);
        for (size_t k = 0; k < in.results.size(); ++k) local[in.results[k]] = carried[k];
        return;
      }
      default:
        for (auto r : in.results) local[r] = result_variance(in.op, uni, in.attrs);
        return;
    }
  }

  const ir::Module &module_;
  ir::Function &f_;
  ir::Origin origin_;
  std::vector<bool> constant_;  // by value: defined by a creation instruction
  // Dense per-value tables (ir/value_map.h), not hash maps: a derivative's
  // body has 100k+ instructions.
  std::vector<ir::Instr> varying_creations_;  // copies of the constants typed varying
  ir::ValueMap<int32_t> creation_of_;         // constant -> its index in varying_creations_
  /// Constant -> its explicit pbroadcast visible in the open blocks; the
  /// constants given one, in order, to forget them when their block closes.
  ir::ValueMap<ir::ValueId> explicit_;
  std::vector<ir::ValueId> scope_log_;
};

}  // namespace

void make_pbroadcasts_explicit(const ir::Module &module, ir::Function &function,
                               ir::Origin origin) {
  Explicitator(module, function, origin).run();
}

void make_pbroadcasts_explicit(ir::Module &module, ir::Origin origin) {
  for (auto &f : module.functions) make_pbroadcasts_explicit(module, f, origin);
}

}  // namespace spmd
